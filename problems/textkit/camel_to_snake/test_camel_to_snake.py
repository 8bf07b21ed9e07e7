import pytest

from .cases import camel_to_snake
from .errors import InvalidInputError


def test_camel_and_pascal_case():
    assert camel_to_snake("userId") == "user_id"
    assert camel_to_snake("UserId") == "user_id"
    assert camel_to_snake("shoppingCartItemCount") == "shopping_cart_item_count"


def test_runs_of_capitals():
    assert camel_to_snake("HTTPServer") == "http_server"
    assert camel_to_snake("parseHTTPResponse") == "parse_http_response"
    assert camel_to_snake("getURL") == "get_url"
    assert camel_to_snake("XMLHttpRequest") == "xml_http_request"


def test_digits_end_a_word():
    assert camel_to_snake("v2Api") == "v2_api"
    assert camel_to_snake("base64Encode") == "base64_encode"
    assert camel_to_snake("Ipv4Address") == "ipv4_address"


def test_custom_separator():
    assert camel_to_snake("userId", separator="-") == "user-id"
    assert camel_to_snake("parseHTTPResponse", separator=".") == "parse.http.response"
    assert camel_to_snake("HTTPServer", separator="") == "httpserver"


def test_non_camel_case_is_returned_unchanged():
    for text in ("user_id", "URL", "user", "utf8", "", "  ", "user Id", "2fastForYou", "user-Id"):
        assert camel_to_snake(text) == text


def test_single_capital_followed_by_capitalised_word():
    assert camel_to_snake("ABc") == "a_bc"
    assert camel_to_snake("aB") == "a_b"


def test_non_string_raises_invalid_input_error():
    for value in (None, 3.5, ["userId"], b"userId"):
        with pytest.raises(InvalidInputError):
            camel_to_snake(value)
