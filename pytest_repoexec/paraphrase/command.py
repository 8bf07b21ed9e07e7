"""The ``paraphrase`` sub-command, for ``repoexec``'s parser (``register``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..builder.admit import add_gate_arguments
from ..environment import default_cache_dir
from . import ParaphraseError
from .project import REPORT, ParaphraseOptions, paraphrase


def register(commands: argparse._SubParsersAction) -> None:
    """Add ``paraphrase``; it sets ``handler(args) -> exit status``."""
    parser = commands.add_parser("paraphrase", help="case-flip a built project's benchmark identifiers across its "
                                                    "repository, tests and problems, then the admission gate")
    parser.add_argument("folder", type=Path, help="a built project (repoexec build ... --out DIR)")
    parser.add_argument("--out", type=Path, required=True, help="the paraphrased project to write")
    parser.add_argument("--no-trace", action="store_true",
                        help="rename only what the code's static reading can type (no run of the tests on the "
                             "original to see which objects are benchmark instances)")
    add_gate_arguments(parser, "the gate")
    parser.set_defaults(handler=paraphrase_command)


def paraphrase_command(args: argparse.Namespace) -> int:
    options = ParaphraseOptions(args.folder, args.out, args.cache or default_cache_dir(), args.sandbox,
                                not args.no_gate, args.workers, tuple(args.gate_option), trace=not args.no_trace)
    try:
        report = paraphrase(options, say=lambda line: print(line, file=sys.stderr))
    except ParaphraseError as exc:
        print(f"repoexec paraphrase: {exc}", file=sys.stderr)
        return 1
    print("\n".join(report.table()))
    print(f"written to {args.out} (report: {args.out / REPORT})")
    return 0
