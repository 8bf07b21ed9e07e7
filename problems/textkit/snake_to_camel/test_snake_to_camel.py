import pytest

from .cases import snake_to_camel
from .errors import InvalidInputError


def test_converts_to_pascal_case_by_default():
    assert snake_to_camel("user_id") == "UserId"
    assert snake_to_camel("parse_http_response") == "ParseHttpResponse"


def test_lower_first_word():
    assert snake_to_camel("user_id", upper_first=False) == "userId"
    assert snake_to_camel("parse_http_response", upper_first=False) == "parseHttpResponse"


def test_single_word():
    assert snake_to_camel("total") == "Total"
    assert snake_to_camel("total", upper_first=False) == "total"


def test_words_with_digits():
    assert snake_to_camel("user_2fa_code") == "User2faCode"
    assert snake_to_camel("item_1") == "Item1"
    assert snake_to_camel("item_1", upper_first=False) == "item1"


def test_non_snake_case_is_returned_unchanged():
    for text in ("UserId", "user id", "", "   ", "double__underscore", "_private", "user_Id", "trailing_"):
        assert snake_to_camel(text) == text


def test_custom_separator():
    assert snake_to_camel("user-id-code", separator="-") == "UserIdCode"
    assert snake_to_camel("user-id", upper_first=False, separator="-") == "userId"
    assert snake_to_camel("user_id", separator="-") == "user_id"


def test_non_string_raises_invalid_input_error():
    for value in (None, 42, b"user_id", ["user_id"]):
        with pytest.raises(InvalidInputError):
            snake_to_camel(value)
    with pytest.raises(TypeError):
        snake_to_camel(3.5)
