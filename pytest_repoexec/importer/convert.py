"""One RepoExec problem into our format: its manifest, its test module freed of the original machine's
paths, and its pickled outputs beside it; and a whole project written at once, or not at all."""

from __future__ import annotations

import os
import pickletools
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w

from .. import syntax
from .sources import Record

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PINS = Path(__file__).with_name("pins.toml")
BASE_REQUIREMENTS = ("numpy",)  # every RepoExec test module imports it
# The original harness ran each project's tests with its repository at /input/test-apps/<name> (imports, and the
# test module beside the focal module) and at /package (the working directory); tests and pickles name both.
ORIGINAL_INPUT = "/input/test-apps"
ORIGINAL_ROOT = "/package"

_SYS_PATH = re.compile(r'^sys\.path\.insert\(1, ["\']/input/[^"\']*["\']\)\n', re.MULTILINE)
_TIMEOUT_IMPORT = re.compile(r"^import timeout_decorator\n", re.MULTILINE)
_TIMEOUT_DECORATOR = re.compile(r"^@timeout_decorator\.timeout\([^)]*\)\n", re.MULTILINE)
_OUTPUT_PATH = re.compile(r"""(["'])/output/([^"']+)\1""")
_TEST_FUNCTION = re.compile(r"^def (test_\w+)\(", re.MULTILINE)


class ConversionError(Exception):
    """A problem that cannot be converted; the message names project, problem and file."""


@dataclass
class ProjectImport:
    name: str
    pin: dict[str, Any]
    written: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def load_pins(path: Path = PINS) -> dict[str, dict[str, Any]]:
    with path.open("rb") as handle:
        return tomllib.load(handle)


def project_manifest(name: str, pin: dict[str, Any]) -> dict[str, Any]:
    manifest: dict[str, Any] = {
        "mount": f"{ORIGINAL_INPUT}/{name.split('+')[0]}",  # black+src: the repository black, import root src
        "workdir": ORIGINAL_ROOT,
        "import_root": pin.get("import_root", "."),
        "requirements": [*BASE_REQUIREMENTS, pin["pypi"], *pin.get("requirements", [])],
    }
    for key in ("python", "resolve_before", "resolve_exempt", "build_extensions"):
        if key in pin:
            manifest[key] = pin[key]
    manifest["source"] = {"pypi": pin["pypi"]}
    return manifest


def convert_test_module(record: Record) -> tuple[str, dict[str, Path]]:
    """The test module with our conventions, and the pickles it loads (name in expected/ -> data file).

    ``timeout_decorator`` goes (the engine's per-test timeout replaces it), every ``/output/...`` path becomes the
    problem's own folder, and ``import os`` comes in for those paths.
    """
    where = f"project {record.folder}, problem {record.number} ({record.where})"
    pickles: dict[str, Path] = {}

    def expected(match: re.Match[str]) -> str:
        relative = Path(match.group(2))
        name = relative.name
        if name in pickles and pickles[name].parts[-3:] != relative.parts[-3:]:
            raise ConversionError(f"{where}: two expected outputs named {name}")
        if record.outputs is None:
            raise ConversionError(f"{where}: the test loads {relative}, and no folder of expected outputs was given")
        pickles[name] = record.outputs.parent.parent.parent.parent / relative
        return f'os.path.join(os.environ["REPOEXEC_EXPECTED"], "{name}")'

    # The original sys.path line stays: the engine mounts the source at that very path (see project_manifest).
    text = _SYS_PATH.sub(lambda line: "import os\n" + line.group(0), record.test, count=1)
    text = _TIMEOUT_DECORATOR.sub("", _TIMEOUT_IMPORT.sub("", text))
    text = _OUTPUT_PATH.sub(expected, text)
    if "import os\n" not in text:
        raise ConversionError(f"{where}: the test module has no sys.path line where `import os` could go")
    return text, pickles


def _check_pickle(path: Path, where: str) -> None:
    try:
        data = path.read_bytes()
        for _ in pickletools.genops(data):  # reads the opcodes without running them
            pass
    except OSError as exc:
        raise ConversionError(f"{where}: expected output {path} cannot be read ({exc.strerror})") from None
    except Exception as exc:  # pickletools raises ValueError and others on a damaged stream
        raise ConversionError(f"{where}: expected output {path} is not a pickle ({exc})") from None


def problem_manifest(record: Record, test_count: int, pinned: dict[str, Any]) -> dict[str, Any]:
    manifest: dict[str, Any] = {
        "module": record.module,
        "entry_point": record.entry_point,
        "number": record.number,
        "test_count": test_count,
        **pinned,
    }
    manifest["reference"] = record.reference.rstrip() + "\n"
    manifest["prompt"] = {"context": {"full": record.context, **record.contexts}}
    return manifest


def write_problem(record: Record, project_folder: Path, pinned: dict[str, Any]) -> str:
    """Write one problem under ``project_folder``, with what pins.toml says of it; returns its folder name."""
    where = f"project {record.folder}, problem {record.number} ({record.where})"
    if syntax.find_function(record.reference, record.entry_point) is None:
        raise ConversionError(f"{where}: the reference does not define {record.entry_point}")
    test, pickles = convert_test_module(record)
    test_count = len(_TEST_FUNCTION.findall(test))
    if test_count == 0:
        raise ConversionError(f"{where}: the test module defines no test")
    for path in pickles.values():
        _check_pickle(path, where)
    name = f"{record.number}_{record.entry_point}"
    folder = project_folder / name
    (folder / "expected").mkdir(parents=True)
    for target, path in pickles.items():
        shutil.copyfile(path, folder / "expected" / target)
    (folder / f"test_{record.entry_point}.py").write_text(test, encoding="utf-8")
    manifest = problem_manifest(record, test_count, pinned)
    (folder / "problem.toml").write_text(tomli_w.dumps(manifest, multiline_strings=True), encoding="utf-8")
    return name


def pinned_fields(pin: dict[str, Any], number: int) -> dict[str, Any]:
    """The manifest fields pins.toml gives one problem: its known failure, its quarantined tests."""
    fields: dict[str, Any] = {}
    if str(number) in pin.get("known_failures", {}):
        fields["known_failure"] = pin["known_failures"][str(number)]
    if str(number) in pin.get("quarantine", {}):
        fields["quarantine"] = pin["quarantine"][str(number)]
    return fields


def write_project(name: str, records: list[Record], pin: dict[str, Any], out: Path) -> ProjectImport:
    """Write a project and its problems into a staging folder, then put it in place in one rename."""
    result = ProjectImport(name, pin)
    staging = out / f".importing-{name}-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        (staging / "project.toml").write_text(tomli_w.dumps(project_manifest(name, pin)), encoding="utf-8")
        for record in records:
            try:
                result.written.append(write_problem(record, staging, pinned_fields(pin, record.number)))
            except (ConversionError, LookupError, ValueError) as exc:
                result.errors.append(str(exc) if isinstance(exc, ConversionError) else
                                     f"project {name}, problem {record.number} ({record.where}): {exc}")
                shutil.rmtree(staging / f"{record.number}_{record.entry_point}", ignore_errors=True)
        final = out / name
        if final.exists():
            shutil.rmtree(final)
        staging.rename(final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return result
