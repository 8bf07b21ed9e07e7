"""Conversions between identifier styles, and URL slugs."""

import unicodedata

from ._regex import CAMEL_BOUNDARY_RE, NON_SLUG_CHARS_RE, SLUG_SEPARATORS_RE
from .errors import InvalidInputError
from .validation import is_camel_case, is_snake_case, is_string


def snake_to_camel(text, upper_first=True, separator="_"):
    """Convert a snake_case string to CamelCase.

    Each word is capitalised (its first character uppercased, the rest left
    lowercase) and the separators are removed; with ``upper_first=False`` the
    first word is kept as it is, giving ``"userId"`` for ``"user_id"``.
    Strings that are not snake case for the given separator are returned
    unchanged.

    Raises InvalidInputError if text is not a str.
    """
    if not is_string(text):
        raise InvalidInputError(text)
    if not is_snake_case(text, separator=separator):
        return text
    words = text.split(separator)
    head = words[0].capitalize() if upper_first else words[0]
    return head + "".join(word.capitalize() for word in words[1:])


def camel_to_snake(text, separator="_"):
    """Convert a camelCase or PascalCase string to snake_case.

    A new word starts at an uppercase letter that follows a lowercase letter
    or a digit, and at the last capital of a run of capitals that is followed
    by a lowercase letter (``"HTTPServer"`` gives ``"http_server"``). The words
    are joined with ``separator`` and lowercased. Strings that are not camel
    case are returned unchanged.

    Raises InvalidInputError if text is not a str.
    """
    if not is_string(text):
        raise InvalidInputError(text)
    if not is_camel_case(text):
        return text
    return CAMEL_BOUNDARY_RE.sub(separator, text).lower()


def slugify(text, separator="-", max_length=None):
    """Turn text into a lowercase, URL-friendly slug.

    Accented letters are reduced to their ASCII base letter and any other
    non-ASCII character is dropped, as are punctuation and symbols. Runs of
    whitespace, underscores and hyphens become a single separator, never at
    either end of the slug. With ``max_length`` a longer slug is cut to at
    most that many characters, at the last separator when the cut falls
    inside a word that is not the first one.

    Raises InvalidInputError if text is not a str and ValueError if
    max_length is given and smaller than 1.
    """
    if not is_string(text):
        raise InvalidInputError(text)
    if max_length is not None and max_length < 1:
        raise ValueError(f"max_length must be at least 1, got {max_length}")
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    cleaned = NON_SLUG_CHARS_RE.sub("", ascii_text).lower()
    slug = SLUG_SEPARATORS_RE.sub(separator, cleaned).strip(separator)
    if max_length is not None and len(slug) > max_length:
        cut = slug[:max_length]
        if not slug[max_length:].startswith(separator) and separator in cut:
            cut = cut[: cut.rindex(separator)]
        slug = cut.strip(separator)
    return slug
