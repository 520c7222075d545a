"""Train the ladder: small Llama models (``transformers.LlamaForCausalLM``) on multi-hop variable binding.

1. ``LADDER`` lists the rungs (layers, width); ``TrainConfig`` is the fixed budget every rung gets
   (same steps, same batches, same seed);
2. ``train(rung, spec, config)`` trains one rung on the CPU, one thread, with a progress bar, and
   returns the model and its log (loss per step, held-out accuracy by hop count every ``eval_every`` steps);
3. ``folders.save_rung`` writes float16 safetensors, config, tokenizer, log and ``SHA256SUMS`` to a folder
   that ``lb.load_model("ladder:<name>")`` loads (the sums are checked on every load);
4. ``jobs.train_ladder(out)`` does all rungs (``latentbook train-ladder``): with ``seeds``, each rung once per
   seed into ``out/<rung>-s<seed>/`` (``ladder:<rung>-s<seed>``); with ``checkpoint_every``, float16 checkpoints along
   training in ``out/<rung>-s<seed>/checkpoints/step-<k>/`` (``ladder:<rung>-s<seed>@<k>``); a folder that is
   complete (its ``SHA256SUMS`` verifies) is skipped, so a killed ladder resumes rung by rung; ``jobs`` trains
   that many rung-seeds at once, one process and one thread each (the same weights as one at a time).

Ladder v1 (``results/ladder/<rung>/``) was trained on ``LADDER_SPEC``; ladder v2 (``results/ladder-v2/``, three
seeds per rung) on ``LADDER_V2_SPEC``, whose queried chain starts anywhere among the chains with equal chance
(so the first value written is the answer only about as often as a guess).

The recipe (each part measured in ``benchmarks/ladder_plateau.py`` or chapter 7):

- every program has ``spec.n_statements`` statements, so the length never gives the hop count away; the loss
  is the cross entropy of the value at every queried name *and* at every statement's ``;`` (the value its
  variable holds after it), so each hop of a chain is supervised where it happens;
- a **curriculum over hops**: at stage ``h`` (from 1) the chains have at most ``h`` hops; the stage grows when
  the running accuracy at the first query exceeds ``config.gate``;
- variable names are random codes ``N(0, I/d)`` that are never trained: the init's codes during stage 1 (a
  fixed set of names on which the lookup circuit forms quickly), then **fresh codes for every program** (a
  model can then answer only by binding, never by knowing a name, and the held-out names' codes are simply
  more draws of the same kind); ``benchmarks/ladder_names.py`` compares this with fresh codes from the start
  (no lookup forms) and fixed codes throughout (a lookup over the training names that fails on held-out ones);
- the MLPs' ``down_proj`` starts at zero, so they add nothing until they are trained.

Every program gives ``n_queries`` supervised queries; the first, whose hop count is controlled, is the one
evaluated and the one the curriculum watches.
Introduced in: chapter 7.
"""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from .._files import atomic_write
from ..errors import InvalidInputError
from .folders import SUMS_FILE, save_checkpoint
from .task import (
    TaskSpec,
    encode,
    generate,
    name_token_ids,
    statement_values,
    task_vocabulary,
    with_queries,
)

HEAD_DIM = 32


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
    """The fixed budget of every rung. Batches depend only on ``seed``, the step and the curriculum's stage."""

    steps: int = 10000
    batch_size: int = 64
    n_queries: int = 6
    lr: float = 1e-3
    warmup: int = 100
    schedule: str = "constant"  # after warm-up: "constant", or "cosine" (decay to 0 at the last step)
    weight_decay: float = 0.01
    clip: float = 1.0
    seed: int = 0
    eval_every: int = 500
    n_eval: int = 64  # held-out programs per hop count at each evaluation during training
    gate: float = 0.9  # the curriculum adds a hop when the running first-query accuracy exceeds this
    fresh_names_from: int = 2  # stage from which programs draw fresh name codes (max_hops+1: never)


LADDER_SPEC = TaskSpec()  # ladder v1 (results/ladder): keep it, the trained v1 rungs were made with it
LADDER_V2_SPEC = TaskSpec(balanced_starts=True)  # ladder v2 (results/ladder-v2): no first-value shortcut
LADDER_CONFIG = TrainConfig()


def model_config(rung: Rung, spec: TaskSpec):
    """The ``LlamaConfig`` of a rung (untied embeddings, RoPE, SwiGLU, RMSNorm: the stock Llama block)."""
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=len(task_vocabulary(spec)),
        hidden_size=rung.d_model,
        intermediate_size=rung.ffn_mult * rung.d_model,
        num_hidden_layers=rung.n_layers,
        num_attention_heads=rung.n_heads,
        num_key_value_heads=rung.n_heads,
        max_position_embeddings=128,
        initializer_range=rung.d_model**-0.5,  # 1/sqrt(d), not Llama's 0.02 (tuned for d = 4096)
        tie_word_embeddings=False,
        bos_token_id=task_vocabulary(spec).index("<bos>"),
        pad_token_id=task_vocabulary(spec).index("<pad>"),
        eos_token_id=None,
    )


def init_model(rung: Rung, spec: TaskSpec, seed: int = 0):
    """The rung at its seeded random initialisation: the untrained null of the trained model.

    Stock Llama init except: every variable name is an independent code ``N(0, I/d)`` (no direction shared by
    all names) and the MLP output projections start at zero (``benchmarks/ladder_plateau.py``: with the stock
    init and names that share a direction, not even a two-statement lookup is learnt).
    """
    from transformers import LlamaForCausalLM

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(model_config(rung, spec))
        with torch.no_grad():
            names = torch.tensor(name_token_ids(spec))
            model.model.embed_tokens.weight[names] = torch.randn(len(names), rung.d_model) / math.sqrt(
                rung.d_model
            )
            for layer in model.model.layers:
                layer.mlp.down_proj.weight.zero_()
    return model


def training_batch(
    spec: TaskSpec, config: TrainConfig, step: int, hops: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(ids ``(B, T)``, supervised positions ``(B, m)``, answer ids ``(B, m)``) of one step at stage ``hops``.

    Programs have ``spec.n_statements`` statements and chains of at most ``hops`` hops. The supervised
    positions are the ``n_queries`` queried names (the first one's hop count uniform in ``1..hops``), then
    every statement's ``;``.
    """
    if not 1 <= hops <= spec.max_hops:
        raise InvalidInputError(f"hops must be in 1..{spec.max_hops}, got {hops}.")
    rng = np.random.default_rng([config.seed, step])
    stage = dataclasses.replace(spec, max_hops=hops)
    examples = generate(stage, config.batch_size, split="train", seed=int(rng.integers(2**63)))
    vocab = {w: i for i, w in enumerate(task_vocabulary(spec))}
    ids, positions, answers = [], [], []
    for example in examples:
        text, pos, ans = with_queries(spec, example, config.n_queries, rng)
        statements = statement_values(example.text)
        ids.append([vocab["<bos>"], *(vocab[w] for w in text.split())])
        positions.append(pos + [p for p, _ in statements])
        answers.append([vocab[str(a)] for a in ans + [v for _, v in statements]])
    return torch.tensor(ids), torch.tensor(positions), torch.tensor(answers)


def fresh_name_embeddings(
    model, ids: torch.Tensor, names: torch.Tensor, generator: torch.Generator
) -> torch.Tensor:
    """Input embeddings ``(B, T, d)`` in which every program gets its own random code ``N(0, I/d)`` per name.

    A name keeps one code within its program (so binding is possible) and a new one in the next program.
    """
    embed = model.model.embed_tokens
    d = embed.weight.shape[1]
    codes = torch.randn(ids.shape[0], embed.weight.shape[0], d, generator=generator) / math.sqrt(d)
    fresh = codes[torch.arange(ids.shape[0])[:, None], ids]
    return torch.where(torch.isin(ids, names)[..., None], fresh, embed(ids))


def learning_rate(config: TrainConfig, step: int) -> float:
    """Linear warm-up ``lr * min(1, (step+1)/warmup)``, then constant, or times ``(1 + cos(pi step/steps)) / 2``
    with ``schedule="cosine"``."""
    warm = config.lr * min(1.0, (step + 1) / config.warmup)
    if config.schedule == "cosine":
        return warm * 0.5 * (1 + math.cos(math.pi * step / config.steps))
    return warm


def query_loss(
    model,
    ids: torch.Tensor,
    positions: torch.Tensor,
    answers: torch.Tensor,
    embeddings: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(mean cross entropy of the answers at ``positions``, logits ``(B, m, V)`` there).

    ``embeddings`` replaces the token embeddings of ``ids`` (fresh name codes) when given.
    """
    if embeddings is None:
        hidden = model.model(input_ids=ids).last_hidden_state
    else:
        hidden = model.model(inputs_embeds=embeddings).last_hidden_state
    rows = torch.arange(ids.shape[0])[:, None].expand_as(positions)
    logits = model.lm_head(hidden[rows, positions])
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), answers.reshape(-1))
    return loss, logits


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
    stages: list[dict] = field(default_factory=list)  # {"step": s, "hops": h}: when the curriculum grew
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
    checkpoint_every: int = 0,
    checkpoint_dir: str | Path | None = None,
    echo: Callable[[str], None] | None = None,
    label: str | None = None,
    resume_file: str | Path | None = None,
):
    """Train one rung for ``config.steps`` steps; returns ``(model, TrainLog)``.

    ``threads=1`` (the default) runs on one CPU thread, so runs are bit-for-bit reproducible on one
    machine and leave the other cores free. With ``checkpoint_every=N`` the float16 weights after every
    ``N``-th step are saved (``save_checkpoint``) to ``checkpoint_dir/step-<k>/`` (emptied when training starts
    at step 0); saving changes nothing in the training. ``echo`` gets one line of progress at each evaluation
    (``label``: the run's name in it). With ``resume_file``, the whole training state (float32 weights, the
    optimiser's moments, the name-code generator, the curriculum, the log) is saved there at every evaluation,
    and a run that finds a state of the same rung, spec and config there goes on from its step: a killed run
    loses at most ``eval_every`` steps, and ends with the weights of an uninterrupted one.
    Introduced in: chapter 7.
    """
    from tqdm.auto import tqdm

    if config.steps < 1 or config.batch_size < 1 or config.n_queries < 1:
        raise InvalidInputError(
            f"steps, batch_size and n_queries must be positive; got {config.steps}, {config.batch_size}, "
            f"{config.n_queries}."
        )
    if not 1 <= config.fresh_names_from <= spec.max_hops + 1:
        raise InvalidInputError(
            f"fresh_names_from must be in 1..{spec.max_hops + 1}, got {config.fresh_names_from}."
        )
    if config.schedule not in ("constant", "cosine"):
        raise InvalidInputError(f"schedule must be 'constant' or 'cosine', got {config.schedule!r}.")
    if checkpoint_every < 0 or (checkpoint_every and checkpoint_dir is None):
        raise InvalidInputError(
            f"checkpoint_every must be 0 (none) or positive with a checkpoint_dir; got {checkpoint_every}."
        )
    label = label or rung.name
    if threads is not None:
        torch.set_num_threads(threads)
    model = init_model(rung, spec, config.seed)
    model.train()
    embed = model.model.embed_tokens.weight
    names = torch.tensor(name_token_ids(spec))
    _freeze_rows(embed, names)
    others = [p for p in model.parameters() if p is not embed]
    optimizer = torch.optim.AdamW(
        [{"params": [embed], "weight_decay": 0.0}, {"params": others, "weight_decay": config.weight_decay}],
        lr=config.lr,
        betas=(0.9, 0.98),
    )
    codes = torch.Generator().manual_seed(config.seed + 1)
    log = TrainLog(asdict(rung), spec.to_dict(), asdict(config), stages=[{"step": 0, "hops": 1}])
    log.n_parameters = sum(p.numel() for p in model.parameters())
    hops, running, first, before = 1, 0.0, 0, 0.0
    identity = json.dumps([asdict(rung), spec.to_dict(), asdict(config)], sort_keys=True)
    state = _read_resume(resume_file, identity)
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        codes.set_state(state["codes"])
        log = TrainLog(**json.loads(state["log"]))
        log.evals = [
            {"step": e["step"], "accuracy": {int(h): a for h, a in e["accuracy"].items()}} for e in log.evals
        ]
        hops, running, first, before = (
            int(state["hops"]),
            float(state["running"]),
            int(state["step"]),
            log.seconds,
        )
        if echo is not None:
            echo(f"{label}: resumed at step {first}/{config.steps} from {resume_file}")
        due = (
            Path(checkpoint_dir) / f"step-{first}"
            if checkpoint_every and first % checkpoint_every == 0
            else None
        )
        if due is not None and not (due / SUMS_FILE).is_file():  # killed between the state and the checkpoint
            info = {"step": first, "hops": hops, "loss": float(np.mean(log.loss[-50:])), "label": label}
            save_checkpoint(model, info, due)
    elif checkpoint_dir is not None and checkpoint_every:
        shutil.rmtree(checkpoint_dir, ignore_errors=True)  # a killed run's: training starts again at step 0
    start = time.perf_counter()
    bar = tqdm(
        range(first, config.steps),
        desc=label,
        disable=not progress,
        mininterval=2.0,
        initial=first,
        total=config.steps,
    )
    for step in bar:
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(config, step)
        ids, positions, answers = training_batch(spec, config, step, hops)
        fresh = fresh_name_embeddings(model, ids, names, codes) if hops >= config.fresh_names_from else None
        loss, logits = query_loss(model, ids, positions, answers, fresh)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip)
        optimizer.step()
        log.loss.append(float(loss.detach()))
        first_query = float((logits[:, 0].argmax(-1) == answers[:, 0]).float().mean())
        running = 0.98 * running + 0.02 * first_query
        if running > config.gate and hops < spec.max_hops:
            hops, running = hops + 1, 0.0
            log.stages.append({"step": step + 1, "hops": hops})
        if (step + 1) % config.eval_every == 0 or step + 1 == config.steps:
            acc = accuracy_by_hops(model, spec, config.n_eval, seed=7)
            log.evals.append({"step": step + 1, "accuracy": acc})
            bar.set_postfix(
                hops=hops,
                loss=f"{np.mean(log.loss[-50:]):.3f}",
                acc=" ".join(f"{a:.2f}" for a in acc.values()),
            )
            if echo is not None:
                echo(
                    f"{label}: step {step + 1}/{config.steps}, hops {hops}, loss {np.mean(log.loss[-50:]):.3f}, "
                    f"held-out accuracy by hops {' '.join(f'{a:.2f}' for a in acc.values())}, "
                    f"{before + time.perf_counter() - start:.0f} s"
                )
        if checkpoint_every and (step + 1) % checkpoint_every == 0:
            info = {"step": step + 1, "hops": hops, "loss": float(np.mean(log.loss[-50:])), "label": label}
            save_checkpoint(model, info, Path(checkpoint_dir) / f"step-{step + 1}")
        evaluated = (step + 1) % config.eval_every == 0
        if resume_file is not None and evaluated and step + 1 < config.steps:  # after the step's checkpoint
            log.seconds = before + time.perf_counter() - start
            _write_resume(resume_file, identity, step + 1, hops, running, model, optimizer, codes, log)
    log.seconds = before + time.perf_counter() - start
    model.eval()
    return model, log


def _write_resume(path, identity, step, hops, running, model, optimizer, codes, log) -> None:
    state = {
        "identity": identity,
        "step": step,
        "hops": hops,
        "running": running,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "codes": codes.get_state(),
        "log": json.dumps(asdict(log)),
    }
    atomic_write(path, lambda tmp: torch.save(state, tmp))


def _read_resume(path, identity: str) -> dict | None:
    """The training state saved in ``path`` if it is one of this run (same rung, spec and config), else None."""
    if path is None or not Path(path).is_file():
        return None
    try:
        state = torch.load(path, weights_only=True)
    except Exception:  # noqa: BLE001 - an unreadable state only means starting again at step 0
        return None
    return state if isinstance(state, dict) and state.get("identity") == identity else None
