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
    """Named places in one loaded model.

    Attributes
    ----------
    base : torch.nn.Module
        The trunk without the language-model head: calling it never computes logits.
    layers : torch.nn.ModuleList
        The decoder (or encoder) layers, in order: depth ``l`` is the output of ``layers[l - 1]``.
    final_norm : torch.nn.Module or None
        The norm after the last layer; None for a model without one (BERT).
    attention : tuple of torch.nn.Module
        The attention module of each layer.
    n_layers : int
        ``len(layers)``, the model's ``L``.

    Examples
    --------
    Usually made by ``anatomy_of``; any stack of torch modules can be described:

    >>> from torch import nn
    >>> from latentbook.models import Anatomy
    >>> layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
    >>> anatomy = Anatomy(base=nn.Sequential(*layers), layers=layers, final_norm=None, attention=tuple(layers))
    >>> anatomy.n_layers
    3
    """

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
    """Look up the named places of ``model`` by its ``config.model_type``.

    Parameters
    ----------
    model : torch.nn.Module
        A transformers model (with or without its head) of a known ``config.model_type``.

    Returns
    -------
    Anatomy
        Its trunk, layers, final norm and attention modules (the model's own modules, not copies).

    Raises
    ------
    InvalidInputError
        For an architecture not in the table (the message lists those known).

    Examples
    --------
    A tiny random Llama built in place:

    >>> import torch
    >>> from transformers import LlamaConfig, LlamaForCausalLM
    >>> config = LlamaConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
    ...                      num_key_value_heads=1, vocab_size=32)
    >>> model = LlamaForCausalLM(config).eval()
    >>> from latentbook.models import anatomy_of
    >>> anatomy = anatomy_of(model)
    >>> anatomy.n_layers, type(anatomy.layers[0]).__name__, type(anatomy.final_norm).__name__
    (2, 'LlamaDecoderLayer', 'LlamaRMSNorm')
    >>> anatomy.base is model.model, [type(a).__name__ for a in anatomy.attention]
    (True, ['LlamaAttention', 'LlamaAttention'])
    """
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
