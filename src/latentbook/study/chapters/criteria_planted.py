"""The end-to-end calibration on planted models as the criteria appendix reads it: the current record
(``planted_calibration.load_record``) beside its earlier stages (``record_history.load_stage``), each fix the
book made and what it changed, as glued numbers.

Usage: ``glue_frame("vd", end_to_end_glue(record, results_dir, statistic_table))`` (``statistic_table``: the
statistic-level ``calibration.calibrate_statistics``); ``end_to_end_view(record)`` is the table shown.
Introduced in: chapter 8's appendix.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from .. import planted_calibration as pc
from .. import record_history

if TYPE_CHECKING:
    from ..planted_calibration import PlantedTable

E2E_COLUMNS = ("family", "claim", "planted", "n", "holds", "holds_ci_low", "holds_ci_high", "target", "meets")
CLASS_CODE = "class code, step in 0.33-0.51"
SPARSE_CODE = "sparse code, step in 0.33-0.51"
GROWING = "norm growth from 0.42"
GROWING_WRITING = "norm growth, twin writing as much"
CODE_TWIN = "the twin has the class code too"
MASSIVE = "massive coordinate at 0.42"
ROGUE = "rogue coordinates at 0.42"
NOTHING = "nothing planted"
# the artefacts the Omega rows must see through ("massive and rogue coordinates, norm growth and a change at the sink")
OMEGA_ARTEFACTS = (MASSIVE, ROGUE, GROWING, GROWING_WRITING, "a change at the sink only")
CLEANED_ROWS = (("effective_rank_cleaned", "erank"), ("spectral_concentration_cleaned", "pr"))
# issue 54's families with no object in them, by the key their glued numbers carry
TAILS = {
    "laplace": "Laplace coordinates from 0.42",
    "t3": "Student-t coordinates (3 df) from 0.42",
    "gated": "a gated product (SwiGLU) from 0.42",
    "outliers": "outlier features on 25-40 % of tokens",
    "redrawn": pc.REDRAWN,
}

# the learned-basis row's families (issue 54): the atom code it must find, by the key their glued numbers carry,
# and the families with no code off the axes that it must not (the heavy tails of ``TAILS`` too)
LEARNED = {
    "atom": pc.ATOM_CODE,
    "atom_twin": "the twin has the atom code too",
    "nothing": "nothing planted, learned basis",
    "growth": "norm growth from 0.42, learned basis",
    "massive": "massive coordinate at 0.42, learned basis",
    **TAILS,
}


def cells(record: PlantedTable, column: str = "holds") -> pd.Series:
    """One column of a record's confusion table (the rate of "holds" by default), by ``(family, claim)``."""
    return record.table.set_index(["family", "claim"])[column]


def calibrated_cells(table: pd.DataFrame) -> dict[str, int]:
    """The cells of a confusion table that have a target (``e2e_cells``), how many meet it (``e2e_cells_met``),
    and the cells that are a row's scope instead (``e2e_limits``: ``planted_calibration.UNSEPARABLE``)."""
    limit = table["limit"] if "limit" in table else pd.Series(False, index=table.index)
    return {
        "e2e_cells": int((~limit).sum()),
        "e2e_cells_met": int(table.loc[~limit, "meets"].sum()),
        "e2e_limits": int(limit.sum()),
    }


def learned_cells(table: pd.DataFrame) -> dict[str, float]:
    """Of a confusion table, the learned-basis row's lowest rate of "holds" where a code off the axes was planted
    (``e2e_lb_found``) and its largest Wilson upper bound of false holds elsewhere (``e2e_lb_false_high``)."""
    learned = table[table["claim"] == pc.LEARNED_ROW]
    present = learned["planted"] == "present"
    return {
        "e2e_lb_found": float(learned.loc[present, "holds"].min()),
        "e2e_lb_false_high": float(learned.loc[~present, "holds_ci_high"].max()),
    }


def end_to_end_view(record: PlantedTable) -> pd.DataFrame:
    """The record's confusion table in the columns the appendix shows (``E2E_COLUMNS``)."""
    return record.table[list(E2E_COLUMNS)]


def overview_glue(record: PlantedTable) -> dict[str, object]:
    """The record at a glance: its conclusion, cases a family (``e2e_n``, the fewest; ``e2e_n_max``, the most),
    the planted vocabulary, families, cells and cells meeting their target, date, minutes and whether current."""
    table = record.table
    return {
        "e2e_conclusion": pc.conclusion(table),
        "e2e_n": int(table["n"].min()),
        "e2e_n_max": int(table["n"].max()),
        "e2e_words": pc.planted.N_WORDS,
        "e2e_families": int(table["family"].nunique()),
        **calibrated_cells(table),
        "e2e_date": str(record.provenance["date"])[:10],
        "e2e_minutes": record.provenance["seconds"] / 60,
        "e2e_current": "the current code"
        if record.current
        else "code that has changed since: rerun tools/calibrate_planted.py",
    }


def position_profile_glue(record: PlantedTable, before: PlantedTable) -> dict[str, object]:
    """Norm growth before and after the cleaned rows removed each coordinate's position profile (``before``: the
    stage "before position profile"): the rates of the cleaned rows on the norm-growth families, and in
    ``before`` how many models the cleaned effective rank held on (``e2e_before_holds``, of ``e2e_before_n``) and
    how many of those carried both a sink and a massive coordinate (``e2e_before_both``)."""
    now, then = cells(record), cells(before)
    erank, pr = "effective_rank_cleaned", "spectral_concentration_cleaned"
    held, both = pc.holds_carrying(before.records, GROWING, erank, ("sink", "massive"))
    return {
        "e2e_ng_erank": float(now[GROWING, erank]),
        "e2e_ngw_erank": float(now[GROWING_WRITING, erank]),
        "e2e_ng_pr": float(now[GROWING, pr]),
        "e2e_growth_factor": pc.planted.PlantSpec().growth_factor,
        "e2e_before_date": str(before.provenance["date"])[:10],
        "e2e_before_ng_erank": float(then[GROWING, erank]),
        "e2e_before_ng_pr": float(then[GROWING, pr]),
        "e2e_before_holds": held,
        "e2e_before_both": both,
        "e2e_before_n": int(cells(before, "n")[GROWING, erank]),
    }


def _narrowest_records(record: PlantedTable) -> pd.DataFrame:
    narrowest = min(pc.WIDTHS)
    chosen = pc.family_records(record.records, CLASS_CODE)
    narrow = chosen["model"].str.contains(f"-d{narrowest}-")
    return chosen.loc[narrow, ["case", "claim", "verdict", "value"]].reset_index(drop=True)


def code_share_glue(record: PlantedTable, fixed: PlantedTable) -> dict[str, object]:
    """Class codes of a fixed number of coordinates (``fixed``: the stage "before code share", ``e2e_fixed_*``)
    against codes of a share of the width (``record``, ``e2e_share_*``): the cleaned participation ratio's rate of
    "holds" in all, at the widest width and below it, its mean ratio at the widest, and the Omega jump's rate; the
    code's sizes; whether the narrowest models' records are the same in both (``e2e_narrowest_unchanged``); and
    the rates at which the class and sparse codes are found now."""
    widest, narrowest = max(pc.WIDTHS), min(pc.WIDTHS)
    glued: dict[str, object] = {
        "e2e_widest": widest,
        "e2e_narrowest": narrowest,
        "e2e_code_share": round(1 / pc.CODE_SHARE),
        "e2e_code_widest": round(widest * pc.CODE_SHARE),
        "e2e_fixed_date": str(fixed.provenance["date"])[:16].replace("T", " "),
        "e2e_k_fixed": pc.planted.PlantSpec().k,  # the default then
    }
    for run, key in ((fixed, "fixed"), (record, "share")):
        pr = pc.family_records(run.records, CLASS_CODE, "spectral_concentration_cleaned")
        at_widest = pr["model"].str.contains(f"-d{widest}-", regex=False)
        found = pr["verdict"] == "holds"
        glued[f"e2e_{key}_pr"] = float(found.mean())
        glued[f"e2e_{key}_pr_widest"] = float(found[at_widest].mean())
        glued[f"e2e_{key}_pr_narrower"] = float(found[~at_widest].mean())
        glued[f"e2e_{key}_ratio_widest"] = float(pr.loc[at_widest, "value"].mean())
        glued[f"e2e_{key}_jump"] = float(cells(run)[CLASS_CODE, "omega_jump_cleaned"])
    before, now = _narrowest_records(fixed), _narrowest_records(record)
    glued["e2e_narrowest_records"] = len(before)
    glued["e2e_narrowest_unchanged"] = bool(before.equals(now))
    rates = cells(record)
    glued["e2e_cc_erank"] = float(rates[CLASS_CODE, "effective_rank_cleaned"])
    glued["e2e_cc_pr"] = float(rates[CLASS_CODE, "spectral_concentration_cleaned"])
    glued["e2e_cc_jump"] = float(rates[CLASS_CODE, "omega_jump_cleaned"])
    glued["e2e_sc_jump"] = float(rates[SPARSE_CODE, "omega_jump_cleaned"])
    return glued


def artefact_glue(record: PlantedTable) -> dict[str, object]:
    """How the Omega rows fare on the artefacts: their highest rate of "holds" on the norm-growth families
    (``e2e_growth_omega``) and on a twin with a class code of its own (``e2e_cct_omega``), and how many cells of
    ``OMEGA_ARTEFACTS`` miss their target (``e2e_artefacts_missed``)."""
    rates, meets = cells(record), cells(record, "meets")
    rows = pc.OMEGA_ROWS
    return {
        "e2e_growth_omega": float(max(rates[f, c] for f in (GROWING, GROWING_WRITING) for c in rows)),
        "e2e_cct_omega": float(max(rates[CODE_TWIN, c] for c in rows)),
        "e2e_artefacts_missed": sum(not meets[f, c] for f in OMEGA_ARTEFACTS for c in rows),
    }


def twin_margin_glue(record: PlantedTable, margin: PlantedTable) -> dict[str, object]:
    """The cleaned spectral rows on a twin with a class code of its own, before the twin margin (``margin``: the
    stage "before twin margin", ``e2e_margin_*``: rates, false holds and how many of those grew) and now
    (``e2e_cct_*``), and the class codes against a random twin in ``margin`` (``e2e_margin_cc_*``)."""
    now, then = cells(record), cells(margin)
    glued: dict[str, object] = {"e2e_margin_date": str(margin.provenance["date"])[:10]}
    for claim, key in CLEANED_ROWS:
        held, both = pc.holds_carrying(margin.records, CODE_TWIN, claim, "growth")
        glued[f"e2e_margin_cct_{key}"] = float(then[CODE_TWIN, claim])
        glued[f"e2e_margin_cct_{key}_holds"] = held
        glued[f"e2e_margin_cct_{key}_both"] = both
        glued[f"e2e_cct_{key}"] = float(now[CODE_TWIN, claim])
        glued[f"e2e_margin_cc_{key}"] = float(then[CLASS_CODE, claim])
    return glued


def previous_run_glue(record: PlantedTable, previous: PlantedTable) -> dict[str, object]:
    """The record before rogue coordinates went unread and code twins wrote as much as their models (``previous``:
    the stage "before raw beside cleaned", ``e2e_prev_*``): the cleaned rows' false holds on the code twin and the
    rogue family, how many of those models grew (``*_growing``) and their depths; and the raw spectral rows' rates
    on the massive, rogue and norm-growth families then (the lowest) and now (the highest, beside the cleaned
    rows)."""
    glued: dict[str, object] = {
        "e2e_previous_date": str(previous.provenance["date"])[:16].replace("T", " "),
        "e2e_n_rogue": pc.planted.PlantSpec().n_rogue,
        "e2e_rogue_erank": float(cells(record)[ROGUE, "effective_rank_cleaned"]),
    }
    held_on = (
        (CODE_TWIN, "effective_rank_cleaned", "cct_erank"),
        (CODE_TWIN, "spectral_concentration_cleaned", "cct_pr"),
    )
    for family, claim, key in (*held_on, (ROGUE, "effective_rank_cleaned", "rogue_erank")):
        held, growing = pc.holds_carrying(previous.records, family, claim, "growth")
        layers = sorted(set(pc.held_layers(previous.records, family, claim)))
        glued[f"e2e_prev_{key}_holds"] = held
        glued[f"e2e_prev_{key}_growing"] = growing
        glued[f"e2e_prev_{key}_layers"] = " or ".join(map(str, layers))
    glued["e2e_prev_cct_layers"] = glued.pop("e2e_prev_cct_erank_layers")
    glued["e2e_prev_rogue_layers"] = glued.pop("e2e_prev_rogue_erank_layers")
    then, now = cells(previous), cells(record)
    raw = pc.SPECTRAL_ROWS
    for family, key in ((MASSIVE, "massive"), (ROGUE, "rogue")):
        glued[f"e2e_prev_{key}_raw"] = float(min(then[family, c] for c in raw))
        glued[f"e2e_{key}_raw"] = float(max(now[family, c] for c in raw))
    growing = (GROWING, GROWING_WRITING)
    glued["e2e_prev_growth_raw"] = float(max(then[f, c] for f in growing for c in raw))
    glued["e2e_growth_raw"] = float(max(now[f, c] for f in growing for c in raw))
    return glued


def liquid_glue(record: PlantedTable) -> dict[str, object]:
    """The paper's raw ``m`` ("stays liquid") on models where nothing was planted: how many carry a massive
    coordinate in every token (``e2e_liquid_massive``; narrower than the widest, ``_narrow``, and at it, ``_wide``),
    on how many of those it crosses the solid level (``_crossed``; at the widest, ``_wide_crossed``; holds at the
    widest, ``_wide_held``), its holds on the models without one (``_held_without`` of ``_without``), the share it
    calls solid (``e2e_liquid_solid``), whether the row meets its target (``e2e_liquid_meets``) and the cleaned
    row's rate (``e2e_liquid_cleaned``)."""
    liquid = pc.family_records(record.records, NOTHING, "stays_liquid")
    carrying = liquid["model"].str.contains("+massive", regex=False)
    at_widest = liquid["model"].str.contains(f"-d{max(pc.WIDTHS)}-", regex=False)
    crossed = liquid["verdict"] == "does not hold"
    held, held_massive = pc.holds_carrying(record.records, NOTHING, "stays_liquid", "massive")
    return {
        "e2e_liquid_massive": int(carrying.sum()),
        "e2e_liquid_crossed": int((crossed & carrying).sum()),
        "e2e_liquid_narrow": int((carrying & ~at_widest).sum()),
        "e2e_liquid_wide": int((carrying & at_widest).sum()),
        "e2e_liquid_wide_crossed": int((crossed & at_widest).sum()),
        "e2e_liquid_wide_held": int(((liquid["verdict"] == "holds") & carrying & at_widest).sum()),
        "e2e_liquid_without": int((~carrying).sum()),
        "e2e_liquid_held_without": held - held_massive,
        "e2e_massive_size": pc.planted.PlantSpec().massive_size,
        "e2e_liquid_solid": float(crossed.mean()),
        "e2e_liquid_meets": bool(cells(record, "meets")[NOTHING, "stays_liquid"]),
        "e2e_liquid_cleaned": float(cells(record)[NOTHING, "stays_liquid_cleaned"]),
    }


def tails_view(record: PlantedTable) -> pd.DataFrame:
    """The Omega rows on the families of ``TAILS``: the share of models each row holds on, one column per row, and
    the row's scope where it cannot tell the family from objects (``planted_calibration.UNSEPARABLE``)."""
    rates = cells(record)
    frame = pd.DataFrame(
        {row: [float(rates[family, row]) for family in TAILS.values()] for row in pc.OMEGA_ROWS},
        index=pd.Index(list(TAILS.values()), name="family"),
    )
    frame["outside a row's scope"] = [
        ", ".join(row for row in pc.OMEGA_ROWS if pc.unseparable(family, row)) or "-"
        for family in TAILS.values()
    ]
    return frame


def tails_glue(record: PlantedTable) -> dict[str, object]:
    """``e2e_tails_<key>_<row>``: the share of the models of ``TAILS[key]`` that the Omega row holds on; the highest
    share over the heavy-tailed families (``e2e_tails_<row>_max``: ``planted_calibration.HEAVY_TAILED``, a scope
    of the m_z rows, ``UNSEPARABLE``); the number of models each family holds (``e2e_tails_n``), and the planted
    vocabulary's size and the outlier features' coordinates and share of the tokens that the prose quotes
    (``e2e_tails_words``, ``_outlier_coordinates``, ``_share_low/high``)."""
    rates = cells(record)
    glued: dict[str, object] = {
        "e2e_tails_n": int(cells(record, "n")[TAILS["laplace"], "omega_jump"]),
        "e2e_tails_words": pc.planted.N_WORDS,
        "e2e_tails_outlier_coordinates": pc.planted.N_OUTLIERS,
        "e2e_tails_share_low": pc.planted.OUTLIER_SHARE[0],
        "e2e_tails_share_high": pc.planted.OUTLIER_SHARE[1],
    }
    for key, family in TAILS.items():
        for row in pc.OMEGA_ROWS:
            glued[f"e2e_tails_{key}_{row}"] = float(rates[family, row])
    for row in pc.OMEGA_ROWS:
        glued[f"e2e_tails_{row}_max"] = float(max(rates[family, row] for family in pc.HEAVY_TAILED))
    return glued


def learned_view(record: PlantedTable) -> pd.DataFrame:
    """The learned-basis row beside the m_z rows on the families of ``LEARNED``: per family, whether a code off the
    axes is planted, the share of models the learned-basis row holds on with its Wilson 95 % interval, and the share
    each m_z row holds on where the family judges it (blank where it does not)."""
    rates, table = cells(record), record.table.set_index(["family", "claim"])
    rows = []
    for family in LEARNED.values():
        own = table.loc[(family, pc.LEARNED_ROW)]
        rows.append(
            {
                "family": family,
                "code off the axes": own["planted"] == "present",
                "models": int(own["n"]),
                pc.LEARNED_ROW: float(own["holds"]),
                "Wilson low": float(own["holds_ci_low"]),
                "Wilson high": float(own["holds_ci_high"]),
                **{row: float(rates.get((family, row), float("nan"))) for row in pc.OMEGA_ROWS},
            }
        )
    return pd.DataFrame(rows).set_index("family")


def learned_glue(record: PlantedTable) -> dict[str, object]:
    """``e2e_lb_<key>``: the share of the models of ``LEARNED[key]`` the learned-basis row holds on (with
    ``_high``, its Wilson upper bound), ``e2e_lb_atom_<row>`` the share each m_z row holds on the atom code;
    whether the row meets every target (``e2e_lb_meets``), its models per family (``e2e_lb_n``) and the atom code's
    atoms (``e2e_lb_k`` of ``e2e_lb_atoms``)."""
    view = learned_view(record)
    meets = cells(record, "meets")
    glued: dict[str, object] = {
        "e2e_lb_n": int(view["models"].min()),
        "e2e_lb_k": pc.ATOM_K,
        "e2e_lb_atoms": pc.planted.PlantSpec.n_atoms,
        "e2e_lb_meets": all(bool(meets[family, pc.LEARNED_ROW]) for family in LEARNED.values()),
    }
    for key, family in LEARNED.items():
        glued[f"e2e_lb_{key}"] = float(view.loc[family, pc.LEARNED_ROW])
        glued[f"e2e_lb_{key}_high"] = float(view.loc[family, "Wilson high"])
    for row in pc.OMEGA_ROWS:
        glued[f"e2e_lb_atom_{row}"] = float(view.loc[pc.ATOM_CODE, row])
    glued["e2e_lb_absent_max"] = float(
        max(view.loc[f, pc.LEARNED_ROW] for key, f in LEARNED.items() if key != "atom")
    )
    glued["e2e_lb_absent_high_max"] = float(
        max(view.loc[f, "Wilson high"] for key, f in LEARNED.items() if key != "atom")
    )
    return glued


def end_to_end_glue(
    record: PlantedTable, results_dir: str | Path, statistic_table: pd.DataFrame
) -> dict[str, object]:
    """Every number the appendix quotes of the end-to-end calibration: the current ``record`` and its earlier stages
    kept in ``results_dir`` (``record_history``; each function of this module), and the statistic-level rate of the
    cleaned participation ratio's 30-50 % falls (``e2e_statistic_pr_found``, of ``statistic_table``)."""

    def earlier(stage: str) -> PlantedTable:
        return record_history.load_stage(results_dir, stage)

    statistic = statistic_table.set_index(["claim", "family"])["holds"]
    return (
        overview_glue(record)
        | position_profile_glue(record, earlier("before position profile"))
        | code_share_glue(record, earlier("before code share"))
        | artefact_glue(record)
        | twin_margin_glue(record, earlier("before twin margin"))
        | previous_run_glue(record, earlier("before raw beside cleaned"))
        | liquid_glue(record)
        | tails_glue(record)
        | learned_glue(record)
        | {"e2e_statistic_pr_found": float(statistic["spectral_concentration", "PR falls 30-50 %"])}
    )
