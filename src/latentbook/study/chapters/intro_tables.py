"""The numbers the book's introduction quotes from its first look at Omega: SmolLM2-135M, its random-weight twin
and a random-weight 12-layer Llama, captured on the same passages.
Introduced in: the introduction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from ...analysis.omega import reference_values

if TYPE_CHECKING:
    from ...capturing.results import Capture

TRAINED = "smollm2-135m"
TWINS = {"random": "random:smollm2-135m", "llama_small": "random:llama-small"}  # glue stem -> capture label


def first_look_numbers(captures: Mapping[str, Capture], sizes_m: Mapping[str, float]) -> dict[str, object]:
    """Omega of a Gaussian and of a one-hot vector in SmolLM2's width; the tokens and depths of its capture, where
    its ``m(gamma)`` starts and how high it gets; how high each random-weight twin's gets (``m_<stem>_max``) and
    how far any twin's profile strays from the Gaussian value (``twin_deviation``); the smallest and largest of
    the book's models, in millions of parameters (``sizes_m``: model -> size)."""
    trained = captures[TRAINED]
    reference = reference_values(trained.d_model)
    gauss = reference["gaussian_limit"]
    profile = trained.omega_mean()
    twins = {stem: captures[label].omega_mean() for stem, label in TWINS.items()}
    return {
        "gauss": gauss,
        "onehot": reference["one_hot"],
        "d": int(trained.d_model),
        "n_tokens": int(trained.n_tokens),
        "n_depths": int(trained.n_depths),
        "m_first": float(profile[0]),
        "m_max": float(profile.max()),
        **{f"m_{stem}_max": float(m.max()) for stem, m in twins.items()},
        "twin_deviation": float(max(np.abs(m - gauss).max() for m in twins.values())),
        "smallest_m": min(sizes_m.values()),
        "largest_m": max(sizes_m.values()),
    }
