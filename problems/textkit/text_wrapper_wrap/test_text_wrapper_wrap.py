import pytest

from .errors import InvalidInputError
from .wrap import TextWrapper

FOX = "The quick brown fox jumps over the lazy dog"


def test_greedy_wrap_with_exact_fit():
    assert TextWrapper(width=10).wrap(FOX) == ["The quick", "brown fox", "jumps over", "the lazy", "dog"]


def test_indent_counts_towards_the_width():
    lines = TextWrapper(width=12, indent="> ").wrap(FOX)
    assert lines == ["> The quick", "> brown fox", "> jumps over", "> the lazy", "> dog"]


def test_whitespace_is_collapsed_into_one_paragraph():
    assert TextWrapper(width=20).wrap("  a\n b\t\tc  \n\n d ") == ["a b c d"]


def test_blank_text_gives_no_lines():
    wrapper = TextWrapper(width=10, indent="  ")
    assert wrapper.wrap("") == []
    assert wrapper.wrap("   \n\t ") == []


def test_long_words_are_cut_into_pieces_of_the_room_size():
    assert TextWrapper(width=5).wrap("abcdefghijkl xy") == ["abcde", "fghij", "kl xy"]
    assert TextWrapper(width=6).wrap("ab abcdefghij") == ["ab", "abcdef", "ghij"]
    assert TextWrapper(width=6, indent="--").wrap("abcdefghij") == ["--abcd", "--efgh", "--ij"]


def test_long_words_are_kept_whole_when_not_breaking():
    wrapper = TextWrapper(width=5, break_long_words=False)
    assert wrapper.wrap("ab abcdefghij cd") == ["ab", "abcdefghij", "cd"]
    assert wrapper.wrap("abcde f") == ["abcde", "f"]


def test_lines_are_filled_greedily():
    text = (
        "Pytest plugins evaluate generated functions inside real repositories, "
        "running the project's own tests against every candidate."
    )
    lines = TextWrapper(width=15).wrap(text)
    assert " ".join(lines).split() == text.split()
    assert all(len(line) <= 15 for line in lines)
    for line, following in zip(lines, lines[1:]):
        assert len(line) + 1 + len(following.split()[0]) > 15
    assert len(lines) == 11


def test_non_string_raises_invalid_input_error():
    wrapper = TextWrapper(width=10)
    for value in (None, 5, ["some", "words"]):
        with pytest.raises(InvalidInputError):
            wrapper.wrap(value)
