"""The arithmetic floor of a capture: what its statistics add to a forward pass of the trunk, in multiply-adds.

Usage: ``floor = capture_floor(plan.read_config("smollm2-135m"), context=64)``, then ``floor.ratio`` (the
capture's multiply-adds over the trunk's, the CPU-time ratio it cannot beat while the products run as fast
as the model's own) and ``floor.exact_ratio`` (the same with an exact symmetric product, ``d (d + 1) / 2``).
A capture of every depth holds ``L + 1`` of them and one more after the final norm: ``n_grams`` Grams a token
against ``L`` layers, so ``ratio = (L layer + n_grams gram) / (L layer)``.

Per token and decoder layer of a Llama-style model (``H`` query heads, ``H_kv`` key-value heads of width
``d_h``, an MLP of width ``d_ff`` with a gate), the trunk does

    layer = d H d_h + 2 d H_kv d_h + H d_h d + 3 d d_ff + 2 H d_h t,

the last term the scores and the weighted sum over ``t`` keys (``t`` the mean number a token attends to:
``(context + 1) / 2`` for a causal model). The capture adds the scatter of each depth's centred token,
``centred^T centred``, over its upper block triangle (``gram_macs``: ``Moments`` computes ``sum_i b (d - i)``
for column blocks of width ``b``), and ``O(d)`` more (centring, Omega's histogram, ``max |h|``), left out.
The floor counts arithmetic only: a capture also reads its hooks' tensors and runs Python per batch and depth,
so a measured ratio lies above it.
Introduced in: the performance appendix.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .plan import ModelConfig


def gram_block(d: int) -> int:
    """The column block of ``Moments``' upper block triangle: all of ``d`` below 256, ``d / 4`` (rounded up)
    below 1024, ``d / 8`` from there."""
    return d if d < 256 else -(-d // (4 if d < 1024 else 8))


def gram_macs(d: int) -> int:
    """Multiply-adds per token of the upper block triangle of ``centred^T centred``: ``sum_i b (d - i)`` over
    the column blocks ``i = 0, b, 2b, ...`` (each block row ``i..i+b`` times the columns ``i..d``)."""
    b = gram_block(d)
    return sum(min(b, d - i) * (d - i) for i in range(0, d, b))


def layer_macs(config: ModelConfig, context: int) -> float:
    """Multiply-adds per token of one decoder layer (the formula above), ``context`` tokens a prompt."""
    d, heads, kv, width = config.d_model, config.n_heads, config.n_kv_heads, config.head_dim
    keys = (context + 1) / 2
    projections = d * heads * width + 2 * d * kv * width + heads * width * d
    return projections + 3 * d * config.intermediate_size + 2 * heads * width * keys


@dataclass(frozen=True)
class CaptureFloor:
    """The capture's arithmetic against the trunk's, per token."""

    model: str
    n_layers: int
    n_grams: int  # depths whose scatter a capture of every depth sums: L + 1, and the final norm's
    layer: float  # multiply-adds of one decoder layer
    gram: int  # of one depth's scatter over the capture's block triangle
    exact: float  # of an exact symmetric product, d (d + 1) / 2

    def _ratio(self, gram: float) -> float:
        trunk = self.n_layers * self.layer
        return (trunk + self.n_grams * gram) / trunk

    @property
    def ratio(self) -> float:
        """The lowest capture-over-trunk ratio with ``Moments``' products."""
        return self._ratio(self.gram)

    @property
    def exact_ratio(self) -> float:
        """The lowest with an exact symmetric product (a ``syrk``, which torch does not expose)."""
        return self._ratio(self.exact)


def capture_floor(config: ModelConfig, context: int) -> CaptureFloor:
    """``CaptureFloor`` of a capture of every depth of ``config`` on prompts of ``context`` tokens."""
    if context < 1:
        raise ValueError(f"context must be a positive number of tokens, got {context!r}.")
    d, n_layers = config.d_model, config.n_layers
    n_grams = n_layers + 1 + int(config.has_final_norm)
    return CaptureFloor(
        config.name, n_layers, n_grams, layer_macs(config, context), gram_macs(d), d * (d + 1) / 2
    )
