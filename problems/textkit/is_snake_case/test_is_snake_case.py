import pytest

from .validation import is_snake_case


def test_words_joined_by_underscores():
    assert is_snake_case("user_id")
    assert is_snake_case("parse_http_response")
    assert is_snake_case("version_2_final")


def test_single_word_is_snake_case():
    assert is_snake_case("total")
    assert is_snake_case("x1")


def test_rejects_uppercase_and_misplaced_underscores():
    assert not is_snake_case("User_id")
    assert not is_snake_case("user_Id")
    assert not is_snake_case("_private")
    assert not is_snake_case("trailing_")
    assert not is_snake_case("double__underscore")
    assert not is_snake_case("1st_place")


def test_rejects_spaces_symbols_and_non_ascii():
    assert not is_snake_case("user id")
    assert not is_snake_case("user_id!")
    assert not is_snake_case("naïve_case")
    assert not is_snake_case(" user_id")


def test_non_strings_and_blank_strings_are_not_snake_case():
    for value in (None, 42, ["a_b"], b"a_b", "", "   "):
        assert is_snake_case(value) is False


def test_custom_separator():
    assert is_snake_case("user-id", separator="-")
    assert is_snake_case("a.b.c", separator=".")
    assert is_snake_case("total", separator="-")
    assert not is_snake_case("user-id")
    assert not is_snake_case("user_id-code", separator="-")
    assert not is_snake_case("user--id", separator="-")
    assert not is_snake_case("-user-id", separator="-")


def test_returns_booleans():
    assert is_snake_case("user_id") is True
    assert is_snake_case("UserId") is False


def test_invalid_separator_raises_value_error():
    with pytest.raises(ValueError):
        is_snake_case("a_b", separator="")
    with pytest.raises(ValueError):
        is_snake_case("a1b", separator="1")
    with pytest.raises(ValueError):
        is_snake_case("axb", separator="x")
