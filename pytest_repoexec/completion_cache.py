"""Completions kept on disk, keyed by everything that decides them (model, prompt, sampling parameters).

Samples are independent draws, so a key holds a growing list: a run that stops halfway resumes with what it
had, and a later run with more samples asks only for the ones missing. The number of samples is therefore not
part of the key.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def cache_key(fields: Mapping[str, Any]) -> str:
    """A stable digest of JSON-serialisable fields."""
    return hashlib.sha256(json.dumps(fields, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


class CompletionCache:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> list[str]:
        """The completions stored under ``key`` (none when absent or unreadable)."""
        try:
            texts = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        return texts if isinstance(texts, list) and all(isinstance(t, str) for t in texts) else []

    def add(self, key: str, texts: list[str]) -> list[str]:
        """Append ``texts`` to what ``key`` holds, writing the file whole or not at all; the new list."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        stored = self.get(key) + list(texts)
        partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
        partial.write_text(json.dumps(stored, ensure_ascii=False), encoding="utf-8")
        os.replace(partial, path)
        return stored
