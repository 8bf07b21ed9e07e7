"""A tiny, randomly initialised causal language model and its tokenizer, built locally (no hub download),
for tests of the transformers and vLLM paths. Its output is noise, but over a vocabulary so small that the
stop sequences come up often in a few dozen tokens."""

from __future__ import annotations

from pathlib import Path

KEYWORDS = ["def", "if", "class", "print", "return"]
# "abcdef" must tokenize: transformers' stop-string matching probes the vocabulary with it
SPECIAL = ["<pad>", "<eos>", "<unk>"]
SYMBOLS = ["\n", "    ", " ", "```", '"""', "#", "@", "(", ")", ":", "=", "+", "1"]
VOCAB = [*SPECIAL, *KEYWORDS, *SYMBOLS, *"abcdef", "x"]
CHAT_TEMPLATE = "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}\n{% endfor %}<|assistant|>"


def tiny_tokenizer(chat_template: str | None = CHAT_TEMPLATE):
    """Keywords whole, anything else one character at a time; decoding concatenates tokens back."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.WordLevel({token: i for i, token in enumerate(VOCAB)}, unk_token="<unk>"))
    pattern = "|".join(KEYWORDS) + r'|\n| {4}|```|"""|.'
    backend.pre_tokenizer = pre_tokenizers.Split(Regex(pattern), behavior="isolated")
    backend.decoder = decoders.Fuse()
    pad, eos, unk = SPECIAL
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, eos_token=eos, pad_token=pad, unk_token=unk)
    tokenizer.chat_template = chat_template
    return tokenizer


def write_tiny_model(folder: Path, chat_template: str | None = CHAT_TEMPLATE) -> Path:
    """A 2-layer GPT-2 over ``VOCAB`` with its tokenizer, saved in ``folder`` as ``from_pretrained`` reads it."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    tiny_tokenizer(chat_template).save_pretrained(folder)
    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=len(VOCAB), n_positions=2048, n_embd=32, n_layer=2, n_head=2,
        bos_token_id=1, eos_token_id=1, pad_token_id=0,
    )
    GPT2LMHeadModel(config).save_pretrained(folder)
    return folder
