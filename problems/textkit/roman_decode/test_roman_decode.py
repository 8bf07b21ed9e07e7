import pytest

from .errors import InvalidInputError
from .roman import roman_decode, roman_encode


def test_basic_numerals():
    assert roman_decode("I") == 1
    assert roman_decode("IV") == 4
    assert roman_decode("IX") == 9
    assert roman_decode("XLII") == 42
    assert roman_decode("MCMXCIV") == 1994
    assert roman_decode("MMMCMXCIX") == 3999


def test_case_and_whitespace_are_ignored():
    assert roman_decode(" mcmxciv ") == 1994
    assert roman_decode("xIv") == 14
    assert roman_decode("\tMMXXIV\n") == 2024


def test_round_trip_over_the_whole_range():
    for number in range(1, 4000):
        assert roman_decode(roman_encode(number)) == number


def test_non_canonical_numerals_raise_value_error():
    for text in ("IIII", "IC", "VX", "MMMM", "IIV", "XXXX", "VV", "IM", "CMC", "XLX", "DD"):
        with pytest.raises(ValueError):
            roman_decode(text)


def test_invalid_symbols_raise_value_error():
    for text in ("ABC", "X I", "12", "MCMXCIVZ", "Ⅻ"):
        with pytest.raises(ValueError):
            roman_decode(text)


def test_blank_text_raises_value_error():
    for text in ("", "   ", "\n"):
        with pytest.raises(ValueError):
            roman_decode(text)


def test_non_string_raises_invalid_input_error():
    for value in (None, 12, b"XII"):
        with pytest.raises(InvalidInputError):
            roman_decode(value)
