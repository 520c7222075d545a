"""Train the ladder: small Llama models (``transformers.LlamaForCausalLM``) on multi-hop variable binding.

1. ``LADDER`` lists the rungs (layers, width); ``TrainConfig`` is the fixed budget every rung gets
   (same steps, same batches, same seed);
2. ``train(rung, spec, config)`` trains one rung on the CPU, one thread, with a progress bar, and
   returns the model and its log (loss per step, held-out accuracy by hop count every ``eval_every`` steps);
3. ``save_rung`` writes float16 safetensors, config, tokenizer, log and ``SHA256SUMS`` to a folder that
   ``lb.load_model("ladder:<name>")`` loads (the sums are checked on every load);
4. ``train_ladder(out)`` does all rungs, one at a time (``latentbook train-ladder``).

Design choices that make a held-out test meaningful: the loss is taken only at queried names (cross
entropy of the answer); the **embeddings of variable names are frozen at their random initialisation**, so
a held-out name is a fresh draw from the same distribution as a training name, and a model can answer a
held-out program only by binding, never by memorising names. Every program gives ``n_queries`` supervised
queries; the first, whose hop count is controlled, is the one evaluated.
Introduced in: chapter 7.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from .._files import sha256_file
from ..errors import InvalidInputError
from .task import TaskSpec, build_tokenizer, encode, generate, name_token_ids, vocabulary, with_queries

HEAD_DIM = 32
SUMS_FILE = "SHA256SUMS"
LOG_FILE = "training_log.json"


@dataclass(frozen=True)
class Rung:
    """One model of the ladder: a Llama with ``n_layers`` layers of width ``d_model`` (head size 32)."""

    name: str
    n_layers: int
    d_model: int
    ffn_mult: int = 2

    @property
    def n_heads(self) -> int:
        return max(1, self.d_model // HEAD_DIM)


LADDER: tuple[Rung, ...] = (
    Rung("l1-d64", 1, 64),
    Rung("l2-d64", 2, 64),
    Rung("l4-d32", 4, 32),
    Rung("l4-d64", 4, 64),
    Rung("l8-d64", 8, 64),
    Rung("l4-d128", 4, 128),
)


def ladder_rung(name: str) -> Rung:
    """The rung called ``name`` (``l4-d128``, ...)."""
    for rung in LADDER:
        if rung.name == name:
            return rung
    raise InvalidInputError(f"No ladder rung {name!r}: choose one of {[r.name for r in LADDER]}.")


@dataclass(frozen=True)
class TrainConfig:
    """The fixed budget of every rung. Batches depend only on ``seed`` and the step, never on the rung."""

    steps: int = 3000
    batch_size: int = 32
    n_queries: int = 6
    min_statements: int = 2  # each step draws its program length from min_statements..n_statements
    lr: float = 3e-3
    warmup: int = 50
    weight_decay: float = 0.01
    clip: float = 1.0
    seed: int = 0
    eval_every: int = 250
    n_eval: int = 64  # held-out programs per hop count at each evaluation during training


LADDER_SPEC = TaskSpec()
LADDER_CONFIG = TrainConfig()


def model_config(rung: Rung, spec: TaskSpec):
    """The ``LlamaConfig`` of a rung (untied embeddings, RoPE, SwiGLU, RMSNorm: the stock Llama block)."""
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=len(vocabulary(spec)),
        hidden_size=rung.d_model,
        intermediate_size=rung.ffn_mult * rung.d_model,
        num_hidden_layers=rung.n_layers,
        num_attention_heads=rung.n_heads,
        num_key_value_heads=rung.n_heads,
        max_position_embeddings=128,
        initializer_range=rung.d_model**-0.5,  # 1/sqrt(d), not Llama's 0.02 (tuned for d = 4096)
        tie_word_embeddings=False,
        bos_token_id=vocabulary(spec).index("<bos>"),
        pad_token_id=vocabulary(spec).index("<pad>"),
        eos_token_id=None,
    )


def init_model(rung: Rung, spec: TaskSpec, seed: int = 0):
    """The rung at its seeded random initialisation: the untrained null of the trained model."""
    from transformers import LlamaForCausalLM

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(model_config(rung, spec))
        names = torch.tensor(name_token_ids(spec))
        with torch.no_grad():  # name = shared "name" direction + its own random identity (frozen in training)
            shared = torch.randn(1, rung.d_model)
            identity = torch.randn(len(names), rung.d_model)
            model.model.embed_tokens.weight[names] = (shared + identity) / math.sqrt(2 * rung.d_model)
    return model


def training_batch(
    spec: TaskSpec, config: TrainConfig, step: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(ids ``(B, T)``, query positions ``(B, n_queries)``, answer ids ``(B, n_queries)``) of one step."""
    rng = np.random.default_rng([config.seed, step])
    n_statements = int(rng.integers(config.min_statements, spec.n_statements + 1))
    examples = generate(
        spec, config.batch_size, split="train", seed=int(rng.integers(2**63)), n_statements=n_statements
    )
    n_queries = min(config.n_queries, n_statements)
    vocab = {w: i for i, w in enumerate(vocabulary(spec))}
    ids, positions, answers = [], [], []
    for example in examples:
        text, pos, ans = with_queries(spec, example, n_queries, rng)
        ids.append([vocab["<bos>"], *(vocab[w] for w in text.split())])
        positions.append(pos)
        answers.append([vocab[str(a)] for a in ans])
    return torch.tensor(ids), torch.tensor(positions), torch.tensor(answers)


def learning_rate(config: TrainConfig, step: int) -> float:
    """Linear warm-up, then cosine decay to 0: ``lr * min(1, (step+1)/warmup) * (1 + cos(pi step/steps)) / 2``."""
    warm = min(1.0, (step + 1) / config.warmup)
    return config.lr * warm * 0.5 * (1 + math.cos(math.pi * step / config.steps))


def query_loss(model, ids: torch.Tensor, positions: torch.Tensor, answers: torch.Tensor) -> torch.Tensor:
    """Mean cross entropy of the answers, read at the queried names only."""
    hidden = model.model(input_ids=ids).last_hidden_state
    rows = torch.arange(ids.shape[0])[:, None].expand_as(positions)
    logits = model.lm_head(hidden[rows, positions])
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), answers.reshape(-1))


@torch.no_grad()
def accuracy_by_hops(
    model, spec: TaskSpec, n: int = 512, split: str = "heldout", seed: int = 1, batch_size: int = 256
) -> dict[int, float]:
    """Accuracy of the greedy answer at the query, per hop count, on ``n`` programs per hop count.

    The answer is the arg-max over the whole vocabulary (not only over values). Held-out names by default.
    """
    was_training = model.training
    model.eval()
    out = {}
    for hops in range(1, spec.max_hops + 1):
        ids, answers = encode(spec, generate(spec, n, hops=hops, split=split, seed=seed * 1000 + hops))
        hits = 0
        for first in range(0, n, batch_size):
            x = torch.tensor(ids[first : first + batch_size])
            logits = model(input_ids=x, use_cache=False).logits[:, -1]
            hits += int((logits.argmax(-1).numpy() == answers[first : first + batch_size]).sum())
        out[hops] = hits / n
    model.train(was_training)
    return out


@dataclass
class TrainLog:
    """What a training run did: loss per step, held-out accuracy by hop during training, timing."""

    rung: dict
    spec: dict
    config: dict
    loss: list[float] = field(default_factory=list)
    evals: list[dict] = field(default_factory=list)  # {"step": s, "accuracy": {hops: acc}}
    seconds: float = 0.0
    n_parameters: int = 0
    torch_version: str = torch.__version__


def _freeze_rows(weight: torch.nn.Parameter, rows: torch.Tensor) -> None:
    mask = torch.ones(weight.shape[0], 1)
    mask[rows] = 0.0
    weight.register_hook(lambda grad: grad * mask)


def train(
    rung: Rung,
    spec: TaskSpec = LADDER_SPEC,
    config: TrainConfig = LADDER_CONFIG,
    *,
    progress: bool = True,
    threads: int | None = 1,
):
    """Train one rung for ``config.steps`` steps; returns ``(model, TrainLog)``.

    ``threads=1`` (the default) runs on one CPU thread, so runs are bit-for-bit reproducible on one
    machine and leave the other cores free. Introduced in: chapter 7.
    """
    from tqdm.auto import tqdm

    if config.steps < 1 or config.batch_size < 1 or config.n_queries < 1:
        raise InvalidInputError(
            f"steps, batch_size and n_queries must be positive; got {config.steps}, {config.batch_size}, "
            f"{config.n_queries}."
        )
    if not 1 <= config.min_statements <= spec.n_statements:
        raise InvalidInputError(
            f"min_statements must be in 1..{spec.n_statements}, got {config.min_statements}."
        )
    if threads is not None:
        torch.set_num_threads(threads)
    model = init_model(rung, spec, config.seed)
    model.train()
    embed = model.model.embed_tokens.weight
    _freeze_rows(embed, torch.tensor(name_token_ids(spec)))
    others = [p for p in model.parameters() if p is not embed]
    optimizer = torch.optim.AdamW(
        [{"params": [embed], "weight_decay": 0.0}, {"params": others, "weight_decay": config.weight_decay}],
        lr=config.lr,
        betas=(0.9, 0.98),
    )
    log = TrainLog(asdict(rung), spec.to_dict(), asdict(config))
    log.n_parameters = sum(p.numel() for p in model.parameters())
    start = time.perf_counter()
    bar = tqdm(range(config.steps), desc=rung.name, disable=not progress, mininterval=2.0)
    for step in bar:
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(config, step)
        loss = query_loss(model, *training_batch(spec, config, step))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip)
        optimizer.step()
        log.loss.append(float(loss.detach()))
        if (step + 1) % config.eval_every == 0 or step + 1 == config.steps:
            acc = accuracy_by_hops(model, spec, config.n_eval, seed=7)
            log.evals.append({"step": step + 1, "accuracy": acc})
            bar.set_postfix(
                loss=f"{np.mean(log.loss[-50:]):.3f}", acc=" ".join(f"{a:.2f}" for a in acc.values())
            )
    log.seconds = time.perf_counter() - start
    model.eval()
    return model, log


def save_rung(model, log: TrainLog, spec: TaskSpec, folder: str | Path) -> Path:
    """Write the model (float16 safetensors), config, tokenizer, training log and ``SHA256SUMS``.

    Everything is written into a temporary sibling folder, then renamed into place: a killed run never leaves
    a half-written rung under its final name.
    """
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        copy.deepcopy(model).to(torch.float16).save_pretrained(tmp, safe_serialization=True)
        build_tokenizer(spec).save_pretrained(tmp)
        (tmp / LOG_FILE).write_text(json.dumps(asdict(log), indent=None))
        files = sorted(p for p in tmp.iterdir() if p.is_file() and p.name != SUMS_FILE)
        (tmp / SUMS_FILE).write_text("".join(f"{sha256_file(p)}  {p.name}\n" for p in files))
        if folder.exists():
            old = folder.with_name(f".{folder.name}.{os.getpid()}.old")
            os.rename(folder, old)
            shutil.rmtree(old)
        os.rename(tmp, folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


def read_sums(folder: str | Path) -> dict[str, str]:
    """``{file name: sha256}`` from a rung folder's ``SHA256SUMS``."""
    lines = (Path(folder) / SUMS_FILE).read_text().splitlines()
    return {name: sha for sha, name in (line.split(None, 1) for line in lines if line.strip())}


def weights_sha256(folder: str | Path) -> str:
    """One sha256 over the rung's ``SHA256SUMS`` (so it changes when any file changes)."""
    return hashlib.sha256((Path(folder) / SUMS_FILE).read_bytes()).hexdigest()


def train_ladder(
    out: str | Path,
    rungs: tuple[Rung, ...] = LADDER,
    spec: TaskSpec = LADDER_SPEC,
    config: TrainConfig = LADDER_CONFIG,
    *,
    progress: bool = True,
) -> list[Path]:
    """Train every rung, one after the other, into ``out/<rung name>/``; returns the folders."""
    folders = []
    for rung in rungs:
        model, log = train(rung, spec, config, progress=progress)
        folders.append(save_rung(model, log, spec, Path(out) / rung.name))
    return folders
