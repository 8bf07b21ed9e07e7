import os
import pickle

import pytest

from .errors import InvalidInputError
from .stats import TextSummary, summarize

TEXT = """\
The ledger records every payment. The auditor reads the ledger twice, and the
auditor signs it. Payments without receipts are questioned! Why would anyone
skip the receipt? Nobody knows."""

STOPWORDS = ["the", "and", "it"]


def _expected(name):
    with open(os.path.join(os.environ["REPOEXEC_EXPECTED"], name), "rb") as f:
        return pickle.load(f)


def test_default_summary_matches_expected():
    result = summarize(TEXT)
    assert isinstance(result, TextSummary)
    assert result == _expected("summarize.pkl")


def test_summary_with_stopwords_matches_expected():
    assert summarize(TEXT, top=5, stopwords=STOPWORDS) == _expected("summarize_stopwords.pkl")


def test_small_text_field_by_field():
    result = summarize("The cat sat. The dog ran far away! Cats nap.", stopwords=["the"])
    assert result.sentence_count == 3
    assert result.word_count == 10
    assert result.unique_words == 8
    assert result.average_sentence_length == 3.33
    assert result.longest_sentence == "The dog ran far away!"
    assert result.top_words == [("away", 1), ("cat", 1), ("cats", 1)]


def test_ties_and_rounding():
    result = summarize("b a c. a b. c a", top=2)
    assert result.top_words == [("a", 3), ("b", 2)]
    assert result.longest_sentence == "b a c."
    assert summarize("one two. three.").average_sentence_length == 1.5
    assert summarize("a b. c. d.").average_sentence_length == 1.33


def test_empty_text():
    assert summarize("") == TextSummary(0, 0, 0, 0.0, "", [])
    assert summarize("  ...  ") == TextSummary(0, 0, 0, 0.0, "", [])


def test_top_zero_gives_no_top_words():
    result = summarize("alpha beta. beta gamma.", top=0)
    assert result.top_words == []
    assert result.unique_words == 3


def test_bad_arguments_raise():
    with pytest.raises(ValueError):
        summarize("some text.", top=-1)
    with pytest.raises(InvalidInputError):
        summarize(None)
