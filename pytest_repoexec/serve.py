"""``repoexec serve PATH...``: its options (the run's ``--repoexec-*`` options that apply, the service's own),
checked before the problems open and the service (``service``) starts."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

from .api import ProblemSet, settings_for
from .executor import JUDGE_MODES
from .problem import ManifestError

DEFAULT_PORT = 8123


def register(commands: argparse._SubParsersAction) -> None:
    serving = commands.add_parser("serve", help="judge completions over HTTP (the plain API, OpenRLHF's "
                                                "/get_reward, /health) for training loops")
    serving.add_argument("paths", type=Path, nargs="+", metavar="PATH", help="problem folders")
    serving.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this host only)")
    serving.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    serving.add_argument("-n", "--workers", type=int, default=os.cpu_count() or 1,
                         help="judging processes (as -n of a pytest run; default: the CPUs)")
    serving.add_argument("--queue", type=int, default=1024, metavar="N",
                         help="samples admitted and not yet judged; past them a request is answered 504 at once "
                              "(default 1024)")
    serving.add_argument("--request-timeout", type=float, default=170.0, metavar="SECONDS",
                         help="a request not judged by then is answered 504, its samples still judged for a retry "
                              "(default 170: within OpenRLHF's 180)")
    serving.add_argument("--max-batch", type=int, default=4096, metavar="N", help="samples in one request (4096)")
    serving.add_argument("--max-completion-bytes", type=int, default=1 << 20, metavar="N",
                         help="bytes of one completion (default 1 MiB)")
    serving.add_argument("--journal", type=Path, default=None, metavar="PATH",
                         help="where each request id's verdicts are kept (default: serve/requests.jsonl in the cache)")
    serving.add_argument("--shape", choices=("pass", "tr"), default="pass", help="/get_reward's reward (pass)")
    serving.add_argument("--unjudged", type=float, default=None, metavar="R",
                         help="/get_reward's reward for a completion the host could not judge (default: none; "
                              "the request is answered 503, which OpenRLHF retries)")
    serving.add_argument("--repoexec-cache", default=None, metavar="DIR", help="as the pytest option")
    serving.add_argument("--repoexec-executor", choices=("warm", "process"), default="warm",
                         help="as the pytest option")
    serving.add_argument("--repoexec-sandbox", choices=("bwrap", "none"), default="bwrap", help="as the pytest option")
    serving.add_argument("--repoexec-judge", choices=JUDGE_MODES, default="apart",
                         help="as the pytest option")
    serving.add_argument("--repoexec-decoy", choices=("check", "off"), default="check", help="as the pytest option")
    serving.add_argument("--repoexec-timeout", type=float, default=5.0, help="as the pytest option")
    serving.add_argument("--repoexec-sample-timeout", type=float, default=120.0, help="as the pytest option")
    serving.add_argument("--repoexec-timeout-factor", type=float, default=10.0, help="as the pytest option")
    serving.add_argument("--repoexec-min-timeout", type=float, default=1.0, help="as the pytest option")
    serving.add_argument("--repoexec-fail-fast", action="store_true", help="as the pytest option")
    serving.add_argument("--repoexec-fresh", action="store_true", help="as the pytest option")
    serving.set_defaults(handler=serve_command)


def serve_command(args: argparse.Namespace) -> int:
    for name in ("workers", "queue", "max_batch", "max_completion_bytes"):
        if getattr(args, name) < 1:
            print(f"repoexec serve: --{name.replace('_', '-')} must be at least 1", file=sys.stderr)
            return 2
    if args.request_timeout <= 0:
        print("repoexec serve: --request-timeout must be more than 0 seconds", file=sys.stderr)
        return 2
    try:
        from .service import Journal, Service, serve
    except ImportError as exc:
        print(f"repoexec serve: {exc}; install the rl extra: pip install 'pytest-repoexec[rl]'", file=sys.stderr)
        return 2
    try:
        settings = settings_for(
            args.repoexec_cache, workers=args.workers, executor=args.repoexec_executor, sandbox=args.repoexec_sandbox,
            judge=args.repoexec_judge, decoy=args.repoexec_decoy == "check", test_timeout=args.repoexec_timeout,
            sample_timeout=args.repoexec_sample_timeout, timeout_factor=args.repoexec_timeout_factor,
            min_timeout=args.repoexec_min_timeout, fail_fast=args.repoexec_fail_fast,
            fresh=args.repoexec_fresh)
        problems = ProblemSet(args.paths, settings)
    except (ValueError, OSError, ManifestError) as exc:  # each names the option, file or field
        print(f"repoexec serve: {exc}", file=sys.stderr)
        return 2
    journal = Journal(args.journal or settings.cache / "serve" / "requests.jsonl")
    service = Service(problems, journal, args.queue, args.request_timeout, args.max_batch,
                      args.max_completion_bytes, args.shape, args.unjudged)
    try:
        asyncio.run(serve(service, args.host, args.port))
    except OSError as exc:  # the address is taken, or not this host's
        print(f"repoexec serve: --host {args.host} --port {args.port}: {exc}", file=sys.stderr)
        return 2
    finally:
        problems.close()
        journal.close()
    return 0
