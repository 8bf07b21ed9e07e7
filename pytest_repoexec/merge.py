"""``repoexec merge SHARD.json... --out RUN.json [--html PAGE]``: the shards of one run (``--repoexec-shard``)
joined into the report a single run would have written.

Every shard is checked before anything is written: each must be a complete scoring report of a shard, of the
same run as the first (engine, generator and every option but where it ran and wrote, the same problem set),
each shard once, none missing, each holding only its own problems. The merged metrics are computed from the
samples as a single run's are; pass@k of a problem needs all its samples, which a shard of whole problems holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .debugging import Revision, Round
from .document import ENGINE_KEYS, debugging_section, load, samples_of, scoring_document, write_json, write_text
from .results import SampleResult
from .runs import PLACE_OPTIONS
from .shard import OPTION, Shard, shard_of


class MergeError(ValueError):
    """Shards that do not make one run; the message names the file, or the shard that is missing."""


@dataclass(frozen=True)
class _Part:
    path: Path
    document: dict[str, Any]
    shard: Shard
    problems: list[str]  # the whole run's


def merge(paths: Sequence[Path], out: Path, html: Path | None = None) -> dict[str, Any]:
    """Check the shards, then write the merged report (and page); nothing is written when a check fails."""
    parts = [_read(path) for path in paths]
    _check_one_run(parts)
    document = _merged(parts, out, html)
    if html is None:
        write_json(out, document)
        return document
    from .htmlreport import render_html  # matplotlib and the template load only when a page is asked for

    page = render_html(document)  # made before anything is written
    write_json(out, document)
    write_text(html, page)
    return document


def _read(path: Path) -> _Part:
    document = load(path)
    section = document.get("shard")
    if section is None:
        raise MergeError(f"{path}: is the report of a whole run, not of a shard ({OPTION}): nothing to merge")
    try:
        shard = Shard(int(section["index"]), int(section["count"]))
        problems = [str(problem) for problem in section["problems"]]
        samples = int(section["samples"])
    except (TypeError, KeyError, ValueError) as exc:
        raise MergeError(f"{path}: its 'shard' is not index, count, samples and problems ({exc!r}; edited?)") from None
    unknown = sorted(set(document) - set(ENGINE_KEYS))
    if unknown:
        raise MergeError(f"{path}: holds sections that a plugin added ({', '.join(unknown)}), which merge cannot "
                         "join: score such a run unsharded")
    given = sum(len(document.get(key) or []) for key in ("samples", "known_failures", "not_run"))
    if given != samples:
        raise MergeError(f"{path}: holds {given} of shard {shard}'s {samples} samples: its job stopped before the "
                         "last (interrupted, or -x/--maxfail); run the shard again")
    return _Part(path, document, shard, problems)


def _identity(part: _Part) -> dict[str, Any]:
    """What the shards of one run share, by what the error names."""
    document = part.document
    return {
        "the engine": document.get("engine"),
        **{f"--{name.replace('_', '-')}": value for name, value in sorted(document["settings"].items())
           if name not in PLACE_OPTIONS},
        "the number of shards": part.shard.count,
        "the problem set": part.problems,
    }


def _check_one_run(parts: list[_Part]) -> None:
    first = parts[0]
    expected = _identity(first)
    for part in parts[1:]:
        found = _identity(part)
        differing = [name for name in {**expected, **found} if expected.get(name) != found.get(name)]
        if differing:
            shown = "; ".join(f"{name}: {_brief(found.get(name))} here, {_brief(expected.get(name))} there"
                              for name in differing[:3])
            raise MergeError(f"{part.path}: is not a shard of the run of {first.path} ({shown})")
    seen: dict[int, Path] = {}
    owner: dict[str, Path] = {}
    for part in parts:
        if part.shard.index in seen:
            raise MergeError(f"{part.path}: is shard {part.shard} again ({seen[part.shard.index]} is too): "
                             "each shard once")
        seen[part.shard.index] = part.path
        for key in ("samples", "known_failures"):
            for problem in sorted({str(entry.get("problem")) for entry in part.document.get(key) or []
                                   if isinstance(entry, dict)}):
                if problem in owner and owner[problem] != part.path:
                    raise MergeError(f"{part.path}: holds {problem}, which {owner[problem]} holds too")
                owner[problem] = part.path
                if problem not in first.problems or shard_of(problem, part.shard.count) != part.shard.index:
                    raise MergeError(f"{part.path}: holds {problem}, which is not shard {part.shard}'s "
                                     "(edited, or made by another engine?)")
    count = first.shard.count
    missing = [index for index in range(count) if index not in seen]
    if missing:
        lost = [problem for problem in first.problems if shard_of(problem, count) in missing]
        raise MergeError(f"shard {', '.join(f'{index}/{count}' for index in missing)} of the run of {first.path} "
                         f"is missing: {len(lost)} of its {len(first.problems)} problems are in none of the files "
                         f"given ({', '.join(lost[:5])}{', ...' if len(lost) > 5 else ''})")


def _brief(value: Any) -> str:
    if isinstance(value, list):
        return f"{len(value)} problems"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _merged(parts: list[_Part], out: Path, html: Path | None) -> dict[str, Any]:
    first = parts[0].document
    settings = first["settings"] | {"repoexec_shard": None, "repoexec_report": str(out),
                                    "repoexec_html": None if html is None else str(html)}
    head = {key: first[key] for key in ("sandbox", "format", "engine") if key in first}
    head |= {"settings": settings, "executor": first.get("executor"), "model": first["model"]}
    results = [result for part in parts for result in samples_of(part.path, part.document["samples"])]
    known = [result for part in parts
             for result in samples_of(part.path, part.document.get("known_failures", []), "known_failures")]
    not_run = [entry for part in parts for entry in part.document.get("not_run", [])]
    debugged = any("debugging" in part.document for part in parts)
    return scoring_document(head, results, known, not_run, _debugging(parts, results) if debugged else None)


def _debugging(parts: list[_Part], results: list[SampleResult]) -> dict[str, Any]:
    """The rounds again, over the whole run: each sample's standing after round r is its first verdict, or its
    latest revision up to r (the revisions are in the shards' reports)."""
    revisions = sorted(
        (Revision(int(entry["round"]), str(entry["completion"]),
                  SampleResult.from_dict({k: v for k, v in entry.items() if k not in ("round", "completion")}))
         for part in parts for entry in (part.document.get("debugging") or {}).get("revisions", [])),
        key=lambda revision: (revision.round, revision.result.problem, revision.result.sample))
    rounds = max((len((part.document.get("debugging") or {}).get("rounds", [])) for part in parts), default=0)
    standing = {(r.problem, r.sample): r for r in results}
    made = []
    for number in range(rounds):
        these = [revision for revision in revisions if revision.round == number]
        standing |= {(r.result.problem, r.result.sample): r.result for r in these}
        made.append(Round(number, tuple(standing.values()), len(these), sum(r.result.passed for r in these)))
    errors = [(part.document.get("debugging") or {}).get("error") for part in parts]
    return debugging_section(made, revisions, next((error for error in errors if error), None))
