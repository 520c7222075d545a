"""Gains of each block's map on transverse perturbations, by forward-mode AD at real token states (Theorem 6.1).

Theorem 6.1 (book/paper.md) is about the *linearised* dynamics: the Jacobian ``J_l`` of block ``l`` (depth ``l`` ->
``l + 1``, depths as in ``hooks.residual_hooks``) contracting a transverse subspace by ``q < 1``. This module
measures that map, not the spread of the states:

1. a relevant subspace ``U`` (``d x k``) is held fixed over the window of depths ``[start, stop]``: the top
   ``k`` eigenvectors of ``sum_(l,t) x_(l,t) x_(l,t)^T`` with ``x = h / ||h||``, the second moment of the
   unit-normalised token states pooled over the window (uncentred, so the mean and any massive coordinate count
   as relevant; every token weighs the same, so no high-norm token decides ``U`` alone);
2. for each prompt and direction ``j`` a tangent ``V`` (Gaussian at every kept position, projected onto ``U⊥``)
   is injected at depth ``l`` and the block's Jacobian-vector product ``J_l V`` read at depth ``l + 1``, for every
   ``l`` of the window in one forward: at each depth the incoming tangent is read and replaced by the same ``V``,
   so every read-out is one block's map;
3. the same for tangents ``V_U`` projected onto ``U`` and read on ``U``: the gain of the relevant subspace;
4. the sums saved give the gain of the map between RMS-normalised states ``h_l / rms_l -> h_(l+1) / rms_(l+1)``
   on ``U⊥`` and on ``U`` (``analysis.contraction.transverse_gain`` reads them, their ratio and a
   prompt-resampled interval):

       g⊥_l^2 = sum ||P⊥ (J_l V)_t||^2 / sum ||V_t||^2 * (rms_l / rms_(l+1))^2,   rms_l^2 = mean_t ||h_(l,t)||^2,
       g∥_l^2 = sum ||P_U (J_l V_U)_t||^2 / sum ||V_U,t||^2 * (rms_l / rms_(l+1))^2.

   Theorem 6.1 is about ``g⊥`` relative to ``g∥``: a map that shrinks every direction alike (``g⊥ = g∥ < 1``)
   keeps the transverse part's share, and contracts nothing relative to what it keeps.

The state is the whole sequence: ``V`` perturbs every kept position at once and ``J_l V`` is read at every kept
position, so a block's attention (a token's dependence on the tokens it reads) is part of its map. Kept
positions: real tokens other than each prompt's first (the attention sink, left out of ``U``, of ``V``, of the
read-out and of ``rms``). Each ``V`` comes from a seed of (``seed``, prompt index, ``j``): a prompt's draws do not
depend on batching, and resampling prompts resamples their directions with them.

How: ``torch.autograd.forward_ad`` dual tensors swapped in by forward pre-hooks on the layers (no layer is called
by hand, so any ``transformers`` version's layer signatures work); every forward stops after depth ``stop``.
Attention runs eagerly while measuring: the fused SDPA kernels have no forward-mode derivative (PyTorch raises
NotImplementedError for ``_scaled_dot_product_flash_attention_for_cpu``); the model's own implementation is
restored afterwards. Three passes over the prompts: a plain one for the RMS at each depth and ``U``, then the
transverse and the relevant tangents (each prompt repeated ``n_directions`` times in the batch: about
``4.6 n_directions`` plain forwards).

Usage: ``gains = transverse_gains(model, prompts, after=0.42)``, ``gains.save(path)``, ``load_gains(path)``.
Introduced in: chapter 5.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.autograd.forward_ad as fwAD

from .._files import atomic_write
from ..errors import CaptureFileError, InvalidInputError, NonFiniteActivationError, OutputExistsError
from ..models.anatomy import Anatomy
from ..models.zoo import LoadedModel, load_model
from .attention import _configs
from .capture import _versions, check_prompts, prompt_set_hash
from .capture_file import digest, scrub

FORMAT = "latentbook.transverse_gains"
SCHEMA_VERSION = 2  # 2: the relevant subspace's sums (relevant_out_sq, relevant_in_sq)
ARRAYS = ("basis", "out_sq", "in_sq", "relevant_out_sq", "relevant_in_sq", "state_sq", "n_tokens")


@dataclass(frozen=True)
class Batch:
    """One batch of prompts as the trunk takes it, and which positions are perturbed and read."""

    inputs: dict[str, Any]  # keyword arguments of ``anatomy.base``
    keep: torch.Tensor  # (B, T) bool: kept positions (real tokens, sink excluded)
    prompts: np.ndarray  # (B,) index of each row's prompt


@dataclass
class TransverseGains:
    """Sums of a JVP measurement over a window of depths ``start..stop``, per prompt and direction.

    ``out_sq[p, i, j] = sum_t ||P⊥ (J_(start+i) V_pj)_t||^2``, ``in_sq[p, j] = sum_t ||V_pj,t||^2``, the same
    for a tangent in ``U`` read on ``U`` (``relevant_out_sq``, ``relevant_in_sq``),
    ``state_sq[p, i] = sum_t ||h_(start+i), t||^2`` and ``n_tokens[p]`` kept positions of prompt ``p``.
    """

    model_name: str
    n_layers: int
    start: int
    stop: int
    basis: np.ndarray  # (d, k) orthonormal: the relevant subspace U, the same at every depth
    out_sq: np.ndarray  # (n_prompts, stop - start, n_directions)
    in_sq: np.ndarray  # (n_prompts, n_directions)
    relevant_out_sq: np.ndarray  # (n_prompts, stop - start, n_directions)
    relevant_in_sq: np.ndarray  # (n_prompts, n_directions)
    state_sq: np.ndarray  # (n_prompts, stop - start + 1)
    n_tokens: np.ndarray  # (n_prompts,)
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def k(self) -> int:
        return int(self.basis.shape[1])

    @property
    def d_model(self) -> int:
        return int(self.basis.shape[0])

    @property
    def n_prompts(self) -> int:
        return int(self.out_sq.shape[0])

    @property
    def n_directions(self) -> int:
        return int(self.out_sq.shape[2])

    @property
    def depths(self) -> np.ndarray:
        """The window's depths ``start..stop``; block ``i`` maps depth ``start + i`` to ``start + i + 1``."""
        return np.arange(self.start, self.stop + 1)

    @property
    def gamma(self) -> np.ndarray:
        return self.depths / self.n_layers

    def tensors(self) -> dict[str, torch.Tensor]:
        return {name: torch.from_numpy(np.ascontiguousarray(getattr(self, name))) for name in ARRAYS}

    def header(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "schema": SCHEMA_VERSION,
            "model_name": scrub(self.model_name),
            "n_layers": self.n_layers,
            "start": self.start,
            "stop": self.stop,
            "provenance": scrub(json.loads(json.dumps(self.provenance, default=str))),
        }

    def save(self, path: str | Path, *, force: bool = False) -> Path:
        """Write atomically (safetensors, the provenance, schema version and a sha256 in its header); an existing
        file is kept unless ``force``."""
        from safetensors.torch import save_file

        path = Path(path)
        if path.exists() and not force:
            raise OutputExistsError(
                f"{path} already exists: pass force=True to overwrite it, or choose another path."
            )
        state, header = self.tensors(), self.header()
        header["sha256"] = digest(state, header)
        metadata = {"latentbook": json.dumps(header, sort_keys=True)}
        return atomic_write(path, lambda tmp: save_file(state, str(tmp), metadata=metadata))


def load_gains(path: str | Path) -> TransverseGains:
    """Read a file of ``TransverseGains.save``: format, schema, checksum, shapes and finite non-negative sums are
    verified; whatever is wrong is a ``CaptureFileError``."""
    from safetensors import safe_open
    from safetensors.torch import load_file

    path = Path(path)
    again = "Measure again with latentbook.capturing.jacobian.transverse_gains(...).save(path)."
    if not path.is_file():
        raise CaptureFileError(f"No transverse-gain file at {path}. {again}")
    try:
        with safe_open(str(path), framework="pt") as f:
            metadata = f.metadata() or {}
        header = json.loads(metadata.get("latentbook", "null"))
        state = load_file(str(path))
    except Exception as exc:
        raise CaptureFileError(f"{path} is not readable (truncated or corrupt: {exc}). {again}") from exc
    if (
        not isinstance(header, dict)
        or header.get("format") != FORMAT
        or header.get("schema") != SCHEMA_VERSION
    ):
        found = (header or {}).get("format"), (header or {}).get("schema")
        raise CaptureFileError(
            f"{path} holds format/schema {found}, not {FORMAT!r} schema {SCHEMA_VERSION}. {again}"
        )
    if digest(state, header) != header.get("sha256"):
        raise CaptureFileError(f"{path} failed its checksum: the file was altered or damaged. {again}")
    try:
        gains = TransverseGains(
            header["model_name"],
            int(header["n_layers"]),
            int(header["start"]),
            int(header["stop"]),
            *(state[name].numpy() for name in ARRAYS),
            provenance=header["provenance"],
        )
        check_gains(gains)
    except (KeyError, TypeError, ValueError) as exc:
        raise CaptureFileError(f"{path} is inconsistent ({exc}). {again}") from exc
    return gains


def check_gains(gains: TransverseGains) -> None:
    """The window fits the model, every array has the shape the window gives it, and the sums are finite and
    non-negative: else ``InvalidInputError`` naming what is wrong."""
    out = np.asarray(gains.out_sq)
    p, m = (out.shape[0], out.shape[2]) if out.ndim == 3 else (0, 0)
    if not 0 <= gains.start < gains.stop <= gains.n_layers or p < 1 or m < 1:
        raise InvalidInputError(
            f"Window {gains.start}..{gains.stop} of {gains.n_layers} layers with out_sq of shape {out.shape}: need "
            "0 <= start < stop <= n_layers and at least one prompt and one direction. Measure again."
        )
    basis = np.asarray(gains.basis)
    if basis.ndim != 2 or not 0 < basis.shape[1] < basis.shape[0] or not np.all(np.isfinite(basis)):
        raise InvalidInputError(
            f"basis must be a finite (d, k) matrix with 0 < k < d, got shape {basis.shape}."
        )
    n_blocks = gains.stop - gains.start
    expected = {
        "out_sq": (p, n_blocks, m),
        "in_sq": (p, m),
        "relevant_out_sq": (p, n_blocks, m),
        "relevant_in_sq": (p, m),
        "state_sq": (p, n_blocks + 1),
        "n_tokens": (p,),
    }
    for name, shape in expected.items():
        array = np.asarray(getattr(gains, name))
        if array.shape != shape:
            raise InvalidInputError(f"{name} has shape {array.shape}, expected {shape} for this window.")
        if not np.all(np.isfinite(array)) or np.any(array < 0):
            raise InvalidInputError(f"{name} holds NaN, Inf or negative sums: measure again.")


# --- the measurement ---------------------------------------------------------------------------------------


class _Stop(Exception):
    """Raised by the hook of depth ``stop``: nothing deeper is needed."""


def window_after(n_layers: int, split: float) -> tuple[int, int]:
    """Depths ``(start, stop)`` of the window after ``split``: from the last interior depth at or before
    ``gamma = split`` (or the first after it) to the last interior depth ``L - 1``, as
    ``analysis.contraction.contraction_after`` has it (the embedding and the last block are edges)."""
    gamma = np.arange(n_layers + 1) / n_layers
    interior = np.flatnonzero((gamma > 0) & (gamma < 1))
    before, after = interior[gamma[interior] <= split], interior[gamma[interior] > split]
    if len(after) < 2:
        raise InvalidInputError(
            f"Fewer than 2 interior depths after gamma = {split} in a model of {n_layers} layers: nothing to "
            "measure. Pass window=(start, stop) depths instead."
        )
    return int(before[-1]) if len(before) else int(after[0]), int(after[-1])


def _run(anatomy: Anatomy, batch: Batch, start: int, stop: int, at_depth: Callable) -> None:
    """One forward of ``batch``; ``at_depth(depth, hidden)`` is called at depths ``start..stop`` and may return
    a replacement for the hidden state; the forward stops after depth ``stop``."""
    last = anatomy.n_layers

    def before(depth: int):
        def hook(module, args, kwargs):
            hidden = args[0] if args else kwargs["hidden_states"]
            new = at_depth(depth, hidden)
            if depth == stop:
                raise _Stop
            if new is None:
                return None
            return ((new, *args[1:]), kwargs) if args else (args, {**kwargs, "hidden_states": new})

        return hook

    def after_last(module, args, output):
        at_depth(last, output[0] if isinstance(output, (tuple, list)) else output)
        raise _Stop

    layers = anatomy.layers
    handles = [
        layers[d].register_forward_pre_hook(before(d), with_kwargs=True)
        for d in range(start, min(stop, last - 1) + 1)
    ]
    if stop == last:
        handles.append(layers[last - 1].register_forward_hook(after_last))
    try:
        anatomy.base(**batch.inputs)
    except _Stop:
        return
    finally:
        for handle in handles:
            handle.remove()
    raise InvalidInputError(
        f"The forward never reached depth {stop}: the trunk did not call its layers in order."
    )


def _row_sums(x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """``sum_t ||x_(b,t)||^2`` over the kept positions of each row, float64 on the CPU."""
    return (x.float().pow(2).sum(-1) * keep).sum(1).double().cpu()


def _check_finite(values: torch.Tensor, what: str, depth: int) -> None:
    if not torch.isfinite(values).all():
        raise NonFiniteActivationError(
            f"NaN/Inf in the {what} at depth {depth}: load the model with dtype='float32' and measure again.",
            {depth: int((~torch.isfinite(values)).sum())},
        )


def _states(anatomy: Anatomy, batches: Sequence[Batch], start: int, stop: int, n_prompts: int, k: int):
    """Pass 1: ``state_sq`` ``(n_prompts, stop - start + 1)``, ``n_tokens`` ``(n_prompts,)`` and the relevant
    subspace ``U`` ``(d, k)``: the top ``k`` eigenvectors of ``sum_(l,t) x_(l,t) x_(l,t)^T``, ``x = h / ||h||``."""
    state_sq = np.zeros((n_prompts, stop - start + 1))
    n_tokens = np.zeros(n_prompts, dtype=np.int64)
    pooled: list[torch.Tensor] = []

    def at_depth(depth, hidden, batch):
        keep = batch.keep.to(hidden.device)
        sums = _row_sums(hidden, keep)
        _check_finite(sums, "residual stream", depth)
        state_sq[batch.prompts, depth - start] = sums.numpy()
        x = hidden[keep].float()
        x = x / x.norm(dim=1, keepdim=True).clamp_min(torch.finfo(x.dtype).tiny)
        term = (x.T @ x).double()
        if pooled:
            pooled[0] += term.to(pooled[0].device)
        else:
            pooled.append(term)

    for batch in batches:
        n_tokens[batch.prompts] = batch.keep.sum(1).cpu().numpy()
        _run(anatomy, batch, start, stop, lambda depth, hidden, b=batch: at_depth(depth, hidden, b))
    if n_tokens.sum() <= k:
        raise InvalidInputError(
            f"Only {int(n_tokens.sum())} kept tokens (each prompt's first is the sink): need more than k={k}. "
            "Use more or longer prompts."
        )
    _, vectors = torch.linalg.eigh(pooled[0])
    return state_sq, n_tokens, vectors[:, -k:].flip(-1)


def _tangent(seed: int, prompt: int, direction: int, n: int, d: int) -> torch.Tensor:
    """A Gaussian ``(n, d)`` drawn from a seed of (``seed``, prompt, direction) alone."""
    state = np.random.SeedSequence([seed, prompt, direction]).generate_state(2, dtype=np.uint64)
    generator = torch.Generator().manual_seed(int(state[0] >> np.uint64(1)))
    return torch.randn(n, d, generator=generator)


def _repeat(inputs: dict[str, Any], m: int) -> dict[str, Any]:
    return {k: v.repeat_interleave(m, 0) if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}


def _tangent_sums(
    anatomy: Anatomy,
    batches: Sequence[Batch],
    start: int,
    stop: int,
    basis: torch.Tensor,
    n_directions: int,
    seed: int,
    n_prompts: int,
    relevant: bool = False,
):
    """Pass 2 (pass 3 with ``relevant``): ``out_sq`` ``(n_prompts, stop - start, m)`` and ``in_sq``
    ``(n_prompts, m)`` by forward-mode AD, for tangents in ``U⊥`` read on ``U⊥`` (with ``relevant``: in ``U``,
    read on ``U``). Both project the same Gaussian draw, so the two kinds of tangent are independent."""

    def project(x: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        along = (x @ u) @ u.T
        return along if relevant else x - along

    m = n_directions
    out_sq = np.zeros((n_prompts, stop - start, m))
    in_sq = np.zeros((n_prompts, m))
    for batch in batches:
        keep = batch.keep.repeat_interleave(m, 0)
        rows = np.repeat(batch.prompts, m)
        cols = np.tile(np.arange(m), len(batch.prompts))
        state: dict[str, torch.Tensor] = {}

        def at_depth(depth, hidden, keep=keep, rows=rows, cols=cols, state=state):
            primal, tangent = fwAD.unpack_dual(hidden)
            on = keep.to(primal.device)
            u = basis.to(primal.device, torch.float32)
            if depth > start:
                if tangent is None:
                    raise InvalidInputError(
                        f"No tangent reached depth {depth}: this trunk does not pass each layer's output to the "
                        "next layer as its hidden state, so its blocks cannot be measured one by one."
                    )
                t = tangent.float()
                sums = _row_sums(project(t, u), on)
                _check_finite(sums, "tangent", depth)
                out_sq[rows, depth - start - 1, cols] = sums.numpy()
            if depth == stop:
                return None
            if "v" not in state:
                v = torch.zeros(primal.shape, dtype=torch.float32)
                for r, (p, j) in enumerate(zip(rows, cols)):
                    where = keep[r].cpu()
                    v[r, where] = _tangent(seed, int(p), int(j), int(where.sum()), primal.shape[-1])
                v = v.to(primal.device)
                v = project(v, u) * on[..., None]
                state["v"] = v.to(primal.dtype)
                in_sq[rows, cols] = _row_sums(state["v"], on).numpy()
            return fwAD.make_dual(primal, state["v"].to(primal.device))  # layers may sit on several GPUs

        repeated = Batch(_repeat(batch.inputs, m), keep, rows)
        with fwAD.dual_level():
            _run(anatomy, repeated, start, stop, at_depth)
    return out_sq, in_sq


def block_gains(
    anatomy: Anatomy,
    batches: Sequence[Batch],
    *,
    start: int,
    stop: int,
    k: int,
    n_directions: int,
    seed: int = 0,
    model_name: str = "model",
) -> TransverseGains:
    """The three passes over ``batches`` (rows indexed ``0..n_prompts-1`` by ``Batch.prompts``), for any trunk
    whose layers pass their output to the next layer (a real model, or a planted toy of ``analysis.synthetic``).
    Call it inside ``torch.no_grad()`` with attention that has a forward-mode derivative."""
    n_layers = anatomy.n_layers
    if not 0 <= start < stop <= n_layers:
        raise InvalidInputError(
            f"Need depths 0 <= start < stop <= {n_layers}, got start={start}, stop={stop}."
        )
    n_prompts = int(max(int(b.prompts.max()) for b in batches)) + 1
    state_sq, n_tokens, basis = _states(anatomy, batches, start, stop, n_prompts, k)
    sums = [
        _tangent_sums(anatomy, batches, start, stop, basis, n_directions, seed, n_prompts, relevant)
        for relevant in (False, True)
    ]
    (out_sq, in_sq), (relevant_out_sq, relevant_in_sq) = sums
    return TransverseGains(
        model_name,
        n_layers,
        start,
        stop,
        basis.double().cpu().numpy(),
        out_sq,
        in_sq,
        relevant_out_sq,
        relevant_in_sq,
        state_sq,
        n_tokens,
    )


@contextmanager
def eager_attention(model: torch.nn.Module) -> Iterator[None]:
    """Inside the block every config of ``model`` asks for eager attention (which has a forward-mode
    derivative); the previous implementations are restored on exit, also after an error."""
    configs = _configs(model)
    previous = [config._attn_implementation for config in configs]
    try:
        for config in configs:
            config._attn_implementation_internal = "eager"
        yield
    finally:
        for config, implementation in zip(configs, previous, strict=True):
            config._attn_implementation_internal = implementation


def _batches(loaded: LoadedModel, prompts: list[str], max_length: int, batch_size: int) -> list[Batch]:
    """Prompts tokenised in batches of similar length; kept = real tokens other than each row's first."""
    tokenizer = loaded.tokenizer
    lengths = [len(ids) for ids in tokenizer(prompts, add_special_tokens=True)["input_ids"]]
    order = np.argsort(np.minimum(lengths, max_length), kind="stable")
    batches = []
    for first in range(0, len(order), batch_size):
        ids = order[first : first + batch_size]
        enc = tokenizer(
            [prompts[i] for i in ids],
            return_tensors="pt",
            padding=True,
            truncation=True,
            max_length=max_length,
        )
        real = enc["attention_mask"].bool()
        sink = real.int().argmax(1)  # the first real token of each row, whichever side pads
        keep = real & (torch.arange(real.shape[1])[None, :] != sink[:, None])
        inputs = {name: value.to(loaded.device) for name, value in enc.items()}
        if loaded.kind == "causal":
            inputs["use_cache"] = False
        batches.append(Batch(inputs, keep.to(loaded.device), ids))
    return batches


def transverse_gains(
    model: LoadedModel | str,
    prompts: Sequence[str],
    *,
    after: float = 0.42,
    window: tuple[int, int] | None = None,
    k: int = 10,
    n_directions: int = 1,
    max_length: int = 64,
    batch_size: int = 8,
    seed: int = 0,
    prompt_set: str | None = None,
) -> TransverseGains:
    """Measure the blocks' transverse gains of ``model`` on ``prompts`` over ``window`` (depths ``(start, stop)``),
    by default ``window_after(L, after)``: the interior depths after ``gamma = after``.

    ``k`` relevant directions (the fixed subspace ``U``), ``n_directions`` tangents per prompt (one suffices: a
    tangent spans every kept position and ``d - k`` dimensions, so its gain barely varies; prompts carry the
    sampling error), prompts truncated at ``max_length`` tokens. Tangents take the model's dtype: load it in
    float32 (bfloat16 rounds each block's product to ~1 %, the size of the effect judged). Cost: one plain forward
    and two forward-mode passes (transverse, relevant) of ``n_directions`` copies of each prompt, each stopped at
    depth ``stop``.
    Introduced in: chapter 5.
    """
    prompts = check_prompts(prompts)
    for name, value in (("k", k), ("n_directions", n_directions), ("batch_size", batch_size)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise InvalidInputError(f"{name} must be a positive integer, got {value!r}.")
    if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 3:
        raise InvalidInputError(
            f"max_length must be an integer >= 3 (a sink and two kept tokens), got {max_length!r}."
        )
    loaded = load_model(model) if isinstance(model, str) else model
    if not isinstance(loaded, LoadedModel):
        raise InvalidInputError(
            f"model must be a zoo name or the result of lb.load_model(...), got {type(model).__name__}."
        )
    if not k < loaded.d_model:
        raise InvalidInputError(f"k must be below d_model = {loaded.d_model}, got {k}.")
    start, stop = window_after(loaded.n_layers, after) if window is None else (int(window[0]), int(window[1]))
    batches = _batches(loaded, prompts, max_length, batch_size)
    with torch.no_grad(), eager_attention(loaded.model):
        gains = block_gains(
            loaded.anatomy,
            batches,
            start=start,
            stop=stop,
            k=int(k),
            n_directions=int(n_directions),
            seed=seed,
            model_name=loaded.name,
        )
    gains.provenance = {
        "model": loaded.name,
        "model_sha256": loaded.sha,
        "prompt_set": prompt_set,
        "prompt_set_sha256": prompt_set_hash(prompts),
        "n_prompts": len(prompts),
        "max_length": max_length,
        "batch_size": batch_size,
        "k": int(k),
        "n_directions": int(n_directions),
        "seed": seed,
        "window": [start, stop],
        "after": after if window is None else None,
        "sink": "each prompt's first real token, excluded",
        "attention": "eager (forward-mode AD)",
        "device": str(loaded.device),
        "dtype": str(loaded.dtype).removeprefix("torch."),
        "versions": _versions(),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    return gains
