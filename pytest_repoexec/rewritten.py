"""The tests' module as pytest's assertion rewriting makes it, compiled once by the engine.

A sample's pytest rewrites the asserts of its test module before it runs it: for RepoExec's modules of hundreds
of asserts on large literals that took a quarter to half a second of every sample. The engine makes the same
code once per test source and shows it to each sample where pytest's own cache would hold it
(``__pycache__/NAME.<tag>-pytest-<version>.pyc`` beside the module), with the header pytest's own cache writes
(the module's time and size; from pytest 9.2 on, a checked hash of its source); the sample's pytest loads it
instead of rewriting. The real and the decoy runs each get theirs, made the same way, and a pytest of another
version (another tag) simply rewrites as before.

Made once means once for all runs: rewriting takes the engine a third of a second a module (RepoExec's 388, and
their decoys, cost each run some four minutes of processor time), so the code is kept in the cache by content.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import inspect
import io
import os
import tempfile
import types
from pathlib import Path, PurePosixPath

import pytest
from _pytest.assertion.rewrite import PYC_TAIL, _write_pyc_fp, rewrite_asserts

TREE_MTIME = 0  # the modification time of every file of a sample's tree, which the pyc's header names


def cache_path(test: PurePosixPath) -> PurePosixPath:
    """Where pytest looks for the rewritten code of the test module ``test``."""
    return test.parent / "__pycache__" / f"{test.stem}{PYC_TAIL}"


@functools.lru_cache(maxsize=32)
def rewritten_pyc(source: bytes, filename: str, kept: Path | None = None) -> bytes:
    """The pyc pytest would write for ``source`` imported from ``filename`` (as the sample sees it: the code's
    file name is part of what is compiled); read from, or else written to, the folder ``kept``."""
    if kept is None:
        return _rewrite(source, filename)
    key = hashlib.sha256(b"\0".join([pytest.__version__.encode(), importlib.util.MAGIC_NUMBER, filename.encode(),
                                     source])).hexdigest()
    path = kept / f"{key}.pyc"
    try:
        return path.read_bytes()
    except FileNotFoundError:
        pass
    pyc = _rewrite(source, filename)
    try:
        kept.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=kept, prefix=f".{key}-", delete=False) as handle:
            handle.write(pyc)
        os.replace(handle.name, path)  # whole, or not there
    except OSError:  # a full or read-only cache: made again next time
        pass
    return pyc


def _rewrite(source: bytes, filename: str) -> bytes:
    tree = ast.parse(source, filename=filename)
    rewrite_asserts(tree, source, filename, None)
    code = compile(tree, filename, "exec", dont_inherit=True)
    pyc = io.BytesIO()
    if "source_hash" in inspect.signature(_write_pyc_fp).parameters:  # pytest 9.2 on: a hash-based pyc
        _write_pyc_fp(pyc, importlib.util.source_hash(source), code)
    else:  # a pyc that names the source's time and size
        _write_pyc_fp(pyc, types.SimpleNamespace(st_mtime=TREE_MTIME, st_size=len(source)), code)
    return pyc.getvalue()
