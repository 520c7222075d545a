"""Capture wing: model + prompts -> ``Capture`` (hooks, streaming accumulators, results on disk)."""

from .accumulators import AbsStats, LayerStats, Moments, OmegaStats, TokenReservoir, omega_of
from .capture import capture, prompt_set_hash
from .plan import make_plan
from .results import Capture, load_capture

__all__ = [
    "AbsStats",
    "Capture",
    "LayerStats",
    "Moments",
    "OmegaStats",
    "TokenReservoir",
    "capture",
    "load_capture",
    "make_plan",
    "omega_of",
    "prompt_set_hash",
]
