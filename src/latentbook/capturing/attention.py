"""Opt-in attention statistics per layer and head, from the logits the model actually computes.

Usage (what ``lb.capture(model, prompts, attention=True)`` does):

1. ``stats = AttentionStats(n_layers)``;
2. ``with attention_recorder(loaded, stats) as recorder:``, and before each forward
   ``recorder.set_rows(mask)`` with the ``(batch, T)`` mask of query rows to record;
3. ``a.merge(b)`` is exact (sums and a max), so batches, checkpoints and ranks combine the same way;
4. read out ``stats.entropy()``, ``stats.max_weight()``, ``stats.beta_eff()``, ``stats.free_energy()``,
   ``stats.query_norm()``, ``stats.key_norm()``: arrays ``(L, H)``, means over recorded rows.

For one prompt's raw rows (the logits themselves, not statistics), ``attention_rows(loaded, text, layer)``.

How: a function registered with ``transformers.AttentionInterface`` (and the eager mask with
``AttentionMaskInterface``, where it exists) replaces the model's attention for the duration of the block.
It receives the queries and keys after every transformation the model applies (RoPE, the q/k norms of
Qwen3 and Gemma 3) and the model's own ``scaling`` and ``softcap`` (Gemma 2), so the logits are
``z = q.k * scaling``, soft-capped ``c tanh(z / c)`` when the model caps, plus the mask; it returns exactly
what transformers' eager attention returns (softmax in float32, cast back to the query dtype).

Per layer and head, over recorded rows (real, non-padding query tokens; ``exclude_first`` drops position 0
as a query, while every real key stays in the softmax, as the model sees it), it streams float64 sums of:
entropy ``H = -sum p log p``; maximum weight; logit std over the row's keys (``beta_eff``, rows with at
least two keys); ``F_min = -logsumexp(z)`` (``beta = 1``, ``E = -z``); number of keys and its log; query
norm and key norm (of the same tokens, the key of the query head's KV head); and the largest
``|F(p) - F_min|`` of the weights the model used (the variational check of chapter 2, ~1e-6 in float32).

Introduced in: chapter 2 (book/paper.md, "Attention thermodynamics").
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch

from ..errors import InvalidInputError

IMPLEMENTATION = "latentbook_stats"
# The same row statistics with each row's sink key (its first real key) removed; captures older than these
# fields load with them absent (``AttentionStats.has_nosink`` False).
NOSINK_FIELDS = ("rows_nosink", "entropy_nosink", "log_keys_nosink", "std_rows_nosink", "logit_std_nosink")
SUM_FIELDS = (
    "rows",
    "entropy",
    "max_weight",
    "std_rows",
    "logit_std",
    "free_energy",
    "keys",
    "log_keys",
    "query_norm",
    "key_norm",
    *NOSINK_FIELDS,
)
MAX_FIELDS = ("variational_gap",)


class AttentionStats:
    """Mergeable per-(layer, head) sums of attention-row statistics, float64, layers ``1..L``.

    Arrays have shape ``(L, H)``; ``H`` is set by the first batch (every layer must have the same heads).
    """

    def __init__(self, n_layers: int, n_heads: int | None = None):
        self.n_layers = int(n_layers)
        self.n_heads = n_heads
        self.sums: dict[str, torch.Tensor] = {}
        if n_heads is not None:
            self._allocate(n_heads, "cpu")

    def _allocate(self, n_heads: int, device) -> None:
        self.n_heads = int(n_heads)
        shape = (self.n_layers, self.n_heads)
        with torch.inference_mode(False):  # normal tensors, updatable in and out of inference mode
            self.sums = {
                name: torch.zeros(shape, dtype=torch.float64, device=device)
                for name in (*SUM_FIELDS, *MAX_FIELDS)
            }

    def add(self, layer: int, row_stats: dict[str, torch.Tensor]) -> None:
        """Add one batch's per-head totals at ``layer`` (0-based): ``(H,)`` tensors keyed by field name."""
        n_heads = row_stats["rows"].shape[0]
        if not self.sums:
            self._allocate(n_heads, row_stats["rows"].device)
        if n_heads != self.n_heads:
            raise InvalidInputError(
                f"Layer {layer} has {n_heads} attention heads, earlier layers {self.n_heads}: attention "
                "statistics need the same number of heads in every layer."
            )
        for name in SUM_FIELDS:
            if name in self.sums:
                self.sums[name][layer] += row_stats[name].to(self.sums[name].device, torch.float64)
        for name in MAX_FIELDS:
            self.sums[name][layer] = torch.maximum(
                self.sums[name][layer], row_stats[name].to(self.sums[name].device, torch.float64)
            )

    def merge(self, other: AttentionStats) -> None:
        """Exact: sums add, maxima take the max."""
        if other.n_layers != self.n_layers:
            raise InvalidInputError(
                f"Cannot merge attention stats of {other.n_layers} layers into {self.n_layers}."
            )
        if not other.sums:
            return
        if not self.sums:
            self._allocate(other.n_heads, other.sums["rows"].device)
        if other.n_heads != self.n_heads:
            raise InvalidInputError(
                f"Cannot merge attention stats of {other.n_heads} heads into {self.n_heads}."
            )
        for name in NOSINK_FIELDS:  # kept only when both sides have them
            if name not in other.sums:
                self.sums.pop(name, None)
        for name in SUM_FIELDS:
            if name in self.sums:
                self.sums[name] += other.sums[name].to(self.sums[name].device)
        for name in MAX_FIELDS:
            self.sums[name] = torch.maximum(self.sums[name], other.sums[name].to(self.sums[name].device))

    # --- read-outs: means over recorded rows, shape (L, H) ------------------------------------------------
    def _mean(self, name: str, count: str = "rows") -> np.ndarray:
        if not self.sums:
            raise InvalidInputError("These attention statistics are empty: no forward was recorded.")
        total, n = self.sums[name].cpu().numpy(), self.sums[count].cpu().numpy()
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > 0, total / n, np.nan)

    def n_rows(self) -> np.ndarray:
        """Recorded query rows per layer and head."""
        if not self.sums:
            raise InvalidInputError("These attention statistics are empty: no forward was recorded.")
        return self.sums["rows"].cpu().numpy().copy()

    def entropy(self) -> np.ndarray:
        """Mean attention entropy ``H = -sum_j p_j log p_j`` (nats)."""
        return self._mean("entropy")

    def max_weight(self) -> np.ndarray:
        """Mean of ``max_j p_j``."""
        return self._mean("max_weight")

    def beta_eff(self) -> np.ndarray:
        """Mean logit std over a row's keys, the effective inverse temperature (rows with >= 2 keys)."""
        return self._mean("logit_std", "std_rows")

    def free_energy(self) -> np.ndarray:
        """Mean ``F_min = -log sum_j exp(z_j)`` (``beta = 1``, ``E = -z``)."""
        return self._mean("free_energy")

    def n_keys(self) -> np.ndarray:
        """Mean number of keys a row attends over."""
        return self._mean("keys")

    def log_keys(self) -> np.ndarray:
        """Mean ``log(number of keys)``: the entropy of uniform attention, for normalising ``entropy()``."""
        return self._mean("log_keys")

    def query_norm(self) -> np.ndarray:
        """Mean ``||q||`` of recorded tokens (after RoPE and any q norm, before ``scaling``)."""
        return self._mean("query_norm")

    def key_norm(self) -> np.ndarray:
        """Mean ``||k||`` of recorded tokens (the key of each query head's KV head)."""
        return self._mean("key_norm")

    def variational_gap(self) -> np.ndarray:
        """Largest ``|F(p) - F_min|`` over recorded rows, ``p`` the weights the model used (~0: rounding)."""
        return self.sums["variational_gap"].cpu().numpy()

    # --- files ---------------------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, torch.Tensor]:
        state = {"n_layers": torch.tensor(self.n_layers), "n_heads": torch.tensor(self.n_heads or 0)}
        state.update({name: value.cpu() for name, value in self.sums.items()})
        return state

    @classmethod
    def from_state_dict(cls, state: dict[str, torch.Tensor]) -> AttentionStats:
        n_heads = int(state["n_heads"])
        stats = cls(int(state["n_layers"]))
        if n_heads:
            stats._allocate(n_heads, "cpu")
            for name in (*SUM_FIELDS, *MAX_FIELDS):
                if name in state:
                    stats.sums[name] += state[name].to(torch.float64)
                elif name in NOSINK_FIELDS:
                    del stats.sums[name]  # a capture from before the sink-excluded statistics
                else:
                    raise KeyError(name)
        return stats

    @property
    def has_nosink(self) -> bool:
        """Whether these statistics include the sink-excluded fields (captures made since they exist)."""
        return all(name in self.sums for name in NOSINK_FIELDS)


# --- the recording attention function -----------------------------------------------------------------


class _Recorder:
    """Which layer each attention module is, which query rows to record, and where to add them."""

    def __init__(self, attention_modules, stats: AttentionStats, layers=None):
        chosen = range(len(attention_modules)) if layers is None else set(layers)
        self.layer_of = {id(module): i for i, module in enumerate(attention_modules) if i in chosen}
        self.stats = stats
        self.rows: torch.Tensor | None = None
        self.forwards = 0
        self.calls = [0] * len(attention_modules)
        self.keep: set[int] = set()  # layers whose raw logits, key mask and weights are kept (attention_rows)
        self.kept: dict[int, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}

    def set_rows(self, mask: torch.Tensor) -> None:
        """The ``(batch, T)`` boolean mask of query rows to record in the next forward."""
        self.rows = mask.bool()
        self.forwards += 1


_ACTIVE: contextvars.ContextVar[_Recorder | None] = contextvars.ContextVar(
    "latentbook_attention", default=None
)


def _valid_keys(attention_mask: torch.Tensor | None, shape: torch.Size, device) -> torch.Tensor:
    """``(B, 1 or H, T, S)`` boolean: which keys each query may attend to."""
    if attention_mask is None:
        return torch.ones(shape[0], 1, shape[2], shape[3], dtype=torch.bool, device=device)
    mask = attention_mask[:, :, :, : shape[3]]
    if mask.dtype == torch.bool:
        return mask
    return mask > torch.finfo(mask.dtype).min / 2


def _row_softmax(z: torch.Tensor, valid: torch.Tensor):
    """Per row over its valid keys: ``logsumexp(z)``, the weights ``p``, ``H(p)``, the key count ``n`` and
    the logit std (population, over the valid keys)."""
    z_masked = z.masked_fill(~valid, float("-inf"))
    lse = torch.logsumexp(z_masked, dim=-1)
    p = torch.exp(z_masked - lse[..., None]).nan_to_num(0.0)  # rows with no key: no weight, no entropy
    entropy = -torch.special.xlogy(p, p).sum(-1)
    n_keys = valid.sum(-1).to(torch.float32)
    z_zero = torch.where(valid, z, torch.zeros_like(z))
    mean = z_zero.sum(-1) / n_keys.clamp(min=1)
    centred = torch.where(valid, z - mean[..., None], torch.zeros_like(z))
    std = (centred.square().sum(-1) / n_keys.clamp(min=1)).sqrt()
    return lse, p, entropy, n_keys, std


def without_sink(valid: torch.Tensor) -> torch.Tensor:
    """``valid`` with each row's first valid key (the sink: the first real token) removed."""
    first = valid.to(torch.int8).argmax(-1, keepdim=True)  # argmax returns the first maximal index
    return valid.scatter(-1, first, False)


@torch.no_grad()
def row_statistics(
    logits: torch.Tensor, valid: torch.Tensor, used: torch.Tensor, rows: torch.Tensor
) -> dict[str, torch.Tensor]:
    """Per-head totals over the recorded rows of one batch (``rows``: ``(B, T)``); logits ``(B, H, T, S)``.

    The ``*_nosink`` fields are the same statistics of each row with its sink key removed and the rest
    renormalised, ``q_j = p_j / (1 - p_sink)`` (``H(q) = logsumexp_{j != sink} z_j - sum q_j z_j``), over the
    rows left with at least one key.
    """
    z = logits.float()
    valid = valid.expand_as(z)
    lse, p, entropy, n_keys, std = _row_softmax(z, valid)
    z_zero = torch.where(valid, z, torch.zeros_like(z))
    p_used = used.float()
    f_used = -(p_used * z_zero).sum(-1) + torch.special.xlogy(p_used, p_used).sum(-1)
    gap = (f_used + lse).abs()
    _, _, entropy_ns, n_ns, std_ns = _row_softmax(z, without_sink(valid))

    sel = rows[:, None, :].expand_as(lse)  # (B, H, T)
    multi = sel & (n_keys > 1)
    sel_ns = sel & (n_ns > 0)
    multi_ns = sel & (n_ns > 1)

    def total(x: torch.Tensor, where: torch.Tensor = sel) -> torch.Tensor:
        return torch.where(
            where, x.to(torch.float64), torch.zeros((), dtype=torch.float64, device=x.device)
        ).sum((0, 2))

    return {
        "rows": total(torch.ones_like(lse)),
        "entropy": total(entropy),
        "max_weight": total(p.amax(-1)),
        "std_rows": total(torch.ones_like(lse), multi),
        "logit_std": total(std, multi),
        "free_energy": total(-lse),
        "keys": total(n_keys),
        "log_keys": total(n_keys.clamp(min=1).log()),
        "rows_nosink": total(torch.ones_like(lse), sel_ns),
        "entropy_nosink": total(entropy_ns, sel_ns),
        "log_keys_nosink": total(n_ns.clamp(min=1).log(), sel_ns),
        "std_rows_nosink": total(torch.ones_like(lse), multi_ns),
        "logit_std_nosink": total(std_ns, multi_ns),
        "variational_gap": torch.where(sel, gap, torch.zeros_like(gap)).amax((0, 2)).to(torch.float64),
    }


def latentbook_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    softcap: float | None = None,
    **kwargs,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Eager attention that also records row statistics; same output as transformers' eager attention.

    ``query`` ``(B, H, T, D)``, ``key``/``value`` ``(B, H_kv, S, D)``; returns ``((B, T, H, D), weights)``.
    """
    if kwargs.get("s_aux") is not None:
        raise InvalidInputError(
            "This model uses attention sinks (s_aux), which latentbook's attention statistics do not model: "
            "capture it with attention=False."
        )
    if scaling is None:
        scaling = query.shape[-1] ** -0.5
    groups = query.shape[1] // key.shape[1]
    key_states = key.repeat_interleave(groups, dim=1) if groups > 1 else key
    value_states = value.repeat_interleave(groups, dim=1) if groups > 1 else value
    logits = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    if softcap is not None:
        logits = torch.tanh(logits / softcap) * softcap
    masked = logits if attention_mask is None else logits + attention_mask[:, :, :, : key_states.shape[-2]]
    weights = torch.nn.functional.softmax(masked, dim=-1, dtype=torch.float32).to(query.dtype)
    weights = torch.nn.functional.dropout(weights, p=dropout, training=module.training)
    output = torch.matmul(weights, value_states).transpose(1, 2).contiguous()

    recorder = _ACTIVE.get()
    if recorder is not None and id(module) in recorder.layer_of:
        _record(recorder, recorder.layer_of[id(module)], query, key_states, logits, attention_mask, weights)
    return output, weights


@torch.no_grad()
def _record(recorder: _Recorder, layer: int, query, key_states, logits, attention_mask, weights) -> None:
    rows = recorder.rows
    if (
        rows is None
        or rows.shape != (query.shape[0], query.shape[2])
        or key_states.shape[2] != query.shape[2]
    ):
        raise InvalidInputError(
            "Attention statistics record one full forward per batch (no cache, no generation): call "
            "set_rows(mask) with the (batch, T) mask of the batch before the forward."
        )
    recorder.calls[layer] += 1
    rows = rows.to(query.device)
    valid = _valid_keys(attention_mask, logits.shape, logits.device)
    if layer in recorder.keep:
        recorder.kept[layer] = (logits.float().cpu(), valid.expand_as(logits).cpu(), weights.float().cpu())
    totals = row_statistics(logits, valid, weights, rows)
    sel = rows[:, None, :].expand(query.shape[:3])
    zero = torch.zeros((), dtype=torch.float64, device=query.device)
    totals["query_norm"] = torch.where(sel, query.float().norm(dim=-1).double(), zero).sum((0, 2))
    totals["key_norm"] = torch.where(sel, key_states.float().norm(dim=-1).double(), zero).sum((0, 2))
    recorder.stats.add(layer, totals)


@dataclass(frozen=True)
class AttentionRows:
    """One prompt's attention at one layer, as the model computed it: arrays of shape ``(H, T, S)``.

    ``logits`` are ``z = q.k * scaling`` (soft-capped where the model caps) before the mask, so ``E = -z``
    with ``beta = 1``; ``valid`` marks the keys each query may attend to; ``weights`` are the model's own
    softmax weights (float32, as used).
    """

    logits: np.ndarray
    valid: np.ndarray
    weights: np.ndarray


def attention_rows(loaded, text: str, layer: int) -> AttentionRows:
    """The attention logits, key mask and weights of ``text`` at ``layer`` (0-based), from one forward.

    Introduced in: chapter 2 (the free energy checked on real attention rows).
    """
    if not isinstance(layer, int) or not 0 <= layer < loaded.n_layers:
        raise InvalidInputError(f"layer must be an integer in 0..{loaded.n_layers - 1}, got {layer!r}.")
    if not isinstance(text, str) or not text.strip():
        raise InvalidInputError("text must be a non-empty string (one prompt).")
    enc = loaded.tokenizer([text], return_tensors="pt")
    kwargs = {k: v.to(loaded.device) for k, v in enc.items()}
    if loaded.kind == "causal":
        kwargs["use_cache"] = False
    with torch.inference_mode(), attention_recorder(loaded, AttentionStats(loaded.n_layers)) as recorder:
        recorder.keep = {layer}
        recorder.set_rows(enc["attention_mask"].bool())
        loaded.anatomy.base(**kwargs)
    logits, valid, weights = recorder.kept[layer]
    return AttentionRows(logits[0].double().numpy(), valid[0].numpy(), weights[0].double().numpy())


def _register() -> None:
    from transformers import AttentionInterface

    AttentionInterface.register(IMPLEMENTATION, latentbook_attention)
    try:  # transformers >= 4.53 builds masks per implementation; older versions build eager masks anyway
        from transformers.masking_utils import AttentionMaskInterface, eager_mask
    except ImportError:
        return
    AttentionMaskInterface.register(IMPLEMENTATION, eager_mask)


def _configs(model: torch.nn.Module) -> list:
    from transformers import PretrainedConfig

    found: dict[int, PretrainedConfig] = {}
    for module in model.modules():
        config = getattr(module, "config", None)
        if isinstance(config, PretrainedConfig):
            found.setdefault(id(config), config)
    return list(found.values())


@contextmanager
def attention_recorder(loaded, stats: AttentionStats, layers=None) -> Iterator[_Recorder]:
    """Inside the block ``loaded``'s attention runs through ``latentbook_attention``, recording to ``stats``.

    ``layers`` (0-based; default all) are the layers recorded: the others' rows of ``stats`` stay empty (their
    read-outs NaN, ``n_rows`` 0), as in a capture with ``depths=...``, which records the attention of layer
    ``l - 1`` for each depth ``l >= 1`` it holds. The model's previous attention implementation is restored on
    exit, also after an error.
    """
    try:
        _register()
    except ImportError as exc:
        raise InvalidInputError(
            "Attention statistics need transformers >= 4.48 (AttentionInterface); upgrade transformers "
            "or capture with attention=False."
        ) from exc
    attention_modules = loaded.anatomy.attention
    configs = _configs(loaded.model)
    previous = [config._attn_implementation for config in configs]
    recorder = _Recorder(attention_modules, stats, layers)
    token = _ACTIVE.set(recorder)
    try:
        for config in configs:
            config._attn_implementation_internal = IMPLEMENTATION
        yield recorder
    finally:
        for config, implementation in zip(configs, previous, strict=True):
            config._attn_implementation_internal = implementation
        _ACTIVE.reset(token)
    missed = [
        layer
        for layer, calls in enumerate(recorder.calls)
        if calls < recorder.forwards and layer in recorder.layer_of.values()
    ]
    if missed:
        raise InvalidInputError(
            f"The attention of layers {missed[:5]} of {loaded.name} was not recorded in every forward: this "
            "architecture (or transformers version) does not call the AttentionInterface there. "
            "Capture with attention=False."
        )
