"""The documentation site (docs/): it builds with warnings as errors, its reference holds every option the plugin
defines and every argument of the ``repoexec`` command, and a broken link, anchor or option reference fails it."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_repoexec.cli import main
from pytest_repoexec.document import ENGINE_KEYS

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
# The build command of the README and .ci/run: warnings (a broken link or reference among them) are errors.
SPHINX = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-n", "-q", "-b", "html"]


def build(source: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*SPHINX, str(source), str(out)], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    result = build(DOCS, out)
    assert result.returncode == 0, result.stdout + result.stderr
    return out


def _defined_options() -> set[str]:
    """Every ``--repoexec-*`` option in the code, two ways: as pytest lists them (its --help, with this
    distribution's plugins loaded as a user's run loads them), and as the source spells them in an ``addoption``
    call (the plugins that run inside a sample or a suite run too)."""
    shown = subprocess.run([sys.executable, "-m", "pytest", "--help", "-p", "no:cacheprovider"], cwd=ROOT / "tests",
                           capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    options = set(re.findall(r"^\s+(--repoexec-[a-z-]+)", shown.stdout, re.MULTILINE))
    assert "--repoexec-model" in options and "--repoexec-memory" in options  # generated in a loop: only --help has it
    for path in [*(ROOT / "pytest_repoexec").rglob("*.py"), *(ROOT / "generators").glob("*.py")]:
        options |= set(re.findall(r"addoption\(\s*\"(--repoexec-[a-z-]+)\"", path.read_text()))
    return options


def test_every_option_the_plugin_defines_is_in_the_reference(site: Path) -> None:
    page = (site / "reference" / "options.html").read_text()
    anchors = set(re.findall(r'id="cmdoption-[a-z_]+-(repoexec-[a-z-]+)"', page))
    defined = _defined_options()
    assert len(defined) > 50
    assert sorted(option for option in defined if option.removeprefix("--") not in anchors) == []
    assert 'id="confval-repoexec_aliases"' in page  # the ini value


def test_every_option_the_pages_name_exists() -> None:
    """The pages say only what the code does: a --repoexec-* option they name that the plugin does not define
    (renamed, removed, misspelt) fails, whether or not it is written as a link."""
    defined = _defined_options()
    named = {}
    for page in [*DOCS.rglob("*.md"), ROOT / "README.md"]:
        for option in re.findall(r"--repoexec-[a-z][a-z-]*[a-z]", page.read_text()):
            named.setdefault(option, page.relative_to(ROOT))
    assert {option: page for option, page in named.items() if option not in defined} == {}


def _set_in(source: str, start: str) -> set[str]:
    """The string literals of the first ``{...}`` set after ``start`` in ``source``."""
    text = source[source.index(start):]
    return set(re.findall(r'"(\w+)"', text[text.index("{"):text.index("}") + 1]))


def test_every_manifest_field_is_in_the_reference() -> None:
    """problem.toml and project.toml refuse unknown fields: each field they accept is on its reference page, and
    so are the safety kinds that ``allow`` takes and the ``[limits]`` keys."""
    from pytest_repoexec.safety import KINDS
    from pytest_repoexec.sandbox import LIMIT_FIELDS

    loader = (ROOT / "pytest_repoexec" / "problem.py").read_text()
    pages = {"problem": (DOCS / "reference" / "problem-toml.md").read_text(),
             "project": (DOCS / "reference" / "project-toml.md").read_text()}
    fields = {"problem": _set_in(loader, "_PROBLEM_FIELDS = "), "project": _set_in(loader, "def load_project")}
    assert {"module", "entry_point", "suite", "limits"} <= fields["problem"] and {"source", "runner"} <= fields["project"]
    for manifest, names in fields.items():
        missing = [name for name in names if not re.search(rf"^(\[{name}\]|#? ?{name} = )", pages[manifest], re.MULTILINE)]
        assert missing == [], f"{manifest}.toml fields not in its reference: {missing}"
    assert [kind for kind in KINDS if f"`{kind}`" not in pages["problem"]] == []
    assert [key for key in LIMIT_FIELDS if f"`{key}`" not in pages["problem"]] == []


def _help(capsys: pytest.CaptureFixture, *args: str) -> str:
    with pytest.raises(SystemExit):
        main([*args, "--help"])
    return capsys.readouterr().out


def test_every_repoexec_command_and_argument_is_in_the_reference(site: Path, capsys: pytest.CaptureFixture) -> None:
    page = (site / "reference" / "cli.html").read_text()
    commands = re.findall(r"\{([a-z,]+)\}", _help(capsys))[0].split(",")
    assert {"import", "setup", "compare", "merge", "build", "export", "paraphrase"} <= set(commands)
    checked = 0
    for command in [*commands, "export depit"]:
        program = "repoexec-" + command.replace(" ", "-")
        for option in set(re.findall(r"^  (?:-\w(?: \S+)?, )?(--[a-z][a-z-]+)", _help(capsys, *command.split()),
                                         re.MULTILINE)) - {"--help"}:
            assert f'id="cmdoption-{program}{option.removeprefix("-")}"' in page, (command, option)
            checked += 1
    assert checked > 50  # every command's options were read from its --help (build alone has 32)


def test_every_key_of_the_json_report_is_described(site: Path) -> None:
    page = (site / "reference" / "json-report.html").read_text()
    described = set(re.findall(r'<dt><code class="docutils literal notranslate"><span class="pre">(\w+)', page))
    assert sorted(set(ENGINE_KEYS) - described) == []


def test_the_pages_of_every_kind_are_built(site: Path) -> None:
    for page in ("index", "tutorials/evaluate-a-model", "how-to/compare-runs", "reference/options",
                 "explanation/threat-model", "explanation/executors", "explanation/hosts", "measurements/throughput"):
        assert (site / f"{page}.html").is_file(), page


@pytest.mark.parametrize("broken, named", [
    ("[a page that is not there](missing.md)", "missing"),
    ("[a heading that is not there](other.md#nowhere)", "nowhere"),
    ("{option}`pytest --repoexec-no-such-option`", "--repoexec-no-such-option"),
])
def test_a_broken_link_fails_the_build(tmp_path: Path, broken: str, named: str) -> None:
    """A tiny copy of the site (its configuration and extension, two pages) with one broken link."""
    source = tmp_path / "docs"
    source.mkdir()
    shutil.copy(DOCS / "conf.py", source)
    shutil.copytree(DOCS / "_ext", source / "_ext")
    (source / "other.md").write_text("# Other\n\n## Somewhere\n\nText.\n")
    good = "[a heading that is there](other.md#somewhere)"
    (source / "index.md").write_text(f"# Index\n\n```{{toctree}}\nother\n```\n\n{good}\n")
    assert build(source, tmp_path / "good").returncode == 0
    (source / "index.md").write_text(f"# Index\n\n```{{toctree}}\nother\n```\n\n{good}\n\n{broken}\n")
    result = build(source, tmp_path / "broken")
    assert result.returncode != 0
    assert named in result.stderr, result.stderr
