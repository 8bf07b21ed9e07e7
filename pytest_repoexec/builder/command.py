"""The ``build`` and ``export`` sub-commands, for ``repoexec``'s parser (``register``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from generators.model import Sampling
from generators.standalone import ModelOptions

from ..environment import default_cache_dir
from ..generation import GenerationError
from ..problem import CONTEXT_LEVELS
from ..prompts import PROMPT_STYLES
from . import BuildError
from .admit import add_gate_arguments
from .classes import ClassOptions
from .depit import depit_records, write_jsonl
from .trainsets import trainer_problems, trl_rows, verl_rows, write_parquet
from .functions import Options
from .modeltests import ModelTestSettings
from .pipeline import BuildOptions, build
from .suite import SuiteSettings


def register(commands: argparse._SubParsersAction) -> None:
    """Add ``build`` and ``export`` to ``commands``; each sets ``handler(args) -> exit status``."""
    building = commands.add_parser("build", help="turn a repository into problems: functions, dependency context, "
                                                 "tests from its own suite or a model, through the admission gate")
    building.add_argument("source", help="a folder, a local git checkout, or pypi:NAME==VERSION")
    building.add_argument("--out", type=Path, required=True, help="the project folder to write (its name is the "
                                                                  "project's)")
    building.add_argument("--tests", choices=("suite", "model"), default=None,
                          help="where tests come from (default: the project's suite where it has one; a model's "
                               "with --model for the functions it does not run)")
    building.add_argument("--requirements", action="append", default=[], metavar="REQ",
                          help="more requirements for the project's environment (repeatable, or comma-separated)")
    building.add_argument("--classes", action="store_true",
                          help="class problems: module-level classes that use the repository and whose methods the "
                               "passing suite runs, judged by those tests, described in words (detailed, sketchy)")
    building.add_argument("--min-method-coverage", type=float, default=ClassOptions.min_method_coverage,
                          metavar="PERCENT", help="--classes: least share of a class's methods that passing tests "
                                                  "run (%(default)s)")
    building.add_argument("--describe-model", default=None, metavar="NAME",
                          help="--classes: a model (any --model name) writes the descriptions, not the docstrings")
    building.add_argument("--private", action="store_true", help="also pick functions (or classes) whose name "
                                                                 "starts with _")
    building.add_argument("--min-lines", type=int, default=Options.min_lines,
                          help="least lines of a body after its docstring (%(default)s)")
    building.add_argument("--max-lines", type=int, default=Options.max_lines,
                          help="most lines of a body after its docstring (%(default)s)")
    building.add_argument("--max-tests", type=int, default=SuiteSettings.max_tests,
                          help="suite tests kept per function (%(default)s)")
    building.add_argument("--test-timeout", type=float, default=SuiteSettings.test_timeout,
                          help="seconds each suite test may take (%(default)s, the engine's default)")
    building.add_argument("--suite-timeout", type=float, default=SuiteSettings.timeout,
                          help="seconds the whole suite may take (%(default)s)")
    add_gate_arguments(building, "the suite and the gate")
    _add_model_options(building.add_argument_group("tests from a model (--tests=model, or the functions the "
                                                   "suite does not run)"))
    building.set_defaults(handler=build_command)

    exporting = commands.add_parser("export", help="export a problem set for other tools")
    formats = exporting.add_subparsers(dest="format", required=True)
    depit = formats.add_parser("depit", help="dependency-aware instruction-tuning records (JSONL), one a problem")
    depit.add_argument("folder", type=Path, help="a problem set, a project folder or a built one")
    depit.add_argument("--out", type=Path, required=True, help="the JSONL file to write")
    depit.add_argument("--context", choices=CONTEXT_LEVELS, default="full", help="context level (%(default)s)")
    depit.set_defaults(handler=export_depit_command)
    for name, layout in (("verl", "verl's Parquet (data_source, prompt, reward_model.ground_truth, extra_info)"),
                         ("trl", "TRL's dataset (JSONL: prompt, problem_id), as `datasets` reads it")):
        trainer = formats.add_parser(name, help=f"the prompts with their problem ids, in {layout}")
        trainer.add_argument("folder", type=Path, help="a problem set, a project folder or a built one")
        trainer.add_argument("--out", type=Path, required=True, help="the file to write")
        trainer.add_argument("--style", choices=PROMPT_STYLES, default="instruct1",
                             help="the paper's prompt format: base, instruct1 or instruct2 (%(default)s)")
        trainer.add_argument("--context", choices=CONTEXT_LEVELS, default="full", help="context level (%(default)s)")
        if name == "verl":
            trainer.add_argument("--split", default="train", help="extra_info.split (%(default)s)")
        trainer.set_defaults(handler=export_trainer_command)


def _add_model_options(group: argparse._ArgumentGroup) -> None:
    """The model's options, named as the plugin's without ``repoexec-`` (``--temperature``, ``--base-url``...)."""
    group.add_argument("--model", default=None, metavar="NAME",
                       help="any generator --repoexec-model accepts: openai:MODEL, hf:MODEL, vllm:MODEL, an alias")
    group.add_argument("--tests-per-function", type=int, default=ModelTestSettings.samples, metavar="N",
                       help="answers asked of the model for each function, each round (%(default)s)")
    group.add_argument("--coverage-rounds", type=int, default=ModelTestSettings.coverage_rounds, metavar="R",
                       help="coverage-enhancement rounds while the function's coverage is under the bar "
                            "(%(default)s)")
    group.add_argument("--temperature", type=float, default=Sampling.temperature, help="sampling temperature (%(default)s)")
    group.add_argument("--top-p", type=float, default=Sampling.top_p, help="nucleus sampling (%(default)s)")
    group.add_argument("--max-tokens", type=int, default=1024, help="tokens of one answer (%(default)s)")
    group.add_argument("--base-url", default=None, help="openai: server (default: OPENAI_BASE_URL, else OpenAI's)")
    group.add_argument("--api", choices=("chat", "completions"), default=ModelOptions.api,
                       help="openai: endpoint (%(default)s)")
    group.add_argument("--concurrency", type=int, default=ModelOptions.concurrency,
                       help="openai: requests at once (%(default)s)")
    group.add_argument("--request-timeout", type=float, default=ModelOptions.request_timeout,
                       help="openai: seconds a request may take (%(default)s)")
    group.add_argument("--retries", type=int, default=ModelOptions.retries, help="openai: retries (%(default)s)")
    group.add_argument("--dtype", default=ModelOptions.dtype, help="hf: and vllm: weights' dtype (%(default)s)")
    group.add_argument("--batch-size", type=int, default=ModelOptions.batch_size,
                       help="hf: prompts per batch (%(default)s)")
    group.add_argument("--tensor-parallel-size", type=int, default=ModelOptions.tensor_parallel_size,
                       help="vllm: GPUs one model spans (%(default)s)")


def _model_options(args: argparse.Namespace, cache: Path) -> ModelOptions:
    return ModelOptions(
        cache=cache, sampling=Sampling(args.temperature, args.top_p, args.max_tokens), base_url=args.base_url,
        api=args.api, concurrency=args.concurrency, request_timeout=args.request_timeout, retries=args.retries,
        dtype=args.dtype, batch_size=args.batch_size, tensor_parallel_size=args.tensor_parallel_size,
    )


def _model_settings(args: argparse.Namespace, cache: Path) -> ModelTestSettings | None:
    if args.model is None:
        return None
    if args.tests_per_function < 1 or args.coverage_rounds < 0:
        raise GenerationError("--tests-per-function must be at least 1 and --coverage-rounds at least 0")
    return ModelTestSettings(args.model, _model_options(args, cache), args.tests_per_function, args.coverage_rounds)


def _class_options(args: argparse.Namespace, cache: Path) -> ClassOptions | None:
    if not args.classes:
        if args.describe_model is not None:
            raise GenerationError("--describe-model describes classes: it needs --classes")
        return None
    if args.model is not None or args.tests == "model":
        raise GenerationError("--classes are judged by the project's own suite: --model and --tests=model do not "
                              "apply")
    if not 0 <= args.min_method_coverage <= 100:
        raise GenerationError("--min-method-coverage is a percentage, 0 to 100")
    options = _model_options(args, cache) if args.describe_model is not None else None
    return ClassOptions(args.private, args.min_method_coverage, args.describe_model, options)


def build_command(args: argparse.Namespace) -> int:
    requirements = tuple(part.strip() for entry in args.requirements for part in entry.split(",") if part.strip())
    cache = args.cache or default_cache_dir()
    try:
        model, classes = _model_settings(args, cache), _class_options(args, cache)
    except GenerationError as exc:
        print(f"repoexec build: {exc}", file=sys.stderr)
        return 2
    options = BuildOptions(
        source=args.source, out=args.out, cache=cache, tests=args.tests, model=model,
        requirements=requirements, classes=classes,
        functions=Options(private=args.private, min_lines=args.min_lines, max_lines=args.max_lines),
        suite=SuiteSettings(test_timeout=args.test_timeout, timeout=args.suite_timeout, max_tests=args.max_tests),
        sandbox=args.sandbox, gate=not args.no_gate, workers=args.workers, gate_options=tuple(args.gate_option),
    )
    try:
        report = build(options, say=lambda line: print(line, file=sys.stderr))
    except BuildError as exc:
        print(f"repoexec build: {exc}", file=sys.stderr)
        return 1
    print("\n".join(report.table()))
    print(f"written to {args.out} (report: {args.out / 'build-report.json'})")
    return 0


def export_trainer_command(args: argparse.Namespace) -> int:
    where = f"repoexec export {args.format}"
    if not args.folder.is_dir():
        print(f"{where}: {args.folder} is not a folder", file=sys.stderr)
        return 2
    problems, known, errors = trainer_problems(args.folder)
    for reason in [*known, *errors]:
        print(f"{where}: left out: {reason}", file=sys.stderr)
    if not problems:
        print(f"{where}: no problem under {args.folder}", file=sys.stderr)
        return 1
    if args.format == "verl":
        write_parquet(verl_rows(problems, args.style, args.context, args.split), args.out)
    else:
        write_jsonl(trl_rows(problems, args.style, args.context), args.out)
    print(f"{where}: {len(problems)} prompts written to {args.out}")
    return 1 if errors else 0


def export_depit_command(args: argparse.Namespace) -> int:
    if not args.folder.is_dir():
        print(f"repoexec export depit: {args.folder} is not a folder", file=sys.stderr)
        return 2
    records, errors = depit_records(args.folder, args.context)
    for error in errors:
        print(f"repoexec export depit: left out: {error}", file=sys.stderr)
    if not records:
        print(f"repoexec export depit: no problem under {args.folder}", file=sys.stderr)
        return 1
    write_jsonl(records, args.out)
    print(f"repoexec export depit: {len(records)} records written to {args.out}")
    return 1 if errors else 0
