"""Planted values of two verdict statistics, for their judges' calibration (``analysis.calibration``): attention
sums whose entropy falls with depth or not (``planted_cooling``, judged by ``cooling.judge_cooling``), and block
gains of toy stacks that contract transverse directions or not (``planted_gains``, judged by
``contraction.judge_transverse_gain``), each with the nuisances of real models. Kept apart from the estimators,
beside ``synthetic`` (data with known answers) and ``calibration`` (the families that use them).
Introduced in: chapter 8 (calibration).
"""

from __future__ import annotations

import numpy as np
from scipy import special

from ..errors import InvalidInputError
from .contraction import GAIN_BOOT, GainFit, transverse_gain
from .cooling import AttentionSums, CoolingSummary, cooling_summary

PLANTED_FALL = (0.4, 0.6)  # planted_cooling: fall of the non-sink heads' H / log n when present


def planted_sums(
    rng: np.random.Generator,
    n_layers: int,
    n_heads: int,
    n_groups: int,
    fall: float,
    level: float = 0.6,
    head_spread: float = 0.3,
    sink_heads: float = 0.2,
    prompt_noise: float = 0.08,
) -> AttentionSums:
    """Synthetic ``AttentionSums`` with a planted profile ``e(gamma) = level * (1 - fall * s(gamma))``.

    ``s`` is a logistic step centred at ``gamma ~ U(0.3, 0.55)`` of width 0.08 (0 before, 1 after). Nuisances:
    each head multiplies ``e`` by a log-normal factor (``head_spread``); a ``sink_heads`` share of heads sit at
    ``H / log n ~ U(0.03, 0.15)`` at every depth (attention on the sink); the first layer is near uniform
    (0.95) and the last one sharp (0.3 x), both outside the windows; prompt groups differ by a shared factor
    and independent noise (``prompt_noise``); each group has its own rows and mean ``log n``.
    """
    gamma = np.arange(1, n_layers + 1) / n_layers
    centre = rng.uniform(0.3, 0.55)
    step = special.expit((gamma - centre) / 0.08)
    profile = level * (1.0 - fall * step)
    profile[0], profile[-1] = 0.95, 0.3 * profile[-1]
    heads = profile[:, None] * rng.lognormal(0.0, head_spread, size=(n_layers, n_heads))
    sink = rng.random((n_layers, n_heads)) < sink_heads
    heads = np.where(sink, rng.uniform(0.03, 0.15, size=sink.shape), heads)
    shared = rng.lognormal(0.0, prompt_noise, size=(n_groups, 1, 1))
    noise = rng.lognormal(0.0, prompt_noise, size=(n_groups, n_layers, n_heads))
    e = np.clip(heads[None] * shared * noise, 0.0, 1.0)
    rows = rng.integers(40, 400, size=(n_groups, 1, 1)) * np.ones((1, n_layers, n_heads))
    log_n = np.log(rng.uniform(8, 64, size=(n_groups, 1, 1)))
    beta = 1.0 + 4.0 * (1.0 - e)
    return AttentionSums(
        entropy=rows * log_n * e,
        log_keys=rows * log_n,
        rows=rows,
        logit_std=rows * beta,
        std_rows=rows,
        unit="prompt group" if n_groups > 1 else "capture",
        sink_excluded=False,
    )


def planted_cooling(
    rng: np.random.Generator, present: bool, n_boot: int = 200
) -> tuple[CoolingSummary, CoolingSummary]:
    """A (model, twin) pair of ``CoolingSummary`` with planted cooling ``present`` or absent.

    Sizes drawn: ``L`` in 8..30, ``H`` in 4..16, 1 capture (head bootstrap) or 8-30 prompt groups. Present:
    the ``H / log n`` of the model's non-sink heads falls by ``PLANTED_FALL`` (0.4-0.6: the paper's
    "crystallisation", attention entropy roughly halved; with the sink heads and the gradual step the head-mean
    ``R`` is about 0.53-0.80, median 0.64), the twin's (near uniform, level 0.9-0.99) by at most 0.03.
    Absent, one of three: a flat model; a model whose fall is below a third of the minimum (at most 0.03); or a model and twin
    that fall alike (the fall comes from the architecture, not from learning). Every case has the edge layers
    and sink heads of ``planted_sums``. Introduced in: chapter 8 (calibration).
    """
    n_layers = int(rng.choice([8, 12, 18, 24, 30]))
    n_heads = int(rng.choice([4, 8, 12, 16]))
    n_groups = int(rng.choice([1, 8, 30]))
    model_fall, twin_fall = rng.uniform(*PLANTED_FALL), rng.uniform(0.0, 0.03)
    if not present:
        kind = int(rng.integers(3))
        model_fall = (0.0, rng.uniform(0.0, 0.03), model_fall)[kind]
        twin_fall = model_fall if kind == 2 else twin_fall
    model = planted_sums(rng, n_layers, n_heads, n_groups, model_fall, level=rng.uniform(0.4, 0.8))
    twin = planted_sums(
        rng,
        n_layers,
        n_heads,
        n_groups,
        twin_fall,
        level=rng.uniform(0.9, 0.99),
        head_spread=0.03,
        sink_heads=0.0,
    )
    seed = int(rng.integers(2**31))
    return cooling_summary(model, n_boot=n_boot, seed=seed), cooling_summary(
        twin, n_boot=n_boot, seed=seed + 1
    )


PLANTED_Q = (0.86, 0.92)  # a paper-size contraction: about 10 % per block
PLANTED_KINDS = ("paper", "none", "growing scale", "small", "twin too", "uniform")


def planted_gains(rng: np.random.Generator, kind: str, n_boot: int = GAIN_BOOT) -> tuple[GainFit, GainFit]:
    """A (model, twin) pair of ``GainFit`` measured by ``capturing.jacobian.block_gains`` on ``capturing.toys.block_toy``
    stacks, with ``kind`` of contraction planted in the model (the twin's ``q`` is 0.96-1.0 unless said; ``q``
    is the transverse gain relative to the relevant one):

    - "paper": ``q`` in ``PLANTED_Q`` times the twin's (paper-size beyond the architecture's); "none": ``q = 1``; "growing scale": ``q = 1`` while the stream grows by
      10-50 % a block; "small": ``q`` 0.96-0.99, under the minimum effect; "twin too": model and twin share a
      paper-size ``q`` (the architecture contracts, not learning); "uniform": every direction, relevant ones
      included, shrinks by a paper-size factor while the stream keeps its scale (``q = 1``: the transverse
      gain alone reads 0.86-0.92).

    Every case has a growing scale (up to 30 % a block), a massive coordinate, a sink, padding, prompt effects
    (sigma 0.01-0.05, five times SmolLM2's at most, correlated 0.3-0.8 across depths), blocks that differ (s.d.
    0-0.05 of ``log g_l``), tangent gains that differ by direction (s.d. 0.1-0.3 of ``log a``), 4-17 blocks, widths
    32-64, 12 or 16 prompts of 6-16 tokens, 1 or 2 tangents each, and the estimator's ``k`` the planted one or one
    above (the extra direction of ``U`` is then a transverse one the blocks amplified: ``q`` reads up to ~1 % low).
    Introduced in: chapter 8 (calibration).
    """
    import torch

    from ..capturing.jacobian import block_gains
    from ..capturing.toys import block_toy

    if kind not in PLANTED_KINDS:
        raise InvalidInputError(f"kind must be one of {PLANTED_KINDS}, got {kind!r}.")
    q = {
        "paper": rng.uniform(*PLANTED_Q),
        "small": rng.uniform(0.96, 0.99),
        "twin too": rng.uniform(*PLANTED_Q),
    }
    model_q = q.get(kind, 1.0)
    relevant_gain = rng.uniform(*PLANTED_Q) if kind == "uniform" else 1.0
    twin_q = model_q if kind == "twin too" else rng.uniform(0.96, 1.0)
    if kind == "paper":  # a paper-size contraction beyond what the twin's architecture does
        model_q *= twin_q
    growth = (1.1, 1.5) if kind == "growing scale" else (1.0, rng.uniform(1.0, 1.3))
    shape = dict(
        d=int(rng.choice([32, 48, 64])),
        k=int(rng.integers(2, 6)),
        n_layers=int(rng.choice([4, 8, 12, 17])),
        n_prompts=int(rng.choice([12, 16])),
        lengths=(6, int(rng.choice([10, 16]))),
    )
    k_estimated = shape["k"] + int(rng.integers(0, 2))
    n_directions = int(rng.choice([1, 2]))
    fits = []
    for planted, spread, c in (
        (model_q, rng.uniform(0.01, 0.05), relevant_gain),
        (twin_q, rng.uniform(0.005, 0.02), 1.0),
    ):
        toy = block_toy(
            planted,
            **shape,
            growth=growth,
            prompt_spread=spread,
            depth_correlation=rng.uniform(0.3, 0.8),
            block_spread=rng.uniform(0.0, 0.05),
            anisotropy=rng.uniform(0.1, 0.3),
            relevant_gain=c,
            batch_size=shape["n_prompts"],
            seed=int(rng.integers(2**31)),
        )
        threads = torch.get_num_threads()  # the toys' tensors are too small to gain from intra-op threads
        torch.set_num_threads(1)
        try:
            with torch.no_grad():
                gains = block_gains(
                    toy.anatomy,
                    toy.batches,
                    start=0,
                    stop=shape["n_layers"],
                    k=k_estimated,
                    n_directions=n_directions,
                    seed=int(rng.integers(2**31)),
                    model_name=f"block toy, q = {planted:.3f}",
                )
        finally:
            torch.set_num_threads(threads)
        fits.append(transverse_gain(gains, n_boot=n_boot, seed=int(rng.integers(2**31))))
    return fits[0], fits[1]
