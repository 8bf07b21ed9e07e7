"""Verdicts as the trainers take rewards: a real TRL GRPOTrainer on this CPU, TRL's sync and async reward
functions, verl's compute_score and its batch form, and the datasets ``repoexec export`` writes for them."""

import asyncio
import json
import subprocess
import sys

import pytest

from conftest import SHIPPED
from pytest_repoexec.api import open_problems
from pytest_repoexec.cli import main
from pytest_repoexec.problem import find_manifests, load_problem
from pytest_repoexec.rewards import (NoReward, compute_score, compute_score_batch, completion_of, trl_async_reward,
                                     trl_reward)

PROBLEMS = [load_problem(manifest) for manifest in find_manifests([SHIPPED])]


@pytest.fixture(scope="module")
def problems(repoexec_cache):
    with open_problems(SHIPPED, cache=repoexec_cache, workers=2) as opened:
        yield opened


def test_trl_grpo_trainer_runs_two_steps_on_shipped_problems_and_logs_our_verdicts(problems, tmp_path):
    from datasets import load_dataset
    from tiny_model import write_tiny_model
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    dataset_file = tmp_path / "train.jsonl"
    assert main(["export", "trl", str(SHIPPED), "--out", str(dataset_file), "--style", "base",
                 "--context", "small"]) == 0
    dataset = load_dataset("json", data_files=str(dataset_file), split="train").select(range(4))
    folder = write_tiny_model(tmp_path / "tiny")
    reward = trl_reward(problems)
    config = GRPOConfig(output_dir=str(tmp_path / "out"), per_device_train_batch_size=4, num_generations=4,
                        max_completion_length=24, max_steps=2, logging_steps=1, report_to="none", use_cpu=True,
                        bf16=False, save_strategy="no", seed=0, temperature=1.0)
    trainer = GRPOTrainer(model=AutoModelForCausalLM.from_pretrained(folder), reward_funcs=reward, args=config,
                          train_dataset=dataset, processing_class=AutoTokenizer.from_pretrained(folder))
    trainer.train()
    logged = [entry for entry in trainer.state.log_history if "rewards/repoexec_pass/mean" in entry]
    assert [entry["step"] for entry in logged] == [1, 2]
    completions = list(trainer._logs["completion"])
    rewards = list(trainer._logs["rewards"]["repoexec_pass"])
    ids = [dict(zip(dataset["prompt"], dataset["problem_id"]))[prompt] for prompt in trainer._logs["prompt"]]
    errors = list(trainer._logs["extra"]["repoexec_pass_error"])
    assert len(completions) == len(rewards) == len(ids) == len(errors) == 4
    verdicts = problems.score_batch(list(zip(ids, completions)))  # judged again, apart from the trainer
    assert rewards == [verdict.reward() for verdict in verdicts]
    assert errors == [verdict.error_type or "" for verdict in verdicts] and all(errors)  # noise fails, and says why
    assert logged[-1]["rewards/repoexec_pass/mean"] == pytest.approx(sum(rewards) / len(rewards))


def test_trl_reward_functions_sync_and_async_take_text_and_messages(problems):
    problem = PROBLEMS[0]
    wrong = f"{problem.signature}\n    raise NotImplementedError\n"
    columns = {"problem_id": [problem.id] * 3, "trainer_state": None}
    completions = [problem.reference, [{"role": "assistant", "content": f"```python\n{problem.reference}```"}], wrong]
    sync = trl_reward(problems, shape="tr")
    assert sync.__name__ == "repoexec_tr"
    assert sync(prompts=["p"] * 3, completions=completions, completion_ids=None, **columns) == [1.0, 1.0, 0.0]
    awaited = trl_async_reward(problems)
    assert asyncio.iscoroutinefunction(awaited)
    assert asyncio.run(awaited(prompts=["p"] * 3, completions=completions, **columns)) == [1.0, 1.0, 0.0]
    with pytest.raises(KeyError, match="problem_id: the dataset has no such column"):
        sync(prompts=["p"], completions=["x"])


def test_verl_compute_score_and_its_batch_form(problems, repoexec_cache):
    problem = PROBLEMS[1]
    options = {"problems": str(SHIPPED), "cache": str(repoexec_cache), "workers": 1}
    scored = compute_score("pytest-repoexec", problem.reference, problem.id, {"index": 0}, **options)
    assert scored == {"score": 1.0, "passed": 1.0, "counts": 1.0}  # a pass reward measures no TR (issue 42)
    batch = compute_score_batch(["pytest-repoexec"] * 2, [problem.reference, "def nothing(): pass"],
                                [problem.id, problem.id], [None, None], shape="tr", **options)
    assert [entry["score"] for entry in batch] == [1.0, 0.0] and [entry["tr"] for entry in batch] == [1.0, 0.0]
    with pytest.raises(ValueError, match="reward_kwargs: give problems"):
        compute_score("pytest-repoexec", "x", problem.id)


def test_a_process_that_scored_for_verl_closes_what_it_opened_as_it_exits(repoexec_cache, tmp_path):
    """verl never closes what its reward calls opened: the process's exit does, while its workers still take work
    (concurrent.futures stops its pools before atexit's hooks run: closing them then was a traceback)."""
    problem = PROBLEMS[1]
    script = tmp_path / "score.py"
    script.write_text("from pytest_repoexec.rewards import compute_score\n"
                      "if __name__ == '__main__':  # its workers are spawned: they import this file again\n"
                      f"    print(compute_score('pytest-repoexec', {problem.reference!r}, {problem.id!r}, None, "
                      f"problems={str(SHIPPED)!r}, cache={str(repoexec_cache)!r}, workers=1)['score'])\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and done.stdout.strip() == "1.0", done.stderr[-3000:]
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr[-3000:]


def test_a_verdict_that_does_not_count_is_never_a_made_up_number():
    from pytest_repoexec.api import Verdict
    from pytest_repoexec.rewards import openrlhf_answer, verl_score

    lost = Verdict("textkit/slugify", None, "EngineError: the judging process failed")
    with pytest.raises(NoReward, match="textkit/slugify: EngineError"):
        verl_score(lost, "pass", None)
    assert verl_score(lost, "pass", -1.0)["score"] == -1.0 and verl_score(lost, "pass", -1.0)["counts"] == 0.0
    with pytest.raises(NoReward):
        openrlhf_answer([lost], "pass", None)
    assert openrlhf_answer([lost], "tr", 0.5)["rewards"] == [0.5]
    assert completion_of("PROMPT body", "PROMPT ") == "body" and completion_of("other", "PROMPT") == "other"


def test_export_writes_verl_parquet_and_a_trl_dataset(tmp_path):
    import pyarrow.parquet as pq
    from datasets import load_dataset

    assert main(["export", "verl", str(SHIPPED), "--out", str(tmp_path / "train.parquet")]) == 0
    rows = pq.read_table(tmp_path / "train.parquet").to_pylist()
    assert len(rows) == len(PROBLEMS) and {row["data_source"] for row in rows} == {"pytest-repoexec"}
    by_id = {problem.id: problem for problem in PROBLEMS}
    for row in rows:
        assert row["reward_model"] == {"style": "rule", "ground_truth": row["extra_info"]["problem_id"]}
        problem = by_id[row["reward_model"]["ground_truth"]]
        assert row["prompt"][0]["role"] == "user" and problem.signature in row["prompt"][0]["content"]
        assert row["prompt"][0]["content"].startswith("### Instruction:")  # instruct1, the default
    assert main(["export", "trl", str(SHIPPED), "--out", str(tmp_path / "trl.jsonl"), "--style", "instruct2",
                 "--context", "medium"]) == 0
    dataset = load_dataset("json", data_files=str(tmp_path / "trl.jsonl"), split="train")
    assert dataset.column_names == ["prompt", "problem_id"] and sorted(dataset["problem_id"]) == sorted(by_id)
    first = json.loads((tmp_path / "trl.jsonl").read_text().splitlines()[0])
    assert by_id[first["problem_id"]].signature in first["prompt"]
    assert main(["export", "verl", str(tmp_path / "none"), "--out", str(tmp_path / "x.parquet")]) == 2
