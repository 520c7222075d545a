"""Residual-stream vectors at chosen tokens or whole sequences, at every depth (not streamed: for small sets).

- ``token_states(model, items)``: the vectors at the tokens of interest of labelled items
  (``prompts.reasoning``), shape ``(n_targets, L+1, d)``, with each target's label, step and item, for
  ``analysis.classes`` (separability, class stability).
- ``sequence_states(model, prompts)``: every position of every prompt, ``(L+1, n_prompts, T, d)`` with
  its padding mask, for ``analysis.flow.distance_correlation``.

Depths as in ``hooks.residual_hooks``: 0 = the first layer's input, ``l`` = the output of layer ``l``
before the final norm (so depth ``L`` differs from ``output_hidden_states[-1]``, which is after it).
A character span maps to the token that holds its last character (``return_offsets_mapping``; needs a
fast tokenizer): in a causal model that token has read the whole span.
Introduced in: chapter 5 (sequences) and chapter 6 (tokens of interest).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ..errors import InvalidInputError
from ..models.zoo import LoadedModel, load_model
from .hooks import residual_hooks


@dataclass(frozen=True)
class TokenStates:
    """Vectors at the tokens of interest, at depths ``0..L``, with what each token is."""

    states: np.ndarray  # (n_targets, L+1, d) float32
    labels: np.ndarray  # (n_targets,) class label
    steps: np.ndarray  # (n_targets,) reasoning step
    items: np.ndarray  # (n_targets,) index of the item (prompt) it comes from
    token_index: np.ndarray  # (n_targets,) position of the token in its prompt
    tokens: tuple[str, ...]  # the text of each token, for inspection


def _loaded(model: LoadedModel | str) -> LoadedModel:
    loaded = load_model(model) if isinstance(model, str) else model
    if not getattr(loaded.tokenizer, "is_fast", False):
        raise InvalidInputError(
            f"The tokenizer of {loaded.name} is not a fast tokenizer, so it cannot map character spans to "
            "tokens (return_offsets_mapping). Load the model with a fast (tokenizers-backed) tokenizer."
        )
    return loaded


def _forward(loaded: LoadedModel, enc) -> list[torch.Tensor]:
    """Hidden states at depths ``0..L`` of one batch, each ``(B, T, d)``, on the model's device."""
    depths: dict[int, torch.Tensor] = {}

    def keep(depth, hidden):
        if depth != "final":
            depths[depth] = hidden

    kwargs = {k: v.to(loaded.device) for k, v in enc.items() if k != "offset_mapping"}
    if loaded.kind == "causal":
        kwargs["use_cache"] = False
    with torch.inference_mode(), residual_hooks(loaded.anatomy, keep):
        loaded.anatomy.base(**kwargs)
    return [depths[d] for d in range(loaded.n_layers + 1)]


def _token_of(offsets: np.ndarray, end: int) -> int | None:
    """Index of the token whose character range holds position ``end - 1`` (special tokens have (0, 0))."""
    hit = np.flatnonzero((offsets[:, 0] <= end - 1) & (end - 1 < offsets[:, 1]))
    return int(hit[0]) if len(hit) else None


def token_states(model: LoadedModel | str, items, max_length: int = 256, batch_size: int = 16) -> TokenStates:
    """Residual vectors at every target of ``items`` (a ``ReasoningSet`` or a sequence of ``Item``).

    Returns ``TokenStates`` with ``states`` of shape ``(n_targets, L+1, d)`` (float32), targets in item
    order. Raises if a target lies beyond ``max_length`` tokens. Introduced in: chapter 6.
    """
    loaded = _loaded(model)
    items = list(getattr(items, "items", items))
    if not items or not all(hasattr(item, "text") and hasattr(item, "targets") for item in items):
        raise InvalidInputError("items must be a ReasoningSet or a non-empty list of prompts.reasoning.Item.")
    states, labels, steps, owners, positions, tokens = [], [], [], [], [], []
    for first in range(0, len(items), batch_size):
        batch = items[first : first + batch_size]
        enc = loaded.tokenizer(
            [item.text for item in batch],
            return_tensors="pt",
            padding=True,
            truncation=True,
            max_length=max_length,
            return_offsets_mapping=True,
        )
        offsets = enc["offset_mapping"].numpy()
        rows, cols = [], []
        for b, item in enumerate(batch):
            real = enc["attention_mask"][b].numpy().astype(bool)
            for target in item.targets:
                col = _token_of(np.where(real[:, None], offsets[b], 0), target.end)
                if col is None:
                    raise InvalidInputError(
                        f"Item {first + b}: the target {item.text[target.start : target.end]!r} is not among its first "
                        f"{max_length} tokens. Raise max_length or shorten the prompt."
                    )
                rows.append(b)
                cols.append(col)
                labels.append(target.label)
                steps.append(target.step)
                owners.append(first + b)
                positions.append(col)
                tokens.append(loaded.tokenizer.decode([int(enc["input_ids"][b, col])]))
        hidden = _forward(loaded, enc)
        index = (torch.tensor(rows), torch.tensor(cols))
        states.append(torch.stack([h[index].float().cpu() for h in hidden], dim=1))
    return TokenStates(
        torch.cat(states).numpy(),
        np.array(labels),
        np.array(steps),
        np.array(owners),
        np.array(positions),
        tuple(tokens),
    )


def sequence_states(
    model: LoadedModel | str, prompts: Sequence[str], max_length: int = 64, batch_size: int = 8
) -> tuple[np.ndarray, np.ndarray]:
    """Every position of every prompt at every depth: ``(L+1, n_prompts, T, d)`` float32 and mask ``(n_prompts, T)``.

    ``T`` is the longest prompt (at most ``max_length`` tokens); padded positions are zero and ``False`` in
    the mask. Memory grows as ``(L+1) n T d``: keep the set small. Introduced in: chapter 5.
    """
    loaded = load_model(model) if isinstance(model, str) else model
    if isinstance(prompts, str) or not prompts:
        raise InvalidInputError("prompts must be a non-empty list of strings.")
    prompts = list(prompts)
    enc_all = loaded.tokenizer(prompts, truncation=True, max_length=max_length)
    width = max(len(ids) for ids in enc_all["input_ids"])
    out = np.zeros((loaded.n_layers + 1, len(prompts), width, loaded.d_model), dtype=np.float32)
    mask = np.zeros((len(prompts), width), dtype=bool)
    for first in range(0, len(prompts), batch_size):
        enc = loaded.tokenizer(
            prompts[first : first + batch_size],
            return_tensors="pt",
            padding=True,
            truncation=True,
            max_length=max_length,
        )
        real = enc["attention_mask"].bool()
        stop, length = first + real.shape[0], real.shape[1]
        for depth, hidden in enumerate(_forward(loaded, enc)):
            out[depth, first:stop, :length] = (
                (hidden.float() * real[..., None].to(hidden.device)).cpu().numpy()
            )
        mask[first:stop, :length] = real.numpy()
    return out, mask
