"""The criteria appendix of chapter 8 (book/appendix/verdict_criteria.md): its constants, the jump judge's power,
its confirmation on planted models and the statistic-level calibration, as tables and glued numbers.

Usage: ``glue_frame("vd", criteria_constants())``; ``power_rates(power)`` and ``power_glue(power)`` of
``power_record.load_power_record``; ``confirmation_glue(confirmation, power.table)`` of
``power_confirmation.load_confirmation``; ``calibration_glue(table)`` and ``wilson_view(table)`` of
``calibration.calibrate_statistics``, kept in ``results/`` (``statistic_families``, ``slow_calibration``; when it
ran and on what code: ``record_glue``); ``power_bands`` keeps ``bimodality_power.power_table`` for the code;
``percent_table`` shows any of them. The
end-to-end record's numbers are ``criteria_planted``, the flow families' ``criteria_flow``.
Introduced in: chapter 8's appendix.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd
    from pandas.io.formats.style import Styler

    from ..power_confirmation import Confirmation
    from ..power_record import PowerRecord
    from ..table_record import TableRecord

CALIBRATION_COLUMNS = ("claim", "family", "planted", "n", "holds", "holds_ci_low", "holds_ci_high", "target")
TENTHS = ("holds_ci_low", "holds_ci_high", "holds_low", "holds_high", "absent_low", "absent_high")


def criteria_constants() -> dict[str, object]:
    """The bars, tolerances and levels the criteria table quotes, by glue name, and the verdict words in quotes
    (``vocabulary``)."""
    from ...analysis import contraction, cooling, learned_basis, omega, verdict
    from ...analysis import tco as tco_analysis
    from ...ladder import rank_correlation

    return {
        "gamma_c": verdict.PAPER_GAMMA_C,
        "tolerance": verdict.GAMMA_C_TOLERANCE,
        "min_jump": verdict.MIN_JUMP,
        "solid": verdict.SOLID_THRESHOLD,
        "liquid_level": verdict.PAPER_M_LIQUID,
        "solid_level": verdict.PAPER_M_SOLID,
        "small": verdict.SMALL_MODEL / 1e9,
        "tco_margin": verdict.TCO_MARGIN,
        "two_way_chance": tco_analysis.TWO_WAY_CHANCE,
        "min_transition": verdict.MIN_TRANSITION,
        "k_massive": verdict.K_MASSIVE,
        "paper_width": omega.PAPER_WIDTH,
        "cooling_bar": round(1 - cooling.MIN_COOLING, 3),
        "max_q": contraction.MAX_Q,
        "max_concentration": verdict.MAX_CONCENTRATION,
        "ladder_alpha": rank_correlation.ALPHA,
        "min_power": verdict.MIN_POWER,
        "landmark_tolerance": verdict.LANDMARK_TOLERANCE,
        "lb_bar": learned_basis.RISE_BAR,
        "lb_level": learned_basis.RISE_LEVEL,
        "lb_r": learned_basis.N_COMPONENTS,
        "lb_gammas": ", ".join(f"{g:g}" for g in learned_basis.BOOK_GAMMAS),
        "vocabulary": ", ".join(f'"{word}"' for word in verdict.VERDICTS),
    }


def percent_table(frame: pd.DataFrame, whole: Sequence[str] = ("holds",)) -> Styler:
    """``frame`` without its row numbers, the rates of ``whole`` in whole percent and the Wilson bounds
    (``TENTHS``) to a tenth of a percent."""
    formats = {column: "{:.0%}" for column in whole if column in frame.columns}
    formats |= {column: "{:.1%}" for column in TENTHS if column in frame.columns}
    return frame.style.format(formats).hide(axis="index")


def power_rates(power: PowerRecord) -> pd.DataFrame:
    """The rate of "holds" of the jump judge by depth and spread (rows) and planted amplitude (columns, in units
    of the judge's bar)."""
    found = power.table.pivot_table(index=["n_layers", "layers_wide"], columns="amplitude", values="found")
    found.columns = [f"{amplitude:g} x bar" for amplitude in found.columns]
    return found


def power_glue(power: PowerRecord) -> dict[str, object]:
    """``power.summary()``, the planted amplitudes, spreads and depths in words (``power_amplitudes``,
    ``power_widths``, ``power_layers``), and how many cells' weighed rate of "does not hold" exceeds the judge's
    own (``power_weighing_adds``: the weighing only turns "does not hold" into "inconclusive", so none)."""
    from ...analysis import jump_power

    t = power.table
    return power.summary() | {
        "power_amplitudes": ", ".join(f"{a:g}" for a in jump_power.AMPLITUDES),
        "power_widths": ", ".join(str(w) for w in jump_power.WIDTHS),
        "power_layers": ", ".join(str(n) for n in jump_power.LAYERS),
        "power_weighing_adds": int((t["absent_weighed"] > t["absent"] + 1e-12).sum()),
    }


def confirmation_glue(confirmation: Confirmation, power: pd.DataFrame) -> dict[str, object]:
    """``confirmation.summary(power)``, how many cells' weighed "does not hold" exceed the judge's own
    (``conf_weighing_adds``) and how many planted cells narrower than the widest plant miss a jump
    (``conf_missed_narrower``)."""
    cells = confirmation.counts()
    planted = cells[cells["width"] > 0]
    missed = planted[planted["holds"] < planted["n"]]
    return confirmation.summary(power) | {
        "conf_weighing_adds": int((cells["absent_weighed"] > cells["absent"]).sum()),
        "conf_missed_narrower": int((missed["width"] < cells["width"].max()).sum()),
    }


def confirmation_view(confirmation: Confirmation) -> pd.DataFrame:
    """The confirmation's cells (``Confirmation.counts``) with the columns named as the appendix reads them."""
    return confirmation.counts().rename(
        columns={
            "n_layers": "layers",
            "absent": "does not hold (judge)",
            "absent_weighed": "does not hold (weighed)",
        }
    )


def calibration_glue(table: pd.DataFrame) -> dict[str, object]:
    """The statistic-level calibration (``calibration.calibrate_statistics``) as the appendix quotes it: its
    planted shapes and targets, cases a family (``cal_n_cases``, fewer for the costly ones: ``cal_n_token_cases``,
    ``cal_n_sizes`` sizes in all, ``cal_costly_claims`` their claims), families, claims meeting both targets, the
    worst rates, families meeting them by the Wilson bound and the lowest Wilson upper bound of an absent family."""
    from ...analysis import calibration

    met = calibration.meets_targets(table)
    absent = table[table["planted"] == "absent"]
    present = table[table["planted"] == "present"]
    most = int(table["n"].max())
    return {
        "cal_max_false": calibration.MAX_FALSE_HOLDS,
        "cal_min_layers": min(calibration.LAYERS),
        "cal_max_layers": max(calibration.LAYERS),
        "cal_min_width": min(calibration.WIDTHS),
        "cal_max_width": max(calibration.WIDTHS),
        "cal_min_found": calibration.MIN_FOUND,
        "cal_n_cases": most,
        "cal_n_token_cases": int(table["n"].min()),
        "cal_n_sizes": int(table["n"].nunique()),
        "cal_costly_claims": ", ".join(sorted(set(table.loc[table["n"] < most, "claim"]))),
        "cal_n_families": int(len(table)),
        "cal_claims_met": int(met.sum()),
        "cal_claims": int(len(met)),
        "cal_worst_false": float(absent["holds"].max()),
        "cal_worst_found": float(present["holds"].min()),
        "cal_wilson_met": int(calibration.meets_by_wilson(table).sum()),
        "cal_absent_wilson": float(absent["holds_ci_high"].min()),
    }


def wilson_view(table: pd.DataFrame) -> pd.DataFrame:
    """A calibration table's families with their rate, its Wilson bounds, the target and whether the bound meets it
    (``met (Wilson)``, ``calibration.meets_by_wilson``)."""
    from ...analysis import calibration

    return table[list(CALIBRATION_COLUMNS)].assign(**{"met (Wilson)": calibration.meets_by_wilson(table)})


def record_glue(record: TableRecord, script: str) -> dict[str, str]:
    """When a table record of ``results/`` ran and on what code, as the appendix says it: ``date`` (its day) and
    ``current`` ("the current code", or code that has changed since, naming the ``script`` that runs it again)."""
    return {
        "date": str(record.provenance["date"])[:10],
        "current": "the current code"
        if record.current
        else f"code that has changed since: rerun tools/{script}",
    }


def power_bands(samples: Sequence[int], separations: Sequence[float], n_depths: int) -> pd.DataFrame:
    """``bimodality_power.power_table(samples, separations, n_depths=n_depths)``, computed once for the current code
    and kept beside the captures (``measurement_cache.cached_frame``): a few seconds, so not a record of
    ``results/``, and a fresh machine computes it."""
    from ...analysis import bimodality_power
    from ..measurement_cache import cached_frame

    return cached_frame(
        "bimodality_power",
        lambda: bimodality_power.power_table(samples, separations, n_depths=n_depths),
        settings={"samples": list(samples), "separations": list(separations), "n_depths": n_depths},
    )
