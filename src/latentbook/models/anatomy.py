"""Where each architecture keeps its embedding, decoder layers, attention modules and final norm.

One row per ``config.model_type``: a reader knows what a depth is without opening the capture code.
Depth ``l = 0`` is the input of the first layer (the embedding, after any scaling the model applies);
depth ``l`` (1 <= l <= L) is the output of layer ``l``, *before* the final norm, so ``gamma = l / L``.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from ..errors import InvalidInputError


@dataclass(frozen=True)
class Anatomy:
    """Named places in one loaded model."""

    base: nn.Module  # the trunk without the language-model head: calling it never computes logits
    layers: nn.ModuleList
    final_norm: nn.Module | None
    attention: tuple[nn.Module, ...]

    @property
    def n_layers(self) -> int:
        return len(self.layers)


# model_type -> (path to the trunk, layers inside the trunk, final norm inside the trunk, attention inside a layer)
_TABLE: dict[str, tuple[str, str, str | None, str]] = {
    "llama": ("model", "layers", "norm", "self_attn"),
    "mistral": ("model", "layers", "norm", "self_attn"),
    "qwen2": ("model", "layers", "norm", "self_attn"),
    "qwen3": ("model", "layers", "norm", "self_attn"),
    "qwen3_moe": ("model", "layers", "norm", "self_attn"),
    "gemma": ("model", "layers", "norm", "self_attn"),
    "gemma2": ("model", "layers", "norm", "self_attn"),
    "gemma3_text": ("model", "layers", "norm", "self_attn"),
    "phi3": ("model", "layers", "norm", "self_attn"),
    "olmo2": ("model", "layers", "norm", "self_attn"),
    "bert": ("", "encoder.layer", None, "attention.self"),
    "gpt2": ("transformer", "h", "ln_f", "attn"),
}


def _get(module: nn.Module, dotted: str) -> nn.Module:
    for part in filter(None, dotted.split(".")):
        module = getattr(module, part)
    return module


def anatomy_of(model: nn.Module) -> Anatomy:
    """Look up the named places of ``model`` by its ``config.model_type``."""
    model_type = getattr(getattr(model, "config", None), "model_type", None)
    if model_type not in _TABLE:
        raise InvalidInputError(
            f"latentbook does not know where the layers of a {model_type!r} model are. "
            f"Known architectures: {', '.join(sorted(_TABLE))}. Add a row to latentbook.models.anatomy._TABLE."
        )
    trunk_path, layers_path, norm_path, attn_path = _TABLE[model_type]
    # A bare trunk (e.g. BertModel, or LlamaModel loaded without its head) has no wrapper attribute.
    base = _get(model, trunk_path) if trunk_path and hasattr(model, trunk_path.split(".")[0]) else model
    if model_type == "bert" and hasattr(model, "bert"):
        base = model.bert
    layers = _get(base, layers_path)
    final_norm = _get(base, norm_path) if norm_path else None
    attention = tuple(_get(layer, attn_path) for layer in layers)
    return Anatomy(base=base, layers=layers, final_norm=final_norm, attention=attention)
