"""What the inner plugin tells the engine: typed records, one JSON line each, written as they happen.

Both sides import this module: the engine as ``pytest_repoexec.runtime.repoexec_protocol``, the inner plugin
as the top-level ``repoexec_protocol`` copied beside it into the runtime. It runs under the project's
interpreter, so it needs only the standard library and Python 3.8.

A stream is a ``Start`` record, then ``CollectError``, ``Collected``, ``Report`` and ``RoundOutcome`` records
in the order they happen, then ``Finish`` once the session ends. A process that dies leaves the records it
wrote (the last line perhaps cut off) and no ``Finish``. The ``Start`` record's shape never changes, so that
a stream from any version can say which version it is.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from enum import Enum
from typing import Any, Dict, Iterable, Iterator, List, Optional, Union

SCHEMA_VERSION = 2


class ErrorType(str, Enum):
    """Why a sample failed, where the engine names it; a failing test's own exception type (AssertionError,
    TypeError, ...) stays a plain string. A member compares, hashes and serialises as its value."""

    TIMEOUT = "Timeout"  # a test past its limit, or the whole sample past its wall-clock limit
    EARLY_EXIT = "EarlyExit"  # the test process ended before its session did
    SYNTAX_ERROR = "SyntaxError"  # the candidate, or the module with it in place, does not parse
    EMPTY_COMPLETION = "EmptyCompletion"
    SKIPPED = "Skipped"
    TEST_COUNT_MISMATCH = "TestCountMismatch"  # fewer or more tests ran than the problem declares
    COLLECTION_ERROR = "CollectionError"  # a collection failure whose exception could not be named
    ERROR = "Error"  # a failure whose exception could not be named
    # A limit that ended a test, or the whole sample (see sandbox.Limits):
    MEMORY_LIMIT = "MemoryLimit"  # MemoryError under the address-space limit
    PROCESS_LIMIT = "ProcessLimit"  # fork or spawn refused under the process limit
    OUTPUT_LIMIT = "OutputLimit"  # more stdout and stderr than allowed: the engine stopped the sample
    CPU_LIMIT = "CPULimit"  # the test process used up its CPU time (SIGXCPU)
    FILE_SIZE_LIMIT = "FileSizeLimit"  # a file past the largest allowed (SIGXFSZ, or EFBIG)
    DISK_LIMIT = "DiskLimit"  # the sample's tmpfs is full (ENOSPC)
    OPEN_FILES_LIMIT = "OpenFilesLimit"  # EMFILE
    TAMPERED = "Tampered"  # a grader game: a forged verdict stream, patched pytest internals, an always-equal value

    def __str__(self) -> str:
        return self.value


def error_type_of(name: Optional[str]) -> Union[ErrorType, str, None]:
    """The engine's own kind where ``name`` is one, else the exception's type name as it is."""
    try:
        return ErrorType(name)
    except ValueError:
        return name


@dataclass(frozen=True)
class Start:
    """The first record: which schema the rest of the stream follows."""

    schema: int = SCHEMA_VERSION


@dataclass(frozen=True)
class CollectError:
    nodeid: str
    error_type: str
    message: str
    longrepr: str


@dataclass(frozen=True)
class Collected:
    """Written once collection ends, so that a run that dies later still says how many tests it left out."""

    collected: int  # tests to run, the deselected ones left out
    deselected: int  # quarantined tests left out
    token: str  # the run's secret, read by the inner plugin before any candidate code ran


@dataclass(frozen=True)
class Report:
    """One phase of one test in the first round, as pytest reported it."""

    nodeid: str
    when: str  # setup, call or teardown
    outcome: str  # passed, failed or skipped
    duration: float
    error_type: Optional[str] = None  # a failure's: an ErrorType value or the exception's type name
    message: Optional[str] = None  # a failure's message, or a skip's reason
    longrepr: Optional[str] = None  # a failure's traceback, as pytest renders it


@dataclass(frozen=True)
class RoundOutcome:
    """A test's outcome in a later round of reruns, written when its teardown ends."""

    round: int
    nodeid: str
    outcome: str  # passed, failed or skipped


@dataclass(frozen=True)
class Finish:
    """The last record: the session reached its end."""

    exitstatus: int
    unstable: List[List[Any]]  # [test name, assertion site] whose values changed between rounds
    captures: List[Dict[str, Any]]  # {"test", "site", "occurrences"}: the first round's assertion values
    coverage: Optional[Dict[str, Any]]  # coverage.py's figures for the measured file
    token: str  # as in Collected: the engine believes no Finish without it


Record = Union[Start, CollectError, Collected, Report, RoundOutcome, Finish]
KINDS = {"start": Start, "collect_error": CollectError, "collected": Collected, "report": Report,
         "round": RoundOutcome, "finish": Finish}
_KIND_OF = {cls: kind for kind, cls in KINDS.items()}
_FIELDS = {cls: tuple(field.name for field in fields(cls)) for cls in KINDS.values()}
_NAMES = {cls: frozenset(names) for cls, names in _FIELDS.items()}  # what decoding a record checks its keys against


class ProtocolError(Exception):
    """A line that is not a record of this schema."""


class SchemaMismatch(ProtocolError):
    """The stream was written by an inner plugin of another schema version (a stale runtime)."""

    def __init__(self, found: Any) -> None:
        written = "no schema version (an older inner plugin)" if found is None else f"schema {found}"
        super().__init__(f"the inner plugin wrote {written}; this engine reads schema {SCHEMA_VERSION}")
        self.found = found


def encode(record: Record) -> str:
    """The record as one line of JSON, its newline included (ASCII only, so a line never holds another)."""
    kind = type(record)  # its fields, taken as they are (``asdict`` copies each value deeply: a test's cost)
    return json.dumps({"kind": _KIND_OF[kind], **{name: getattr(record, name) for name in _FIELDS[kind]}}) + "\n"


def decode(line: str) -> Record:
    try:
        data = json.loads(line)
    except ValueError as exc:
        raise ProtocolError(f"not a JSON line: {exc}: {line[:200]!r}") from None
    if not isinstance(data, dict) or data.get("kind") not in KINDS:
        raise ProtocolError(f"not a record: {line[:200]!r}")
    cls = KINDS[data.pop("kind")]
    if data.keys() != _NAMES[cls]:
        raise ProtocolError(f"a {cls.__name__} record with fields {sorted(data)}; expected {sorted(_NAMES[cls])}")
    return cls(**data)


def read(lines: Iterable[str]) -> Iterator[Record]:
    """The records of a stream (lines as a file gives them), checked against this schema, as they are read:
    a reader keeps the records before a bad line. A last line cut off mid-write is left out.

    Raises SchemaMismatch when the stream does not start with this schema's ``Start`` record, and
    ProtocolError for any other line that is not a record.
    """
    first = True
    for line in lines:
        if not line.endswith("\n") and not _complete(line):
            return  # the process died while writing it: only the last line can lack its newline
        if first:
            _check_start(line)
            first = False
        yield decode(line)


def _complete(line: str) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


def _check_start(line: str) -> None:
    try:
        data = json.loads(line)
    except ValueError:
        return  # decode says what is wrong with it
    if not (isinstance(data, dict) and data.get("kind") == "start"):
        raise SchemaMismatch(None)
    if data.get("schema") != SCHEMA_VERSION:
        raise SchemaMismatch(data.get("schema"))
