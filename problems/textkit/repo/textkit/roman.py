"""Roman numerals for the integers 1 to 3999."""

from .errors import InvalidInputError
from .validation import is_full_string, is_string

MAX_ROMAN = 3999

# Values and symbols, largest first, including the subtractive pairs.
_NUMERALS = (
    (1000, "M"),
    (900, "CM"),
    (500, "D"),
    (400, "CD"),
    (100, "C"),
    (90, "XC"),
    (50, "L"),
    (40, "XL"),
    (10, "X"),
    (9, "IX"),
    (5, "V"),
    (4, "IV"),
    (1, "I"),
)

_SYMBOL_VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def roman_encode(number):
    """Return the Roman numeral, in uppercase, for an integer from 1 to MAX_ROMAN.

    Strings of ASCII digits, optionally surrounded by whitespace (``" 42"``),
    are accepted as well.

    Raises TypeError if number is neither an int nor a str (bool is refused),
    and ValueError if it is out of range or a string that is not made of digits.
    """
    if isinstance(number, bool) or not isinstance(number, (int, str)):
        raise TypeError(f"expected an int or a digit string, got {type(number).__name__!r}")
    if isinstance(number, str):
        digits = number.strip()
        if not (digits.isascii() and digits.isdigit()):
            raise ValueError(f"not a number: {number!r}")
        number = int(digits)
    if not 1 <= number <= MAX_ROMAN:
        raise ValueError(f"{number} is outside the range 1 to {MAX_ROMAN}")
    parts = []
    for value, symbol in _NUMERALS:
        count, number = divmod(number, value)
        parts.append(symbol * count)
    return "".join(parts)


def roman_decode(text):
    """Return the integer value of a Roman numeral.

    Letter case and surrounding whitespace are ignored. Only the canonical
    spelling of a number from 1 to MAX_ROMAN is accepted: ``"IIII"``, ``"IC"``,
    ``"VX"`` or ``"MMMM"`` are refused.

    Raises InvalidInputError if text is not a str, and ValueError if it is
    blank, holds a character that is not a Roman symbol, or is not canonical.
    """
    if not is_string(text):
        raise InvalidInputError(text)
    if not is_full_string(text):
        raise ValueError("a roman numeral cannot be blank")
    numeral = text.strip().upper()
    total = 0
    largest = 0
    for symbol in reversed(numeral):
        value = _SYMBOL_VALUES.get(symbol)
        if value is None:
            raise ValueError(f"invalid roman symbol {symbol!r} in {text!r}")
        if value < largest:
            total -= value
        else:
            total += value
            largest = value
    if not 1 <= total <= MAX_ROMAN or roman_encode(total) != numeral:
        raise ValueError(f"not a canonical roman numeral: {text!r}")
    return total
