"""verl's and OpenRLHF's own reward code, run on this CPU against our reward functions and ``repoexec serve``.

    pip install --no-deps --target DIR verl openrlhf tensordict pylatexenc codetiming hydra-core omegaconf \\
        antlr4-python3-runtime pyvers
    PYTHONPATH=DIR python benchmarks/trainer_paths.py [--problems problems]

Neither trainer can be a dependency of the test suite (verl pins an older transformers, OpenRLHF needs
flash-attn and deepspeed, built for CUDA), but the parts that carry a reward import without a GPU, and without
their dependencies (``--no-deps``: nothing may bring a CUDA torch here). This runs:

- verl: ``get_custom_reward_fn`` loading ``pkg://pytest_repoexec.rewards`` (``compute_score`` and, for the
  batch manager, ``compute_score_batch``) with ``reward_kwargs``, then ``NaiveRewardManager`` and
  ``BatchRewardManager`` on a ``DataProto`` of each shipped problem's reference and a wrong answer, tokenized by a
  byte-level tokenizer made here (its decoding gives the text back exactly);
- OpenRLHF: ``SingleTurnAgentExecutor._fetch_rewards_via_http``, its remote reward client, against a
  ``repoexec serve`` on loopback, one query per problem as its rollouts send them.

It prints what each gave and exits 1 where a reward is not the verdict the API gives the same completion.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch

from pytest_repoexec.api import open_problems

ROOT = Path(__file__).resolve().parents[1]


def byte_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from tokenizers.trainers import BpeTrainer
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    backend.train_from_iterator(["def f(x):\n    return x\n"], BpeTrainer(
        vocab_size=300, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=["<pad>"]))
    return PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="<pad>")


def data_proto(tokenizer, prompts: list[str], responses: list[str], ids: list[str]):
    from verl import DataProto

    encoded_prompts = [tokenizer(text)["input_ids"] for text in prompts]
    encoded_responses = [tokenizer(text)["input_ids"] for text in responses]
    width_p, width_r = max(map(len, encoded_prompts)), max(map(len, encoded_responses))
    pad = tokenizer.pad_token_id
    prompt_rows = [[pad] * (width_p - len(row)) + row for row in encoded_prompts]  # left-padded, as verl's
    response_rows = [row + [pad] * (width_r - len(row)) for row in encoded_responses]
    mask = [[0] * (width_p - len(p)) + [1] * len(p) + [1] * len(r) + [0] * (width_r - len(r))
            for p, r in zip(encoded_prompts, encoded_responses)]
    return DataProto.from_dict(
        tensors={"prompts": torch.tensor(prompt_rows), "responses": torch.tensor(response_rows),
                 "attention_mask": torch.tensor(mask)},
        non_tensors={"data_source": np.array(["pytest-repoexec"] * len(ids), dtype=object),
                     "reward_model": np.array([{"style": "rule", "ground_truth": id_} for id_ in ids], dtype=object),
                     "extra_info": np.array([{"index": index} for index in range(len(ids))], dtype=object)})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=Path, default=ROOT / "problems")
    args = parser.parse_args()
    from omegaconf import OmegaConf
    from verl.trainer.ppo.reward import get_custom_reward_fn
    from verl.workers.reward_manager.batch import BatchRewardManager
    from verl.workers.reward_manager.naive import NaiveRewardManager

    with open_problems(args.problems, workers=2) as problems:
        ids = sorted(problems.problems)
        completions = [problems.problems[id_].reference for id_ in ids]
        wrong = [f"{problems.problems[id_].signature}\n    raise NotImplementedError\n" for id_ in ids]
        samples = list(zip(ids + ids, completions + wrong))
        expected = [verdict.reward() for verdict in problems.score_batch(samples)]
        prompts = [problems.prompt(id_, "base", "small") for id_ in ids + ids]
    failures = 0

    tokenizer = byte_tokenizer()
    data = data_proto(tokenizer, prompts, [text for _, text in samples], [id_ for id_, _ in samples])
    for manager, name in ((NaiveRewardManager, "compute_score"), (BatchRewardManager, "compute_score_batch")):
        config = OmegaConf.create({"reward": {"custom_reward_function": {
            "path": "pkg://pytest_repoexec.rewards", "name": name,
            "reward_kwargs": {"problems": str(args.problems), "workers": 2}}}})
        reward_fn = get_custom_reward_fn(config)
        tensor = manager(tokenizer=tokenizer, num_examine=0, compute_score=reward_fn)(data)
        got = tensor.sum(dim=-1).tolist()  # the score sits on each response's last token
        print(f"verl {manager.__name__} + {name}: {len(got)} samples, rewards {got.count(1.0)} x 1.0, "
              f"{got.count(0.0)} x 0.0; {'the verdicts' if got == expected else 'NOT the verdicts'}")
        failures += got != expected

    from openrlhf.utils.agent import SingleTurnAgentExecutor

    served = subprocess.Popen([sys.executable, "-m", "pytest_repoexec.cli", "serve", str(args.problems), "--port", "0",
                               "-n", "2"], stdout=subprocess.PIPE, text=True)
    try:
        url = served.stdout.readline().split(" on ")[1].split()[0]
        executor = SingleTurnAgentExecutor(remote_rm_url=f"{url}/get_reward")

        async def rollouts() -> list:
            return await asyncio.gather(*(executor._fetch_rewards_via_http([prompt + text], [prompt], [id_])
                                          for prompt, (id_, text) in zip(prompts, samples)))

        answers = asyncio.run(rollouts())
        got = [answer[0]["rewards"][0] for answer in answers]
        print(f"OpenRLHF SingleTurnAgentExecutor -> /get_reward: {len(got)} queries, rewards {got.count(1.0)} x "
              f"1.0, {got.count(0.0)} x 0.0; {'the verdicts' if got == expected else 'NOT the verdicts'}")
        failures += got != expected
    finally:
        served.send_signal(signal.SIGTERM)
        served.wait(timeout=120)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
