"""The ``repoexec`` command: ``repoexec import SRC --out DIR`` turns published RepoExec data into problems (and,
with ``--format``, RepoClassBench's tasks or Exec-CSN's programs);
``repoexec build SOURCE --out DIR`` turns a repository into problems, and ``repoexec export depit`` writes
instruction-tuning records of a problem set (``build/``); ``repoexec paraphrase DIR --out DIR2`` renames a
built benchmark's identifiers against memorisation (``paraphrase/``);
``repoexec setup`` installs and checks what the sandbox needs (bubblewrap), which pip cannot bring;
``repoexec compare RUN.json... [--html PATH]`` puts runs side by side with confidence intervals;
``repoexec merge SHARD.json... --out RUN.json [--html PATH]`` joins the shards of one run (``--repoexec-shard``)."""

from __future__ import annotations

import argparse
import json
import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

from .builder.command import register as register_build
from .document import percent, write_text
from .paraphrase.command import register as register_paraphrase
from .serve import register as register_serve
from .importer.convert import load_pins, write_project
from .importer.execcsn import INSTRUCTIONS
from .importer.execcsn import command as import_execcsn
from .importer.repoclassbench import command as import_repoclassbench
from .importer.sources import Problems, SourceError, read_data_folder, read_hugging_face
from .leaderboard import compare, render
from .merge import merge
from .runs import read_run
from .cgroups import ACCEPT_ENV, cgroup_version, choose, missing_limit, user_namespaces, v2_controllers
from .sandbox import INSTALL_HINT, probe


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="repoexec", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    importing = commands.add_parser("import", help="import RepoExec problems into our problem format")
    importing.add_argument("source", type=Path, help="a RepoExec data folder, or a local copy of the HF dataset")
    importing.add_argument("--out", type=Path, required=True, help="the folder to write the problems into")
    importing.add_argument("--outputs", type=Path, default=None,
                           help="for the Hugging Face form: a RepoExec data folder with the pickled outputs")
    importing.add_argument("--projects", default=None, help="comma-separated project folders to import (default all)")
    importing.add_argument("--format", choices=("repoexec", "repoclassbench", "execcsn"), default="repoexec",
                           help="the benchmark SOURCE holds: RepoExec (default), RepoClassBench's Python part "
                                "(python_data.json and sources/*.tar.gz; --projects names repository states), or "
                                "CodeBenchGen's Exec-CSN (a JSON file of examples)")
    importing.add_argument("--instruction", choices=INSTRUCTIONS, default=None,
                           help="Exec-CSN only: what the prompt shows below the header, the example's docstring "
                                "(default) or its revised instruction")
    setting_up = commands.add_parser("setup", help="install bubblewrap with the system's package manager if it is "
                                                   "missing, and check that it can make a sandbox here")
    setting_up.add_argument("--tests", action="store_true",
                            help="also install what the test suite uses that pip cannot bring: Chromium (to load the "
                                 "HTML report) and an SSH server (to reach a second user as a remote xdist host)")
    comparing = commands.add_parser("compare", help="a leaderboard of runs (their JSON reports) on the problems "
                                                     "they share, pass@k with bootstrap intervals, paired differences")
    comparing.add_argument("runs", type=Path, nargs="+", metavar="RUN.json", help="reports from --repoexec-report")
    comparing.add_argument("--format", choices=("text", "md"), default="text", help="text (default) or Markdown")
    comparing.add_argument("--resamples", type=int, default=2000, metavar="N", help="bootstrap resamples (default 2000)")
    comparing.add_argument("--confidence", type=float, default=0.95, metavar="C", help="interval level (default 0.95)")
    comparing.add_argument("--seed", type=int, default=0, help="seed of the resampling (default 0)")
    comparing.add_argument("--html", type=Path, default=None, metavar="PATH",
                           help="also write the leaderboard as a self-contained HTML page, with a plot of the intervals")
    merging = commands.add_parser("merge", help="join the reports of a run's shards (--repoexec-shard=I/N) into the "
                                                "report a single run would have written")
    merging.add_argument("shards", type=Path, nargs="+", metavar="SHARD.json", help="every shard's --repoexec-report")
    merging.add_argument("--out", type=Path, required=True, metavar="RUN.json", help="the merged JSON report")
    merging.add_argument("--html", type=Path, default=None, metavar="PATH",
                         help="also write the merged run as a self-contained HTML page (as --repoexec-html)")
    register_build(commands)
    register_paraphrase(commands)
    register_serve(commands)
    args = parser.parse_args(argv)
    if "handler" in args:
        return args.handler(args)
    if args.command == "setup":
        return setup_command(args.tests)
    if args.command == "compare":
        return compare_command(args.runs, args.format == "md", args.resamples, args.confidence, args.seed, args.html)
    if args.command == "merge":
        return merge_command(args.shards, args.out, args.html)
    if args.instruction is not None and args.format != "execcsn":
        parser.error("--instruction is for --format execcsn only")
    if args.format == "execcsn":
        return import_execcsn(args.source, args.out, args.instruction or "docstring")
    if args.format == "repoclassbench":
        return import_repoclassbench(args.source, args.out, args.projects)
    return import_command(args.source, args.out, args.outputs, args.projects)


_INSTALLERS = {  # package manager -> how it updates its index (or nothing), and how it installs packages
    "apt-get": (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq"]),
    "dnf": (None, ["dnf", "install", "-y", "-q"]),
}
_PACKAGES = {  # the package that brings a program (both managers), and where it is found when it is there
    "bubblewrap": ("bwrap",), "chromium": ("chromium", "chromium-browser"), "openssh-server": ("/usr/sbin/sshd",),
}


def setup_command(tests: bool = False) -> int:
    """Install bubblewrap (and, with ``--tests``, Chromium and an SSH server) where apt-get (Debian, Ubuntu) or dnf
    (Fedora) can, then check that bubblewrap works and say what this host gives."""
    wanted = ["bubblewrap", *(["chromium", "openssh-server"] if tests else [])]
    missing = [package for package in wanted if not any(shutil.which(program) for program in _PACKAGES[package])]
    if missing:
        root = os.geteuid() == 0
        if not root and shutil.which("sudo") is None:
            print(f"repoexec setup: {', '.join(missing)} missing and this user cannot install it; {INSTALL_HINT}",
                  file=sys.stderr)
            return 1
        manager = next((name for name in _INSTALLERS if shutil.which(name)), None)
        if manager is None:
            print(f"repoexec setup: no apt-get or dnf here to install {', '.join(missing)}; {INSTALL_HINT}",
                  file=sys.stderr)
            return 1
        update, install = _INSTALLERS[manager]
        for step in [*([update] if update else []), install + missing]:
            print(f"repoexec setup: {' '.join(step)}")
            environment = os.environ | {"DEBIAN_FRONTEND": "noninteractive"}
            if subprocess.run([*([] if root else ["sudo"]), *step], env=environment).returncode:
                print(f"repoexec setup: {' '.join(step)} failed; {INSTALL_HINT}", file=sys.stderr)
                return 1
    if tests:
        print(f"repoexec setup: chromium at {shutil.which('chromium') or shutil.which('chromium-browser')}, "
              f"sshd at {shutil.which('/usr/sbin/sshd')}")
    return _describe_host()


def _describe_host() -> int:
    """What this host gives a sample (the user, user namespaces, cgroups, each limit's mechanism) and what to do
    about what is missing; 1 when a sample could not run here as the defaults ask."""
    uid = os.geteuid()
    name = next((entry.pw_name for entry in pwd.getpwall() if entry.pw_uid == uid), "a user without a name")
    print(f"repoexec setup: user {name} (uid {uid}{': root, whom RLIMIT_NPROC does not hold' if uid == 0 else ''})")
    print(f"repoexec setup: user namespaces: {'yes' if user_namespaces() else 'refused'}; cgroups: "
          f"{cgroup_version()}, v2 controllers here: {', '.join(v2_controllers()) or 'none'}")
    probe.cache_clear()
    problem = probe()
    sandbox = problem or f"bubblewrap at {shutil.which('bwrap')} works"
    print(f"repoexec setup: sandbox: {sandbox}", file=sys.stderr if problem else sys.stdout)
    workers = os.cpu_count() or 1  # the probe tries as many samples at once as `-n auto` runs
    choice = choose(workers, sandboxed=problem is None)
    mechanism = choice.mechanism
    accepted = os.environ.get(ACCEPT_ENV) == "1"
    print(f"repoexec setup: processes: {choice.describe() if mechanism else missing_limit(choice)}"
          f"{f' (tried with {workers} samples at once)' if mechanism else ''}"
          f"{' (accepted: ' + ACCEPT_ENV + '=1)' if not mechanism and accepted else ''}",
          file=sys.stdout if mechanism or accepted else sys.stderr)
    print("repoexec setup: memory, CPU time, file size, open files: RLIMIT_AS, RLIMIT_CPU, RLIMIT_FSIZE, "
          "RLIMIT_NOFILE in the sample (per process); disk: the sandbox's tmpfs; output and wall clock: the engine")
    return 1 if problem or not (mechanism or accepted) else 0


def compare_command(
    paths: list[Path], markdown: bool, resamples: int, confidence: float, seed: int, html: Path | None = None
) -> int:
    if resamples < 100 or not 0.5 <= confidence < 1:
        print("repoexec compare: --resamples must be at least 100 and --confidence in [0.5, 1)", file=sys.stderr)
        return 2
    try:
        board = compare([read_run(path) for path in paths], resamples, confidence, seed)
    except ValueError as exc:  # ReportError names the file; no common problem, or shards of one run, the runs
        print(f"repoexec compare: {exc}", file=sys.stderr)
        return 2
    print("\n".join(render(board, markdown)))
    if html is not None:
        from .htmlreport import render_compare_html  # matplotlib loads only when a page is asked for

        write_text(html, render_compare_html(board))
        print(f"page: {html}")
    return 0


def merge_command(shards: list[Path], out: Path, html: Path | None) -> int:
    try:
        document = merge(shards, out, html)
    except ValueError as exc:  # ReportError and MergeError name the file, or the missing shard
        print(f"repoexec merge: {exc}", file=sys.stderr)
        return 2
    metrics = ", ".join(f"{name} {percent(value)}" for name, value in document["metrics"].items() if value is not None)
    print(f"repoexec merge: {len(shards)} shards, {len({s['problem'] for s in document['samples']})} problems, "
          f"{len(document['samples'])} samples: {metrics}")
    print(f"report: {out}" + (f"\npage: {html}" if html is not None else ""))
    return 0


def import_command(source: Path, out: Path, outputs: Path | None, projects: str | None) -> int:
    if not source.exists():
        print(f"repoexec import: {source} does not exist", file=sys.stderr)
        return 2
    try:
        if any(source.glob("test-apps+*")) or (source / "data_with_test_case").is_dir():
            found = read_data_folder(source)
        else:
            found = read_hugging_face(source, outputs)
    except SourceError as exc:
        print(f"repoexec import: {exc}", file=sys.stderr)
        return 2
    wanted = set(projects.split(",")) if projects else None
    if wanted and (unknown := wanted - set(found)):
        print(f"repoexec import: no such project in {source}: {', '.join(sorted(unknown))} "
              f"(it has {', '.join(sorted(found))})", file=sys.stderr)
        return 2
    pins = load_pins()
    out.mkdir(parents=True, exist_ok=True)
    summary, failed = {}, False
    for name, problems in sorted(found.items()):
        if wanted and name not in wanted:
            continue
        summary[name] = _import_project(name, problems, pins.get(name), out)
        failed |= bool(summary[name]["errors"])
    (out / "import-report.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    _print_summary(summary)
    return 1 if failed else 0


def _import_project(name: str, problems: Problems, pin: dict | None, out: Path) -> dict:
    if pin is None and not problems.records and not problems.errors:
        return {"release": None, "found": None, "published": 0, "imported": 0, "errors": []}  # an empty folder
    if pin is None:
        errors = [*problems.errors, f"project {name}: no pinned release is known for it (pytest_repoexec/importer/pins.toml)"]
        return {"release": None, "found": None, "published": len(problems.records), "imported": 0, "errors": errors}
    if not problems.records:
        return {"release": pin["pypi"], "found": pin.get("found"), "published": 0, "imported": 0,
                "errors": problems.errors}
    result = write_project(name, problems.records, pin, out)
    return {
        "release": pin["pypi"],
        "found": pin.get("found"),
        "published": len(problems.records),
        "imported": len(result.written),
        "errors": [*problems.errors, *result.errors],
    }


def _print_summary(summary: dict) -> None:
    print(f"{'project':24} {'release':32} {'imported':>9}  errors")
    for name, row in summary.items():
        print(f"{name:24} {row['release'] or '-':32} {row['imported']:>4}/{row['published']:<4}  {len(row['errors'])}")
        for error in row["errors"][:5]:
            print(f"    {error}")
        if len(row["errors"]) > 5:
            print(f"    ... and {len(row['errors']) - 5} more (import-report.json)")


if __name__ == "__main__":
    sys.exit(main())
