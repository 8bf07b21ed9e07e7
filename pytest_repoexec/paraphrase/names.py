"""New spellings for the benchmark's identifiers: a deterministic flip of letter case (``encode`` -> ``eNcOdE``),
the same old name always to the same new one, never onto a name the repository already uses."""

from __future__ import annotations

from . import ParaphraseError


def variants(name: str) -> list[str]:
    """The flips tried in turn: every second letter from the second, then from the first."""
    letters = [index for index, char in enumerate(name) if char.isalpha()]
    found = []
    for start in (1, 0):
        flipped = list(name)
        for index in letters[start::2]:
            flipped[index] = flipped[index].swapcase()
        candidate = "".join(flipped)
        if candidate != name and candidate not in found:
            found.append(candidate)
    return found


def choose(old: list[str], existing: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """(old name -> new name, notes on flips that were passed over); ``existing`` maps every identifier of the
    repository to the file it first occurs in. A name whose every flip is taken is a ``ParaphraseError``."""
    chosen: dict[str, str] = {}
    notes = []
    taken = set(existing)
    for name in sorted(set(old)):
        options = variants(name)
        free = [candidate for candidate in options if candidate not in taken]
        for candidate in options[:options.index(free[0])] if free else options:
            where = existing.get(candidate, "another renamed identifier")
            notes.append(f"{name}: {candidate} is already a name in {where}")
        if not free:
            raise ParaphraseError(f"collision: identifier {name!r}: every flip is taken "
                                  f"({'; '.join(notes[-len(options):]) or 'it has no letter to flip'})")
        chosen[name] = free[0]
        taken.add(free[0])
    return chosen, notes
