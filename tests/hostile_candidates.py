"""A catalogue of hostile candidates for the mini project's ``mini/scaled`` problem (``tests/test_hostile.py``).

``scaled(value)`` must return ``clamp(value * SCALE, 0, 100)``; its tests are ``scaled(3) == 30``,
``scaled(50) == 100``, ``scaled(-1) == 0`` and ``scaled(7) == <the pickle REPOEXEC_EXPECTED/seven.pkl>`` (70).

Each behaviour is the text of one completion and the error type its sample must get. A completion is a whole
``def scaled(value):``; only that definition reaches the module, so whatever a candidate does happens when the
tests call it (or, through a default argument, when the module is imported). The texts are ``string.Template``s
filled with what only the test knows, each value a Python literal:

- ``$marker``: a token unique to the test run, in every name a candidate tries to create (file, process);
  15 characters, so that it fits a process's ``comm``
- ``$home``: the real home folder (not the ``HOME`` that pytester or the sandbox sets)
- ``$cache``: the run's ``--repoexec-cache``
- ``$problem``: the host path of the ``mini/scaled`` problem folder
- ``$secret``: the host path of another problem's expected file (``mini/swap/expected/secret.pkl``)
- ``$runfolder``: the host folder the run works in (its replay file, its JSON report)
- ``$port``: a TCP port on 127.0.0.1 where the test listens and counts connections

Conventions that keep each outcome unambiguous:

- A candidate that tries to get out and is refused (an ``OSError`` of any kind) returns a wrong value
  (``value`` itself: wrong for all four tests), so the sample fails with ``AssertionError`` whatever the
  refusal's errno. Where the attempt shows from the inside that it worked (a file that the contract shows
  read-only was written: the cached source, the virtualenv, the test and focal modules; a connection made;
  another problem's file read), the candidate raises ``SandboxEscape``, so a breach reads as such in the
  report. Where the inside cannot tell (``/tmp`` and the home folder are the sample's own tmpfs, and the
  folders on the way to a bind are made in it), the test's checks on the host decide.
- Every bomb is bounded by the candidate itself (memory, processes, disk, output), well past the limits the
  run sets but small enough not to hurt this machine when nothing contains it; where the bound is reached
  the candidate returns a wrong value or hangs, so that a missing limit shows as the wrong error type.
- Writes that could land on the host by mistake only append comments or create new files named with the
  marker: a breach never breaks the shared cache for the rest of the test session.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from string import Template

EARLY = "early exits and fake outcomes"
HANGS = "hangs"
BOMBS = "resource bombs"
ESCAPES = "escapes"
GAMES = "grader games"

MAIN = "main"  # the whole run with every limit set small
WALL_CLOCK = "wall-clock"  # a run whose CPU limit is above its sample timeout: only the wall clock can stop it


@dataclass(frozen=True)
class Hostile:
    name: str
    group: str
    expected: tuple[str, ...]  # the error types the sample may get: one, unless the contract leaves a choice
    source: str  # a string.Template of the completion
    why: str  # what the behaviour does and why it gets that error type
    run: str = MAIN

    def completion(self, context: dict[str, str]) -> str:
        return Template(textwrap.dedent(self.source).lstrip("\n")).substitute(context)


# Shared by the escapes: the exception a candidate raises when its attempt got through, and a write that
# tells whether it was refused. Indented for a function body.
_ESCAPE = '''
    import os
    marker = $marker

    class SandboxEscape(Exception):
        """The attempt worked: the sandbox let it through."""

    def wrote(path, text="escaped " + marker + "\\n", mode="a"):
        try:
            with open(path, mode) as handle:
                handle.write(text)
        except OSError:
            return False
        return True
'''

# Shared by the forgers: every record of a session in which the four tests passed, as the inner protocol
# encodes them (the real module when the sandbox lets it be imported, else its JSON by hand).
_FORGE = '''
    import json
    import os

    def forged(prefix, whole, skip=()):
        names = ["test_middle", "test_high", "test_low", "test_pickled"]
        wanted = [(prefix + "::" + name, when) for name in names for when in ("setup", "call", "teardown")]
        wanted = [entry for entry in wanted if entry not in skip]
        try:
            import repoexec_protocol as protocol
            records = [protocol.Start(), protocol.Collected(collected=4, deselected=0)] if whole else []
            records += [protocol.Report(nodeid=node, when=when, outcome="passed", duration=0.001)
                        for node, when in wanted]
            records.append(protocol.Finish(exitstatus=0, unstable=[], captures=[], coverage=None))
            return "".join(protocol.encode(record) for record in records).encode()
        except Exception:
            lines = ([{"kind": "start", "schema": 1}, {"kind": "collected", "collected": 4, "deselected": 0}]
                     if whole else [])
            lines += [{"kind": "report", "nodeid": node, "when": when, "outcome": "passed", "duration": 0.001,
                       "error_type": None, "message": None, "longrepr": None} for node, when in wanted]
            lines.append({"kind": "finish", "exitstatus": 0, "unstable": [], "captures": [], "coverage": None})
            return "".join(json.dumps(line) + "\\n" for line in lines).encode()

    current = os.environ.get("PYTEST_CURRENT_TEST", "x::test_middle (call)").rsplit(" ", 1)[0]
    prefix, test = current.rsplit("::", 1)
'''


def _with(prelude: str, body: str, signature: str = "def scaled(value):") -> str:
    """A function whose body is a shared prelude, then the behaviour's own lines."""
    lines = textwrap.dedent(prelude).strip("\n") + "\n\n" + textwrap.dedent(body).strip("\n")
    return signature + "\n" + textwrap.indent(lines, "    ") + "\n"


CATALOGUE: tuple[Hostile, ...] = (
    # ---------------------------------------------------------------- early exits and fake outcomes
    Hostile("os_exit", EARLY, ("EarlyExit",), """
        def scaled(value):
            import os
            os._exit(0)
        """, "the process ends with status 0 inside test_middle, before its session ends"),
    Hostile("sys_exit", EARLY, ("SystemExit",), """
        def scaled(value):
            import sys
            sys.exit(0)
        """, "pytest catches SystemExit raised in a test and fails that test with it"),
    Hostile("pytest_exit", EARLY, ("TestCountMismatch",), """
        def scaled(value):
            import pytest
            pytest.exit("all good", returncode=0)
        """, "the session stops in test_middle and ends normally with no test run: fewer tests than declared"),
    Hostile("pytest_skip", EARLY, ("Skipped",), """
        def scaled(value):
            import pytest
            pytest.skip("nothing to see")
        """, "every test skips"),
    Hostile("pytest_xfail", EARLY, ("Skipped",), """
        def scaled(value):
            import pytest
            pytest.xfail("expected to fail anyway")
        """, "an imperative xfail is reported as a skip (wasxfail): not a pass"),
    Hostile("keyboard_interrupt", EARLY, ("TestCountMismatch",), """
        def scaled(value):
            raise KeyboardInterrupt
        """, "pytest re-raises KeyboardInterrupt and ends the session as interrupted, with no test run "
             "(as pytest.exit does)"),
    Hostile("base_exception", EARLY, ("BaseException", "NotAnError"), """
        def scaled(value):
            class NotAnError(BaseException):
                pass
            raise NotAnError("a BaseException that is not an Exception")
        """, "pytest catches any BaseException but KeyboardInterrupt and Exit: the test fails; judged apart, its label "
           "is the builtin it derives from (a class's name is the candidate's text)"),
    Hostile("sigkill_self", EARLY, ("EarlyExit",), """
        def scaled(value):
            import os
            import signal
            os.kill(os.getpid(), signal.SIGKILL)
        """, "the test process dies by a signal"),
    Hostile("atexit_fake_output", EARLY, ("AssertionError",), """
        def scaled(value):
            import atexit
            import os

            def claim():
                os.write(1, b"mini/test_scaled.py ....                [100%]\\n\\n4 passed in 0.01s\\n")

            if not getattr(atexit, "_rx_claim", False):
                atexit._rx_claim = True
                atexit.register(claim)
            return value
        """, "wrong answers; at exit it prints pytest's all-passed lines: stdout is never parsed"),
    Hostile("atexit_exit_zero", EARLY, ("Tampered",), """
        def scaled(value):
            import atexit
            import os

            def claim():
                os.write(1, b"mini/test_scaled.py ....                [100%]\\n\\n4 passed in 0.01s\\n")
                os._exit(0)

            if not getattr(atexit, "_rx_claim", False):
                atexit._rx_claim = True
                atexit.register(claim)
            return value
        """, "wrong answers; at exit it prints pytest's all-passed lines and exits 0 after its session ended with "
             "failures: the process's status contradicts the session's, a forged outcome"),
    # ---------------------------------------------------------------- hangs
    Hostile("sleep", HANGS, ("Timeout",), """
        def scaled(value):
            import sys
            import time
            if not getattr(sys, "_rx_hung", False):
                sys._rx_hung = True
                time.sleep(3600)
            return value
        """, "test_middle, the first test, sleeps past --repoexec-timeout (the later ones answer wrong at once, "
             "which keeps the run short; the first failure decides)"),
    Hostile("busy_loop", HANGS, ("Timeout",), """
        def scaled(value):
            import sys
            if not getattr(sys, "_rx_hung", False):
                sys._rx_hung = True
                while True:
                    pass
            return value
        """, "test_middle spins past --repoexec-timeout (its CPU time stays under the run's CPU limit)"),
    Hostile("alarm_ignored_busy_loop", HANGS, ("Timeout",), """
        def scaled(value):
            import signal
            signal.signal(signal.SIGALRM, signal.SIG_IGN)
            while True:
                pass
        """, "ignores the per-test alarm; the run's CPU limit is above its sample timeout, so only the "
             "sample's wall-clock limit can stop it", run=WALL_CLOCK),
    Hostile("stdin", HANGS, ("EOFError",), """
        def scaled(value):
            import os
            if not os.read(0, 1):
                raise EOFError("stdin is closed")
            return value
        """, "reads the process's stdin directly (past pytest's capture): a sample's stdin is /dev/null, so the "
             "read ends at once with EOF instead of blocking (a Timeout here would mean an inherited stdin)"),
    # ---------------------------------------------------------------- resource bombs
    Hostile("huge_allocation", BOMBS, ("MemoryLimit",), """
        def scaled(value):
            data = bytes(6 << 30)  # 6 GiB of zero pages: past the memory limit, never touched
            del data
            return value
        """, "one 6 GiB allocation: MemoryError under --repoexec-memory (without a limit it succeeds lazily "
             "and the wrong answer fails the tests with AssertionError)"),
    # (apart, the candidate's process is smaller than a test process: it may reach the test's limit first)
    Hostile("growing_list", BOMBS, ("MemoryLimit", "Timeout"), """
        def scaled(value):
            chunks = []
            try:
                while len(chunks) < 64:  # 1 GiB at most, every page touched
                    chunks.append(bytearray(16 << 20))
            finally:  # whatever stops it, the report is written with memory to spare
                chunks.clear()
            return value
        """, "grows 16 MiB at a time until MemoryError under --repoexec-memory"),
    Hostile("infinite_recursion", BOMBS, ("RecursionError",), """
        def scaled(value):
            return scaled(value + 1)
        """, "Python's own recursion limit stops it"),
    Hostile("fork_flood", BOMBS, ("ProcessLimit", "Timeout", "BlockingIOError"), """
        def scaled(value):
            import os
            import sys
            import time
            marker = $marker
            if getattr(sys, "_rx_flood", False):
                return value
            sys._rx_flood = True

            def mark():
                try:
                    with open("/proc/self/comm", "w") as comm:
                        comm.write(marker)
                except OSError:
                    pass

            def child():
                mark()
                try:
                    for _ in range(2):  # each child keeps forking
                        if os.fork() == 0:
                            mark()
                            time.sleep(600)
                            os._exit(0)
                except OSError:
                    pass
                time.sleep(600)

            for _ in range(60):  # 180 processes at most
                if os.fork() == 0:  # refused past the process limit: BlockingIOError propagates
                    try:
                        child()
                    finally:
                        os._exit(0)
            time.sleep(3600)  # no limit refused a fork: a timeout must stop it
        """, "60 children forking 2 each, all sleeping, named by the marker: a fork refused under "
             "--repoexec-processes (ProcessLimit where the cgroup counts the refusal; judged apart, the refused "
             "fork's own BlockingIOError where it does not: the candidate's process naming a limit is not read), "
             "or a hang stopped by a timeout; nothing may be left"),
    Hostile("fill_tmp", BOMBS, ("DiskLimit",), """
        def scaled(value):
            import os
            import tempfile
            folder = tempfile.mkdtemp()
            names = []
            try:
                for index in range(64):  # 64 MiB at most, in files of 1 MiB: each under the file-size limit
                    names.append(os.path.join(folder, "fill-%d" % index))
                    with open(names[-1], "wb") as handle:
                        handle.write(b"x" * (1 << 20))
            finally:  # free the tmpfs again, so that the report can be written
                for name in names:
                    try:
                        os.unlink(name)
                    except OSError:
                        pass
                os.rmdir(folder)
            return value
        """, "fills TMPDIR (the sample's tmpfs, --repoexec-tmpfs) until ENOSPC"),
    Hostile("file_too_big", BOMBS, ("FileSizeLimit",), """
        def scaled(value):
            import os
            import tempfile
            handle, name = tempfile.mkstemp()
            try:
                for _ in range(8):  # one file of 8 MiB: past --repoexec-file-size, inside the tmpfs
                    os.write(handle, b"x" * (1 << 20))
            finally:
                os.close(handle)
                os.unlink(name)
            return value
        """, "one file past --repoexec-file-size: EFBIG (Python ignores SIGXFSZ), or death by SIGXFSZ"),
    Hostile("unbounded_output", BOMBS, ("OutputLimit",), """
        def scaled(value):
            import atexit
            import os

            def flood():
                chunk = b"y" * 65535 + b"\\n"
                for _ in range(1024):  # 64 MiB at most, to the real stdout (pytest captures it no more)
                    os.write(1, chunk)
                os._exit(0)

            if not getattr(atexit, "_rx_flood", False):
                atexit._rx_flood = True
                atexit.register(flood)
            return clamp(value * SCALE, 0, 100)
        """, "right answers, then at exit it writes 64 MiB to stdout: the run is stopped past --repoexec-output "
             "and must not pass, although every test passed and the session ended"),
    Hostile("closed_stdio", BOMBS, ("AssertionError",), """
        def scaled(value):
            import atexit
            import os

            def close():
                for fd in (1, 2):
                    try:
                        os.close(fd)
                    except OSError:
                        pass

            close()
            if not getattr(atexit, "_rx_close", False):
                atexit._rx_close = True
                atexit.register(close)
            return value
        """, "closes fds 1 and 2 in the test and at exit, and answers wrong: the verdicts do not travel on "
             "stdout, so the wrong answers still count"),
    Hostile("open_files", BOMBS, ("OpenFilesLimit",), """
        def scaled(value):
            import os
            handles = []
            try:
                for _ in range(100000):
                    handles.append(os.open(os.devnull, os.O_RDONLY))
            finally:  # close them again, so that pytest can open what the report needs
                for handle in handles:
                    os.close(handle)
            return value
        """, "opens files until EMFILE under --repoexec-open-files"),
    Hostile("cpu_burner", BOMBS, ("CPULimit", "Timeout"), """
        def scaled(value):
            import signal
            signal.signal(signal.SIGALRM, signal.SIG_IGN)  # the per-test alarm cannot stop it
            total = 0
            while True:
                total = (total * 31 + value) % 1000003
        """, "ignores the per-test alarm and burns CPU: --repoexec-cpu stops it, or, where the machine is too busy "
             "for it to have used that much CPU by then, the engine does, as stuck, 2 s after its test's limit (a "
             "sample whose tests each end in time meets the CPU limit: test_sandbox)"),
    # ---------------------------------------------------------------- escapes
    Hostile("write_home", ESCAPES, ("AssertionError",), _with(_ESCAPE, """
        wrote(os.path.join($home, "repoexec-" + marker + "-home"), mode="w")  # absent, or the sample's own
        return value
        """), "creates a file in the real home folder by its absolute path: inside, that path is missing or the "
              "sample's own tmpfs (HOME), so the host's home stays clean"),
    Hostile("write_host_tmp", ESCAPES, ("AssertionError",), _with(_ESCAPE, """
        wrote("/tmp/repoexec-" + marker + "-tmp", mode="w")  # lands in the sample's own tmpfs
        return value
        """), "creates /tmp/repoexec-<marker>-tmp: the sample's /tmp is its own tmpfs, the host's stays clean"),
    Hostile("write_dev_shm", ESCAPES, ("AssertionError",), _with(_ESCAPE, """
        wrote("/dev/shm/repoexec-" + marker + "-shm", mode="w")  # the sample's own, or refused
        return value
        """), "creates a file in /dev/shm: the host's stays clean"),
    Hostile("write_run_folder", ESCAPES, ("AssertionError",), _with(_ESCAPE, """
        wrote(os.path.join($runfolder, "repoexec-" + marker + "-run"), mode="w")  # under /tmp: missing inside
        return value
        """), "creates a file beside the run's report and replay file, by its absolute host path"),
    Hostile("write_cache", ESCAPES, ("AssertionError",), _with(_ESCAPE, """
        import glob
        cache = $cache
        # the cache's own folder may be a folder of the sample's tmpfs (on the way to the binds): the host decides
        wrote(os.path.join(cache, "repoexec-" + marker + "-cache"), mode="w")
        targets = glob.glob(os.path.join(cache, "sources", "mini-*", "mini", "util.py"))  # bound read-only
        targets += [os.path.join(folder, "repoexec-" + marker + ".pth")
                    for folder in glob.glob(os.path.join(cache, "venvs", "mini-*", "lib", "python*", "site-packages"))]
        for path in targets:
            if wrote(path, "# escaped " + marker + "\\n"):
                raise SandboxEscape(path)
        return value
        """), "writes into the cache by its absolute path: the cached source, the virtualenv (a .pth), its root"),
    Hostile("write_other_sample", ESCAPES, ("AssertionError",), _with(_ESCAPE, """
        import glob
        own = [os.environ.get("TMPDIR", ""), os.getcwd(), os.path.dirname(globals().get("__file__", ""))]
        for folder in glob.glob("/tmp/repoexec-sample-*"):
            if any(path == folder or path.startswith(folder + os.sep) for path in own):
                continue
            if wrote(os.path.join(folder, "repoexec-" + marker + "-sample"), mode="w"):
                raise SandboxEscape(folder)
        return value
        """), "writes into the other samples' scratch folders on the host's /tmp: it cannot see them"),
    Hostile("rewrite_tests", ESCAPES, ("Tampered",), _with(_ESCAPE, """
        import sys
        targets = []
        for module in list(sys.modules.values()):
            path = getattr(module, "__file__", None) or ""
            if path.endswith(os.path.join("mini", "test_scaled.py")) or path.endswith(os.path.join("mini", "core.py")):
                targets += [path, os.path.join(os.path.dirname(path), "util.py")]  # util.py leads into the cache
        targets.append(os.path.join($problem, "test_scaled.py"))  # the problem's own, by its host path
        for path in targets:
            if wrote(path, "\\n# rewritten " + marker + "\\n"):
                raise SandboxEscape(path)
        focal = os.path.dirname(globals().get("__file__", ""))
        if focal:  # a new module beside them: the folder may be the sample's own tmpfs, so the host decides
            wrote(os.path.join(focal, "repoexec_" + marker + ".py"), mode="x")
        return value
        """), "appends to the test module, the focal module and util.py where they run (util.py leads into the "
              "cache), adds a module beside them, and appends to the problem's test module by its host path: the "
              "files the sample runs are read-only and the problem folder is not there; opening the test module at "
              "all is refused to the candidate's code (the audit hook), which makes the sample Tampered"),
    Hostile("rewrite_expected", ESCAPES, ("Tampered",), _with(_ESCAPE, """
        import pickle
        for folder in (os.environ.get("REPOEXEC_EXPECTED", ""), os.path.join($problem, "expected")):
            wrote(os.path.join(folder, "seven.pkl"), pickle.dumps(71), mode="wb")
        return 71 if value == 7 else clamp(value * SCALE, 0, 100)
        """), "answers 71 for 7 and rewrites seven.pkl to say 71: the expected folder is read-only, and opening "
              "it is refused to the candidate's code (the audit hook), which makes the sample Tampered"),
    Hostile("read_other_expected", ESCAPES, ("FileNotFoundError",), _with(_ESCAPE, """
        relative = os.path.join(os.environ.get("REPOEXEC_EXPECTED", ""), os.pardir, os.pardir, "swap", "expected",
                                "secret.pkl")
        missing = None
        for path in ($secret, relative):
            try:
                with open(path, "rb") as handle:
                    raise SandboxEscape("read %s: %r" % (path, handle.read()))
            except FileNotFoundError as exc:
                missing = exc
        raise missing
        """), "reads another problem's expected file by its host path and relative to REPOEXEC_EXPECTED: only "
              "this problem's expected folder is there (at /repoexec/expected)"),
    Hostile("connect_loopback", ESCAPES, ("ConnectionRefusedError",), _with(_ESCAPE, """
        import socket
        with socket.create_connection(("127.0.0.1", $port), timeout=2) as connection:
            connection.sendall(b"escaped " + marker.encode())
        raise SandboxEscape("connected to the host's listener")
        """), "connects to a listener the test opened on the host's 127.0.0.1: the sample has a loopback of its "
              "own, where nothing listens"),
    Hostile("daemon", ESCAPES, ("AssertionError",), """
        def scaled(value):
            import os
            import sys
            if not getattr(sys, "_rx_daemon", False):
                sys._rx_daemon = True
                pid = os.fork()
                if pid == 0:
                    try:
                        os.setsid()
                        if os.fork() == 0:
                            os.execv(sys.executable,
                                     [sys.executable, "-c", "import time; time.sleep(600)", $marker + "-daemon"])
                    finally:
                        os._exit(0)
                os.waitpid(pid, 0)
            return value
        """, "double fork, setsid, a long sleep named by the marker, and wrong answers: the daemon must not "
             "outlive the sample"),
    Hostile("kill_parent", ESCAPES, ("AssertionError", "EarlyExit", "PermissionError"), """
        def scaled(value):
            import os
            import signal
            import sys
            import time
            if not getattr(sys, "_rx_parent", False):
                sys._rx_parent = True
                os.kill(os.getppid(), signal.SIGKILL)
                time.sleep(0.3)
            return value
        """, "SIGKILLs its parent: in the sandbox's PID namespace that is the namespace's init, which a signal "
             "from inside cannot kill (then the wrong answers fail: AssertionError), or, where the test process "
             "is the init itself (bwrap --as-pid-1), getppid() is 0 and the kill takes its own group "
             "(EarlyExit); where the engine is root the sample is another user than its init, and the kill is "
             "refused (PermissionError); the engine and the other samples must not notice either way"),
    Hostile("killpg", ESCAPES, ("EarlyExit",), """
        def scaled(value):
            import os
            import signal
            os.killpg(0, signal.SIGKILL)
        """, "SIGKILLs its own process group: the test process dies by a signal, nothing else does"),
    Hostile("environment_tampering", ESCAPES, ("AssertionError", "Tampered"), """
        def scaled(value, _tamper=exec(
            "import os, pickle, tempfile\\n"
            "_folder = tempfile.mkdtemp()\\n"
            "with open(os.path.join(_folder, 'seven.pkl'), 'wb') as _handle:\\n"
            "    _handle.write(pickle.dumps(71))\\n"
            "os.environ['REPOEXEC_EXPECTED'] = _folder\\n"
        )):
            return 71 if value == 7 else clamp(value * SCALE, 0, 100)
        """, "at import time (a default argument) points REPOEXEC_EXPECTED at a folder whose seven.pkl says 71, "
             "and answers 71 for 7: the tests must still read the problem's expected value (AssertionError), "
             "or the engine flags the change (Tampered)"),
    # ---------------------------------------------------------------- grader games
    Hostile("forge_verdict_stream", GAMES, ("Tampered",), _with(_FORGE, """
        import stat
        data = forged(prefix, whole=False, skip={(prefix + "::" + test, "setup")})
        for name in os.listdir("/proc/self/fd"):
            try:
                fd = int(name)
                mode = os.fstat(fd).st_mode
                target = os.readlink("/proc/self/fd/%d" % fd)
            except (OSError, ValueError):
                continue
            if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or (stat.S_ISREG(mode) and "result" in target):
                try:
                    os.write(fd, data)
                except OSError:
                    pass
        os._exit(0)
        """), "writes, on every pipe and socket it holds (and any results file), the records of a session in "
              "which every test passed, then exits 0"),
    Hostile("forge_results_at_exit", GAMES, ("Tampered", "AssertionError"), _with(_FORGE, """
        import atexit
        import sys

        def rewrite():
            for argument in sys.argv:
                if argument.startswith("--repoexec-results="):
                    try:
                        with open(argument.split("=", 1)[1], "wb") as handle:
                            handle.write(forged(prefix, whole=True))
                    except OSError:
                        pass
            os._exit(0)

        if not getattr(atexit, "_rx_rewrite", False):
            atexit._rx_rewrite = True
            atexit.register(rewrite)
        return value
        """), "wrong answers; at exit it rewrites the results file named on its command line with an all-passed "
              "session (the exploit that passed before the sandbox): a verdict pipe takes the lines as forged "
              "(Tampered), and with no such path there is nothing to rewrite (AssertionError)"),
    Hostile("patch_pytest", GAMES, ("Tampered",), """
        def scaled(value):
            from _pytest.reports import TestReport
            if not getattr(TestReport, "_rx_patched", False):
                original = TestReport.from_item_and_call.__func__

                def always_passed(cls, item, call):
                    report = original(cls, item, call)
                    report.outcome = "passed"
                    report.longrepr = None
                    return report

                TestReport.from_item_and_call = classmethod(always_passed)
                TestReport._rx_patched = True
            return value
        """, "patches pytest's TestReport so that every report says passed, and answers wrong"),
    Hostile("patch_inner_plugin", GAMES, ("Tampered",), """
        def scaled(value):
            import dataclasses
            import sys
            if getattr(sys, "_rx_inner", False):
                return value
            sys._rx_inner = True

            def passed(record):
                try:
                    if getattr(record, "outcome", None) == "failed":
                        names = {field.name for field in dataclasses.fields(record)}
                        changes = {"outcome": "passed", "error_type": None, "message": None, "longrepr": None}
                        return dataclasses.replace(record, **{k: v for k, v in changes.items() if k in names})
                except Exception:
                    pass
                return record

            for name, module in list(sys.modules.items()):
                if module is None or "repoexec" not in name:
                    continue
                for attribute, value_ in list(vars(module).items()):
                    if attribute == "encode" and callable(value_):
                        setattr(module, attribute, lambda record, _f=value_: _f(passed(record)))
                    elif (isinstance(value_, type) and value_.__module__ == module.__name__
                          and callable(getattr(value_, "write", None))):
                        setattr(value_, "write", lambda self, record, _f=value_.write: _f(self, passed(record)))
            return value
        """, "patches the inner plugin's encoder and writers so that failed records say passed, and answers wrong"),
    Hostile("always_equal", GAMES, ("Tampered",), """
        def scaled(value):
            class Eq:
                __eq__ = lambda self, other: True
            return Eq()
        """, "returns an object that equals everything"),
    Hostile("always_equal_int", GAMES, ("Tampered",), """
        def scaled(value):
            class Sly(int):
                def __eq__(self, other):
                    return True

                __hash__ = int.__hash__
            return Sly(value)
        """, "returns an int subclass that equals everything (isinstance(result, int) holds)"),
    Hostile("patch_builtins", GAMES, ("Tampered", "AssertionError"), """
        def scaled(value):
            import builtins
            import io
            import pickle
            if not hasattr(builtins, "_rx_open"):
                builtins._rx_open = real = builtins.open

                def fake_open(file, *args, **kwargs):
                    if str(file).endswith("seven.pkl"):
                        return io.BytesIO(pickle.dumps(71))
                    return real(file, *args, **kwargs)

                builtins.open = fake_open
            return 71 if value == 7 else clamp(value * SCALE, 0, 100)
        """, "answers 71 for 7 and patches builtins.open so that the test reads 71 from seven.pkl: flagged "
             "(Tampered), or builtins restored before each test (AssertionError); it must not pass"),
)

BY_NAME = {hostile.name: hostile for hostile in CATALOGUE}
assert len(BY_NAME) == len(CATALOGUE), "behaviour names must be unique"
