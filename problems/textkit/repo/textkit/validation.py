"""Predicates that classify strings."""

from ._regex import CAMEL_CASE_RE, SNAKE_CASE_RE


def is_string(obj):
    """Return True if obj is a str instance."""
    return isinstance(obj, str)


def is_full_string(obj):
    """Return True if obj is a str holding at least one non-whitespace character."""
    return is_string(obj) and obj.strip() != ""


def is_snake_case(text, separator="_"):
    """Return True if text is lowercase words joined by single separators.

    A word is a run of lowercase ASCII letters and digits, and the first word
    must start with a letter; a single word such as ``"total"`` counts as snake
    case. ``separator`` may be any non-empty string without letters or digits,
    and when it is not ``"_"`` the text must not contain underscores at all.
    Values that are not full strings are never snake case.

    Raises ValueError if separator is empty or contains a letter or digit.
    """
    if not separator or any(char.isalnum() for char in separator):
        raise ValueError(f"invalid separator: {separator!r}")
    if not is_full_string(text):
        return False
    if separator != "_":
        if "_" in text:
            return False
        text = text.replace(separator, "_")
    return SNAKE_CASE_RE.fullmatch(text) is not None


def is_camel_case(text):
    """Return True if text is camelCase or PascalCase.

    The text must consist of ASCII letters and digits only, start with a letter
    and contain both lowercase and uppercase letters: ``"parseHTTPResponse"``
    and ``"UserId"`` qualify, ``"user"`` and ``"URL"`` do not.
    """
    if not is_full_string(text) or CAMEL_CASE_RE.fullmatch(text) is None:
        return False
    return any(char.islower() for char in text) and any(char.isupper() for char in text)
