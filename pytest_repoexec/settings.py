"""The engine's command-line options, and the frozen settings read from them once, in ``pytest_configure``.

The run's mode is decided here and nowhere else: scoring a model (the default), the admission gate
(``--repoexec-validate``) or the assertion fixer (``--repoexec-fix-assertions``). Everything after reads
``Settings``, never the options.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from .cgroups import ProcessLimitUnavailable
from .environment import default_cache_dir
from .executor import JUDGE_MODES, SubprocessExecutor
from .gate import GateSettings
from .problem import DESCRIPTIONS
from .sandbox import LIMIT_FIELDS, Limits, SandboxUnavailable, make_sandbox, parse_size
from .shard import Shard
from .warm import WarmExecutor

DEFAULT_MODEL = "reference"


class Mode(enum.Enum):
    SCORE = "score"  # run every completion of a generator against the tests: pass@k, DIR, TR
    VALIDATE = "validate"  # the admission gate on each problem's reference
    FIX = "fix-assertions"  # the assertion fixer, then the gate


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("repoexec", "repository-level code generation benchmarks")
    group.addoption("--repoexec-model", default=DEFAULT_MODEL, metavar="NAME[:ARG]",
                    help="generator of the completions: reference (default), replay:PATH, ...")
    group.addoption("--repoexec-n", type=int, default=None, metavar="N", help="at most N samples per problem")
    group.addoption("--repoexec-cache", default=None, metavar="DIR",
                    help="where project sources and virtualenvs are kept (default: the user cache folder)")
    group.addoption("--repoexec-report", default=None, metavar="PATH", help="write metrics and samples as JSON")
    group.addoption("--repoexec-html", default=None, metavar="PATH",
                    help="write the run as one self-contained HTML page: settings, metrics, plots, every sample")
    group.addoption("--repoexec-timeout", type=float, default=5.0, metavar="SECONDS",
                    help="limit for each inner test (default 5)")
    group.addoption("--repoexec-sample-timeout", type=float, default=120.0, metavar="SECONDS",
                    help="wall-clock limit for all the tests of one sample (default 120)")
    group.addoption("--repoexec-sandbox", choices=("bwrap", "none"), default="bwrap",
                    help="where candidates run: bwrap (default: bubblewrap, a root that is not the host) or none "
                         "(unconfined, on the host: only for code you trust)")
    group.addoption("--repoexec-executor", choices=("warm", "process"), default="warm",
                    help="how samples start: warm (default: forked from a process per project that has imported "
                         "pytest and the project's dependencies once) or process (a fresh interpreter each)")
    group.addoption("--repoexec-judge", choices=JUDGE_MODES, default="apart",
                    help="where the tests run: apart (default: in a process that never runs candidate code, the "
                         "candidate in one of its own; a problem whose reference does not get the same outcomes "
                         "so is not judged, and says why), apart-or-in-process (such a problem beside its "
                         "candidate instead) or in-process (every problem beside its candidate, guarded by the "
                         "decoy check: a weaker guarantee)")
    group.addoption("--repoexec-warm-processes", type=int, default=4, metavar="N",
                    help="warm processes each worker keeps alive, the least recently used stopped first (default 4)")
    group.addoption("--repoexec-zygotes", type=int, default=8, metavar="N",
                    help="problem zygotes each warm process keeps alive (they hold the project's modules that the "
                         "candidate cannot change), the least recently used stopped first; 0: none (default 8)")
    defaults = Limits()
    for name, kind in LIMIT_FIELDS.items():
        default = getattr(defaults, name)
        shown = f"{default >> 20}M" if kind == "size" else str(default)
        group.addoption(f"--repoexec-{name.replace('_', '-')}", default=None, metavar="SIZE" if kind == "size" else "N",
                        help=f"limit of each sample: {_LIMIT_HELP[name]} (default {shown})")
    group.addoption("--repoexec-timeout-factor", type=float, default=10.0, metavar="F",
                    help="a candidate's test may take F times the reference's time on it (default 10; 0: only "
                         "--repoexec-timeout), at least --repoexec-min-timeout, at most --repoexec-timeout")
    group.addoption("--repoexec-min-timeout", type=float, default=1.0, metavar="SECONDS",
                    help="the least time limit of a test under relative timeouts (default 1)")
    group.addoption("--repoexec-fail-fast", action="store_true",
                    help="stop each sample at its first failing test: enough for pass@k, and TR is not measured")
    group.addoption("--repoexec-accept-no-process-limit", action="store_true",
                    help="run even where this host offers no way to bound a sample's processes (no pids cgroup, "
                         "no user namespace): a fork flood then reaches the host; the report says so")
    group.addoption("--repoexec-decoy", choices=("check", "off"), default="check",
                    help="check every passing sample against a decoy of its tests, whose expected values no honest "
                         "candidate can produce (default); off: believe a pass as the tests' process reports it "
                         "(the report says so)")
    group.addoption("--repoexec-fresh", action="store_true",
                    help="evaluate again what earlier runs put in the result store (a module is still judged "
                         "once a run)")
    group.addoption("--repoexec-validate", action="store_true",
                    help="run the admission gate on each problem's reference instead of scoring a model")
    group.addoption("--repoexec-fix-assertions", action="store_true",
                    help="rewrite failing expected values with the reference's output, then run the gate")
    group.addoption("--repoexec-reruns", type=int, default=10, metavar="N",
                    help="gate: runs of each test to find flaky ones (default 10)")
    group.addoption("--repoexec-min-coverage", type=float, default=40.0, metavar="PERCENT",
                    help="gate: least line coverage of the function by its tests (default 40)")
    group.addoption("--repoexec-min-mutation", type=float, default=None, metavar="PERCENT",
                    help="gate: least share of mutants killed (default: reported, not enforced)")
    group.addoption("--repoexec-mutants", type=int, default=10, metavar="N",
                    help="gate: at most N mutants of each reference (default 10; 0: none)")
    group.addoption("--repoexec-description", choices=DESCRIPTIONS, default="detailed",
                    help="which description a class problem's prompts hold: detailed (default: its members and "
                         "what each does) or sketchy (a few sentences); function problems have none")
    group.addoption("--repoexec-debug-rounds", type=int, default=0, metavar="R",
                    help="send failing samples back to the model R times with the test and error (the paper: 3)")
    group.addoption("--repoexec-shard", default=None, metavar="I/N",
                    help="run only shard I (from 0) of N: whole problems, chosen by a hash of their ids; "
                         "`repoexec merge` joins the shards' reports")
    group.addoption("--repoexec-exit-zero", action="store_true",
                    help="exit 0 when the run completed, whatever its samples' verdicts (for CI matrices and "
                         "scheduler arrays); a sample that could not run still fails the run")


@dataclass(frozen=True)
class Settings:
    mode: Mode
    model: str
    samples: int | None  # at most this many samples per problem; None: what the generator gives
    cache: Path
    report: Path | None  # the JSON report, absolute
    html: Path | None  # the HTML report, absolute
    test_timeout: float
    sample_timeout: float
    debug_rounds: int
    context: str  # the dependency context of debugging prompts (the generators' --repoexec-context)
    workers: int  # xdist workers, or 1: how many samples a debugging round judges at once
    sandbox: str = "bwrap"
    executor: str = "warm"
    judge: str = "apart"  # one of JUDGE_MODES: where the tests run (``judge.py``)
    warm_processes: int = 4
    zygotes: int = 8
    fresh: bool = False  # evaluate again what the result store holds
    decoy: bool = True  # a pass stands only if the sample fails the decoy of its tests (``decoy``)
    accept_no_process_limit: bool = False  # run where no mechanism bounds a sample's processes
    fail_fast: bool = False  # each sample stops at its first failing test; TR is then not measured
    timeout_factor: float = 10.0  # relative timeouts: this many times the reference's time on a test; 0: off
    min_timeout: float = 1.0  # the least limit of a test under relative timeouts
    shard: Shard | None = None  # this job's part of the run (--repoexec-shard)
    exit_zero: bool = False  # a run that completed exits 0 whatever its verdicts
    limits: Limits = field(default_factory=Limits)
    gate: GateSettings = field(default_factory=GateSettings)
    options: dict[str, Any] = field(default_factory=dict)  # every --repoexec-* option as given, for the report

    @classmethod
    def from_config(cls, config: pytest.Config) -> Settings:
        option = config.getoption
        samples, rounds = option("repoexec_n"), option("repoexec_debug_rounds")
        if samples is not None and samples < 1:
            raise pytest.UsageError(f"--repoexec-n must be at least 1, got {samples}")
        if rounds < 0:
            raise pytest.UsageError("--repoexec-debug-rounds must be 0 or more")
        if option("repoexec_reruns") < 2:
            raise pytest.UsageError("--repoexec-reruns must be at least 2: flakiness shows between runs")
        if option("repoexec_mutants") < 0:
            raise pytest.UsageError("--repoexec-mutants must be 0 or more")
        if option("repoexec_warm_processes") < 1:
            raise pytest.UsageError("--repoexec-warm-processes must be at least 1")
        if option("repoexec_zygotes") < 0:
            raise pytest.UsageError("--repoexec-zygotes must be 0 (none) or more")
        if option("repoexec_timeout_factor") < 0:
            raise pytest.UsageError("--repoexec-timeout-factor must be 0 (off) or more")
        for name in ("repoexec_timeout", "repoexec_sample_timeout", "repoexec_min_timeout"):
            if option(name) <= 0:
                raise pytest.UsageError(f"--{name.replace('_', '-')} must be more than 0 seconds")
        cache, report, html = option("repoexec_cache"), option("repoexec_report"), option("repoexec_html")
        workers = option("numprocesses", None)
        return cls(
            mode=_mode(config),
            model=option("repoexec_model"),
            samples=samples,
            cache=Path(cache).resolve() if cache else default_cache_dir(),
            report=Path(config.invocation_params.dir, report) if report else None,
            html=Path(config.invocation_params.dir, html) if html else None,
            test_timeout=option("repoexec_timeout"),
            sample_timeout=option("repoexec_sample_timeout"),
            debug_rounds=rounds,
            context=option("repoexec_context", "full"),
            sandbox=option("repoexec_sandbox"),
            executor=option("repoexec_executor"),
            judge=option("repoexec_judge", "apart"),
            warm_processes=option("repoexec_warm_processes"),
            zygotes=option("repoexec_zygotes"),
            fresh=option("repoexec_fresh"),
            decoy=option("repoexec_decoy", "check") == "check",
            accept_no_process_limit=bool(option("repoexec_accept_no_process_limit", False)),
            fail_fast=option("repoexec_fail_fast"),
            timeout_factor=option("repoexec_timeout_factor"),
            min_timeout=option("repoexec_min_timeout"),
            shard=_shard(option("repoexec_shard")),
            exit_zero=option("repoexec_exit_zero"),
            limits=_limits(config),
            workers=workers if isinstance(workers, int) and workers > 0 else 1,
            options={name: value if isinstance(value, (str, int, float, bool, type(None))) else str(value)
                     for name, value in sorted(vars(config.option).items()) if name.startswith("repoexec_")},
            gate=GateSettings(
                reruns=option("repoexec_reruns"),
                min_coverage=option("repoexec_min_coverage"),
                min_mutation=option("repoexec_min_mutation"),
                mutants=option("repoexec_mutants"),
            ),
        )


_LIMIT_HELP = {
    "memory": "address space of each process", "processes": "processes and threads", "file_size": "largest file",
    "tmpfs": "its writable /tmp", "cpu": "CPU seconds of each process", "open_files": "open files",
    "output": "stdout and stderr before it is stopped",
}


def _limits(config: pytest.Config) -> Limits:
    given = {}
    for name, kind in LIMIT_FIELDS.items():
        text = config.getoption(f"repoexec_{name}")
        if text is None:
            continue
        option = f"--repoexec-{name.replace('_', '-')}"
        try:
            given[name] = parse_size(text) if kind == "size" else int(text)
        except ValueError:
            wanted = "a size such as 512M or 4G" if kind == "size" else "a whole number"
            raise pytest.UsageError(f"{option}={text}: expected {wanted}") from None
        if given[name] < 1:
            raise pytest.UsageError(f"{option}={text}: must be at least 1")
    return Limits(**given)


def _shard(text: str | None) -> Shard | None:
    try:
        return None if text is None else Shard.parse(text)
    except ValueError as exc:
        raise pytest.UsageError(f"--repoexec-shard={text}: {exc}") from None


def _mode(config: pytest.Config) -> Mode:
    """The one mode of the run; options that belong to different modes are refused together."""
    chosen = [flag for flag, name in (("--repoexec-validate", "repoexec_validate"),
                                      ("--repoexec-fix-assertions", "repoexec_fix_assertions"))
              if config.getoption(name)]
    scoring = []
    if config.getoption("repoexec_model") != DEFAULT_MODEL:
        scoring.append(f"--repoexec-model={config.getoption('repoexec_model')}")
    if config.getoption("repoexec_debug_rounds"):
        scoring.append(f"--repoexec-debug-rounds={config.getoption('repoexec_debug_rounds')}")
    if config.getoption("repoexec_html"):
        scoring.append(f"--repoexec-html={config.getoption('repoexec_html')}")
    if config.getoption("repoexec_shard"):
        scoring.append(f"--repoexec-shard={config.getoption('repoexec_shard')}")
    if len(chosen) == 2:
        raise pytest.UsageError(
            "--repoexec-validate and --repoexec-fix-assertions cannot be used together: "
            "--repoexec-fix-assertions runs the gate after fixing (use it alone)"
        )
    if chosen and scoring:
        raise pytest.UsageError(
            f"{chosen[0]} and {scoring[0]} cannot be used together: {chosen[0]} checks the problems' "
            "references: it takes no model and no debugging rounds, has no samples for an HTML page, and no "
            "shards to merge"
        )
    if not chosen:
        return Mode.SCORE
    return Mode.FIX if chosen[0] == "--repoexec-fix-assertions" else Mode.VALIDATE


def make_executor(settings: Settings) -> SubprocessExecutor:
    """The run's executor, its sandbox checked to work here: a missing one is a usage error before any sample.
    Its owner closes it at the end of the session (the warm executor's processes stop then)."""
    try:
        sandbox = make_sandbox(settings.sandbox)
    except SandboxUnavailable as exc:
        raise pytest.UsageError(f"--repoexec-sandbox={settings.sandbox}: {exc}") from None
    try:
        if settings.executor == "warm":
            return WarmExecutor(settings.test_timeout, settings.sample_timeout, sandbox, settings.limits,
                                keep=settings.warm_processes, zygotes=settings.zygotes,
                                accept_no_process_limit=settings.accept_no_process_limit, judge=settings.judge)
        return SubprocessExecutor(settings.test_timeout, settings.sample_timeout, sandbox, settings.limits,
                                  accept_no_process_limit=settings.accept_no_process_limit, judge=settings.judge)
    except ProcessLimitUnavailable as exc:
        raise pytest.UsageError(f"--repoexec-processes: {exc}; or pass --repoexec-accept-no-process-limit "
                                "knowingly") from None
