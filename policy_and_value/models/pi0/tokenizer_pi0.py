"""Prompt formatting and tokenisation for pi0 / pi0.5.

Any local Hugging Face tokenizer directory works (e.g. PaliGemma's); for tiny models
``build_prompt_tokenizer`` trains a small byte-level BPE on the task prompts (byte-level, so an
unseen word still encodes) and it is saved next to the weights. Prompts follow openpi:
pi0 ``"<task>\\n"``; pi0.5 ``"Task: <task>, State: <256-bin ints>;\\nAction: "``. With advantage
conditioning, ``"Advantage: k"`` is added after the task.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
from transformers import AutoTokenizer, PreTrainedTokenizerBase, PreTrainedTokenizerFast

STATE_BINS = 256
SPECIAL_TOKENS = ("<pad>", "<bos>", "<eos>", "<unk>")


def clean_task(text: str) -> str:
    """Strip, and turn underscores and newlines into spaces (as openpi does)."""
    return text.strip().replace("_", " ").replace("\n", " ")


def discretize_state(state: torch.Tensor) -> torch.Tensor:
    """Normalised state [N, S] (nominally in [-1, 1]) -> bin indices in [0, 255] (int64)."""
    edges = torch.linspace(-1.0, 1.0, STATE_BINS + 1, device=state.device)[:-1]
    return (torch.bucketize(state.float().contiguous(), edges, right=True) - 1).clamp(0, STATE_BINS - 1)


def format_prompt(task: str, state_bins: Sequence[int] | None = None, advantage: int | None = None) -> str:
    """The text the prefix reads. ``state_bins`` given -> pi0.5 format; ``advantage`` None or < 0 -> none."""
    task = clean_task(task)
    adv = f", Advantage: {advantage}" if advantage is not None and advantage >= 0 else ""
    if state_bins is None:
        return f"{task}{adv}\n"
    return f"Task: {task}{adv}, State: {' '.join(str(int(b)) for b in state_bins)};\nAction: "


def _training_corpus(prompts: Iterable[str], num_advantage_bins: int) -> list[str]:
    # prompts are repeated so that their words win the merges over the state numbers
    corpus = []
    for prompt in prompts:
        corpus += [format_prompt(prompt)] * 8
        corpus += [format_prompt(prompt, state_bins=range(4), advantage=0)] * 4
    numbers = " ".join(str(i) for i in range(STATE_BINS))
    corpus += [f"State: {numbers};\nAction: "] * 2
    corpus += [f"Task: , Advantage: {k}, State: " for k in range(max(num_advantage_bins, 10))]
    return corpus


def build_prompt_tokenizer(
    prompts: Iterable[str], vocab_size: int = 1024, num_advantage_bins: int = 2
) -> PreTrainedTokenizerFast:
    """Train a small lowercase byte-level BPE on the prompts plus the pi0/pi0.5 templates (deterministic)."""
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_training_corpus(prompts, num_advantage_bins), trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", bos_token="<bos>", eos_token="<eos>", unk_token="<unk>"
    )


class PromptTokenizer:
    """Batch tokenisation to a fixed length: BOS + text, right-padded or truncated to ``max_len``."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase, max_len: int):
        self.tokenizer = tokenizer
        self.max_len = max_len
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self.bos_id = tokenizer.bos_token_id

    def __len__(self) -> int:
        return len(self.tokenizer)

    def __call__(self, texts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """Texts -> (tokens int64 [N, L], mask bool [N, L])."""
        encoded = self.tokenizer(list(texts), add_special_tokens=False)["input_ids"]
        tokens = torch.full((len(encoded), self.max_len), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(encoded), self.max_len), dtype=torch.bool)
        for i, ids in enumerate(encoded):
            ids = ([self.bos_id] if self.bos_id is not None else []) + list(ids)
            ids = ids[: self.max_len]
            tokens[i, : len(ids)] = torch.tensor(ids, dtype=torch.long)
            mask[i, : len(ids)] = True
        return tokens, mask

    def save(self, directory: str | Path) -> None:
        """Write the tokenizer files (``tokenizer.json``, ``tokenizer_config.json``) into ``directory``."""
        self.tokenizer.save_pretrained(str(directory))

    @classmethod
    def load(cls, directory: str | Path, max_len: int) -> PromptTokenizer:
        """Load a local tokenizer directory; never touches the network, never runs remote code."""
        tok = AutoTokenizer.from_pretrained(str(directory), local_files_only=True, trust_remote_code=False)
        return cls(tok, max_len)
