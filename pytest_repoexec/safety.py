"""Scanning a problem's reference solution and tests for destructive or machine-dependent operations.

A problem is admitted only if evaluating it cannot harm the machine or depend on it, so anything found
here fails the gate unless the problem's manifest allows that kind. The scan is static and goes by name,
so its rules are narrow, to keep false positives low:

- A call's name is resolved through import aliases (``import os as o``, ``from shutil import rmtree as r``);
  a name never imported stands for itself, since a reference function comes without its module's imports.
- delete-files: ``os.remove/unlink/rmdir/removedirs/truncate``, ``shutil.rmtree/move``, and any
  ``.unlink()`` or ``.rmdir()`` method (pathlib); not ``.remove()``, which is mostly ``list.remove``.
- kill-process: ``os.kill/killpg``, ``signal.*kill*``, and ``.kill()/.terminate()/.send_signal()`` on
  something reached from ``psutil``; the same methods on an unknown object (often one's own child) are not.
- exit: ``sys.exit``, ``os._exit``, ``os.abort``, ``exit()``, ``quit()``, ``raise SystemExit``.
- shell: ``os.system/popen/exec*/spawn*/posix_spawn*``, subprocess's runners (not its exception classes),
  ``pty.spawn``, ``asyncio.create_subprocess_*``, ``commands.getoutput/getstatusoutput``.
- network: any call into socket, urllib.request, http.client, requests, httpx, aiohttp, ftplib, smtplib,
  telnetlib or urllib3; importing them is not.
- absolute-path: a literal absolute POSIX or Windows path (or an f-string or ``+`` that starts with one;
  looked for inside list and tuple arguments and ``os.path.join`` calls) passed to a call that touches files:
  ``open``, ``io.open``, ``os``/``shutil``/``glob`` functions, ``os.path`` queries such as ``exists``,
  concrete pathlib paths, and the delete and shell calls above. Pure path work (``os.path.join``,
  ``PurePath``) and strings used as data (compared, given to the function under test) are not findings;
  neither are docstrings or comments.
"""

from __future__ import annotations

import ast
import re
import textwrap
import warnings
from collections.abc import Iterator
from dataclasses import dataclass

KINDS = ("delete-files", "kill-process", "exit", "shell", "network", "absolute-path")

_DELETE = {"os.remove", "os.unlink", "os.rmdir", "os.removedirs", "os.truncate", "shutil.rmtree", "shutil.move"}
_DELETE_METHODS = {"unlink", "rmdir"}
_KILL = {"os.kill", "os.killpg"}
_KILL_METHODS = {"kill", "terminate", "send_signal"}
_EXIT = {"sys.exit", "os._exit", "os.abort", "exit", "quit", "builtins.exit", "builtins.quit"}
_SHELL = {
    "os.system", "os.popen", "os.posix_spawn", "os.posix_spawnp", "pty.spawn",
    "subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output",
    "subprocess.getoutput", "subprocess.getstatusoutput", "subprocess.Popen",
    "asyncio.create_subprocess_exec", "asyncio.create_subprocess_shell",
    "commands.getoutput", "commands.getstatusoutput",
}
_SHELL_PREFIXES = ("os.exec", "os.spawn")
_NETWORK_PREFIXES = tuple(f"{module}." for module in (
    "socket", "urllib.request", "http.client", "requests", "httpx", "aiohttp", "ftplib", "smtplib", "telnetlib",
    "urllib3",
))
_FILE_CALLS = {
    "open", "builtins.open", "io.open",
    "Path", "PosixPath", "WindowsPath", "pathlib.Path", "pathlib.PosixPath", "pathlib.WindowsPath",
}
_FILE_MODULES = {"os", "shutil", "glob"}
_PURE_OS = {"getenv", "putenv", "fspath", "fsencode", "fsdecode"}
_FILE_QUERIES = {"exists", "lexists", "isfile", "isdir", "islink", "ismount", "samefile",
                 "getsize", "getmtime", "getatime", "getctime"}
_JOINS = {"os.path.join", "posixpath.join", "ntpath.join"}
_ABSOLUTE = re.compile(r"/|[A-Za-z]:[\\/]|\\\\")  # POSIX, drive letter, UNC


@dataclass(frozen=True)
class Finding:
    kind: str  # one of KINDS
    what: str  # the call as resolved or written, or the path literal as written
    file: str  # the label the caller gave
    line: int  # 1-based, in the file the source comes from

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.kind}: {self.what}"


def scan(source: str, label: str, first_line: int = 1) -> list[Finding]:
    """Findings in source order. `first_line` is the line number of the source's first line in its file (a
    reference function is a piece of a bigger module). Source that does not parse raises SyntaxError."""
    with warnings.catch_warnings():  # old test modules have invalid escapes: not a finding
        warnings.simplefilter("ignore")
        tree = ast.parse(textwrap.dedent(source))  # a method's source comes indented
    aliases = _aliases(tree)
    found: list[tuple[ast.expr | ast.stmt, str, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None and _raises_system_exit(node.exc, aliases):
            found.append((node, "exit", "SystemExit"))
        elif isinstance(node, ast.Call):
            found.extend(_call_findings(node, aliases))
    found.sort(key=lambda item: (item[0].lineno, item[0].col_offset))  # ast.walk goes breadth-first
    return [Finding(kind, what, label, node.lineno + first_line - 1) for node, kind, what in found]


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> the dotted name it was imported as, from imports anywhere in the source."""
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases.update((alias.asname, alias.name) for alias in node.names if alias.asname)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            aliases.update((alias.asname or alias.name, f"{node.module}.{alias.name}") for alias in node.names)
    return aliases


def _dotted(expr: ast.expr, aliases: dict[str, str]) -> str:
    """The resolved name of a chain like ``o.path.exists``; empty when `expr` is not such a chain."""
    if isinstance(expr, ast.Name):
        return aliases.get(expr.id, expr.id)
    if isinstance(expr, ast.Attribute):
        base = _dotted(expr.value, aliases)
        return base and f"{base}.{expr.attr}"
    return ""


def _root_module(expr: ast.expr, aliases: dict[str, str]) -> str:
    """The top-level module a chain of attributes, calls and subscripts starts from: ``psutil.Process(p).kill``."""
    while isinstance(expr, (ast.Attribute, ast.Call, ast.Subscript)):
        expr = expr.func if isinstance(expr, ast.Call) else expr.value
    return _dotted(expr, aliases).split(".")[0]


def _raises_system_exit(exc: ast.expr, aliases: dict[str, str]) -> bool:
    name = _dotted(exc.func if isinstance(exc, ast.Call) else exc, aliases)
    return name in ("SystemExit", "builtins.SystemExit")


def _call_kind(call: ast.Call, name: str, aliases: dict[str, str]) -> str | None:
    method = call.func.attr if isinstance(call.func, ast.Attribute) else None
    if name in _DELETE or method in _DELETE_METHODS:
        return "delete-files"
    if (name in _KILL or re.fullmatch(r"signal\.\w*kill\w*", name)
            or (method in _KILL_METHODS and _root_module(call.func, aliases) == "psutil")):
        return "kill-process"
    if name in _EXIT:
        return "exit"
    if name in _SHELL or name.startswith(_SHELL_PREFIXES):
        return "shell"
    if name.startswith(_NETWORK_PREFIXES):
        return "network"
    return None


def _touches_files(name: str) -> bool:
    module, _, function = name.rpartition(".")
    return (name in _FILE_CALLS or (module in _FILE_MODULES and function not in _PURE_OS)
            or (module == "os.path" and function in _FILE_QUERIES))


def _call_findings(call: ast.Call, aliases: dict[str, str]) -> Iterator[tuple[ast.expr, str, str]]:
    name = _dotted(call.func, aliases)
    kind = _call_kind(call, name, aliases)
    if kind:
        yield call, kind, name or ast.unparse(call.func)
    if kind in ("delete-files", "shell") or _touches_files(name):
        for argument in _arguments(call, aliases):
            text = _leading_text(argument)
            if text is not None and _ABSOLUTE.match(text):
                yield argument, "absolute-path", ast.unparse(argument)


def _arguments(call: ast.Call, aliases: dict[str, str]) -> Iterator[ast.expr]:
    """A call's arguments, looking into lists and tuples (argv) and into ``os.path.join`` (a path being built)."""
    for argument in [*call.args, *(keyword.value for keyword in call.keywords)]:
        if isinstance(argument, ast.Starred):
            argument = argument.value
        if isinstance(argument, (ast.List, ast.Tuple)):
            yield from argument.elts
        elif isinstance(argument, ast.Call) and _dotted(argument.func, aliases) in _JOINS:
            yield from _arguments(argument, aliases)
        else:
            yield argument


def _leading_text(expr: ast.expr) -> str | None:
    """The literal text an argument starts with: a string, an f-string's first piece, or a ``+``'s left end."""
    while isinstance(expr, ast.BinOp):
        expr = expr.left
    if isinstance(expr, ast.JoinedStr) and expr.values:
        expr = expr.values[0]
    return expr.value if isinstance(expr, ast.Constant) and isinstance(expr.value, str) else None
