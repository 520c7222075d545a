"""Model folders loaded strictly: a local safetensors folder's config checked before any weight is read (one JSON
object, no remote code unless trusted, a model type transformers knows, safetensors headers that parse), and its
weights refused when any is missing, unexpected or of the wrong shape (transformers would leave it random).

Usage: ``model, tokenizer = from_folder(folder, "causal", torch.float32, None, False)``. Introduced in: chapter 1.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from ..errors import IntegrityError, ModelUnavailableError, UntrustedCodeError


def from_folder(folder: Path, kind: str, dtype: torch.dtype, device_map, trust_remote_code: bool):
    """``(model, tokenizer)`` of a safetensors folder; every weight must match the config (no random layer)."""
    from transformers import AutoModel, AutoModelForCausalLM

    tokenizer = tokenizer_of(folder, trust_remote_code)
    auto = AutoModelForCausalLM if kind == "causal" else AutoModel
    return load_weights_strictly(auto, folder, dtype, device_map, trust_remote_code), tokenizer


def load_weights_strictly(
    auto, folder: Path, dtype: torch.dtype, device_map, trust_remote_code: bool = False
):
    """``auto.from_pretrained`` of a local safetensors folder, refused (``refuse_incomplete_weights``) when any
    weight is missing, unexpected or of the wrong shape: transformers would otherwise leave it random."""
    model, info = auto.from_pretrained(
        str(folder),
        dtype=dtype,
        device_map=device_map,
        trust_remote_code=trust_remote_code,
        local_files_only=True,
        use_safetensors=True,
        output_loading_info=True,
        ignore_mismatched_sizes=True,  # reported below by name, with both shapes
    )
    refuse_incomplete_weights(folder, info)
    return model


def tokenizer_of(folder: Path, trust_remote_code: bool):
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(
            str(folder), local_files_only=True, trust_remote_code=trust_remote_code
        )
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise ModelUnavailableError(
            f"{folder} has no usable tokenizer ({str(exc).strip()[:200]}). Save it beside the weights with "
            "tokenizer.save_pretrained(folder)."
        ) from exc


def refuse_incomplete_weights(folder: Path, info: dict) -> None:
    """Raise ``IntegrityError`` naming the keys when ``from_pretrained``'s loading info shows missing,
    unexpected or wrong-shaped weights (transformers would fill the gaps with random values)."""
    problems = {
        "missing": sorted(info.get("missing_keys") or ()),
        "unexpected": sorted(info.get("unexpected_keys") or ()),
        "wrong-shaped": [
            f"{key} {tuple(saved)} (the config needs {tuple(needed)})"
            for key, saved, needed in sorted(info.get("mismatched_keys") or ())
        ],
        "unreadable": list(info.get("error_msgs") or ()),
    }
    found = {kind: keys for kind, keys in problems.items() if keys}
    if not found:
        return
    listed = "; ".join(
        f"{len(keys)} {kind}: {', '.join(keys[:4])}{', ...' if len(keys) > 4 else ''}"
        for kind, keys in found.items()
    )
    raise IntegrityError(
        f"The weights in {folder} do not match its config.json ({listed}). Those parameters would be random, "
        "so the model is refused: save the complete model again with save_pretrained, or fix config.json."
    )


def kind_of(config: dict) -> str:
    architectures = config.get("architectures") or []
    return "causal" if any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in architectures) else "encoder"


def folder_config(folder: Path, trust_remote_code: bool) -> dict:
    """``folder/config.json`` as a dict, after the checks every model folder gets: it exists and is one JSON
    object, it asks for no remote code unless trusted, and transformers knows its model type."""
    config_file = folder / "config.json"
    if not config_file.is_file():
        raise ModelUnavailableError(
            f"{folder} has no config.json: point at a folder saved by save_pretrained."
        )
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise IntegrityError(f"{config_file} is not valid JSON ({exc}): the folder is damaged.") from exc
    if not isinstance(config, dict):
        raise IntegrityError(
            f"{config_file} holds a JSON {type(config).__name__}, not an object: save the model again with "
            "save_pretrained, which writes the config as one JSON object."
        )
    _refuse_remote_code(folder, config, trust_remote_code)
    _refuse_unknown_model_type(config_file, config, trust_remote_code)
    return config


def _refuse_remote_code(folder: Path, config: dict, trust_remote_code: bool) -> None:
    """A folder whose architecture only its own Python files define loads only with ``trust_remote_code=True``."""
    from transformers import CONFIG_MAPPING

    if trust_remote_code or not config.get("auto_map") or config.get("model_type") in CONFIG_MAPPING:
        return
    raise UntrustedCodeError(
        f"{folder} defines its model type {config.get('model_type')!r} in its own Python files (auto_map in "
        "config.json), and latentbook runs no code from a model folder unless asked. Read those files, then "
        "pass trust_remote_code=True to lb.load_model if you trust them."
    )


def _refuse_unknown_model_type(config_file: Path, config: dict, trust_remote_code: bool) -> None:
    """A ``model_type`` this transformers does not know (and no code of the folder's own to define it)."""
    import transformers
    from transformers import CONFIG_MAPPING

    model_type = config.get("model_type")
    if model_type in CONFIG_MAPPING or (trust_remote_code and config.get("auto_map")):
        return
    raise ModelUnavailableError(
        f"{config_file} names model_type {model_type!r}, which transformers {transformers.__version__} does "
        "not know. Fix model_type (e.g. 'llama', 'qwen2', 'gemma3_text') or upgrade transformers."
    )


def check_safetensors(weights: list[Path]) -> None:
    """Each file's header must parse and its tensors must fit in the file (catches truncation before torch)."""
    from safetensors import safe_open

    for path in weights:
        try:
            with safe_open(str(path), framework="pt"):
                pass
        except Exception as exc:  # SafetensorError: incomplete metadata, invalid header, ...
            raise IntegrityError(
                f"{path} is truncated or corrupt ({exc}). Copy or download the weights again."
            ) from exc
