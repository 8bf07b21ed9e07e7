"""Sphinx extension: the reference pages that are generated from the code at build time, so they cannot drift.

``{repoexec-options}`` lists every ``--repoexec-*`` option (and ini value) that the plugin's pytest11 entry points
add, read from pytest's own parser after each plugin's ``pytest_addoption`` ran, grouped by the plugin that added
it; ``{repoexec-inner-options}`` the options of the plugins the engine loads inside a sample or a suite run;
``{repoexec-cli}`` every ``repoexec`` command and argument, read from the argparse parser ``repoexec`` builds.

Each option becomes a Sphinx ``option`` (program ``pytest``, or ``repoexec <command>``), so pages can link one with
``{option}`pytest --repoexec-model``` and a link to an option that does not exist fails the build (``-n -W``).
"""

from __future__ import annotations

import argparse
import ast
import inspect
import re
from dataclasses import dataclass, field
from importlib import import_module
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any
from unittest import mock

from docutils.parsers.rst import Directive
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

DISTRIBUTION = "pytest-repoexec"
# What loads each plugin that runs inside a sample's or a suite's pytest (found by ``inner_plugins``); a new one is
# described by its module docstring's first line until it is named here.
INNER_PLUGINS = {
    "pytest_repoexec/runtime/repoexec_inner.py": "the engine's plugin inside a sample's pytest",
    "pytest_repoexec/builder/repoexec_suite.py": "the builder's plugin inside the project's suite run",
    "pytest_repoexec/paraphrase/repoexec_trace.py": "paraphrase's tracing plugin inside the project's suite run",
}


@dataclass
class Option:
    names: list[str]
    attrs: dict[str, Any]


@dataclass
class Plugin:
    entry_point: str  # the pytest11 name (-p no:NAME disables it)
    module: str
    options: list[Option] = field(default_factory=list)
    ini: list[tuple[str, str, str, Any]] = field(default_factory=list)  # name, help, type, default


def _all_options(parser) -> dict[str, Any]:
    found = {}
    for group in [*parser._groups, parser._anonymous]:
        for option in group.options:
            found[option.names()[0]] = option
    return found


def plugin_options() -> list[Plugin]:
    """Every option and ini value the distribution's pytest11 plugins add, as pytest itself collects them: the
    plugins are registered one by one on a real pytest config, each ``pytest_addoption`` runs, and what is new
    after each registration is that plugin's."""
    from _pytest.config import get_config

    config = get_config()
    manager = config.pluginmanager
    parser = config._parser
    plugins = []
    for point in sorted((point for point in entry_points(group="pytest11") if point.dist
                         and point.dist.name == DISTRIBUTION), key=lambda point: (point.name != "repoexec", point.name)):
        before, ini_before = set(_all_options(parser)), set(parser._inidict)
        manager.register(point.load(), point.name)
        plugin = Plugin(point.name, point.value)
        for name, option in _all_options(parser).items():
            if name not in before:
                plugin.options.append(Option(option.names(), option.attrs()))
        for name in parser._inidict:
            if name not in ini_before:
                help_text, kind, default = parser._inidict[name][:3]
                plugin.ini.append((name, help_text, kind, default))
        plugins.append(plugin)
    if not plugins:
        raise RuntimeError(f"no pytest11 entry point of {DISTRIBUTION}: install it (pip install -e '.[docs]')")
    return plugins


def inner_plugins(root: Path) -> list[tuple[str, str, ast.FunctionDef]]:
    """Every module of the package that defines ``pytest_addoption`` and is not one of the distribution's
    pytest11 entry points: the plugins the engine loads into the pytest it starts."""
    entry = {point.value.replace(".", "/") + ".py" for point in entry_points(group="pytest11")}
    found = []
    for source in sorted((root / "pytest_repoexec").rglob("*.py")):
        path = source.relative_to(root).as_posix()
        tree = ast.parse(source.read_text())
        hook = next((node for node in tree.body if isinstance(node, ast.FunctionDef)
                     and node.name == "pytest_addoption"), None)
        if hook is None or path in entry:
            continue
        docstring = (ast.get_docstring(tree) or path).split("\n")[0].rstrip(".")
        found.append((path, INNER_PLUGINS.get(path, docstring), hook))
    return found


def inner_options(root: Path) -> list[tuple[str, str, list[Option]]]:
    """The options of the plugins that run inside a sample's or a suite's pytest. They import what only exists
    there (their siblings on ``sys.path``, coverage started at import), so their ``pytest_addoption`` is taken
    from the source and run alone on a fresh pytest parser; where it needs more than ``pytest`` to run, its
    ``addoption`` calls are read from the source instead (names and literal arguments)."""
    import pytest
    from _pytest.config.argparsing import Parser

    found = []
    for path, what, hook in inner_plugins(root):
        namespace: dict[str, Any] = {"pytest": pytest}
        try:
            exec(compile(ast.Module([hook], []), str(root / path), "exec"), namespace)
            parser = Parser(_ispytest=True)
            namespace["pytest_addoption"](parser)
            options = [Option(option.names(), option.attrs()) for option in _all_options(parser).values()]
        except Exception:  # noqa: BLE001 - the hook needs the module around it: read its calls instead
            options = _read_addoption_calls(hook)
        found.append((path, what, options))
    return found


def _read_addoption_calls(hook: ast.FunctionDef) -> list[Option]:
    options = []
    for node in ast.walk(hook):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "addoption":
            names = [arg.value for arg in node.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
            attrs: dict[str, Any] = {"dest": names[0].lstrip("-").replace("-", "_") if names else "value"}
            for keyword in node.keywords:
                if isinstance(keyword.value, ast.Constant):
                    attrs[keyword.arg] = keyword.value.value
                elif isinstance(keyword.value, ast.Name):
                    attrs[keyword.arg] = {"int": int, "float": float, "str": str}.get(keyword.value.id, keyword.value.id)
            if names:
                options.append(Option(names, attrs))
    return options


class _Parsed(Exception):
    pass


def cli_parser() -> argparse.ArgumentParser:
    """The parser ``repoexec`` (``pytest_repoexec.cli.main``) builds, caught where it would parse the arguments."""
    cli = import_module("pytest_repoexec.cli")

    def catch(self, *args, **kwargs):
        raise _Parsed(self)

    with mock.patch.object(argparse.ArgumentParser, "parse_args", catch):
        try:
            cli.main([])
        except _Parsed as parsed:
            return parsed.args[0]
    raise RuntimeError("pytest_repoexec.cli.main did not parse its arguments")


# ---- rendering as MyST, parsed in place by the page's own parser ----

def _escape(text: str) -> str:
    return text.replace("*", r"\*").replace("_", r"\_").replace("<", r"\<").replace("`", r"\`")


def _value(option: Option) -> str:
    attrs = option.attrs
    if attrs.get("action") in ("store_true", "store_false", "count"):
        return ""
    if attrs.get("choices"):
        return "=" + "|".join(str(choice) for choice in attrs["choices"])
    return "=" + (attrs.get("metavar") or attrs.get("dest", "VALUE").upper())


def _facts(option: Option) -> str:
    attrs = option.attrs
    facts = []
    action = attrs.get("action")
    if action in ("store_true", "store_false"):
        facts.append("a flag")
    elif action == "append":
        facts.append("may be given more than once")
    kind = attrs.get("type")
    if kind is not None and action not in ("store_true", "store_false"):
        facts.append(f"type `{getattr(kind, '__name__', kind)}`")
    if attrs.get("choices"):
        facts.append("one of " + ", ".join(f"`{choice}`" for choice in attrs["choices"]))
    if action not in ("store_true", "store_false"):
        default = attrs.get("default")
        facts.append(f"default `{default!r}`" if default not in (None, [], "") else "no default")
    if attrs.get("required"):
        facts.append("required")
    return "; ".join(facts)


def _option_block(program_names: list[str], option: Option) -> list[str]:
    signature = ", ".join(name + _value(option) for name in program_names)
    help_text = option.attrs.get("help") or ""
    return [f"```{{option}} {signature}", _escape(help_text.replace("%%", "%")), "", f"*{_facts(option)}*", "```", ""]


class OptionsDirective(SphinxDirective):
    """Every ``--repoexec-*`` option of the plugin's pytest11 entry points, by plugin."""

    has_content = False

    def run(self):
        lines = ["```{program} pytest", "```", ""]
        for plugin in plugin_options():
            if not plugin.options and not plugin.ini:
                continue
            source = inspect.getsourcefile(import_module(plugin.module))
            relative = Path(source).resolve().relative_to(Path(self.env.srcdir).parent.resolve())
            lines += [f"## `{plugin.module}`", "",
                      f"Added by the `{plugin.entry_point}` plugin (`{relative}`; `-p no:{plugin.entry_point}` "
                      f"leaves it out), {len(plugin.options)} option{'s' if len(plugin.options) != 1 else ''}.", ""]
            for option in plugin.options:
                lines += _option_block(option.names, option)
            for name, help_text, kind, default in plugin.ini:
                lines += [f"```{{confval}} {name}", f":type: `{kind}`", f":default: `{default!r}`", "",
                          "An ini value (`[pytest]` section of `pytest.ini`, or `tox.ini`, `setup.cfg`, "
                          "`pyproject.toml`): " + _escape(help_text), "```", ""]
        return self.parse_text_to_nodes("\n".join(lines), allow_section_headings=True)


class InnerOptionsDirective(SphinxDirective):
    """The options of the plugins the engine loads inside a sample's or a suite's pytest (not for users)."""

    has_content = False

    def run(self):
        root = Path(self.env.srcdir).parent
        lines = []
        for path, what, options in inner_options(root):
            program = Path(path).stem
            lines += [f"### `{path}`", "", f"{what[0].upper()}{what[1:]}.", "", f"```{{program}} {program}", "```", ""]
            for option in options:
                lines += _option_block(option.names, option)
        return self.parse_text_to_nodes("\n".join(lines), allow_section_headings=True)


def _argument_lines(program: str, parser: argparse.ArgumentParser, depth: int) -> list[str]:
    lines = [f"{'#' * depth} `{program}`", ""]
    if parser.description and depth > 2:
        lines += [_escape(parser.description), ""]
    usage = parser.format_usage().strip().removeprefix("usage: ")
    lines += ["```text", usage, "```", "", f"```{{program}} {program}", "```", ""]
    subcommands = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        if isinstance(action, argparse._SubParsersAction):
            subcommands.append(action)
            continue
        names = action.option_strings or [action.metavar or action.dest]
        option = Option(list(names), {
            "action": {argparse._StoreTrueAction: "store_true", argparse._StoreFalseAction: "store_false",
                       argparse._AppendAction: "append"}.get(type(action)),
            "type": action.type, "choices": action.choices, "default": action.default,
            "required": action.required and bool(action.option_strings),
            "help": parser._get_formatter()._expand_help(action) if action.help else "",  # %(default)s and the like
            "metavar": action.metavar or (action.dest.upper() if action.option_strings else None),
            "dest": action.dest})
        if not action.option_strings:
            option.attrs["metavar"] = None
            lines += [f"```{{option}} {names[0]}", _escape(option.attrs["help"]), "",
                      f"*positional{'; one or more' if action.nargs == '+' else ''}*", "```", ""]
        else:
            lines += _option_block(option.names, option)
    for action in subcommands:
        helps = {choice.dest: choice.help for choice in action._choices_actions}
        for name, subparser in action.choices.items():
            sub_lines = _argument_lines(f"{program} {name}", subparser, depth + 1)
            if helps.get(name):
                sub_lines[1:1] = ["", _escape(helps[name][0].upper() + helps[name][1:]) + "."]
            lines += sub_lines
    return lines


class CliDirective(SphinxDirective):
    """Every ``repoexec`` command and its arguments, from the argparse parser the command builds."""

    has_content = False

    def run(self):
        return self.parse_text_to_nodes("\n".join(_argument_lines("repoexec", cli_parser(), 2)),
                                        allow_section_headings=True)


class ErrorTypesDirective(SphinxDirective):
    """The engine's own error types: the members of ``ErrorType`` with the comment beside each in the source."""

    has_content = False

    def run(self):
        protocol = Path(self.env.srcdir).parent / "pytest_repoexec/runtime/repoexec_protocol.py"
        source = protocol.read_text()
        body = source[source.index("class ErrorType"):]
        body = body[:body.index("def __str__")]
        lines = ["| error type | when |", "| --- | --- |"]
        for match in re.finditer(r'^    [A-Z_]+ = "(\w+)"(?:  # (.*))?$', body, re.MULTILINE):
            lines.append(f"| `{match[1]}` | {_escape(match[2] or '').replace('|', '/')} |")
        return self.parse_text_to_nodes("\n".join(lines))


class HooksDirective(SphinxDirective):
    """The plugin's own hooks (``pytest_repoexec/hookspecs.py``): each one's signature and docstring."""

    has_content = False

    def run(self):
        hookspecs = import_module("pytest_repoexec.hookspecs")
        lines = []
        for name, function in inspect.getmembers(hookspecs, inspect.isfunction):
            if not name.startswith("pytest_repoexec_") or function.__module__ != hookspecs.__name__:
                continue
            signature = inspect.signature(function, eval_str=False)
            lines += [f"## `{name}`", "", "```python", f"def {name}{signature}", "```", "",
                      re.sub(r":\w+:`([^`]+)`", r"`\1`", inspect.cleandoc(function.__doc__ or "").replace("``", "`")), ""]
        return self.parse_text_to_nodes("\n".join(lines), allow_section_headings=True)


class FieldsDirective(SphinxDirective):
    """The fields of a dataclass, each with its type and the comment beside it in the source:
    ``{repoexec-fields} pytest_repoexec/results.py SampleResult``."""

    required_arguments = 2

    def run(self):
        path, name = self.arguments
        source = (Path(self.env.srcdir).parent / path).read_text()
        body = source[source.index(f"class {name}"):].split("\n")[1:]
        rows = []
        for line in body:
            if line and not line.startswith(" "):
                break
            field_match = re.match(r"^    (\w+): ([^=#]+?)(?: = [^#]+?)?\s*(?:#\s*(.*))?$", line)
            more = re.match(r"^    #\s+(.*)$", line)
            if field_match and not line.strip().startswith(("def ", "@")):
                rows.append([field_match[1], field_match[2].strip(), field_match[3] or ""])
            elif more and rows:
                rows[-1][2] += " " + more[1]
            elif line.startswith("    def ") or line.startswith("    @"):
                break
        lines = ["| field | type | what |", "| --- | --- | --- |"]
        lines += [f"| `{field}` | `{kind}` | {_escape(what).replace('|', '/')} |" for field, kind, what in rows]
        return self.parse_text_to_nodes("\n".join(lines))


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("repoexec-fields", FieldsDirective)
    app.add_directive("repoexec-error-types", ErrorTypesDirective)
    app.add_directive("repoexec-hooks", HooksDirective)
    app.add_directive("repoexec-options", OptionsDirective)
    app.add_directive("repoexec-inner-options", InnerOptionsDirective)
    app.add_directive("repoexec-cli", CliDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
