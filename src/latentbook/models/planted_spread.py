"""Planted models whose code is written over several consecutive layers: a transition spread over ``width`` layers.

``models.planted`` writes its code in one layer, the one ending at depth ``l* = round(gamma L)``: a one-layer step
of the residual stream. ``build(SpreadSpec(base, width))`` writes the same code (``planted.written(base)``) over the
``width`` decoder layers ending there, ``l* - width`` to ``l* - 1``, each a ``1 / width`` share of it: the stream
carries ``j / width`` of the code at depth ``l* - width + j``, so the rise reaches its full size at ``l*`` as the
step does, over ``width`` layers. Each share is ``strength * r* / width`` where the word stands, ``r*`` the median
residual norm entering layer ``l* - 1`` before any code (the step's own scale, nuisance coordinates left out), so
the whole code is the step's whatever the width. ``width = 1`` is ``planted.build(base)`` itself.

Only the writer plants spread (``SPREADABLE``); ``rogue``'s later norms and the plants without a writer stay steps.
Introduced in: the criteria appendix (the jump judge's power, confirmed on planted models).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InvalidInputError
from . import planted

if TYPE_CHECKING:
    from .zoo import LoadedModel

SPREADABLE = ("sparse_code", "class_code", "rotated_code", "massive", "sink_only")


@dataclass(frozen=True)
class SpreadSpec:
    """A planted model (``base``) whose code is written over the ``width`` layers ending at depth ``base.depth``."""

    base: planted.PlantSpec
    width: int = 1

    def __post_init__(self) -> None:
        if not (isinstance(self.width, int) and 1 <= self.width <= self.base.depth):
            raise InvalidInputError(
                f"width must be an integer in 1..{self.base.depth} (the depth l* it ends at), got {self.width!r}."
            )
        if self.width > 1 and self.base.plant not in SPREADABLE:
            raise InvalidInputError(f"only {SPREADABLE} spread over layers, not {self.base.plant!r}.")

    @property
    def name(self) -> str:
        return self.base.name + (f"+w{self.width}" if self.width > 1 else "")


def build(spec: SpreadSpec) -> LoadedModel:
    """The model of ``spec``, in memory and in eval mode: ``planted.build(spec.base)`` for a width of 1, else the
    base without its code and ``spec.width`` writers of ``1 / width`` of it each (the module's docstring)."""
    if spec.width == 1:
        return planted.build(spec.base)
    from ..prompts import load

    loaded = planted.build(replace(spec.base, plant="none"))
    loaded.name = spec.name
    loaded.sha = json.dumps({"base": asdict(spec.base), **asdict(spec)}, sort_keys=True, default=str)
    texts = load("general", limit=32)  # planted.build's calibration prompts
    vocab_size = loaded.model.model.embed_tokens.weight.shape[0]
    rows = planted.written(spec.base, vocab_size)
    embeddings = loaded.model.model.embed_tokens.weight.detach().double().numpy().copy()
    shared = planted.nuisance_dims(spec.base)
    embeddings[:, shared] = 0.0
    depth = spec.base.depth
    step_norm = stream_norm(loaded, depth - 1, texts, shared)
    for index in range(depth - spec.width, depth):
        # _plant_writer writes strength * (this layer's norm) * row: the share is strength * step_norm / width
        share = spec.base.strength * step_norm / (spec.width * stream_norm(loaded, index, texts, shared))
        planted._plant_writer(loaded, index, embeddings, rows, share, texts, ignore=shared)
    return loaded


def stream_norm(loaded: LoadedModel, index: int, texts: list[str], ignore: np.ndarray) -> float:
    """The median norm over the tokens of ``texts`` of the residual stream entering decoder layer ``index``,
    without the coordinates ``ignore``: the scale ``planted._own_activation`` measures, in the same forward pass."""
    import torch

    seen: dict[str, torch.Tensor] = {}

    def read(_module, args):
        seen["h"] = args[0].detach()
        raise planted._Seen  # nothing past this layer is needed

    hook = loaded.model.model.layers[index].register_forward_pre_hook(read)
    batch = loaded.tokenizer(texts, return_tensors="pt", padding=True, truncation=True, max_length=64)
    try:
        with torch.no_grad():
            loaded.model(**batch)
    except planted._Seen:
        pass
    finally:
        hook.remove()
    h = seen["h"][batch["attention_mask"].bool()]
    h[:, torch.from_numpy(np.asarray(ignore))] = 0.0
    return float(h.norm(dim=-1).median())
