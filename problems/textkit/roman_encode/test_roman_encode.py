import pytest

from .roman import roman_encode


def test_subtractive_pairs():
    assert roman_encode(4) == "IV"
    assert roman_encode(9) == "IX"
    assert roman_encode(40) == "XL"
    assert roman_encode(90) == "XC"
    assert roman_encode(400) == "CD"
    assert roman_encode(900) == "CM"


def test_small_numbers():
    expected = ["I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII", "XIII", "XIV"]
    assert [roman_encode(n) for n in range(1, 15)] == expected


def test_larger_numbers():
    assert roman_encode(1994) == "MCMXCIV"
    assert roman_encode(2024) == "MMXXIV"
    assert roman_encode(3888) == "MMMDCCCLXXXVIII"
    assert roman_encode(3999) == "MMMCMXCIX"


def test_whole_range_is_distinct_and_has_the_expected_total_length():
    numerals = [roman_encode(n) for n in range(1, 4000)]
    assert len(set(numerals)) == 3999
    assert sum(len(numeral) for numeral in numerals) == 30000


def test_digit_strings_are_accepted():
    assert roman_encode("42") == "XLII"
    assert roman_encode(" 7 ") == "VII"
    assert roman_encode("3999") == "MMMCMXCIX"


def test_out_of_range_raises_value_error():
    for number in (0, -1, 4000, 10**6, "0", "4000"):
        with pytest.raises(ValueError):
            roman_encode(number)


def test_malformed_strings_raise_value_error():
    for text in ("abc", "4.5", "", "  ", "-5", "+5", "\u0663"):
        with pytest.raises(ValueError):
            roman_encode(text)


def test_other_types_raise_type_error():
    for value in (None, 3.0, True, [1], b"12"):
        with pytest.raises(TypeError):
            roman_encode(value)
