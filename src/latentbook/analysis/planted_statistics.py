"""Planted values of verdict statistics, for their judges' calibration (``analysis.calibration``): Omega profiles
``m(gamma)`` with a jump or none and the real models' nuisances (``planted_profile``, judged through
``transition.critical_depth``), attention sums whose entropy falls with depth or not (``planted_cooling``, judged by
``cooling.judge_cooling``), and block gains of toy stacks that contract transverse directions or not (``planted_gains``, judged by
``contraction.judge_transverse_gain``), each with the nuisances of real models. Kept apart from the estimators,
beside ``synthetic`` (data with known answers) and ``calibration`` (the families that use them).
Introduced in: chapter 8 (calibration).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from ..errors import InvalidInputError
from .contraction import GAIN_BOOT, GainFit, transverse_gain
from .cooling import AttentionSums, CoolingSummary, cooling_summary

BACKGROUNDS = ("flat", "linear", "decay", "hump", "gradual")  # planted_profile's smooth shapes
N_DRAWS = 200  # planted_profile's prompt-bootstrap-like draws
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


@dataclass(frozen=True)
class PlantedProfile:
    """``m(gamma)`` with prompt-bootstrap-like ``draws`` (``(N_DRAWS, n_depths)``) and what was planted."""

    gamma: np.ndarray
    m: np.ndarray
    draws: np.ndarray
    jump: float
    gamma_c: float


def _logistic(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -500, 500)))


def background(gamma: np.ndarray, kind: str, rng: np.random.Generator) -> np.ndarray:
    """A smooth profile shape: flat, linear, decay, hump or gradual (a sigmoid of width 0.1-0.2), zero-based."""
    if kind == "flat":
        return np.zeros_like(gamma)
    if kind == "linear":
        return rng.uniform(-0.15, 0.15) * gamma
    if kind == "decay":
        return rng.uniform(0.05, 0.25) * np.exp(-gamma / rng.uniform(0.1, 0.4))
    if kind == "hump":
        centre, spread = rng.uniform(0.1, 0.6), rng.uniform(0.15, 0.3)
        return rng.uniform(-0.2, 0.2) * np.exp(-((gamma - centre) ** 2) / (2 * spread**2))
    if kind == "gradual":
        return rng.uniform(0.1, 0.25) * _logistic((gamma - rng.uniform(0.3, 0.7)) / rng.uniform(0.1, 0.2))
    raise InvalidInputError(f"background must be one of {BACKGROUNDS}, got {kind!r}.")


def planted_profile(
    rng: np.random.Generator,
    n_layers: int,
    kind: str = "flat",
    jump: float = 0.0,
    gamma_c: float = 0.42,
    width: float = 0.0,
    base: float | None = None,
) -> PlantedProfile:
    """A profile with the real models' nuisances and, if ``jump != 0``, a jump at ``gamma_c`` (step or switch).

    ``m_l = base + background + jump * s_l``, then: depth 0 and 1 moved by a rise out of the embedding (0.1-0.4,
    either sign; depth 1 carries 20-60 % of it), the last depth by up to +-0.15, AR(1) misfit (s.d. 0.003-0.02,
    lag-1 correlation 0.3-0.8); draws ``m + se (0.7 z_common + 0.71 z_depth)`` with ``se`` 13-98 times below the
    misfit (as measured on SmolLM2 and Gemma 3).
    """
    gamma = np.arange(n_layers + 1) / n_layers
    level = rng.uniform(0.3, 0.7) if base is None else base
    m = level + background(gamma, kind, rng)
    if jump:
        switch = (gamma > gamma_c).astype(float) if width == 0 else _logistic((gamma - gamma_c) / width)
        m = m + jump * switch
    rise = rng.uniform(0.1, 0.4) * rng.choice([-1.0, 1.0])
    m[0] -= rise
    m[1] -= rise * rng.uniform(0.2, 0.6)
    m[-1] += rng.uniform(-0.15, 0.15)
    sd, rho = rng.uniform(0.003, 0.02), rng.uniform(0.3, 0.8)
    e = rng.standard_normal(len(gamma))
    for i in range(1, len(e)):
        e[i] = rho * e[i - 1] + np.sqrt(1 - rho**2) * e[i]
    m = m + sd * e
    se = sd / rng.uniform(13, 98)
    common = rng.standard_normal((N_DRAWS, 1))
    draws = m + se * (0.7 * common + np.sqrt(1 - 0.49) * rng.standard_normal((N_DRAWS, len(gamma))))
    return PlantedProfile(gamma, m, draws, float(jump), float(gamma_c))
