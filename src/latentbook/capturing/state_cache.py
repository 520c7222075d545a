"""Token states of the labelled reasoning sets, cached on disk like the book's captures.

``book_token_states(model, "binding")`` runs ``states.token_states`` on a ``prompts.reasoning`` set once and keeps
the result (an ``.npz`` of plain arrays, no pickle) in ``capture_cache_dir()/states``, keyed on the model, the
set's texts and targets, and the package's source (``cache.cache_key``), so chapters 6 and 8 share one forward
pass per model. Introduced in: chapter 6.
"""

from __future__ import annotations

import json

import numpy as np

from .._files import atomic_write, computing, inside
from ..errors import CaptureFileError
from .cache import cache_key, capture_cache_dir
from .states import TokenStates, token_states

BOOK_REASONING_ITEMS = 96


def _set_fingerprint(items) -> list[str]:
    """One string per item: its text and every target (span, label, step), so any change changes the key."""
    return [
        json.dumps([item.text, [[t.start, t.end, t.label, t.step] for t in item.targets]]) for item in items
    ]


def save_token_states(path, result: TokenStates) -> None:
    """Write ``result`` as an ``.npz`` of plain arrays (no pickle), atomically."""

    def write(tmp):
        with open(tmp, "wb") as handle:
            np.savez(
                handle,
                states=result.states,
                labels=result.labels,
                steps=result.steps,
                items=result.items,
                token_index=result.token_index,
                tokens=np.array(result.tokens, dtype=str),
            )

    atomic_write(path, write)


def load_token_states(path) -> TokenStates:
    """Read a file written by ``save_token_states`` (``allow_pickle=False``)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            return TokenStates(
                data["states"],
                data["labels"],
                data["steps"],
                data["items"],
                data["token_index"],
                tuple(str(t) for t in data["tokens"]),
            )
    except (OSError, ValueError, KeyError) as exc:
        raise CaptureFileError(
            f"{path} is not a readable token-states file ({exc}). Delete it; it is recomputed on the next call."
        ) from exc


def book_token_states_path(
    model_name: str, set_name: str = "binding", n_items: int = BOOK_REASONING_ITEMS, seed: int = 0
):
    """The file ``book_token_states`` reads or writes for these arguments (``.is_file()``: already computed)."""
    from ..prompts import reasoning

    fingerprint = _set_fingerprint(reasoning.load(set_name, n_items=n_items, seed=seed).items)
    key = cache_key(model_name, fingerprint, {"kind": "token_states", "set": set_name})
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in model_name)[:60]
    folder = capture_cache_dir() / "states"
    folder.mkdir(parents=True, exist_ok=True)
    return inside(folder, f"{safe}-{set_name}-{key}.npz")


def book_token_states(
    model_name: str, set_name: str = "binding", n_items: int = BOOK_REASONING_ITEMS, seed: int = 0
) -> TokenStates:
    """``states.token_states(model_name, prompts.reasoning.load(set_name, n_items=n_items, seed=seed))``, cached.

    Shapes: ``states`` ``(n_targets, L+1, d)`` float32 with ``labels``, ``steps`` and ``items`` per target.
    """
    from ..prompts import reasoning

    path = book_token_states_path(model_name, set_name, n_items, seed)
    if path.is_file():
        return load_token_states(path)
    with computing(path):
        if path.is_file():
            return load_token_states(path)
        result = token_states(model_name, reasoning.load(set_name, n_items=n_items, seed=seed).items)
        save_token_states(path, result)
    return result
