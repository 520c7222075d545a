"""Configs checked before anything is built from them: sizes that are positive integers within reason
(``check_sizes``), and a model that transformers can build and this machine can hold (``check_buildable``).

``latentbook plan`` reads configs with ``check_sizes``; ``random:FOLDER`` builds a user's config with random
weights only after both checks, so an impossible config (zero heads, no vocabulary) or a 69B one is refused in
one line before any memory is taken. Introduced in: chapter 1 (random twins of a user's model).
"""

from __future__ import annotations

import warnings

import torch

from ..errors import InvalidInputError

LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers")
WIDTH_KEYS = ("hidden_size", "n_embd", "d_model", "dim")
SIZE_LIMITS = {  # beyond these a config describes no model that exists or could be planned for
    "layers": 10_000,
    "width": 1_000_000,
    "other": 100_000_000,
}
SIZE_KEYS = (
    LAYER_KEYS
    + WIDTH_KEYS
    + (
        "intermediate_size",
        "num_attention_heads",
        "num_key_value_heads",
        "head_dim",
        "vocab_size",
        "n_head",
        "n_inner",
    )
)


def check_sizes(data: dict, source: str) -> None:
    """Refuse a config without its sizes (a layer count and a width, at the top or in ``text_config``: without
    them transformers would fill in its defaults, a 7B model), or whose sizes are not positive integers within
    ``SIZE_LIMITS``, before anything is built from it."""
    scopes = [data] + ([data["text_config"]] if isinstance(data.get("text_config"), dict) else [])
    for keys, what in ((LAYER_KEYS, "layer count"), (WIDTH_KEYS, "width")):
        if not any(key in scope for scope in scopes for key in keys):
            raise InvalidInputError(
                f"{source} gives no {what} ({' or '.join(keys[:2])}): transformers would plan its defaults, "
                "not your model. Give the model's full config.json."
            )
    for scope in scopes:
        for key in SIZE_KEYS:
            if key not in scope or scope[key] is None:
                continue
            value = scope[key]
            limit = SIZE_LIMITS["layers" if key in LAYER_KEYS else "width" if key in WIDTH_KEYS else "other"]
            if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= limit:
                raise InvalidInputError(
                    f"{source}: {key} = {value!r} is not a size (a positive integer up to {limit:,}). Fix the "
                    "config, or give the model's own config.json."
                )


def available_memory() -> int | None:
    """Bytes of memory free for new allocations: ``MemAvailable`` of ``/proc/meminfo`` (Linux), else None."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def parameter_count(config, auto, source: str) -> int:
    """Parameters of ``auto.from_config(config)``, counted on the meta device (no memory taken); a config
    transformers cannot build (zero heads, a width its heads do not divide) is refused naming ``source``."""
    try:
        with warnings.catch_warnings(), torch.device("meta"):
            warnings.simplefilter("ignore")
            model = auto.from_config(config)
    except Exception as exc:  # transformers and torch raise many kinds for a config they cannot build
        raise InvalidInputError(
            f"{source} describes no model transformers can build ({type(exc).__name__}: "
            f"{str(exc).strip()[:200]}). Fix the config (sizes, heads that divide the width), or give the "
            "model's own config.json."
        ) from exc
    return sum(p.numel() for p in model.parameters())


def check_buildable(config, auto, dtype: torch.dtype, source: str, free: int | None = None) -> int:
    """The parameter count of ``config`` (a transformers config; check its file with ``check_sizes`` first),
    after refusing a config that cannot be built or whose weights in ``dtype`` would not fit in ``free`` bytes
    (``available_memory()`` by default; unchecked when unknown)."""
    n_parameters = parameter_count(config, auto, source)
    size = n_parameters * torch.empty((), dtype=dtype).element_size()
    free = available_memory() if free is None else free
    if free is not None and size > free:
        raise InvalidInputError(
            f"{source} describes a model of {n_parameters / 1e9:.1f}B parameters: its random weights would take "
            f"{size / 2**30:.1f} GiB in {str(dtype).removeprefix('torch.')}, more than the "
            f"{free / 2**30:.1f} GiB free here. Use a smaller config, or a machine with more memory."
        )
    return n_parameters
