"""Tests for pytest_repoexec.safety: the scan of references and tests for destructive operations."""

import textwrap

import pytest

from pytest_repoexec.safety import KINDS, Finding, scan


def found(source: str, label: str = "t", first_line: int = 1) -> list[tuple[str, str, int]]:
    findings = scan(textwrap.dedent(source), label, first_line)
    assert all(finding.file == label and finding.kind in KINDS for finding in findings)
    return [(finding.kind, finding.what, finding.line) for finding in findings]


def test_delete_files_through_aliases_and_path_methods():
    source = """\
        import os as o
        from os import remove as rm
        from shutil import rmtree

        def clean(p):
            o.remove(p)
            rm(p)
            rmtree(p)
            Path(p).unlink(missing_ok=True)
            p.rmdir()
        """
    assert found(source) == [
        ("delete-files", "os.remove", 6),
        ("delete-files", "os.remove", 7),
        ("delete-files", "shutil.rmtree", 8),
        ("delete-files", "Path(p).unlink", 9),
        ("delete-files", "p.rmdir", 10),
    ]


def test_kill_process():
    source = """\
        import os, signal, psutil
        os.kill(pid, signal.SIGTERM)
        signal.pthread_kill(thread, 9)
        psutil.Process(pid).terminate()
        """
    assert found(source) == [
        ("kill-process", "os.kill", 2),
        ("kill-process", "signal.pthread_kill", 3),
        ("kill-process", "psutil.Process(pid).terminate", 4),
    ]


def test_exit_in_all_its_forms():
    source = """\
        from sys import exit as leave
        leave(1)
        os._exit(0)
        exit()
        quit()
        raise SystemExit(2)
        """
    assert found(source) == [
        ("exit", "sys.exit", 2),
        ("exit", "os._exit", 3),
        ("exit", "exit", 4),
        ("exit", "quit", 5),
        ("exit", "SystemExit", 6),
    ]


def test_shell():
    source = """\
        import subprocess as sp
        from subprocess import check_output
        sp.run(cmd, shell=True)
        check_output(cmd)
        os.system(cmd)
        os.execvp(cmd, args)
        pty.spawn(cmd)
        """
    assert found(source) == [
        ("shell", "subprocess.run", 3),
        ("shell", "subprocess.check_output", 4),
        ("shell", "os.system", 5),
        ("shell", "os.execvp", 6),
        ("shell", "pty.spawn", 7),
    ]


def test_network_calls_but_not_imports():
    source = """\
        import requests, socket, httpx
        from urllib.request import urlopen as fetch
        requests.get(url)
        fetch(url)
        socket.create_connection((host, 80))
        """
    assert found(source) == [
        ("network", "requests.get", 3),
        ("network", "urllib.request.urlopen", 4),
        ("network", "socket.create_connection", 5),
    ]


def test_absolute_paths_given_to_calls_that_touch_files():
    source = r"""
        open("/etc/passwd")
        Path("/tmp/x").exists()
        os.path.exists("C:\\data")
        with open(os.path.join("/var", name)) as f: pass
        glob.glob(f"/home/{user}/*")
        """
    assert found(source) == [
        ("absolute-path", "'/etc/passwd'", 2),
        ("absolute-path", "'/tmp/x'", 3),
        ("absolute-path", "'C:\\\\data'", 4),
        ("absolute-path", "'/var'", 5),
        ("absolute-path", "f'/home/{user}/*'", 6),
    ]


def test_absolute_paths_given_to_delete_and_shell_calls_are_found_too():
    source = """\
        shutil.rmtree("/tmp/build")
        subprocess.run(["cat", "/etc/hosts"])
        """
    assert found(source) == [
        ("delete-files", "shutil.rmtree", 1),
        ("absolute-path", "'/tmp/build'", 1),
        ("shell", "subprocess.run", 2),
        ("absolute-path", "'/etc/hosts'", 2),
    ]


def test_first_line_offsets_an_indented_reference():
    reference = """\
        def reset(self):
            \"\"\"Start over.\"\"\"
            os.remove(self.path)
    """
    assert scan(reference, "reference", first_line=40) == [Finding("delete-files", "os.remove", "reference", 42)]


def test_findings_come_in_source_order_whatever_their_depth():
    source = """\
        print(len(os.system("ls")))
        sys.exit()
        """
    assert [line for _, _, line in found(source)] == [1, 2]


@pytest.mark.parametrize("source", [
    'assert normpath("/usr/lib/") == "/usr/lib"',
    'assert split_path(PurePath("/usr/lib")) == ["usr", "lib"]',
    'full = os.path.join("/usr", name)',
    'Path(tmp_path / "f.txt").write_text("x")',
    "items.remove(x)",
    "proc.kill()",
    "import socket, subprocess, requests",
    "raise subprocess.CalledProcessError(1, cmd)",
    'def wipe():\n    """Runs rm -rf / and os.system("rm -rf /") on open("/etc/passwd")."""\n    # os.remove("/")\n',
])
def test_data_and_harmless_code_are_not_findings(source):
    assert scan(source, "t") == []


def test_unparsable_source_raises_syntax_error():
    with pytest.raises(SyntaxError):
        scan("def f(:\n    pass\n", "reference")


def test_a_finding_reads_as_file_line_kind_what():
    assert str(Finding("shell", "os.system", "tests/test_x.py", 3)) == "tests/test_x.py:3: shell: os.system"
