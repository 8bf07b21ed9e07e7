import pytest

from .errors import InvalidInputError
from .wrap import TextWrapper


def test_single_paragraph():
    text = "The quick brown fox jumps over the lazy dog"
    assert TextWrapper(width=10).fill(text) == "The quick\nbrown fox\njumps over\nthe lazy\ndog"


def test_paragraphs_are_wrapped_separately():
    assert TextWrapper(width=8).fill("one two three\n\nfour five") == "one two\nthree\n\nfour\nfive"


def test_single_newlines_do_not_break_paragraphs():
    assert TextWrapper(width=10).fill("a\nb\nc") == "a b c"


def test_blank_lines_with_spaces_and_runs_of_blank_lines():
    assert TextWrapper(width=10).fill("a b\n   \n\n\t\nc d") == "a b\n\nc d"
    assert TextWrapper(width=10).fill("\n\nhello\n\n") == "hello"


def test_indent_on_every_line():
    assert TextWrapper(width=8, indent="  ").fill("aa bb cc\n\ndd") == "  aa bb\n  cc\n\n  dd"


def test_blank_text_gives_an_empty_string():
    wrapper = TextWrapper(width=10)
    assert wrapper.fill("") == ""
    assert wrapper.fill("\n\n  \n") == ""


def test_non_string_raises_invalid_input_error():
    with pytest.raises(InvalidInputError):
        TextWrapper(width=10).fill(None)
    with pytest.raises(InvalidInputError):
        TextWrapper(width=10).fill(42)
