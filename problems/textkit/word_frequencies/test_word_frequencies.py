import os
import pickle
from collections import Counter

import pytest

from .errors import InvalidInputError
from .stats import word_frequencies

TEXT = """\
The ledger doesn't lie. The auditor said: "The ledger, the whole ledger,
and nothing but the ledger!" Auditors don't guess; they count. In 2024 the
auditor counted 3 ledgers, and the ledgers' totals didn't match.
"""

STOPWORDS = ("the", "and", "In")


def _expected(name):
    with open(os.path.join(os.environ["REPOEXEC_EXPECTED"], name), "rb") as f:
        return pickle.load(f)


def test_case_insensitive_counts_match_expected():
    result = word_frequencies(TEXT)
    assert isinstance(result, Counter)
    assert result == _expected("word_frequencies.pkl")


def test_case_sensitive_counts_match_expected():
    assert word_frequencies(TEXT, ignore_case=False) == _expected("word_frequencies_case.pkl")


def test_stopwords_match_expected():
    assert word_frequencies(TEXT, stopwords=STOPWORDS) == _expected("word_frequencies_stopwords.pkl")


def test_apostrophes_digits_and_underscores():
    assert word_frequencies("Don't stop, don't!") == {"don't": 2, "stop": 1}
    assert word_frequencies("Room 101, floor 3") == {"room": 1, "101": 1, "floor": 1, "3": 1}
    assert word_frequencies("snake_case words") == {"snake": 1, "case": 1, "words": 1}
    assert word_frequencies("'quoted' rock'n'roll") == {"quoted": 1, "rock'n'roll": 1}


def test_stopwords_follow_the_case_setting():
    assert word_frequencies("Apple apple APPLE pie", stopwords=["APPLE"]) == {"pie": 1}
    result = word_frequencies("Apple apple APPLE pie", ignore_case=False, stopwords=["apple"])
    assert result == {"Apple": 1, "APPLE": 1, "pie": 1}


def test_text_without_words():
    assert word_frequencies("") == Counter()
    assert word_frequencies(" -- ... !? ") == {}


def test_non_string_raises_invalid_input_error():
    for value in (None, b"some words", ["words"]):
        with pytest.raises(InvalidInputError):
            word_frequencies(value)
