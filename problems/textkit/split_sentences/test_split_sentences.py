import os
import pickle

import pytest

from .errors import InvalidInputError
from .stats import split_sentences

TEXT = """\
Ledgers record every movement of money.   Each posting has a date, an amount
and a memo! Do the debits equal the credits?  They must... Otherwise the
books are wrong.

A new paragraph starts here. It has two sentences"""


def _expected(name):
    with open(os.path.join(os.environ["REPOEXEC_EXPECTED"], name), "rb") as f:
        return pickle.load(f)


def test_paragraphs_match_expected():
    assert split_sentences(TEXT) == _expected("split_sentences.pkl")


def test_numbered_tuples_with_word_counts():
    result = split_sentences("Hello there.  How are\n you? Fine!")
    assert result == [(1, "Hello there.", 2), (2, "How are you?", 3), (3, "Fine!", 1)]


def test_fragments_without_words_are_skipped_and_not_numbered():
    result = split_sentences("Wait... what?! ... Yes.")
    assert result == [(1, "Wait...", 1), (2, "what?!", 1), (3, "Yes.", 1)]


def test_sentence_needs_whitespace_after_the_mark():
    assert split_sentences("e.g.this stays whole") == [(1, "e.g.this stays whole", 5)]
    assert split_sentences("no punctuation at the end") == [(1, "no punctuation at the end", 5)]


def test_whitespace_is_collapsed_and_stripped():
    result = split_sentences("\n  One\t\ttwo  three.\n\n Four   five \n")
    assert result == [(1, "One two three.", 3), (2, "Four five", 2)]


def test_blank_text_gives_an_empty_list():
    assert split_sentences("") == []
    assert split_sentences("   \n\t") == []
    assert split_sentences("... !!! ???") == []


def test_non_string_raises_invalid_input_error():
    for value in (None, 3, b"A sentence."):
        with pytest.raises(InvalidInputError):
            split_sentences(value)
