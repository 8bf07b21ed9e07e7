"""One mode a run, decided once: the options of different modes are refused together, and the engine and each
generator can be disabled with ``-p no:NAME``."""

from __future__ import annotations

import pytest


def usage_error(pytester: pytest.Pytester, *args: str) -> str:
    result = pytester.runpytest_subprocess(*args, "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    return result.stderr.str()


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--repoexec-validate", "--repoexec-fix-assertions"], ["--repoexec-validate", "--repoexec-fix-assertions"]),
        (["--repoexec-validate", "--repoexec-model=replay:x.jsonl"], ["--repoexec-validate", "--repoexec-model"]),
        (["--repoexec-fix-assertions", "--repoexec-debug-rounds=2"],
         ["--repoexec-fix-assertions", "--repoexec-debug-rounds"]),
    ],
    ids=["validate+fix", "validate+model", "fix+debug rounds"],
)
def test_options_of_two_modes_are_one_usage_error_naming_both(pytester, mini, options, named):
    error = usage_error(pytester, str(mini), *options)
    line = next(line for line in error.splitlines() if "cannot be used together" in line)
    assert all(option in line for option in named)


@pytest.mark.parametrize("option", ["--repoexec-n=0", "--repoexec-timeout=0", "--repoexec-reruns=1"])
def test_bad_values_are_usage_errors(pytester, mini, option):
    assert option.split("=")[0] in usage_error(pytester, str(mini), option)


def test_disabling_the_engine_leaves_a_plain_session(pytester):
    pytester.makepyfile(test_plain="def test_one():\n    assert 1 + 1 == 2\n")
    result = pytester.runpytest_subprocess("test_plain.py", "-p", "no:repoexec", "-p", "no:cacheprovider")
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=1)
    help_text = pytester.runpytest_subprocess("-p", "no:repoexec", "--help").stdout.str()
    assert "--repoexec" not in help_text and "repoexec_aliases" not in help_text


def test_disabling_one_generator_removes_only_that_generator(pytester, mini):
    error = usage_error(pytester, str(mini), "-p", "no:repoexec-hf", "--repoexec-model=no-such-generator")
    listed = {line.split()[0] for line in error.split("available:")[1].splitlines() if line.startswith("  ")}
    assert "hf" not in listed
    assert {"openai", "vllm", "replay", "reference", "codellama"} <= listed
    assert "unknown generator 'hf'" in usage_error(pytester, str(mini), "-p", "no:repoexec-hf", "--repoexec-model=hf:x")
    assert "--repoexec-batch-size" not in pytester.runpytest_subprocess("-p", "no:repoexec-hf", "--help").stdout.str()
