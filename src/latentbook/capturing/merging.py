"""Which captures may be merged into one, and the provenance of the merged capture (``Capture.merge``).

Two captures merge exactly (sums, Chan updates, bottom-k reservoirs) only when they describe one population: the
same model and depths, the same settings (``MERGE_SETTINGS``) and other prompts. ``check_mergeable`` refuses
anything else with the fix; ``merge_provenance`` records what the merged capture holds.
Introduced in: chapter 1 (captures of several prompt sets, shards of one run on several GPUs).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

import numpy as np

from ..errors import InvalidInputError

# The provenance entries two captures must share to be merged (see ``Capture.merge``).
MERGE_SETTINGS = (  # the device is not one: shards of one run on several GPUs merge (capturing.distributed)
    "model",
    "model_sha256",
    "dtype",
    "prompt_set",
    "max_length",
    "exclude_first",
    "precision",
    "n_vectors",
    "n_omega_samples",
    "attention",
)


class Mergeable(Protocol):
    """What ``check_mergeable`` reads of a capture (``results.Capture`` has it)."""

    model_name: str
    n_layers: int
    d_model: int
    depths: np.ndarray
    provenance: dict[str, Any]


def prompt_sets(provenance: dict) -> list[str]:
    """sha256 of every prompt list inside a capture (several once captures were merged)."""
    merged = provenance.get("merged_prompt_sets")
    single = provenance.get("prompt_set_sha256")
    return list(merged) if merged else ([single] if single else [])


def check_mergeable(mine: Mergeable, other: Mergeable, allow: Iterable[str] = ()) -> set[str]:
    """The settings ``allow`` may let differ, as a set, once ``other`` is shown to merge into ``mine``: refused
    (``InvalidInputError``, naming the fix) when it is ``mine`` itself, another model or other depths, has other
    ``MERGE_SETTINGS`` not allowed, or holds the same prompts without ``"prompt_set_sha256"`` allowed."""
    if other is mine:
        raise InvalidInputError(
            "cap.merge(cap) would count every token twice. Merge a capture of other prompts (to double "
            "the counts on purpose, merge copy.deepcopy(cap) with allow=('prompt_set_sha256',))."
        )
    if (other.model_name, other.n_layers, other.d_model) != (mine.model_name, mine.n_layers, mine.d_model):
        raise InvalidInputError(
            f"Cannot merge a capture of {other.model_name} into one of {mine.model_name}."
        )
    if not np.array_equal(mine.depths, other.depths):
        raise InvalidInputError(
            f"Cannot merge a capture of depths {other.depths.tolist()} into one of depths "
            f"{mine.depths.tolist()}: a depth held by one only would count some tokens, not all. Capture "
            "both with the same depths=... (or all depths)."
        )
    # allow="precision" is one name, not its letters
    allow = {allow} if isinstance(allow, str) else set(allow)
    unknown = allow - {*MERGE_SETTINGS, "prompt_set_sha256"}
    if unknown:
        raise InvalidInputError(
            f"allow={sorted(unknown)} names no merge setting: choose from {[*MERGE_SETTINGS, 'prompt_set_sha256']}."
        )
    differing = [
        f"{key}: {mine.provenance.get(key)!r} vs {other.provenance.get(key)!r}"
        for key in MERGE_SETTINGS
        if key not in allow and mine.provenance.get(key) != other.provenance.get(key)
    ]
    if differing:
        keys = tuple(item.split(":")[0] for item in differing)
        raise InvalidInputError(
            f"Cannot merge captures taken with other settings ({'; '.join(differing)}): their statistics "
            f"do not describe one population. Capture alike, or pass allow={keys!r} to mix them on purpose."
        )
    shared = set(prompt_sets(mine.provenance)) & set(prompt_sets(other.provenance))
    if shared and "prompt_set_sha256" not in allow:
        raise InvalidInputError(
            "Cannot merge: both captures hold the same prompts (same prompt_set_sha256), so every token "
            "would count twice. Merge captures of other prompts, or pass allow=('prompt_set_sha256',)."
        )
    overlap = shared_prompts(mine.provenance, other.provenance)
    if overlap and "prompt_set_sha256" not in allow:
        raise InvalidInputError(
            f"Cannot merge: {len(overlap)} prompt(s) are in both captures (the other capture's prompts "
            f"{overlap[:5]}{' ...' if len(overlap) > 5 else ''}, counting from 0), so their tokens would count "
            "twice. Capture the other prompts without them, or pass allow=('prompt_set_sha256',) to count them "
            "twice on purpose."
        )
    return allow


def shared_prompts(mine: dict, theirs: dict) -> list[int]:
    """Positions in ``theirs``' prompts of the prompts ``mine`` holds too, by their ``prompt_sha256s``
    fingerprints (empty when either capture predates them)."""
    held = set(mine.get("prompt_sha256s") or ())
    return [i for i, print_ in enumerate(theirs.get("prompt_sha256s") or ()) if print_ in held]


def merge_provenance(mine: dict, theirs: dict, allow: set[str]) -> None:
    """Update the provenance ``mine`` with ``theirs``: the prompt sets of both, prompt counts added, each allowed
    setting that differs kept as both values, and every device named."""
    if prompt_sets(mine) or prompt_sets(theirs):
        mine["merged_prompt_sets"] = prompt_sets(mine) + prompt_sets(theirs)
    if mine.get("prompt_sha256s") and theirs.get("prompt_sha256s"):
        # each prompt once: shards of one run (capturing.distributed) share their list
        mine["prompt_sha256s"] = list(dict.fromkeys([*mine["prompt_sha256s"], *theirs["prompt_sha256s"]]))
    else:  # a capture from before the fingerprints: later merges cannot check overlaps, so none is claimed
        mine.pop("prompt_sha256s", None)
    for key in ("versions", "date"):  # every software version and date that wrote a part, not only the first
        values = [
            v for p in (mine, theirs) for v in (p[key] if isinstance(p.get(key), list) else [p.get(key)])
        ]
        distinct = [v for i, v in enumerate(values) if v is not None and v not in values[:i]]
        if len(distinct) > 1:
            mine[key] = distinct
    for key in ("n_prompts", "prompts_done"):
        if isinstance(mine.get(key), int) and isinstance(theirs.get(key), int):
            mine[key] += theirs[key]
    for key in allow & set(MERGE_SETTINGS):
        if mine.get(key) != theirs.get(key):
            mine[key] = [mine.get(key), theirs.get(key)]  # mixed on purpose: both values kept
    devices = [d for d in (mine.get("device"), theirs.get("device")) if d is not None]
    distinct = list(
        dict.fromkeys(d for group in devices for d in (group if isinstance(group, list) else [group]))
    )
    if len(distinct) > 1:  # shards from several devices: each named, not only the first
        mine["device"] = distinct
