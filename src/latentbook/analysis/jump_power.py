"""The power of the jump judge: how often ``verdict.judge_jump`` finds a planted jump of ``m_z``, by the jump's
amplitude, how many layers it is spread over and how deep the model is, and what ``verdict.judge_power`` makes of
its "does not hold".

Usage: ``table = power_table(n_cases=20, seed=0)``: one row per cell of ``AMPLITUDES`` (times the judge's bar,
``verdict.min_jump(d)``: 2 is the paper's jump) x ``WIDTHS`` (layers over which 10-90 % of a logistic rise
happens; 0 is a step between two depths) x ``LAYERS``, with the rates of "holds" (``found``), of the judge's own
"does not hold" (``absent``), of "does not hold" once weighed by its power (``absent_weighed``) and the mean of
``verdict.jump_power`` (``power``, the normal approximation the table's rows use).

Each case is a profile of ``planted_statistics.planted_profile`` (the real captures' noise: edge depths, AR(1)
misfit, prompt-bootstrap draws correlated across depths; a random smooth background) at width ``D``, judged
against a flat twin of the same noise, as ``study.evidence`` weighs a row. ``tools/jump_power.py`` keeps the
table in ``results/calibration/jump_power.json``. Introduced in: chapter 8 (the criteria appendix).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .._code_hash import digest, module_hashes
from . import planted_statistics, transition, verdict

if TYPE_CHECKING:
    import pandas as pd

AMPLITUDES = (0.0, 0.25, 0.5, 1.0, 1.5, 2.0)  # times the judge's bar, min_jump(d): 2.0 is the paper's jump
WIDTHS = (0, 1, 2, 3, 6)  # layers over which 10-90 % of the rise happens
LAYERS = (12, 30, 64)
D = 576  # SmolLM2's width: the bar and the paper's jump mapped to it
LOGISTIC_10_90 = 2 * np.log(9)  # a logistic of width w rises from 10 % to 90 % over this many w


def _fit(p: planted_statistics.PlantedProfile) -> transition.Transition:
    return transition.critical_depth(
        p.gamma, p.m, draws=p.draws, n_boot=100, min_amplitude=verdict.MIN_TRANSITION
    )


def power_case(rng: np.random.Generator, n_layers: int, amplitude: float, layers_wide: float) -> dict:
    """One planted profile rising by ``amplitude`` (times the bar) over ``layers_wide`` layers at a depth drawn in
    0.3-0.6, on a random background, against a flat twin: the judge's word, the word once weighed by its power,
    and ``jump_power`` at the paper's jump."""
    bar, effect = verdict.min_jump(D), verdict.paper_jump(D)
    width = layers_wide / n_layers / LOGISTIC_10_90
    kind = str(rng.choice(planted_statistics.BACKGROUNDS))
    p = planted_statistics.planted_profile(
        rng, n_layers, kind, jump=amplitude * bar, gamma_c=rng.uniform(0.3, 0.6), width=width, base=0.0
    )
    twin = planted_statistics.planted_profile(rng, n_layers, "flat", base=0.0)
    trans, twin_trans = _fit(p), _fit(twin)
    judged = verdict.judge_jump(trans, twin_trans, bar)
    weighed = verdict.weigh_jump(judged, trans, twin_trans, effect, bar)
    return {
        "judged": judged[0],
        "weighed": weighed[0],
        "power": verdict.jump_power(trans, twin_trans, effect, bar),
    }


def power_table(n_cases: int = 20, seed: int = 0) -> pd.DataFrame:
    """``n_cases`` of ``power_case`` in every cell of the grid (each cell its own seed, so cells can be rerun
    alone): ``amplitude``, ``layers_wide``, ``n_layers``, ``n``, ``found``, ``absent``, ``absent_weighed``,
    ``inconclusive_weighed``, ``power`` (mean; NaN cases left out)."""
    import pandas as pd

    rows = []
    for i, (amplitude, layers_wide, n_layers) in enumerate(
        (a, w, n) for a in AMPLITUDES for w in WIDTHS for n in LAYERS
    ):
        rng = np.random.default_rng([seed, i])
        cases = [power_case(rng, n_layers, amplitude, layers_wide) for _ in range(n_cases)]
        judged = np.array([c["judged"] for c in cases])
        weighed = np.array([c["weighed"] for c in cases])
        rows.append(
            {
                "amplitude": amplitude,
                "layers_wide": layers_wide,
                "n_layers": n_layers,
                "n": n_cases,
                "found": float(np.mean(judged == "holds")),
                "absent": float(np.mean(judged == "does not hold")),
                "absent_weighed": float(np.mean(weighed == "does not hold")),
                "inconclusive_weighed": float(np.mean(weighed == "inconclusive")),
                "power": float(np.nanmean([c["power"] for c in cases])),
            }
        )
    return pd.DataFrame(rows)


def source_hash() -> str:
    """``_code_hash.digest`` of ``code_hashes()``: a record in ``results/calibration/`` is current while this matches
    the one it keeps."""
    return digest(code_hashes())


def code_hashes() -> dict[str, str]:
    """The hash of each module this module imports, itself included (``_code_hash.module_hashes``): what a record
    of it keeps of the code that made it, so that a change is named module by module."""
    return module_hashes(__name__)
