"""Word and sentence statistics."""

from collections import Counter
from dataclasses import dataclass

from ._regex import SENTENCE_END_RE, SPACES_RE, WORD_RE
from .errors import InvalidInputError
from .validation import is_full_string, is_string


@dataclass
class TextSummary:
    """Aggregate figures about a text, as computed by ``summarize``."""

    sentence_count: int
    word_count: int
    unique_words: int
    average_sentence_length: float
    longest_sentence: str
    top_words: list


def word_frequencies(text, ignore_case=True, stopwords=()):
    """Count how often each word occurs in text.

    Words are matched with WORD_RE: runs of letters and digits, possibly
    joined by apostrophes (``"don't"``). With ``ignore_case`` every word is
    lowercased before it is counted and the stopwords are compared
    lowercased too; without it, words and stopwords are compared as written.
    Words found in ``stopwords`` are not counted.

    Returns a Counter mapping each word to its number of occurrences.
    Raises InvalidInputError if text is not a str.
    """
    if not is_string(text):
        raise InvalidInputError(text)
    if ignore_case:
        excluded = {word.lower() for word in stopwords}
    else:
        excluded = set(stopwords)
    counts = Counter()
    for match in WORD_RE.finditer(text):
        word = match.group()
        if ignore_case:
            word = word.lower()
        if word not in excluded:
            counts[word] += 1
    return counts


def split_sentences(text):
    """Split text into numbered sentences.

    A sentence ends at whitespace that follows ``.``, ``!`` or ``?`` (see
    SENTENCE_END_RE), or at the end of the text. Runs of whitespace inside a
    sentence are collapsed to single spaces and the sentence is stripped.

    Returns a list of ``(number, sentence, word_count)`` tuples, numbered
    from 1, where word_count counts the WORD_RE matches of the sentence.
    Fragments without any word (such as ``"..."``) are skipped and take no
    number. Blank text gives an empty list.

    Raises InvalidInputError if text is not a str.
    """
    if not is_string(text):
        raise InvalidInputError(text)
    if not is_full_string(text):
        return []
    sentences = []
    for chunk in SENTENCE_END_RE.split(text.strip()):
        sentence = SPACES_RE.sub(" ", chunk).strip()
        word_count = len(WORD_RE.findall(sentence))
        if word_count:
            sentences.append((len(sentences) + 1, sentence, word_count))
    return sentences


def summarize(text, top=3, stopwords=()):
    """Return a TextSummary of text.

    Sentences come from ``split_sentences`` and word counts from
    ``word_frequencies`` (case-insensitive, leaving out ``stopwords``):

    - ``sentence_count``: the number of sentences;
    - ``word_count``: the total of the sentences' word counts, stopwords included;
    - ``unique_words``: the number of distinct words, stopwords excluded;
    - ``average_sentence_length``: word_count / sentence_count rounded to
      2 decimals, or 0.0 when there is no sentence;
    - ``longest_sentence``: the sentence with the most words, the first one
      on ties, or ``""`` when there is no sentence;
    - ``top_words``: a list of the ``top`` most frequent ``(word, count)``
      pairs, by decreasing count and then alphabetically.

    Raises InvalidInputError if text is not a str and ValueError if top is negative.
    """
    if top < 0:
        raise ValueError(f"top must not be negative, got {top}")
    sentences = split_sentences(text)
    frequencies = word_frequencies(text, stopwords=stopwords)
    word_count = sum(count for _, _, count in sentences)
    if sentences:
        longest = max(sentences, key=lambda item: item[2])[1]
        average = round(word_count / len(sentences), 2)
    else:
        longest, average = "", 0.0
    ranked = sorted(frequencies.items(), key=lambda item: (-item[1], item[0]))
    return TextSummary(
        sentence_count=len(sentences),
        word_count=word_count,
        unique_words=len(frequencies),
        average_sentence_length=average,
        longest_sentence=longest,
        top_words=ranked[:top],
    )
