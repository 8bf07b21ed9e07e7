"""Model aliases: the paper's models by default, overridden or added in the ini file, and the errors that
list them when a model cannot be resolved."""

import pytest

from generators.model import DEFAULT_ALIASES


def usage_error(pytester, mini, *args):
    result = pytester.runpytest(str(mini), *args, "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    return result.stderr.str()


def test_the_papers_models_have_aliases():
    assert DEFAULT_ALIASES["codellama"] == "vllm:codellama/CodeLlama-13b-Python-hf"
    assert {"codellama-34b", "starcoder2", "wizardcoder", "deepseek-coder"} <= set(DEFAULT_ALIASES)
    assert all(target.startswith("vllm:") for target in DEFAULT_ALIASES.values())


def test_an_unknown_name_lists_the_generators_and_aliases(pytester, mini):
    error = usage_error(pytester, mini, "--repoexec-model=codelama")
    assert "unknown generator 'codelama'" in error
    assert "codellama    alias of vllm:codellama/CodeLlama-13b-Python-hf" in error
    assert "openai" in error and "hf" in error and "vllm" in error


@pytest.mark.parametrize("spec", ["hf:no-such-model", "vllm:./no/such/folder", "hf:"])
def test_an_unknown_model_lists_the_aliases(pytester, mini, spec):
    error = usage_error(pytester, mini, f"--repoexec-model={spec}")
    assert "deepseek-coder = vllm:deepseek-ai/deepseek-coder-6.7b-base" in error


def test_ini_aliases_add_and_override(pytester, mini):
    pytester.makeini(
        "[pytest]\nrepoexec_aliases =\n    codellama = hf:./models/codellama\n    mine = vllm:./missing\n"
    )
    error = usage_error(pytester, mini, "--repoexec-model=codellama")
    assert "'./models/codellama' is neither a model folder" in error
    error = usage_error(pytester, mini, "--repoexec-model=hf:mine")
    assert "'./missing' is neither a model folder" in error and "mine = vllm:./missing" in error
    assert "the alias mine stands for vllm:./missing and takes no argument" in usage_error(
        pytester, mini, "--repoexec-model=mine:x"
    )


@pytest.mark.parametrize("line", ["broken", "name = nowhere:model", "reference = hf:org/model"])
def test_malformed_or_clashing_aliases_are_usage_errors(pytester, mini, line):
    pytester.makeini(f"[pytest]\nrepoexec_aliases =\n    {line}\n")
    assert "repoexec_aliases:" in usage_error(pytester, mini)
