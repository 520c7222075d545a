"""Capture wing: model + prompts -> ``Capture`` (hooks, streaming accumulators, results on disk)."""

from .accumulators import AbsStats, LayerStats, Moments, OmegaStats, TokenReservoir, omega_of
from .capture import capture, prompt_set_hash
from .plan import make_plan
from .results import Capture, load_capture

# Besides the names imported above, the modules a chapter or a lab calls: ``cache`` (``book_capture``, the book's
# cached captures), ``attention``, ``states`` and ``state_cache`` (token states), ``jacobian``, ``lens``, ``cost``
# and ``toys``, imported on first use (``from latentbook.capturing import states``).
__all__ = [
    "AbsStats",
    "Capture",
    "LayerStats",
    "Moments",
    "OmegaStats",
    "TokenReservoir",
    "attention",
    "cache",
    "capture",
    "cost",
    "jacobian",
    "lens",
    "load_capture",
    "make_plan",
    "omega_of",
    "prompt_set_hash",
    "state_cache",
    "states",
    "toys",
]
