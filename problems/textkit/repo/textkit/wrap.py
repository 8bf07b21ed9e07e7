"""Greedy word wrapping."""

from collections.abc import Mapping

from ._regex import PARAGRAPH_BREAK_RE
from .errors import InvalidInputError
from .validation import is_string

_SETTINGS = ("width", "indent", "break_long_words")


class TextWrapper:
    """Wrap text into lines of at most ``width`` characters.

    ``indent`` is put in front of every line and counts towards the width, so
    each line has ``width - len(indent)`` characters of room for words. Words
    longer than that room are cut into pieces when ``break_long_words`` is
    true; otherwise they stay whole on a line of their own.
    """

    def __init__(self, width=70, indent="", break_long_words=True):
        if width - len(indent) < 1:
            raise ValueError(f"width {width} leaves no room after the indent {indent!r}")
        self.width = width
        self.indent = indent
        self.break_long_words = break_long_words

    def __repr__(self):
        return (
            f"TextWrapper(width={self.width!r}, indent={self.indent!r}, "
            f"break_long_words={self.break_long_words!r})"
        )

    @classmethod
    def from_config(cls, config):
        """Build a wrapper from a mapping of settings.

        The recognised keys are ``width``, ``indent`` and ``break_long_words``;
        missing keys take the constructor's defaults. ``width`` may be an int
        or a string of digits, possibly surrounded by whitespace, and
        ``break_long_words`` is converted with ``bool``.

        Raises TypeError if config is not a mapping or width is neither an int
        nor a digit string (bool is refused), InvalidInputError if indent is not
        a str, and ValueError naming the unknown keys, in sorted order, if there
        are any, or if the width leaves no room after the indent.
        """
        if not isinstance(config, Mapping):
            raise TypeError(f"config must be a mapping, got {type(config).__name__!r}")
        unknown = sorted(set(config) - set(_SETTINGS))
        if unknown:
            raise ValueError(f"unknown settings: {', '.join(unknown)}")
        width = config.get("width", 70)
        if isinstance(width, str) and width.strip().isdigit():
            width = int(width)
        if isinstance(width, bool) or not isinstance(width, int):
            raise TypeError(f"width must be an int, got {width!r}")
        indent = config.get("indent", "")
        if not is_string(indent):
            raise InvalidInputError(indent)
        return cls(width=width, indent=indent, break_long_words=bool(config.get("break_long_words", True)))

    @staticmethod
    def _chop(word, size):
        """Cut word into consecutive pieces of size characters (the last one may be shorter)."""
        return [word[start : start + size] for start in range(0, len(word), size)]

    def wrap(self, text):
        """Wrap text into a list of lines.

        All whitespace, newlines included, separates words, so the text is
        treated as one paragraph. Words are placed greedily: a word goes on the
        current line, after a single space, when it fits in the room left, and
        starts a new line otherwise. Every line starts with the indent. A word
        longer than the room is, when ``break_long_words`` is true, cut into
        pieces of exactly the room's size (the last piece may be shorter),
        which are then placed like words; when it is false it is placed whole.
        Blank text gives an empty list.

        Raises InvalidInputError if text is not a str.
        """
        if not is_string(text):
            raise InvalidInputError(text)
        room = self.width - len(self.indent)
        lines = []
        current = ""
        for word in text.split():
            if self.break_long_words and len(word) > room:
                pieces = self._chop(word, room)
            else:
                pieces = [word]
            for piece in pieces:
                if not current:
                    current = piece
                elif len(current) + 1 + len(piece) <= room:
                    current = f"{current} {piece}"
                else:
                    lines.append(self.indent + current)
                    current = piece
        if current:
            lines.append(self.indent + current)
        return lines

    def fill(self, text):
        """Wrap text and return it as a single string.

        Paragraphs are separated by blank lines (lines empty or holding only
        spaces and tabs). Each paragraph is wrapped on its own with ``wrap``
        and its lines are joined with newlines; the paragraphs are then joined
        with exactly one blank line between them. Paragraphs without any word
        are dropped, so blank text gives an empty string.

        Raises InvalidInputError if text is not a str.
        """
        if not is_string(text):
            raise InvalidInputError(text)
        paragraphs = []
        for block in PARAGRAPH_BREAK_RE.split(text):
            lines = self.wrap(block)
            if lines:
                paragraphs.append("\n".join(lines))
        return "\n\n".join(paragraphs)
