"""``--repoexec-executor=warm``: samples forked from a warm process per project environment, in the sandbox.

A fresh ``python -m pytest`` per sample pays for the sandbox, the interpreter, pytest, and the project's
third-party imports (numpy, twisted...) every time. Here one long-lived process per (engine worker,
environment) has imported them once, inside a sandbox of its own, and forks each sample a test process with
its own namespaces, root and limits (``runtime/repoexec_warm.py`` says how). The sample gets the same
arguments, environment, view, pipes and token as with ``SubprocessExecutor``, and the engine watches and
judges it with the same code, so the verdicts are the same.

Inside the sandbox, a problem's samples fork from a zygote of that problem instead: a child of the warm process
that has also imported the project's own modules that do not import the focal module (so a sample imports only
its module, what imports it, and its tests). The zygotes of a warm process are bounded too.

The warm processes kept alive are bounded (least recently used out). One that cannot start, or that dies twice
in a row, leaves its project to fresh processes, with a warning that names it. A problem whose zygote cannot
start runs its samples from the warm process itself (the verdicts are the same; only the imports are paid again).
"""

from __future__ import annotations

import ast
import base64
import collections
import contextlib
import dataclasses
import fnmatch
import functools
import hashlib
import json
import os
import select
import signal
import socket
import subprocess
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .environment import ProjectEnv
from .cgroups import OwnNamespace, ProcessCgroup, SampleSetupError
from .executor import (TEST_TIMEOUTS, Launch, ProblemLayoutError, SubprocessExecutor, Pipes, SplitPipes, SplitSample,
                       Watched, held, module_file, seen_root, spent, tests_package_root, watch)
from .problem import Problem
from .runtime import repoexec_warm as zygote
from .sandbox import (
    DATA_TMPFS, HOME, SCRATCH, Bubblewrap, Limits, Sandbox, Tree, View, python_home, sample_user,
    system_entries,
)

START_TIMEOUT = 120.0  # seconds a warm process may take to import what it preloads
_UNBOUNDED = 1 << 16  # a warm process's pids limit while it starts
KILL_TIMEOUT = 10.0  # seconds a warm process may take to say that the sample it was told to kill has ended
ZYGOTES = 8  # the problem zygotes a warm process keeps alive (least recently used out)
_LOG_TAIL = 2000


class WarmStartWarning(UserWarning):
    """A project's warm process could not start, or kept dying: its samples run in fresh processes."""


class WarmProcessDied(Exception):
    """The warm process ended, or stopped answering, while it ran a sample."""


@dataclass(frozen=True)
class _Key:
    venv: Path
    project_folder: Path  # the problems' folder: none of its modules is preloaded
    network: bool


class WarmExecutor(SubprocessExecutor):
    def __init__(self, test_timeout: float, sample_timeout: float, sandbox: Sandbox | None = None,
                 limits: Limits = Limits(), keep: int = 4, zygotes: int = ZYGOTES,
                 accept_no_process_limit: bool = False, judge: str = "apart") -> None:
        super().__init__(test_timeout, sample_timeout, sandbox, limits, accept_no_process_limit, judge)
        self.keep, self.zygotes = keep, zygotes
        self.processes: collections.OrderedDict[_Key, WarmProcess] = collections.OrderedDict()
        self.cold: dict[_Key, str] = {}  # environments left to fresh processes, and why

    def _execute(self, env: ProjectEnv, problem: Problem, launch: Launch, token: str) -> Watched:
        key = _Key(env.python.parent.parent, problem.project.manifest.parent, problem.network)
        for attempt in (1, 2):
            process = self._process(key, env, problem, launch) if key not in self.cold else None
            request = self._request(launch, process) if process else None
            if request is None:
                break
            try:
                server = self._zygote(process, env, problem, launch, request)
                watched = (server or process).run(request, launch, token)
                first = process.start_time + (server.start_time if server else 0.0)
                process.start_time = 0.0
                if server:
                    server.start_time = 0.0
                return dataclasses.replace(watched, warm_start=first)
            except WarmProcessDied as exc:
                self._stop(key)
                if attempt == 2:
                    self._give_up(key, problem, f"it died twice in a row ({exc})")
        return super()._execute(env, problem, launch, token)

    def _execute_split(self, env: ProjectEnv, problem: Problem, judge: Launch, candidate: Launch,
                       token: str) -> Watched:
        """The judge and the candidate's process, each forked from a zygote of the problem's (one holds the
        judges, the other the candidates: a zygote runs one sample at a time); fresh processes where the
        problem has no zygotes. A warm process that dies is started again and the sample retried, as alone."""
        key = _Key(env.python.parent.parent, problem.project.manifest.parent, problem.network)
        for attempt in (1, 2):
            process = self._process(key, env, problem, judge) if key not in self.cold else None
            if process is None:
                break
            try:
                watched = self._split_from(process, env, problem, judge, candidate, token)
            except WarmProcessDied as exc:
                self._stop(key)
                if attempt == 2:
                    self._give_up(key, problem, f"it died twice in a row ({exc})")
                continue
            if watched is None:
                break
            return watched
        return super()._execute_split(env, problem, judge, candidate, token)

    def _split_from(self, process: WarmProcess, env: ProjectEnv, problem: Problem, judge: Launch,
                    candidate: Launch, token: str) -> Watched | None:
        """The split sample from ``process``'s zygotes, or None where it has none for the problem."""
        requests = [self._request(launch, process) for launch in (judge, candidate)]
        if None in requests:
            return None
        requests[1]["program"] = candidate.program
        # a zygote or the warm process runs one sample at a time: the two may not both be the warm process
        candidate_server = self._zygote(process, env, problem, candidate, requests[1], "candidate") or process
        judge_server = self._zygote(process, env, problem, judge, requests[0], "judge")
        if judge_server is None and candidate_server is process:
            return None
        servers = [judge_server or process, candidate_server]
        began = time.monotonic()
        refusals = process.allow(judge.limits.processes, candidate.limits.processes)
        pipes = SplitPipes(token)
        try:
            servers[1].start(requests[1], pipes.candidate_ends())
            servers[0].start(requests[0], (*pipes.sample_ends(), pipes.judge_channel))
        except WarmProcessDied:
            pipes.close()
            raise
        finally:
            pipes.close_sample_ends()
        pair = SplitSample(_Sample(servers[0]), _Sample(servers[1]))
        watched = watch(pair, pipes, began, judge)
        first = process.start_time + sum(server.start_time for server in servers)
        process.start_time = servers[0].start_time = servers[1].start_time = 0.0
        watched = dataclasses.replace(pair.candidate_limit(watched, judge.confined), warm_start=first,
                                      cpu=spent(judge=servers[0].cpu, candidate=servers[1].cpu))
        return held(watched, refused=bool(process.cgroup and process.cgroup.refusals() > refusals))

    def _zygote(self, process: WarmProcess, env: ProjectEnv, problem: Problem, launch: Launch,
                request: dict[str, Any], role: str = "sample") -> _Zygote | None:
        """The problem's zygote, where it has one: inside the sandbox (without it, a sample's paths are its own),
        for a problem with a test module (a suite's conftest files import what they will) that imports some
        of the project's modules. A judge's zygote holds the judge's whole view and collects its tests once:
        nothing of the candidate's is in it, so every sample's judge is the same up to its tests' run."""
        if not self.zygotes or not request["confined"] or problem.tests is None or launch.once:
            return None
        if role == "judge":  # one for the problem's reference and its samples: each sample's per-test limits (the
            # reference's own run has none) come with it, not in the collected session (``repoexec_warm._collect``)
            arguments = [argument for argument in request["arguments"] if not argument.startswith(TEST_TIMEOUTS)]
            return process.zygote(request | {"arguments": arguments, "zygote": True, "collect": True}, self.zygotes)
        made = _zygote_request(env, problem, launch, request) | {"role": role}
        return process.zygote(made, self.zygotes) if made["imports"] else None

    def close(self) -> None:
        """Every warm process told to end at once (each ends with its socket, its zygotes with it), then each
        waited for, so that its cgroup and scratch folder can go: the waits overlap instead of adding up."""
        processes = list(self.processes.values())
        self.processes.clear()
        for process in processes:
            process.let_go()
        for process in processes:
            process.close()

    def _process(self, key: _Key, env: ProjectEnv, problem: Problem, launch: Launch) -> WarmProcess | None:
        if key in self.processes:
            self.processes.move_to_end(key)
            return self.processes[key]
        started = time.monotonic()
        try:
            process = WarmProcess(key, env, problem, self.sandbox, launch.environment, self.cgroup)
        except WarmProcessDied as exc:
            self._give_up(key, problem, str(exc))
            return None
        process.start_time = time.monotonic() - started
        self.processes[key] = process
        while len(self.processes) > self.keep:
            self.processes.popitem(last=False)[1].close()
        return process

    def _stop(self, key: _Key) -> None:
        process = self.processes.pop(key, None)
        if process is not None:
            process.close()

    def _give_up(self, key: _Key, problem: Problem, why: str) -> None:
        self.cold[key] = why
        warnings.warn(WarmStartWarning(
            f"project {problem.project.name}: its warm process {why}; its samples run in fresh processes, as "
            "with --repoexec-executor=process"
        ), stacklevel=2)

    def _request(self, launch: Launch, process: WarmProcess) -> dict[str, Any] | None:
        """What the warm process needs to build the sample's view; None when it cannot show the view (a bind
        outside what its own sandbox holds: the fresh process runs it)."""
        view, confined = launch.view, isinstance(self.sandbox, Bubblewrap)
        binds: list[list[str | None]] = [["/etc", "/etc"]]
        for host, seen in view.binds:
            if any(host == folder or folder in host.parents for folder in process.binds):
                binds.append([str(host), str(seen)])
            elif confined:
                return None
        if not confined:
            view.tree.materialise(view.tree_at)
            if view.data is not None:
                view.data.write(view.data.at)
        data = view.data if confined else None
        return {
            "arguments": list(launch.arguments), "environment": launch.environment, "workdir": str(view.workdir),
            "confined": confined, "user": [sample_user(), HOME] if confined and sample_user() is not None else None,
            "view": {"tmpfs": view.tmpfs_bytes, "network": view.network, "system": system_entries(), "binds": binds,
                     "scratch": list(SCRATCH),
                     **_tree(view.tree, view.tree_at),
                     "aliases": [[str(alias), str(view.tree_at)] for alias in view.aliases],
                     "mtime": view.tree_mtime,
                     "masks": [[str(path), _b64(content)] for path, content in view.masks] if confined else [],
                     "data": None if data is None else {
                         "at": str(data.at), "size": DATA_TMPFS,
                         "files": [[str(path), _b64(content)] for path, content in data.files]}},
        }


def _zygote_request(env: ProjectEnv, problem: Problem, launch: Launch, sample: dict[str, Any]) -> dict[str, Any]:
    """What a problem's zygote builds and imports: the sample's view less the sample's own files (its module, its
    tests, their configuration), with the copies of the reference shown empty and no expected values."""
    focal = module_file(env.import_root, problem.module).relative_to(env.source_root)
    root = seen_root(env)  # where the tests are named (RepoExec's /input/test-apps/NAME, a link to the tree)
    base = tests_package_root(env, focal)
    extra = [folder for folder in launch.environment.get("PYTHONPATH", "").split(os.pathsep) if folder]
    view = dict(sample["view"], files=[], data=None, masks=[[path, ""] for path, _ in sample["view"]["masks"]])
    return {"zygote": True, "view": view, "workdir": sample["workdir"], "environment": launch.environment,
            "path": list(dict.fromkeys([str(root / base), sample["workdir"], *extra])), "focal": problem.module,
            "imports": zygote_imports(env.import_root, env.source_root / focal, problem.module, problem.tests)}


@functools.lru_cache(maxsize=1024)
def zygote_imports(import_root: Path, focal: Path, module: str, tests: Path) -> tuple[str, ...]:
    """The project modules that the focal module's top level and the tests' import, in that order (the module
    around the candidate is the same for every sample, and a top-level import is not the reference's), less
    the focal module and modules that pytest would rewrite as tests."""
    package = module if focal.name == "__init__.py" else module.rpartition(".")[0]
    kept = []
    for name in dict.fromkeys([*imported_by(focal.read_text("utf-8"), package), *imported_by(tests.read_text("utf-8"))]):
        if name == module or name.startswith(module + ".") or \
                any(fnmatch.fnmatch(name.rpartition(".")[2] + ".py", pattern) for pattern in ("test_*", "*_test.py")):
            continue
        try:
            module_file(import_root, name)
        except ProblemLayoutError:
            continue  # not a module of the project (a third-party one, which the warm process has, or a name)
        kept.append(name)
    return tuple(kept)


def imported_by(source: str, package: str = "") -> list[str]:
    """The modules a module's top level imports (relative ones resolved in ``package``), and the names its
    ``from`` imports take, which may be modules too."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    names: list[str] = []
    for node in _top_level(tree.body):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            parent = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1] if package else []
                parent = ".".join([*anchor, *([parent] if parent else [])])
            names.extend([parent, *(f"{parent}.{alias.name}" for alias in node.names if alias.name != "*")]
                         if parent else [])
    return names


def _top_level(body: list[ast.stmt]):
    """The statements run when a module is imported, through ``if`` and ``try`` but not into functions."""
    for node in body:
        yield node
        if isinstance(node, (ast.If, ast.Try)):
            for block in (node.body, node.orelse, *(getattr(node, "finalbody", ()),),
                          *(handler.body for handler in getattr(node, "handlers", ()))):
                yield from _top_level(block)


def _b64(content: bytes) -> str:
    return base64.b64encode(content).decode("ascii")


def _tree(tree: Tree, at: Path) -> dict[str, list]:
    return {
        "folders": [str(at / folder) for folder in (Path(), *tree.folders)],
        "links": [[str(at / path), str(target)] for path, target in tree.links],
        "files": [[str(at / path), _b64(content)] for path, content in tree.files],
    }


class _Server:
    """A process that runs our samples one at a time over a socket: a warm process, or a problem's zygote."""

    def __init__(self, sock: socket.socket, cgroup: Any) -> None:
        self.socket = sock
        self.cgroup = cgroup
        self.exited: int | None = None
        self.cpu: tuple[float, float] | None = None  # the last sample's tree's CPU seconds: user, system
        self.start_time = 0.0  # seconds it took to start, until a sample has counted them

    def run(self, request: dict[str, Any], launch: Launch, token: str) -> Watched:
        began = time.monotonic()
        refusals = self.allow(launch.limits.processes)
        pipes = Pipes(token)
        try:
            self.start(request, pipes.sample_ends())
        except WarmProcessDied:
            pipes.close()
            raise
        finally:
            pipes.close_sample_ends()
        watched = watch(_Sample(self), pipes, began, launch)
        watched = dataclasses.replace(watched, cpu=spent(sample=self.cpu))
        return held(watched, refused=bool(self.cgroup and self.cgroup.refusals() > refusals))

    def allow(self, *limits: int) -> int:
        """Room in the warm process's cgroup for a sample's processes, given each process tree's limit; the
        refusals counted so far. A tree's limit counts bubblewrap's two processes, where a warm sample's tree
        has its init alone: the sample may start as many processes either way."""
        if not self.cgroup:
            return 0
        try:
            self.cgroup.allow(self.cgroup.current() + sum(limit - 1 for limit in limits))
        except OSError as exc:  # the host's, never a verdict
            raise SampleSetupError(f"the sample's process limit could not be set in its cgroup: {exc}") from None
        return self.cgroup.refusals()

    def start(self, request: dict[str, Any], fds: tuple[int, ...]) -> None:
        """Fork the sample, handing it ``fds`` (output, results, token, and a judge's channel)."""
        self.exited, self.cpu = None, None
        payload = os.memfd_create("repoexec-request")  # read by the sample's init, never by the warm process
        try:
            os.write(payload, json.dumps(request).encode("utf-8"))
            os.lseek(payload, 0, os.SEEK_SET)
            zygote.send(self.socket, {"op": "sample", "namespaces": zygote.namespaces(request)}, (*fds, payload))
        except OSError as exc:
            raise WarmProcessDied(f"it stopped taking samples: {exc}") from None
        finally:
            os.close(payload)

    def wait(self, timeout: float) -> int | None:
        if self.exited is None and select.select([self.socket], [], [], timeout)[0]:
            self.exited = self._ended(self._answer(KILL_TIMEOUT))
        return self.exited

    def kill(self) -> int:
        if self.exited is None:
            try:
                zygote.send(self.socket, {"op": "kill"})
            except OSError as exc:
                raise WarmProcessDied(f"it could not be told to kill a sample: {exc}") from None
            self.exited = self._ended(self._answer(KILL_TIMEOUT))
        return self.exited

    def _ended(self, message: dict[str, Any]) -> int:
        """The sample's exit status; its tree's CPU seconds (user, system) kept in ``cpu``."""
        cpu = message.get("cpu")
        if isinstance(cpu, list) and len(cpu) == 2 and all(isinstance(part, (int, float)) for part in cpu):
            self.cpu = (float(cpu[0]), float(cpu[1]))
        return message["exit"]

    def _answer(self, timeout: float) -> dict[str, Any]:
        message, fds = self._receive(timeout)
        for fd in fds:
            os.close(fd)
        return message

    def _receive(self, timeout: float) -> tuple[dict[str, Any], list[int]]:
        if not select.select([self.socket], [], [], timeout)[0]:
            raise WarmProcessDied(f"no answer in {timeout:.0f} s")
        try:
            message, fds = zygote.receive(self.socket)
        except OSError as exc:
            raise WarmProcessDied(f"it ended ({exc})") from None
        if message is None:
            raise WarmProcessDied(f"it ended{self._status()}")
        return message, fds

    def _status(self) -> str:
        return ""


class _Zygote(_Server):
    """A problem's zygote in a warm process (``runtime/repoexec_warm.py`` says what it holds)."""

    modules: list[str] = []  # the project's modules it imported
    collected: int | None = None  # a judge's zygote: the tests it collected

    def close(self) -> None:
        self.socket.close()  # it ends when its socket does, and the warm process collects it


class WarmProcess(_Server):
    """One warm process: started (inside the sandbox, keeping its capabilities in its own user namespace)
    and ready once it has preloaded; then one sample at a time.

    Where the engine runs as root, the warm process lives in a pids cgroup of its own, whose limit is set
    before each sample to what it holds then plus the sample's limit, less bubblewrap's two processes in a fresh
    sample's cgroup, plus its init, so a sample may start as many processes either way.
    (A cgroup per sample would cost a migration, about 10 ms, each time.)"""

    def __init__(self, key: _Key, env: ProjectEnv, problem: Problem, sandbox: Sandbox,
                 environment: dict[str, str], cgroups: ProcessCgroup | OwnNamespace | None) -> None:
        self.zygotes: collections.OrderedDict[str, _Zygote] = collections.OrderedDict()
        self.barren: dict[str, str] = {}  # problems whose zygote could not start, and why
        # what its sandbox shows (where the host has it), and so what a sample's view may bind
        self.binds = (python_home(env.python), key.venv, *([env.runtime] if env.runtime else []), env.source_root)
        self._resources = contextlib.ExitStack()
        ours, inside = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._resources.callback(ours.close)
        scratch = Path(self._resources.enter_context(tempfile.TemporaryDirectory(prefix="repoexec-warm-")))
        self.log = self._resources.enter_context(open(scratch / "log", "w+b"))
        super().__init__(ours, self._resources.enter_context(cgroups.sample(_UNBOUNDED)) if cgroups else None)
        argv, fds, cwd = [str(env.python), "-m", "repoexec_warm", str(inside.fileno())], (), None
        environment = dict(environment)
        if isinstance(sandbox, Bubblewrap):
            view = View(Tree((), (), ()), Path(zygote.NEW_ROOT), binds=tuple((path, path) for path in self.binds),
                        workdir=Path(zygote.NEW_ROOT), tmpfs_bytes=64 << 20, network=key.network)
            argv, fds = sandbox.wrap(view, argv, capabilities=True)
        else:
            cwd = scratch / "cwd"
            cwd.mkdir()
            environment.update(HOME=str(cwd), TMPDIR=str(cwd))
        try:
            self.process = subprocess.Popen(
                self.cgroup.entering(argv) if self.cgroup else argv, cwd=cwd, env=environment,
                stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log, start_new_session=True,
                pass_fds=(inside.fileno(), *fds),
            )
        except OSError as exc:
            self._resources.close()
            raise WarmProcessDied(f"could not start: {exc}") from None
        finally:
            inside.close()
            for fd in fds:
                os.close(fd)
        project_paths = [str(env.source_root), str(key.project_folder)]
        try:
            # what the focal module and the tests import: the preloading child keeps the third-party part
            modules = [problem.module, *(imported_by(problem.tests.read_text("utf-8")) if problem.tests else [])]
            zygote.send(self.socket, {"modules": modules, "import_root": str(env.import_root),
                                      "source_root": str(env.source_root), "project_paths": project_paths})
            answer = self._answer(START_TIMEOUT)
        except (OSError, WarmProcessDied) as exc:
            answer = {"error": str(exc)}
        if "ready" not in answer:
            why = f"could not start: {answer.get('error')}{self._log_tail()}"
            self.close()
            raise WarmProcessDied(why)

    def zygote(self, request: dict[str, Any], keep: int) -> _Zygote | None:
        """The zygote for a problem's request, started if need be (``keep`` alive at most); None where it could
        not start."""
        key = hashlib.sha256(json.dumps(request, sort_keys=True).encode("utf-8")).hexdigest()
        if key in self.zygotes:
            self.zygotes.move_to_end(key)
            return self.zygotes[key]
        if key in self.barren:
            return None
        started = time.monotonic()
        payload = os.memfd_create("repoexec-zygote")  # read by the zygote alone
        try:
            os.write(payload, json.dumps(request).encode("utf-8"))
            os.lseek(payload, 0, os.SEEK_SET)
            zygote.send(self.socket, {"op": "zygote"}, (payload,))
        except OSError as exc:
            raise WarmProcessDied(f"it stopped taking zygotes: {exc}") from None
        finally:
            os.close(payload)
        _, fds = self._receive(START_TIMEOUT)
        made = _Zygote(socket.socket(fileno=fds[0]), self.cgroup)
        try:
            answer = made._answer(START_TIMEOUT)
        except WarmProcessDied as exc:
            answer = {"error": str(exc)}
        if "ready" not in answer:
            made.close()
            self.barren[key] = answer.get("error", "")
            return None
        made.start_time = time.monotonic() - started
        made.modules, made.collected = answer["ready"], answer.get("collected")
        self.zygotes[key] = made
        while len(self.zygotes) > keep:
            self.zygotes.popitem(last=False)[1].close()
        return made

    def let_go(self) -> None:
        """Its sockets closed: the warm process ends when its own is (its zygotes when theirs are)."""
        while self.zygotes:
            self.zygotes.popitem()[1].close()
        self.socket.close()

    def close(self) -> None:
        self.let_go()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self._resources.close()

    def _status(self) -> str:
        return f" (status {self.process.poll()})"

    def _log_tail(self) -> str:
        self.log.flush()
        self.log.seek(0)
        tail = self.log.read().decode("utf-8", "replace")[-_LOG_TAIL:].strip()
        return f"; its output ends: {tail}" if tail else ""


class _Sample:
    """The sample a warm process runs, as ``watch`` polls, waits for and kills it."""

    def __init__(self, process: _Server) -> None:
        self.process = process

    def poll(self) -> int | None:
        return self.process.wait(0)

    def wait(self, timeout: float) -> int | None:
        return self.process.wait(timeout)

    def kill(self) -> int:
        return self.process.kill()
