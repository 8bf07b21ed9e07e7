import pytest

from .cases import slugify
from .errors import InvalidInputError


def test_basic_slug():
    assert slugify("Hello World") == "hello-world"
    assert slugify("Top 10 Tips") == "top-10-tips"


def test_punctuation_is_dropped():
    assert slugify("Hello, World!") == "hello-world"
    assert slugify("What's up?") == "whats-up"
    assert slugify("C++ & Rust: a (friendly) comparison") == "c-rust-a-friendly-comparison"


def test_accents_are_reduced_and_other_non_ascii_dropped():
    assert slugify("Crème Brûlée") == "creme-brulee"
    assert slugify("naïve café") == "naive-cafe"
    assert slugify("東京 Tokyo") == "tokyo"
    assert slugify("emoji 🎉 party") == "emoji-party"


def test_separators_collapse_and_never_end_the_slug():
    assert slugify("  --Hello___World--  ") == "hello-world"
    assert slugify("a - b _ c\n\td") == "a-b-c-d"
    assert slugify("") == ""
    assert slugify("!!! ???") == ""


def test_custom_separator():
    assert slugify("Hello World Again", separator="_") == "hello_world_again"
    assert slugify("  Hello -- World ", separator=".") == "hello.world"


def test_max_length_cuts_at_a_separator():
    text = "hello wonderful world"
    assert slugify(text, max_length=100) == "hello-wonderful-world"
    assert slugify(text, max_length=21) == "hello-wonderful-world"
    assert slugify(text, max_length=15) == "hello-wonderful"
    assert slugify(text, max_length=16) == "hello-wonderful"
    assert slugify(text, max_length=14) == "hello"
    assert slugify(text, max_length=6) == "hello"
    assert slugify(text, max_length=3) == "hel"
    assert slugify(text, max_length=1) == "h"
    assert slugify("supercalifragilistic", max_length=5) == "super"


def test_invalid_max_length_raises_value_error():
    with pytest.raises(ValueError):
        slugify("hello", max_length=0)
    with pytest.raises(ValueError):
        slugify("hello", max_length=-3)


def test_non_string_raises_invalid_input_error():
    for value in (None, 12, b"hello world"):
        with pytest.raises(InvalidInputError):
            slugify(value)
