"""Small text utilities: validation, case conversion, wrapping, roman numerals and statistics."""

from .cases import camel_to_snake, slugify, snake_to_camel
from .errors import InvalidInputError
from .roman import roman_decode, roman_encode
from .stats import TextSummary, split_sentences, summarize, word_frequencies
from .validation import is_camel_case, is_full_string, is_snake_case, is_string
from .wrap import TextWrapper

__all__ = [
    "InvalidInputError",
    "TextSummary",
    "TextWrapper",
    "camel_to_snake",
    "is_camel_case",
    "is_full_string",
    "is_snake_case",
    "is_string",
    "roman_decode",
    "roman_encode",
    "slugify",
    "snake_to_camel",
    "split_sentences",
    "summarize",
    "word_frequencies",
]
