"""Blocks with a planted transverse gain: the ground truth of the Jacobian-vector measurement.

``block_toy(q)`` is a stack of torch blocks whose Jacobian contracts a transverse subspace by ``q`` per block,
with the real models' nuisances (a massive coordinate, a sink, padding, prompt and block effects, a growing
scale), and the batches to measure it on: ``capturing.jacobian.block_gains(toy.anatomy, toy.batches, ...)``
reads it exactly as it reads a model (Theorem 6.1, chapter 8). A model of its own, so it lives in the
capturing wing beside the measurement; ``analysis.synthetic`` keeps the array-only ground truths.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InvalidInputError


@dataclass
class BlockToy:
    """A stack of blocks with a planted Jacobian, the batches to measure it on and what was planted.

    ``anatomy`` and ``batches`` go straight into ``capturing.jacobian.block_gains``.
    """

    anatomy: Any  # models.anatomy.Anatomy of the stack
    batches: list  # capturing.jacobian.Batch, rows right-padded, the sink at position 0
    q: float  # the planted transverse gain per block relative to the relevant one (population value of g_l)
    k: int  # relevant dimensions: the massive coordinate 0 and k - 1 signal coordinates
    growth: np.ndarray  # (n_layers,) scale factor of each block (the residual stream's growth)
    relevant_gain: float  # the planted gain of every direction between RMS-normalised states (1: none)


def _block_stack(
    gains: np.ndarray, growth: np.ndarray, k: int, sink_gain: float, relevant_gain: float, level: float
):
    """Block ``l``: ``h' = s_l c g * h + b_l``, ``g = [1 ; gains[l, p]]`` for prompt ``p`` (``[1 ; sink_gain]`` at the
    sink), ``c`` the ``relevant_gain``; ``b_l = s_l (1 - c) M_l e_0`` keeps the massive coordinate at its level
    ``M_l = level prod_(i<l) s_i``, so with ``c < 1`` every direction contracts while the stream does not shrink."""
    import torch
    from torch import nn

    levels = level * np.concatenate([[1.0], np.cumprod(growth)[:-1]])

    class Block(nn.Module):
        def __init__(self, transverse: np.ndarray, scale: float, massive_level: float):
            super().__init__()
            ones = np.ones((transverse.shape[0], k))
            self.register_buffer("gain", torch.from_numpy(np.hstack([ones, transverse])).float())
            sink = np.concatenate([np.ones(k), np.full(transverse.shape[1], sink_gain)])
            self.register_buffer("sink", torch.from_numpy(sink).float())
            bias = np.zeros(k + transverse.shape[1])
            bias[0] = scale * (1 - relevant_gain) * massive_level
            self.register_buffer("bias", torch.from_numpy(bias).float())
            self.scale = scale

        def forward(self, hidden, prompt_index):
            gain = self.gain[prompt_index][:, None, :].repeat(1, hidden.shape[1], 1)
            gain[:, 0] = self.sink
            return self.scale * relevant_gain * gain * hidden + self.bias

    class Stack(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList(
                Block(g, float(s), float(m)) for g, s, m in zip(gains, growth, levels)
            )

        def forward(self, inputs_embeds, prompt_index):
            hidden = inputs_embeds
            for layer in self.layers:
                hidden = layer(hidden, prompt_index)
            return hidden

    return Stack()


def block_toy(
    q: float,
    *,
    d: int = 32,
    k: int = 4,
    n_layers: int = 8,
    n_prompts: int = 24,
    lengths: tuple[int, int] = (6, 16),
    growth: tuple[float, float] = (1.0, 1.0),
    prompt_spread: float = 0.05,
    depth_correlation: float = 0.5,
    block_spread: float = 0.0,
    anisotropy: float = 0.3,
    massive: float = 30.0,
    sink_gain: float = 3.0,
    relevant_gain: float = 1.0,
    batch_size: int = 8,
    seed: int = 0,
) -> BlockToy:
    """Blocks whose Jacobian is planted: block ``l`` multiplies the ``k`` relevant coordinates by ``s_l c`` and
    transverse coordinate ``i`` of prompt ``p`` by ``s_l c q b_l a_(l,i) exp(sigma z_(p,l) - sigma^2)``, so the
    population gain of the map between RMS-normalised states is ``c`` on the relevant subspace and ``c q b_l`` on
    the transverse one: relative to the relevant gain, ``q b_l``, of geometric mean ``q`` over the blocks
    (``mean_l log b_l = 0``, ``mean_i a_(l,i)^2 = 1``, ``E exp(2 sigma z - 2 sigma^2) = 1``; the transverse share
    of the RMS is about 1 %, so its decay moves the RMS by under 0.2 %). ``c = relevant_gain`` below 1 is a
    contraction of every direction: a bias holds the massive coordinate (which sets the RMS) at its level, so the
    states do not shrink with the map and the RMS normalisation cannot undo it.

    Nuisances: the growth ``s_l ~ U(growth)`` of the residual scale; a massive coordinate 0 (``massive`` times the
    signal, growing with the stream); prompt effects ``z_(p,l)`` (correlation ``depth_correlation`` across
    depths, ``prompt_spread`` = sigma); blocks that differ (``log b_l``: s.d. ``block_spread``, centred); the
    anisotropy ``a_(l,i)`` (log-normal, ``anisotropy`` its s.d.); a sink
    at position 0 with a large transverse coordinate and gain ``sink_gain``; right padding of garbage values.
    Introduced in: chapter 8 (calibration of the transverse-gain judge).
    """
    import torch

    from ..models.anatomy import Anatomy
    from .jacobian import Batch

    if not 0 < k < d or n_layers < 1 or n_prompts < 1 or not 2 <= lengths[0] <= lengths[1]:
        raise InvalidInputError(
            f"Need 0 < k < d, n_layers >= 1, n_prompts >= 1 and 2 <= lengths[0] <= lengths[1]; got k={k}, d={d}, "
            f"n_layers={n_layers}, n_prompts={n_prompts}, lengths={lengths}."
        )
    if not 0 < q or not 0 < relevant_gain or prompt_spread < 0 or anisotropy < 0:
        raise InvalidInputError(
            f"Need q > 0, relevant_gain > 0 and spreads >= 0, got q={q!r}, relevant_gain={relevant_gain!r}."
        )
    rng = np.random.default_rng(seed)
    rho = depth_correlation
    z = rho * rng.standard_normal((n_prompts, 1)) + np.sqrt(1 - rho**2) * rng.standard_normal(
        (n_prompts, n_layers)
    )
    prompt_factor = np.exp(prompt_spread * z - prompt_spread**2)  # (n_prompts, n_layers)
    a = np.exp(anisotropy * rng.standard_normal((n_layers, d - k)))
    a /= np.sqrt(np.mean(a**2, axis=1, keepdims=True))
    b = block_spread * rng.standard_normal(n_layers)
    a *= np.exp(b - b.mean())[:, None]
    gains = q * a[:, None, :] * prompt_factor.T[:, :, None]  # (n_layers, n_prompts, d - k)
    scales = rng.uniform(*growth, n_layers)
    stack = _block_stack(gains, scales, k, sink_gain, relevant_gain, massive)

    n_tokens = rng.integers(lengths[0], lengths[1] + 1, n_prompts)
    spread = np.concatenate([[massive], np.full(k - 1, 3.0), np.geomspace(1.0, 0.3, d - k)])
    batches = []
    for first in range(0, n_prompts, batch_size):
        ids = np.arange(first, min(first + batch_size, n_prompts))
        width = int(n_tokens[ids].max())
        x = rng.standard_normal((len(ids), width, d)) * spread
        x[..., 0] = massive * (1 + 0.05 * x[..., 0] / massive)  # massive: large and nearly constant
        x[:, 0, k] = 20 * massive  # the sink's own direction
        keep = np.arange(width)[None, :] < n_tokens[ids, None]
        x[~keep] = 1e3  # padding garbage
        keep[:, 0] = False
        inputs = {"inputs_embeds": torch.from_numpy(x).float(), "prompt_index": torch.from_numpy(ids)}
        batches.append(Batch(inputs, torch.from_numpy(keep), ids))
    anatomy = Anatomy(base=stack, layers=stack.layers, final_norm=None, attention=())
    return BlockToy(anatomy, batches, float(q), int(k), scales, float(relevant_gain))
