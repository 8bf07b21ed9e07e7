"""Compiled regular expressions shared by the textkit modules."""

import re

# Lowercase words of letters and digits joined by single underscores; the first word starts with a letter.
SNAKE_CASE_RE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")

# Letters and digits only, starting with a letter (mixed case is checked separately).
CAMEL_CASE_RE = re.compile(r"[A-Za-z][A-Za-z0-9]*")

# Zero-width positions where a camelCase identifier starts a new word:
# "userId" -> "user|Id", "HTTPServer" -> "HTTP|Server", "v2Api" -> "v2|Api".
CAMEL_BOUNDARY_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")

# Anything a slug drops: characters that are neither word characters, whitespace nor hyphens.
NON_SLUG_CHARS_RE = re.compile(r"[^\w\s-]")

# Runs of characters that become a single slug separator.
SLUG_SEPARATORS_RE = re.compile(r"[\s_-]+")

SPACES_RE = re.compile(r"\s+")

# A word: letters and digits, possibly joined by apostrophes ("don't", "o'clock").
WORD_RE = re.compile(r"[^\W_]+(?:'[^\W_]+)*")

# Whitespace that follows a sentence-ending punctuation mark.
SENTENCE_END_RE = re.compile(r"(?<=[.!?])\s+")

# A blank line (possibly holding spaces) between two paragraphs.
PARAGRAPH_BREAK_RE = re.compile(r"\n[ \t]*\n\s*")
