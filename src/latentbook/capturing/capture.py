"""``lb.capture``: run prompts through a model and stream per-depth statistics of the residual stream.

Batches run under ``torch.inference_mode()`` through the model's trunk (never the language-model head: a
capture needs no logits). Padding is masked out; ``exclude_first`` also drops the first position (BOS /
attention sink). Memory is fixed by ``d`` and the reservoir sizes, not by the number of tokens
(``capturing/plan.py`` predicts it from a config). With ``checkpoint=PATH`` the accumulators are saved every
few batches and a later call resumes from them. ``depths=...`` keeps statistics at those depths only, and the
forward stops after the last of them (see ``parse_depths`` for how depths are written).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import os
import platform
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch

from .._files import check_output_path
from ..errors import CheckpointMismatchError, InvalidInputError, NonFiniteActivationError
from ..models.zoo import LoadedModel, load_model
from . import distributed as dist
from .accumulators import LayerStats, TokenReservoir, settle_folds, token_keys
from .attention import AttentionStats, attention_recorder
from .hooks import residual_hooks, stopping
from .results import Capture, load_capture
from .settings import DEPTHS_RULE, check_flags, check_path, check_settings, parse_depths, resolve_depths

__all__ = [
    "DEPTHS_RULE",
    "capture",
    "check_prompts",
    "check_settings",
    "parse_depths",
    "prompt_set_hash",
    "resolve_depths",
    "run_settings",
]


def prompt_set_hash(prompts: Sequence[str]) -> str:
    """sha256 of the prompts, each length-prefixed, so any change of text or order changes it.

    Parameters
    ----------
    prompts : sequence of str
        The prompts, in order.

    Returns
    -------
    str
        The 64 hex digits of the sha256 of ``len(text) || text`` for each prompt's UTF-8 bytes, in order.

    Examples
    --------
    The same texts in another order, or run together, hash differently:

    >>> from latentbook.capturing import prompt_set_hash
    >>> digest = prompt_set_hash(["a", "b"])
    >>> digest[:16], len(digest)
    ('cf6ab613e3942391', 64)
    >>> prompt_set_hash(["b", "a"]) == digest, prompt_set_hash(["ab"]) == digest
    (False, False)
    """
    digest = hashlib.sha256()
    for text in prompts:
        data = text.encode("utf-8")
        digest.update(len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()


def prompt_fingerprints(prompts: Sequence[str]) -> list[str]:
    """The first 16 hex digits of each prompt's sha256: what ``Capture.merge`` compares to refuse prompts that two
    captures share (a shared prompt's tokens would count twice)."""
    return [hashlib.sha256(text.encode("utf-8")).hexdigest()[:16] for text in prompts]


def check_prompts(prompts) -> list[str]:
    """The prompts as a list of non-empty strings that encode as UTF-8, or an error naming the bad ones.

    Parameters
    ----------
    prompts : iterable of str
        The prompts of a capture (a list, a tuple, a generator ...), not one string.

    Returns
    -------
    list of str
        The same prompts, as a list.

    Raises
    ------
    InvalidInputError
        For one string, no prompt, an entry that is not a non-empty string, or text holding a lone surrogate.

    Examples
    --------
    >>> from latentbook.capturing.capture import check_prompts
    >>> check_prompts(("The cat sat.", "It rained."))
    ['The cat sat.', 'It rained.']
    >>> check_prompts(["The cat sat.", "  "])
    Traceback (most recent call last):
    ...
    latentbook.errors.InvalidInputError: Prompts must be non-empty strings; entries [1] are not (first is '  ').
    """
    if isinstance(prompts, str):
        raise InvalidInputError(
            "prompts must be a list of strings, not one string. For a shipped set use "
            "lb.prompts.load('general'); for one text pass [text]."
        )
    prompts = list(prompts)
    if not prompts:
        raise InvalidInputError("The prompt list is empty: pass at least one non-empty string.")
    bad = [i for i, p in enumerate(prompts) if not isinstance(p, str) or not p.strip()]
    if bad:
        raise InvalidInputError(
            f"Prompts must be non-empty strings; entries {bad[:5]} are not (first is {prompts[bad[0]]!r})."
        )
    broken = [i for i, p in enumerate(prompts) if not _encodes(p)]
    if broken:
        raise InvalidInputError(
            f"Prompts {broken[:5]} are not valid Unicode text: they hold a lone surrogate (such as '\\ud800', "
            "often from a JSON escape of half a character). Fix or drop them before capturing."
        )
    return prompts


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _physical_memory() -> int:
    """Bytes of RAM of this machine (the reservoirs of sampled tokens live on the CPU)."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def _check_reservoir_memory(
    loaded: LoadedModel, n_vectors: int, n_omega: int, max_tokens: int, depths: int
) -> None:
    """Refuse reservoir sizes whose samples could not fit in memory, before anything is allocated.

    A reservoir never holds more tokens than the capture sees, so only ``min(size, max_tokens)`` counts.
    """
    needed = 4 * depths * (min(n_vectors, max_tokens) * loaded.d_model + min(n_omega, max_tokens))
    available = _physical_memory()
    if needed > available // 2:
        raise InvalidInputError(
            f"n_vectors={n_vectors} (with n_omega_samples={n_omega}) would need {needed / 2**30:.1f} GiB for "
            f"the sampled token vectors ({depths} depths x d={loaded.d_model}, float32) and this machine has "
            f"{available / 2**30:.1f} GiB: lower n_vectors."
        )


def _context_length(loaded: LoadedModel) -> int | None:
    """Positions the model can embed (``max_position_embeddings``), if its config says."""
    context = getattr(loaded.model.config, "max_position_embeddings", None)
    return int(context) if isinstance(context, int) and context > 0 else None


def _versions() -> dict[str, str]:
    import transformers

    from .._version import __version__

    return {
        "latentbook": __version__,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "python": platform.python_version(),
    }


def run_settings(loaded: LoadedModel, prompts: list[str], **settings) -> dict:
    """What a capture depends on, the weights' dtype included: a checkpoint is only resumed by a run with the same
    settings.

    Parameters
    ----------
    loaded : LoadedModel
        The model (``lb.load_model``).
    prompts : list of str
        The prompts, in order.
    **settings
        The capture's other settings (``batch_size``, ``max_length`` ...), kept as given.

    Returns
    -------
    dict
        ``model``, ``model_sha256``, ``prompt_set_sha256`` (``prompt_set_hash``), ``prompt_sha256s`` (16 hex
        digits per prompt), ``n_prompts`` and ``dtype``, then ``settings``.

    Examples
    --------
    A tiny random Llama built in place (``lb.load_model`` gives the same ``LoadedModel``):

    >>> import torch
    >>> from transformers import LlamaConfig, LlamaForCausalLM
    >>> config = LlamaConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
    ...                      num_key_value_heads=1, vocab_size=32)
    >>> model = LlamaForCausalLM(config).eval()
    >>> from latentbook.capturing.capture import prompt_set_hash, run_settings
    >>> from latentbook.models import LoadedModel, anatomy_of
    >>> loaded = LoadedModel(model, None, "tiny-llama", "llama", "causal", "0" * 64, anatomy_of(model))
    >>> settings = run_settings(loaded, ["a", "b"], batch_size=16)
    >>> settings["model"], settings["n_prompts"], settings["dtype"], settings["batch_size"]
    ('tiny-llama', 2, 'float32', 16)
    >>> settings["prompt_set_sha256"] == prompt_set_hash(["a", "b"]), settings["prompt_sha256s"]
    (True, ['ca978112ca1bbdca', '3e23e8160039594a'])
    """
    return {
        "model": loaded.name,
        "model_sha256": loaded.sha,
        "prompt_set_sha256": prompt_set_hash(prompts),
        "prompt_sha256s": prompt_fingerprints(prompts),
        "n_prompts": len(prompts),
        "dtype": str(loaded.dtype).removeprefix("torch."),
        **settings,
    }


class _Streamer:
    """The per-batch state the hooks write into: token mask, reservoir candidates, non-finite counts."""

    def __init__(
        self,
        d: int,
        n_layers: int,
        device,
        precision,
        n_vectors: int,
        n_omega: int,
        has_norm: bool,
        depths: Sequence[int] | None = None,
    ):
        self.depths = list(range(n_layers + 1)) if depths is None else [int(v) for v in depths]
        self.index = {depth: i for i, depth in enumerate(self.depths)}
        # One batch per pending block: each depth folds its Gram into the float64 sums when the next batch
        # arrives (the schedule of every capture so far, so results do not change with this code).
        self.layers = [LayerStats(d, device, precision, batches_per_block=1) for _ in self.depths]
        self.final_norm = LayerStats(d, device, precision, batches_per_block=1) if has_norm else None
        self.vectors = TokenReservoir(n_vectors, len(self.depths), d)
        self.omega_sample = TokenReservoir(n_omega, len(self.depths), 1)
        self.mask: torch.Tensor | None = None
        self.vector_idx: torch.Tensor | None = None
        self.omega_idx: torch.Tensor | None = None
        self.batch_vectors: list[torch.Tensor] = []
        self.batch_omega: list[torch.Tensor] = []
        self.nonfinite: dict[int | str, torch.Tensor] = {}
        self.attention: AttentionStats | None = None  # set when capturing with attention=True
        self.stop_after: int | None = None  # the depth after which each forward stops (None: runs through)

    def _on(self, device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Mask and sample indices on ``device`` (layers of a ``device_map`` model sit on several GPUs)."""
        if device not in self.per_device:
            self.per_device[device] = (
                self.mask.to(device),
                self.vector_idx.to(device),
                self.omega_idx.to(device),
            )
        return self.per_device[device]

    def on_depth(self, depth, hidden: torch.Tensor) -> None:
        mask, vector_idx, omega_idx = self._on(hidden.device)
        x = hidden.flatten(0, 1) if self.full else hidden[mask]  # a view when no token is masked out
        self.nonfinite[depth] = (~torch.isfinite(x)).sum()
        stats = self.final_norm if depth == "final" else self.layers[self.index[depth]]
        stats.to_(x.device)
        omega = stats.add(x)
        if depth != "final":
            self.batch_vectors.append(x[vector_idx].to(self.mask.device))
            self.batch_omega.append(omega[omega_idx].to(self.mask.device))

    def start_batch(
        self, mask: torch.Tensor, prompt_ids: np.ndarray, positions: np.ndarray, keys: np.ndarray
    ):
        self.mask = mask
        self.full = bool(mask.all())
        self.keys, self.prompt_ids, self.positions = keys, prompt_ids, positions
        self.vector_sel = np.flatnonzero(keys < self.vectors.threshold())
        self.omega_sel = np.flatnonzero(keys < self.omega_sample.threshold())
        self.vector_idx = torch.from_numpy(self.vector_sel).to(mask.device)
        self.omega_idx = torch.from_numpy(self.omega_sel).to(mask.device)
        self.batch_vectors, self.batch_omega, self.nonfinite = [], [], {}
        self.per_device = {mask.device: (mask, self.vector_idx, self.omega_idx)}

    def end_batch(self) -> None:
        bad = {depth: int(count) for depth, count in self.nonfinite.items() if int(count)}
        if bad:  # hooks fire in depth order, so the first entry is where it started
            depth, count = next(iter(bad.items()))
            n_values = self.mask.sum().item() * self.layers[0].moments.d
            deeper = (
                f"; deeper depths also affected: {', '.join(map(str, list(bad)[1:]))}" if len(bad) > 1 else ""
            )
            raise NonFiniteActivationError(
                f"{count} of {n_values} values in the residual stream are NaN/Inf at depth {depth} in this batch"
                f"{deeper}. In float16 this is usually overflow: load the model with dtype='bfloat16' or "
                "'float32'. Statistics of earlier batches are kept in the checkpoint, if one was asked for.",
                bad,
            )
        for reservoir, sel, parts in (
            (self.vectors, self.vector_sel, self.batch_vectors),
            (self.omega_sample, self.omega_sel, [p[:, None] for p in self.batch_omega]),
        ):
            if len(sel):
                reservoir.offer(self.keys[sel], self.prompt_ids[sel], self.positions[sel], torch.stack(parts))


def capture(
    model: LoadedModel | str,
    prompts: Sequence[str],
    *,
    max_length: int = 128,
    batch_size: int = 16,
    exclude_first: bool = False,
    precision: str = "float32",
    n_vectors: int = 512,
    n_omega_samples: int = 4096,
    checkpoint: str | Path | None = None,
    checkpoint_every: int = 8,
    strict: bool = False,
    progress: bool = True,
    prompt_set: str | None = None,
    attention: bool = False,
    distributed: bool = False,
    on_batch: Callable[[int, int], None] | None = None,
    depths: Sequence[int] | Sequence[float] | str | None = None,
) -> Capture:
    """Stream per-depth statistics of ``model`` on ``prompts`` into a ``Capture``.

    One forward pass per batch; hooks on each depth fold the residual stream into running float64 sums
    (``accumulators.Moments``), per-token Omega samples and a reservoir of token vectors; nothing per token
    is kept beyond the reservoirs, so memory stays flat in the number of prompts.

    Parameters
    ----------
    model : LoadedModel or str
        A model from ``lb.load_model``, or a name it accepts (a zoo name, ``random:NAME``, a local folder).
    prompts : sequence of str
        Non-empty prompts (the book's intervals resample prompts, so use dozens); ``lb.prompts.load("general")``
        ships a set.
    max_length : int
        Tokens kept per prompt; longer prompts are truncated with a warning, or refused when ``strict``.
    batch_size : int
        Prompts per forward pass.
    exclude_first : bool
        Drop position 0 (the BOS / attention-sink token) from every statistic.
    precision : {"float32", "float64"}
        The dtype of each batch's scatter matrix ("float32": fast, relative error ~1e-7, and on TF32 tensor
        cores for a bfloat16/float16 model on CUDA, ~1e-5; "float64": exact to rounding); running sums are
        always float64.
    n_vectors : int
        Token vectors kept per depth (a uniform reservoir sample, the same tokens at every depth).
    n_omega_samples : int
        Per-token Omega values kept per depth (a uniform reservoir sample).
    checkpoint : str or Path, optional
        A ``.partial`` file written every ``checkpoint_every`` batches; a capture restarted with the same
        settings resumes from it, and one written with other settings is refused before any forward pass.
    checkpoint_every : int
        Batches between checkpoints.
    strict : bool
        Refuse prompts longer than ``max_length`` instead of truncating them.
    progress : bool
        Show a progress bar.
    prompt_set : str, optional
        The prompt set's name, recorded in the provenance.
    attention : bool
        Also stream per-head attention statistics from the model's actual logits into ``Capture.attention``
        (``capturing/attention.py``; slower: attention runs eagerly, materialising the ``T x T`` logits).
    distributed : bool
        Under ``torchrun``: rank ``r`` of ``w`` takes the prompts ``i`` with ``i % w == r`` and all ranks'
        accumulators are merged exactly (``capturing/distributed.py``); checkpoints are per rank.
    on_batch : callable, optional
        ``on_batch(done, total)`` after each batch, with the prompts done so far; an exception raised in it
        stops the capture there (how the explorer's Cancel button works; a checkpoint keeps what was done).
    depths : sequence of int or float, or str, optional
        Keep statistics (moments, Omega, reservoirs, and with ``attention`` the attention of layer ``l`` for
        each depth ``l >= 1``) at those depths only: depth indices ``[0, 7, 14]`` or gamma fractions
        ``[0.25, 0.5]``, or the same as a string ``"0.25,0.5"`` (``DEPTHS_RULE``; checked before any model
        work where the model is named, else before any forward). The result equals the full capture
        restricted to them. The final norm's output is kept when depth ``L`` is asked for; otherwise the
        forward stops after the last depth asked for and the provenance says ``stopped_after_depth``.

    Returns
    -------
    Capture
        Per-depth statistics (``gamma``, ``omega_mean()``, ``eigvals(k)``, ...), the token samples and the
        provenance (model, weights' sha256, prompts' hash, settings); ``Capture.save`` writes it.

    Raises
    ------
    InvalidInputError
        For settings or prompts that cannot give a capture, before any forward pass.
    CheckpointMismatchError
        For a checkpoint written with other settings (model, prompts, dtype, ...), before any forward pass.
    NonFiniteActivationError
        For a forward pass that produces NaN or infinite activations (the depth and batch are named).

    Examples
    --------
    The 2-layer random-weight Llama (``d = 64``, no download) on four of the shipped prompts: three depths,
    and tokens near the Gaussian level of Omega (``gaussian_omega(64) = 0.20``), as random weights give:

    >>> import numpy as np
    >>> import latentbook as lb
    >>> model = lb.load_model("random:llama-tiny", device="cpu")
    >>> cap = lb.capture(model, lb.prompts.load("general", limit=4), progress=False)
    >>> cap.gamma
    array([0. , 0.5, 1. ])
    >>> np.round(cap.omega_mean(), 1)
    array([0.2, 0.2, 0.2])
    >>> eigvals = cap.eigvals(-1)  # the last depth's covariance spectrum, largest first
    >>> eigvals.shape, bool((np.diff(eigvals) <= 0).all())
    ((64,), True)
    """
    request = parse_depths(depths)
    prompts = check_prompts(prompts)
    check_flags(
        exclude_first=exclude_first,
        strict=strict,
        progress=progress,
        attention=attention,
        distributed=distributed,
    )
    if checkpoint is not None:
        check_path(checkpoint, "checkpoint")
    checked = check_settings(
        max_length=max_length,
        batch_size=batch_size,
        checkpoint_every=checkpoint_every,
        n_vectors=n_vectors,
        n_omega_samples=n_omega_samples,
        precision=precision,
    )
    batch_size, checkpoint_every = checked["batch_size"], checked["checkpoint_every"]
    n_vectors, n_omega_samples = checked["n_vectors"], checked["n_omega_samples"]
    if request is not None and isinstance(model, str):
        _check_depths_from_config(model, request)
    rank, world = dist.rank_and_world() if distributed else (0, 1)
    if checkpoint is not None:
        dist.refuse_other_world_partials(Path(checkpoint), world)
        checkpoint = dist.rank_checkpoint(Path(checkpoint), rank, world)
        check_output_path(checkpoint, checkpoint.name, option="checkpoint")
    loaded = load_model(model) if isinstance(model, str) else model
    if not isinstance(loaded, LoadedModel):
        raise InvalidInputError(
            f"model must be a zoo name or the result of lb.load_model(...), got {type(model).__name__}."
        )
    held = resolve_depths(request, loaded.n_layers, loaded.name)

    tokenizer = loaded.tokenizer
    lengths = np.array([len(ids) for ids in tokenizer(prompts, add_special_tokens=True)["input_ids"]])
    context = _context_length(loaded)
    limit_name, fix = f"max_length={max_length}", "shorten them or raise max_length"
    if context is not None and max_length > context:  # longer inputs would index past the position table
        max_length, limit_name, fix = context, f"the model's context of {context}", "shorten them"
    too_long = int((lengths > max_length).sum())
    if too_long:
        message = f"{too_long} of {len(prompts)} prompts are longer than {limit_name} tokens"
        if strict:
            raise InvalidInputError(f"{message}: {fix} (strict=True refuses to truncate).")
        warnings.warn(message + " and were truncated.", stacklevel=2)
    n_tokens = _tokens_to_capture(lengths, max_length, exclude_first)
    n_held = loaded.n_layers + 1 if held is None else len(held)
    _check_reservoir_memory(loaded, n_vectors, n_omega_samples, n_tokens, n_held)
    order = np.argsort(np.minimum(lengths, max_length), kind="stable")  # similar lengths batch together
    if distributed:
        order = order[order % world == rank]

    settings = run_settings(
        loaded,
        prompts,
        max_length=max_length,
        exclude_first=exclude_first,
        precision=precision,
        n_vectors=n_vectors,
        n_omega_samples=n_omega_samples,
        attention=attention,
        batch_size=batch_size,
        **({} if held is None else {"depths": held.tolist()}),
    )
    device = loaded.device
    keeps_last = held is None or held[-1] == loaded.n_layers
    streamer = _Streamer(
        loaded.d_model,
        loaded.n_layers,
        device,
        getattr(torch, precision),
        n_vectors,
        n_omega_samples,
        loaded.anatomy.final_norm is not None and keeps_last,
        None if held is None else held.tolist(),
    )
    streamer.stop_after = None if keeps_last else int(held[-1])
    if attention:
        streamer.attention = AttentionStats(loaded.n_layers)
    done = 0
    if checkpoint is not None and Path(checkpoint).exists():
        done = _resume(streamer, Path(checkpoint), settings, loaded.device)

    remaining = order[done:]
    batches = [remaining[i : i + batch_size] for i in range(0, len(remaining), batch_size)]
    bar = _progress_bar(int(np.minimum(lengths, max_length)[order[done:]].sum()), progress, loaded.name)
    recorded = None if held is None else [int(depth) - 1 for depth in held if depth >= 1]
    recording = (
        attention_recorder(loaded, streamer.attention, recorded) if attention else contextlib.nullcontext()
    )
    hooks = residual_hooks(
        loaded.anatomy, streamer.on_depth, streamer.depths, final=keeps_last, stop=not keeps_last
    )
    with contextlib.ExitStack() as stack:
        stack.callback(settle_folds)  # no copy to the host left pending, also after an error
        recorder = stack.enter_context(_forwards(hooks, recording))
        for batch_number, ids in enumerate(batches, start=1):
            texts = [prompts[i] for i in ids]
            enc = tokenizer(texts, return_tensors="pt", padding=True, truncation=True, max_length=max_length)
            mask = enc["attention_mask"].bool()
            n_real = int(mask.sum())
            if exclude_first:
                mask[:, 0] = False
            prompt_ids = np.repeat(ids, mask.sum(1).numpy())
            positions = np.nonzero(mask.numpy())[1]
            streamer.start_batch(mask.to(device), prompt_ids, positions, token_keys(prompt_ids, positions))
            if attention:
                recorder.set_rows(mask.to(device))
            kwargs = {k: v.to(device) for k, v in enc.items()}
            if loaded.kind == "causal":
                kwargs["use_cache"] = False
            with stopping():  # the hook of the last depth asked for may end the forward there
                loaded.anatomy.base(**kwargs)
            streamer.end_batch()
            done += len(ids)
            bar.update(n_real)
            if checkpoint is not None and (batch_number % checkpoint_every == 0 or done == len(order)):
                _to_capture(loaded, streamer, settings, done).save(checkpoint)
            if on_batch is not None:
                on_batch(done, len(order))
    bar.close()
    result = _to_capture(loaded, streamer, settings, done, prompt_set)
    if distributed:
        dist.merge_across_ranks(result)
    return result


@contextlib.contextmanager
def _forwards(hooks, recording):
    """Inference mode, the residual hooks and the attention recorder, for the batches of one capture."""
    with torch.inference_mode(), hooks, recording as recorder:
        yield recorder


def _check_depths_from_config(model: str, request: tuple[str, list]) -> None:
    """Refuse depths out of the model's range from its config alone, before loading it (when the config is
    readable without weights; else ``capture`` checks them once the model is loaded)."""
    from .plan import load_config

    try:
        config, _ = load_config(model)
        text = config.get_text_config() if hasattr(config, "get_text_config") else config
        n_layers = int(text.num_hidden_layers)
    except Exception:  # noqa: BLE001 - load_model reports a bad name properly
        return
    resolve_depths(request, n_layers, model)


def _tokens_to_capture(lengths: np.ndarray, max_length: int, exclude_first: bool) -> int:
    """How many token vectors the capture will see; zero is refused (its statistics would all be NaN)."""
    n_tokens = int(np.minimum(lengths, max_length).sum()) - (len(lengths) if exclude_first else 0)
    if n_tokens <= 0:
        reason = (
            f"every one of the {len(lengths)} prompts is a single token and exclude_first=True drops it"
            if exclude_first
            else "the tokenizer gives no tokens for these prompts"
        )
        raise InvalidInputError(
            f"This capture would see zero tokens: {reason}. Use longer prompts, or exclude_first=False."
        )
    return n_tokens


def _progress_bar(total_tokens: int, enabled: bool, name: str):
    from tqdm.auto import tqdm

    # enabled: tqdm's own default, which TQDM_DISABLE=1 turns off (the book build sets it: no bar widgets
    # in the executed pages); disabled: off whatever the environment says
    disable = {} if enabled else {"disable": True}
    return tqdm(total=total_tokens, unit="tok", unit_scale=True, desc=f"capture {name}", **disable)


def _to_capture(
    loaded: LoadedModel, streamer: _Streamer, settings: dict, done: int, prompt_set=None
) -> Capture:
    provenance = {
        **settings,
        "prompt_set": prompt_set,
        "prompts_done": done,
        "model_family": loaded.family,
        "n_parameters": sum(p.numel() for p in loaded.model.parameters()),
        "device": str(loaded.device),
        "dtype": str(loaded.dtype).removeprefix("torch."),
        "versions": _versions(),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    if streamer.stop_after is not None:
        provenance["stopped_after_depth"] = streamer.stop_after
    complete = len(streamer.depths) == loaded.n_layers + 1
    return Capture(
        loaded.name,
        loaded.n_layers,
        loaded.d_model,
        streamer.layers,
        streamer.final_norm,
        streamer.vectors,
        streamer.omega_sample,
        provenance,
        streamer.attention,
        None if complete else np.array(streamer.depths, dtype=np.int64),
    )


_RESUME_KEYS = (
    "model",
    "model_sha256",
    "dtype",
    "prompt_set_sha256",
    "n_prompts",
    "max_length",
    "exclude_first",
    "precision",
    "n_vectors",
    "n_omega_samples",
    "attention",
    "depths",
)


def _resume(streamer: _Streamer, path: Path, settings: dict, device: torch.device) -> int:
    """Load a checkpoint's accumulators into ``streamer``; return how many prompts it had finished. Another
    ``device`` type than the checkpoint's warns (float rounding only); another dtype is refused."""
    saved = load_capture(path)
    differing = [k for k in _RESUME_KEYS if saved.provenance.get(k) != settings.get(k)]
    if differing:
        raise CheckpointMismatchError(
            f"The checkpoint {path} was written with other settings ({', '.join(differing)} differ). "
            "Resume with the same model, prompts and settings, or delete the checkpoint to start over."
        )
    kind = torch.device(device).type
    if str(saved.provenance.get("device", kind)).split(":")[0] != kind:
        warnings.warn(
            f"Resuming {path} on {kind}, written on {saved.provenance.get('device')}: the same dtype, so the "
            "result equals an uninterrupted run up to the devices' float rounding.",
            stacklevel=3,
        )
    if saved.provenance.get("batch_size") != settings["batch_size"]:
        warnings.warn(
            f"Resuming {path} with batch_size={settings['batch_size']} instead of "
            f"{saved.provenance.get('batch_size')}: the result equals an uninterrupted run up to float "
            "rounding only (with the same batch_size the batches, and so the result, are identical).",
            stacklevel=3,
        )
    for mine, theirs in zip(streamer.layers, saved.layers):
        mine.merge(theirs)
    if streamer.final_norm is not None and saved.final_norm is not None:
        streamer.final_norm.merge(saved.final_norm)
    streamer.vectors.merge(saved.vectors)
    streamer.omega_sample.merge(saved.omega_sample)
    if streamer.attention is not None and saved.attention is not None:
        streamer.attention.merge(saved.attention)
    return int(saved.provenance["prompts_done"])
