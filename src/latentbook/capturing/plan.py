"""``latentbook plan MODEL``: the memory a capture will need, per device, from the model's config alone.

Usage:

1. ``plan = make_plan("Qwen/Qwen2.5-32B", gpus=1, gpu_mem_gib=80)`` (a config.json path, a folder holding
   one, a zoo name, a hub id in the local cache, or one of the shipped configs, ``shipped_configs()``);
2. ``print(plan.to_text())``: one row per kind of memory and one column per device, then a line saying
   whether the capture fits and, if not, why and what to change;
3. ``plan.max_batch_size``, ``plan.fits``, ``plan.accumulator_bytes()`` ({device: bytes}).

No weight is read: the model is built on the meta device (shapes only) to count its parameters.

What is counted (bytes), per depth held (``L + 1``, or those of ``depths``) plus the final norm when depth
``L`` is held: on the host the float64 sums of ``Moments`` (``8 d^2 + 8 d``); on the depth's layer device the
pending Gram (``d^2`` in ``precision``), the mean of the pending batch (``8 d``: a capture folds each batch
when the next one comes), the Omega histogram and power sums (``8 (OMEGA_BINS + 5)``) and ``max |h|``,
``sum |h|`` (``12 d``); on the host the two token reservoirs at capacity (``4 k`` per depth and token, and
``24`` per token for its key, prompt and position); with ``attention=True`` the per-(layer, head) sums of
``AttentionStats`` (``8 L H`` per field) on the first layer's device. These are exactly what a capture
allocates (``LayerStats.nbytes``, ``TokenReservoir.nbytes``; tested on a real capture). From a CUDA device
one fold at a time also stages a Gram in pinned host memory. Weights are the parameters in the load dtype.
Activations per batch are an estimate (an upper bound for the usual kernels): per token ``4 d`` residual
copies, ``(H + 2 H_kv) d_head`` for q, k, v and ``3 d_ff`` for the MLP in the weights' dtype, the capture's
float32 copies (``d`` in ``precision`` and ``4 d``), and a float32 ``T x T`` score matrix per head
(eight of them with ``attention=True``: the eager logits, softmax and row statistics), plus the batch's
reservoir candidates. Across GPUs (``device_map="auto"``, balanced) layer ``i`` of ``L`` is placed on GPU
``floor(i N / L)``, the embeddings on the first and the final norm (and head) on the last.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..errors import InvalidInputError, ModelUnavailableError
from ..models.config_checks import check_sizes
from .accumulators import OMEGA_BINS
from .attention import MAX_FIELDS, SUM_FIELDS
from .settings import check_settings, resolve_depths

SHIPPED = Path(__file__).resolve().parent / "configs"
GIB = 2**30
CUDA_RESERVE = 1 * GIB  # per GPU: the CUDA context, cuBLAS workspaces and allocator slack, kept free
RANDOM_VOCAB = 49152  # generic random:<family>-<size> models borrow the SmolLM2 tokenizer (zoo._load_random)
POWER_SUMS = 5  # OmegaStats.power_sums: sum Omega^k for k = 0..4
ATTENTION_FIELDS = len(SUM_FIELDS) + len(MAX_FIELDS)  # AttentionStats.sums: one (L, H) float64 array each


@dataclass(frozen=True)
class ModelConfig:
    """What the plan needs of a model, read from its config and its shapes on the meta device."""

    name: str
    source: str  # where the config came from
    model_type: str
    n_layers: int
    d_model: int
    intermediate_size: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    vocab_size: int
    tie_word_embeddings: bool
    config_dtype: str | None
    has_final_norm: bool
    n_parameters: int
    layer_parameters: tuple[int, ...] = field(repr=False)  # per decoder layer
    first_parameters: int = 0  # embeddings (on the first device)
    last_parameters: int = 0  # the final norm and head, when not tied (on the last device)


def shipped_configs() -> dict[str, Path]:
    """The public configs shipped with latentbook, by hub id (``Qwen/Qwen2.5-32B`` ...)."""
    found = {}
    for path in sorted(SHIPPED.glob("*.json")):
        found[json.loads(path.read_text())["_hub_id"]] = path
    return found


def _shipped(name: str) -> Path | None:
    key = name.lower()
    for hub_id, path in shipped_configs().items():
        if key in (hub_id.lower(), hub_id.split("/")[-1].lower(), path.stem.lower()):
            return path
    return None


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidInputError(f"{path} is not a readable JSON config ({exc}).") from exc
    if not isinstance(data, dict) or "model_type" not in data:
        raise InvalidInputError(f"{path} is not a transformers config.json (no model_type).")
    return data


MAX_GPUS = 1024


def load_config(name: str):
    """The ``transformers`` config of ``name`` and where it came from, reading no weights.

    In order: a path to a ``.json`` file; a folder holding ``config.json``; a zoo name (``lb.models()``); a
    hub id whose config is in the local Hugging Face cache; a shipped config (``shipped_configs()``, by hub
    id or short name such as ``Qwen2.5-32B``).
    """
    from transformers import AutoConfig

    from ..models import zoo

    if not isinstance(name, str) or not name.strip():
        raise InvalidInputError(f"MODEL must be a non-empty string, got {name!r}.")
    path = Path(name).expanduser()
    data, source = None, None
    if path.is_file():
        data, source = _read_json(path), str(path)
    elif path.is_dir() and (path / "config.json").is_file():
        data, source = _read_json(path / "config.json"), str(path / "config.json")
    elif name.startswith("random:") and name.removeprefix("random:").split("-")[0] in zoo.RANDOM_FAMILIES:
        return zoo.random_config(name, RANDOM_VOCAB), f"zoo ({name}, random init)"
    elif name in zoo.EMBEDDED or (
        name.startswith("random:") and name.removeprefix("random:") in zoo.EMBEDDED
    ):
        folder = zoo._embedded_folder(name.removeprefix("random:"))
        data, source = _read_json(folder / "config.json"), f"zoo ({name})"
    else:
        cached = _cached_hub_config(name)
        shipped = _shipped(name)
        if cached is not None:
            data, source = _read_json(cached), f"hub cache ({name})"
        elif shipped is not None:
            data, source = _read_json(shipped), f"shipped config ({shipped.name})"
    if data is None:
        raise ModelUnavailableError(
            f"No config for {name!r}: give a config.json path, a folder holding one, a zoo name (lb.models()), "
            f"a hub id already in your Hugging Face cache, or one of the shipped configs "
            f"{sorted(shipped_configs())}."
        )
    check_sizes(data, source)
    fields = {k: v for k, v in data.items() if not k.startswith("_")}
    model_type = fields.pop("model_type")
    if "torch_dtype" in fields and _dtype_is_named_dtype():  # newer transformers call it dtype (and warn)
        fields.setdefault("dtype", fields.pop("torch_dtype"))
    try:
        return AutoConfig.for_model(model_type, **fields), source
    except ValueError as exc:
        raise ModelUnavailableError(
            f"{source} names model_type {model_type!r}, which this transformers does not know ({exc})."
        ) from exc


@functools.cache
def _dtype_is_named_dtype() -> bool:
    from transformers import PretrainedConfig

    return "dtype" in inspect.signature(PretrainedConfig.__init__).parameters


def _cached_hub_config(name: str) -> Path | None:
    from ..models.zoo import HUB_ID

    if not HUB_ID.fullmatch(name):
        return None
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    found = try_to_load_from_cache(name, "config.json")
    return Path(found) if isinstance(found, str) else None


def read_config(name: str) -> ModelConfig:
    """``ModelConfig`` of ``name`` (see ``load_config``): sizes from the config, parameters from the shapes of
    the model built on the meta device (no weights read, no memory taken)."""
    from transformers import AutoModel, AutoModelForCausalLM

    from ..models.anatomy import anatomy_of

    config, source = load_config(name)
    architectures = getattr(config, "architectures", None) or []
    causal = not architectures or any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in architectures)
    auto = AutoModelForCausalLM if causal else AutoModel
    with warnings.catch_warnings(), torch.device("meta"):
        warnings.simplefilter("ignore")
        model = auto.from_config(config)
    anatomy = anatomy_of(model)
    layers = tuple(sum(p.numel() for p in layer.parameters()) for layer in anatomy.layers)
    total = sum(p.numel() for p in model.parameters())  # shared (tied) tensors are counted once
    in_layers = {id(p) for layer in anatomy.layers for p in layer.parameters()}
    embedding = model.get_input_embeddings()
    first = sum(p.numel() for p in embedding.parameters() if id(p) not in in_layers)
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    n_heads = int(text.num_attention_heads)
    d = int(text.hidden_size)
    head_dim = getattr(text, "head_dim", None) or d // n_heads
    dtype = getattr(config, "dtype" if _dtype_is_named_dtype() else "torch_dtype", None)
    return ModelConfig(
        name=name,
        source=source,
        model_type=str(config.model_type),
        n_layers=len(anatomy.layers),
        d_model=d,
        intermediate_size=int(text.intermediate_size),
        n_heads=n_heads,
        n_kv_heads=int(getattr(text, "num_key_value_heads", None) or n_heads),
        head_dim=int(head_dim),
        vocab_size=int(text.vocab_size),
        tie_word_embeddings=bool(getattr(config, "tie_word_embeddings", False)),
        config_dtype=None if dtype is None else str(dtype).removeprefix("torch."),
        has_final_norm=anatomy.final_norm is not None,
        n_parameters=int(total),
        layer_parameters=layers,
        first_parameters=int(first),
        last_parameters=int(total - sum(layers) - first),
    )


# --- the plan --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemoryRow:
    what: str
    device: str
    bytes: int
    accumulator: bool = False  # one of the capture's statistics (what ``accumulator_bytes`` sums)


@dataclass(frozen=True)
class Plan:
    """The memory of one capture setting, per device, and whether it fits (see the module docstring)."""

    model: ModelConfig
    devices: tuple[str, ...]  # "cuda:0"... or ("host",) for a CPU capture
    capacity: dict[str, int]  # bytes usable per device (GPU memory less CUDA_RESERVE)
    rows: tuple[MemoryRow, ...]  # static memory (weights, statistics)
    depths: tuple[int, ...]
    batch_size: int
    max_length: int
    dtype: str
    precision: str
    attention: bool
    n_vectors: int
    n_omega_samples: int
    max_batch_size: int  # largest batch of max_length tokens each that fits (0: not even one)
    fits: bool
    verdict: str  # "fits: ..." or "does not fit, because ..."

    def accumulator_bytes(self) -> dict[str, int]:
        """Bytes of the capture's statistics by device, as ``LayerStats.nbytes`` / ``TokenReservoir.nbytes``
        count them at the end of a capture (with at least two batches and full reservoirs)."""
        held: dict[str, int] = {}
        for row in self.rows:
            if row.accumulator:
                held[row.device] = held.get(row.device, 0) + row.bytes
        return held

    def static_bytes(self, device: str) -> int:
        return sum(row.bytes for row in self.rows if row.device == device)

    def activation_bytes(self, batch_size: int | None = None) -> int:
        """Activations of one batch on the device computing it (an estimate, see the module docstring)."""
        return _activations(self, self.batch_size if batch_size is None else batch_size)

    def to_text(self) -> str:
        m = self.model
        columns = [*self.devices] + ([] if self.devices == ("host",) else ["host"])
        where = (
            "CPU"
            if self.devices == ("host",)
            else f"{len(self.devices)} x {_gib(self.capacity[self.devices[0]] + CUDA_RESERVE)} GPU"
        )
        depth_text = (
            f"all {m.n_layers + 1} depths"
            if len(self.depths) == m.n_layers + 1
            else f"{len(self.depths)} depths {list(self.depths)}"
        )
        lines = [
            f"Plan for {m.name} ({m.model_type}, {m.n_layers} layers, d={m.d_model}, "
            f"{m.n_parameters / 1e9:.2f} B parameters; config: {m.source}) on {where}",
            f"capture: {depth_text}, batch {self.batch_size} x {self.max_length} tokens, weights {self.dtype}, "
            f"Grams {self.precision}, n_vectors {self.n_vectors}, n_omega_samples {self.n_omega_samples}, "
            f"attention statistics {'yes' if self.attention else 'no'}",
            "",
        ]
        grid = [[""] + list(columns)]
        for what in dict.fromkeys(r.what for r in self.rows):
            sizes = [sum(r.bytes for r in self.rows if r.what == what and r.device == c) for c in columns]
            grid.append([what] + [_gib(size) if size else "-" for size in sizes])
        act = self.activation_bytes()
        grid.append(
            ["activations per batch (estimate)"]
            + [_gib(act) if c != "host" or self.devices == ("host",) else "-" for c in columns]
        )
        totals = [self.static_bytes(c) + (act if c in self.devices else 0) for c in columns]
        grid.append(["total"] + [_gib(v) for v in totals])
        grid.append(["usable"] + [_gib(self.capacity[c]) if c in self.capacity else "-" for c in columns])
        widths = [max(len(row[i]) for row in grid) + (0 if i == 0 else 2) for i in range(len(grid[0]))]
        for row in grid:  # every column as wide as its widest cell: no number runs into the next
            lines.append(f"{row[0]:<{widths[0]}}" + "".join(f"{v:>{w}}" for v, w in zip(row[1:], widths[1:])))
        lines += ["", self.verdict]
        return "\n".join(lines)


def _gib(size: float) -> str:
    """A size in the unit that keeps it short: TiB from 1024 GiB, GiB, MiB or KiB, two decimals."""
    if size >= 1024 * GIB:
        return f"{size / (1024 * GIB):.2f} TiB"
    if size >= GIB / 100:
        return f"{size / GIB:.2f} GiB"
    return f"{size / 2**20:.2f} MiB" if size >= 2**20 / 100 else f"{size / 2**10:.2f} KiB"


def _activations(plan: Plan, batch_size: int) -> int:
    m, tokens = plan.model, batch_size * plan.max_length
    wb = torch.empty((), dtype=getattr(torch, plan.dtype)).element_size()
    pb = torch.empty((), dtype=getattr(torch, plan.precision)).element_size()
    per_token = 4 * m.d_model * wb + (m.n_heads + 2 * m.n_kv_heads) * m.head_dim * wb
    per_token += 3 * m.intermediate_size * wb + m.d_model * (pb + 4)
    scores = batch_size * m.n_heads * plan.max_length**2 * 4 * (8 if plan.attention else 1)
    n_held = len(plan.depths)
    candidates = (
        2 * n_held * 4 * (min(tokens, plan.n_vectors) * m.d_model + min(tokens, plan.n_omega_samples))
    )
    return int(tokens * per_token + scores + candidates)


def _placement(model: ModelConfig, n_devices: int) -> list[int]:
    """The device of each decoder layer under a balanced ``device_map`` over ``n_devices``."""
    return [i * n_devices // model.n_layers for i in range(model.n_layers)]


def accumulator_rows(
    model: ModelConfig,
    depths: list[int],
    device_of_depth,
    precision: str,
    n_vectors: int,
    n_omega_samples: int,
    attention: bool,
    attention_device: str,
    staged: bool,
) -> list[MemoryRow]:
    """The capture's statistics, row by row (see the module docstring for each size)."""
    d = model.d_model
    pb = torch.empty((), dtype=getattr(torch, precision)).element_size()
    keeps_final = model.has_final_norm and depths[-1] == model.n_layers
    stats_at = [*depths, *(["final"] if keeps_final else [])]
    rows = []
    for depth in stats_at:
        device = device_of_depth(depth)
        rows += [
            MemoryRow("float64 sums (mean, scatter)", "host", 8 * d * d + 8 * d, True),
            MemoryRow(f"pending Grams ({precision})", device, pb * d * d, True),
            MemoryRow("pending batch means", device, 8 * d, True),
            MemoryRow("Omega histograms and power sums", device, 8 * (OMEGA_BINS + POWER_SUMS), True),
            MemoryRow("|h| max and sums", device, 4 * d + 8 * d, True),
        ]
    n_held = len(depths)
    rows.append(MemoryRow("token vector reservoir", "host", n_vectors * (4 * n_held * d + 24), True))
    rows.append(MemoryRow("Omega sample reservoir", "host", n_omega_samples * (4 * n_held + 24), True))
    if attention:
        size = 8 * ATTENTION_FIELDS * model.n_layers * model.n_heads
        rows.append(MemoryRow("attention statistics", attention_device, size, True))
    if staged:
        rows.append(MemoryRow("fold staging (pinned, one at a time)", "host", pb * d * d + 8 * d))
    return rows


def make_plan(
    model: str | ModelConfig,
    *,
    gpus: int = 1,
    gpu_mem_gib: float = 80.0,
    depths=None,
    batch_size: int = 16,
    max_length: int = 128,
    dtype: str = "auto",
    precision: str = "float32",
    attention: bool = False,
    n_vectors: int = 512,
    n_omega_samples: int = 4096,
) -> Plan:
    """The plan of a capture of ``model`` on ``gpus`` GPUs of ``gpu_mem_gib`` GiB each (``gpus=0``: on the
    CPU, with ``gpu_mem_gib`` the RAM to plan for). ``dtype="auto"``: bfloat16 on GPUs, float32 on the CPU
    (as ``lb.load_model``); ``depths`` as ``lb.capture``'s (``settings.DEPTHS_RULE``).

    Parameters
    ----------
    model : str or ModelConfig
        A config file or folder, a zoo name (``lb.models()``), a hub id whose config is in the local cache or a
        shipped config (``load_config``); or a ``ModelConfig`` read already.
    gpus : int
        GPUs to spread the layers over, 0 for a CPU capture.
    gpu_mem_gib : float
        GiB of memory per GPU (of RAM with ``gpus=0``).
    depths : optional
        The depths to capture, as ``lb.capture``'s; None: every depth.
    batch_size, max_length : int
        Prompts per batch and tokens per prompt.
    dtype : str
        The weights' dtype: ``"auto"``, ``"float32"``, ``"bfloat16"`` or ``"float16"``.
    precision : str
        The Grams' precision, ``"float32"`` or ``"float64"``.
    attention : bool
        Whether attention statistics are captured too.
    n_vectors, n_omega_samples : int
        Sizes of the token-vector and Omega reservoirs.

    Returns
    -------
    Plan
        The memory per device (``rows``, ``to_text()``), the largest batch that fits (``max_batch_size``),
        ``fits`` and a ``verdict`` saying why.

    Raises
    ------
    InvalidInputError
        For a bad setting or an unreadable config.
    ModelUnavailableError
        For a model whose config is not on this machine.

    Examples
    --------
    The 2-layer random-weight Llama (its config is built here, no weights are read) on 8 GiB of RAM, and on 10
    MiB, too little for its weights:

    >>> from latentbook.capturing import make_plan
    >>> plan = make_plan("random:llama-tiny", gpus=0, gpu_mem_gib=8)
    >>> plan.model.n_layers, plan.model.d_model, plan.devices, plan.depths, plan.fits
    (2, 64, ('host',), (0, 1, 2), True)
    >>> make_plan("random:llama-tiny", gpus=1, gpu_mem_gib=8, depths=[0, -1]).depths
    (0, 2)
    >>> small = make_plan("random:llama-tiny", gpus=0, gpu_mem_gib=0.01)
    >>> small.fits, small.max_batch_size, small.verdict.startswith("does not fit, because the weights")
    (False, 0, True)
    """

    if isinstance(gpus, bool) or not isinstance(gpus, int) or not 0 <= gpus <= MAX_GPUS:
        raise InvalidInputError(
            f"gpus must be an integer from 0 (a CPU capture) to {MAX_GPUS}, got {gpus!r}."
        )
    if not (isinstance(gpu_mem_gib, (int, float)) and math.isfinite(gpu_mem_gib) and gpu_mem_gib > 0):
        raise InvalidInputError(f"gpu_mem_gib must be a positive number of GiB, got {gpu_mem_gib!r}.")
    check_settings(
        max_length=max_length,
        batch_size=batch_size,
        checkpoint_every=1,
        precision=precision,
        n_vectors=n_vectors,
        n_omega_samples=n_omega_samples,
    )
    if dtype == "auto":
        dtype = "bfloat16" if gpus else "float32"
    chosen = getattr(torch, str(dtype), None)
    if not isinstance(chosen, torch.dtype) or not chosen.is_floating_point:
        raise InvalidInputError(f"Unknown dtype {dtype!r}: use 'auto', 'float32', 'bfloat16' or 'float16'.")
    config = read_config(model) if isinstance(model, str) else model
    settings = dict(
        depths=depths,
        batch_size=batch_size,
        max_length=max_length,
        dtype=dtype,
        precision=precision,
        attention=attention,
        n_vectors=n_vectors,
        n_omega_samples=n_omega_samples,
    )
    draft = _draft(config, gpus, gpu_mem_gib, **settings)
    best = draft.max_batch_size
    verdict = _verdict(draft, best, lambda n: _draft(config, n, gpu_mem_gib, **settings).max_batch_size >= 1)
    return dataclasses.replace(draft, fits=best >= batch_size, verdict=verdict)


def _draft(
    config: ModelConfig,
    gpus: int,
    gpu_mem_gib: float,
    *,
    depths,
    batch_size: int,
    max_length: int,
    dtype: str,
    precision: str,
    attention: bool,
    n_vectors: int,
    n_omega_samples: int,
) -> Plan:
    """The plan's rows and largest batch, without its verdict."""
    held = resolve_depths(depths, config.n_layers, config.name)
    held = list(range(config.n_layers + 1)) if held is None else [int(v) for v in held]

    if gpus:
        devices = tuple(f"cuda:{i}" for i in range(gpus))
        capacity = {dev: max(int(gpu_mem_gib * GIB) - CUDA_RESERVE, 0) for dev in devices}
    else:
        devices = ("host",)
        capacity = {"host": int(gpu_mem_gib * GIB)}
    placement = _placement(config, len(devices))

    def device_of_depth(depth) -> str:
        if depth == "final":
            return devices[-1]
        return devices[placement[max(int(depth) - 1, 0)]]

    wb = torch.empty((), dtype=getattr(torch, dtype)).element_size()
    rows = []
    per_device = [0] * len(devices)
    for layer, count in enumerate(config.layer_parameters):
        per_device[placement[layer]] += count
    per_device[0] += config.first_parameters
    per_device[-1] += config.last_parameters
    for dev, count in zip(devices, per_device):
        rows.append(MemoryRow(f"weights ({dtype})", dev, count * wb))
    first_recorded = next((depth for depth in held if depth >= 1), 1)
    rows += accumulator_rows(
        config,
        held,
        device_of_depth,
        precision,
        n_vectors,
        n_omega_samples,
        attention,
        device_of_depth(first_recorded),
        staged=bool(gpus),
    )
    draft = Plan(
        config, devices, capacity, tuple(rows), tuple(held), batch_size, max_length, dtype, precision,
        attention, n_vectors, n_omega_samples, 0, False, "",
    )  # fmt: skip
    return dataclasses.replace(draft, max_batch_size=_largest_batch(draft))


def _free(plan: Plan, batch_size: int) -> dict[str, int]:
    """Bytes left on each device with a batch of ``batch_size`` (negative: short by that much)."""
    act = _activations(plan, batch_size) if batch_size else 0
    return {dev: plan.capacity[dev] - plan.static_bytes(dev) - act for dev in plan.devices}


def _largest_batch(plan: Plan, limit: int = 1 << 20) -> int:
    if min(_free(plan, 1).values()) < 0:
        return 0
    low, high = 1, limit
    while low < high:  # the largest batch size with no device short of memory
        mid = (low + high + 1) // 2
        low, high = (mid, high) if min(_free(plan, mid).values()) >= 0 else (low, mid - 1)
    return low


def _verdict(plan: Plan, best: int, fits_on) -> str:
    """The fit line; ``fits_on(n)``: whether a batch of one fits on ``n`` GPUs of this size."""
    m = plan.model
    tokens = f"{plan.batch_size} x {plan.max_length} tokens"
    if best >= plan.batch_size:
        worst = min(plan.devices, key=lambda dev: _free(plan, plan.batch_size)[dev])
        return (
            f"fits: batch {tokens} leaves {_gib(_free(plan, plan.batch_size)[worst])} free on {worst} (the "
            f"fullest device); the largest batch size that fits at --max-length {plan.max_length} is {best}."
        )
    static = {dev: plan.static_bytes(dev) for dev in plan.devices}
    worst = max(plan.devices, key=lambda dev: static[dev] - plan.capacity[dev])
    if best == 0 and static[worst] > plan.capacity[worst]:
        weights = sum(r.bytes for r in plan.rows if r.device == worst and r.what.startswith("weights"))
        stats = static[worst] - weights
        fix = []
        if plan.devices != ("host",):
            needed = next((n for n in range(len(plan.devices) + 1, 65) if fits_on(n)), None)
            if needed is not None:
                fix.append(f"use --gpus {needed} of this size")
        per_depth = next((r.bytes for r in plan.rows if r.what.startswith("pending Grams")), 0)
        if len(plan.depths) > 2 and per_depth and weights < plan.capacity[worst]:
            fix.append(
                f"ask for fewer --depths (each costs {_gib(per_depth)} of pending Gram on its device and "
                f"{_gib(8 * m.d_model**2)} of float64 sums on the host), e.g. --depths 0.25,0.5,0.75"
            )
        if plan.dtype == "float32":
            fix.append("load the weights in --dtype bfloat16")
        return (
            f"does not fit, because the weights ({_gib(weights)}) and the statistics ({_gib(stats)}) need "
            f"{_gib(static[worst])} on {worst}, which has {_gib(plan.capacity[worst])} usable, before any "
            f"batch: {'; or '.join(fix) or 'use a device with more memory'}."
        )
    free = _free(plan, 0)[worst]
    return (
        f"does not fit at --batch-size {plan.batch_size}, because a batch of {tokens} needs about "
        f"{_gib(plan.activation_bytes())} of activations on {worst}, where {_gib(max(free, 0))} are free after "
        f"the weights and statistics: "
        + (
            f"use --batch-size {best} or less (or a smaller --max-length)."
            if best
            else "lower --max-length, or free memory by --depths or more --gpus."
        )
    )
