"""The criteria appendix's tables and numbers (``study.chapters.criteria_tables``, ``criteria_planted``,
``criteria_flow``), on records written here."""

from __future__ import annotations

import pandas as pd
import pytest

from latentbook.analysis import calibration, verdict
from latentbook.study import planted_calibration as pc
from latentbook.study.chapters import criteria_flow, criteria_planted, criteria_tables
from latentbook.study.power_confirmation import Confirmation
from latentbook.study.power_record import PowerRecord


def test_the_constants_quote_every_verdict_word_in_order():
    constants = criteria_tables.criteria_constants()
    assert constants["vocabulary"] == ", ".join(f'"{word}"' for word in verdict.VERDICTS)
    assert constants["vocabulary"].startswith('"holds", ') and constants["min_power"] == verdict.MIN_POWER


def _power_table(weighed_above: bool = False) -> pd.DataFrame:
    rows = []
    for amplitude in (0.0, 1.0, 2.0):
        for n_layers in (30, 64):
            for wide in (0, 3):
                absent = 0.5 if amplitude < 2 else 0.2
                rows.append(
                    {
                        "amplitude": amplitude,
                        "n_layers": n_layers,
                        "layers_wide": wide,
                        "found": amplitude / 2,
                        "absent": absent,
                        "absent_weighed": absent / 2,
                    }
                )
    if weighed_above:
        rows[-1]["absent_weighed"] = rows[-1]["absent"] + 0.1
    return pd.DataFrame(rows)


def _power(table: pd.DataFrame) -> PowerRecord:
    return PowerRecord(table, {"n_cases": 40, "date": "2026-01-02T03:04"}, True)


def test_power_glue_counts_the_cells_where_the_weighing_would_add_a_does_not_hold():
    assert criteria_tables.power_glue(_power(_power_table()))["power_weighing_adds"] == 0
    glued = criteria_tables.power_glue(_power(_power_table(weighed_above=True)))
    assert glued["power_weighing_adds"] == 1
    assert glued["power_n"] == 40 and glued["power_amplitudes"].startswith("0, ")


def test_power_rates_are_by_depth_and_spread_against_the_amplitude_in_bars():
    rates = criteria_tables.power_rates(_power(_power_table()))
    assert list(rates.columns) == ["0 x bar", "1 x bar", "2 x bar"]
    assert rates.loc[(64, 3), "2 x bar"] == 1.0 and rates.loc[(30, 0), "1 x bar"] == 0.5


def _confirmation(missed_width: int) -> Confirmation:
    rows = []
    for width in (0, 1, 2, 3):
        for case in range(4):
            found = width > 0 and not (width == missed_width and case == 0)
            judged = "holds" if found else "does not hold"
            weighed = judged if found or width == 0 else "inconclusive"
            rows.append(
                {"n_layers": 30, "width": width, "claim": "omega_jump", "case": case}
                | {"judged": judged, "weighed": weighed, "value": 0.2 * width}
            )
    return Confirmation(pd.DataFrame(rows), {"n_cases": 4, "date": "2026-01-02"}, True)


def test_confirmation_glue_finds_a_missed_plant_narrower_than_the_widest():
    power = _power_table()
    assert (
        criteria_tables.confirmation_glue(_confirmation(missed_width=3), power)["conf_missed_narrower"] == 0
    )
    glued = criteria_tables.confirmation_glue(_confirmation(missed_width=1), power)
    assert glued["conf_missed_narrower"] == 1 and glued["conf_weighing_adds"] == 0
    assert glued["conf_absent"] == 1 and glued["conf_absent_weighed"] == 0  # the weighed one is inconclusive
    view = criteria_tables.confirmation_view(_confirmation(missed_width=1))
    assert {"layers", "does not hold (judge)", "does not hold (weighed)"} <= set(view.columns)


def _calibration_table() -> pd.DataFrame:
    rows = [
        ("critical_depth", "step", "present", 40, 0.9, 0.78, 0.96),
        ("critical_depth", "flat", "absent", 40, 0.0, 0.0, 0.09),
        ("bimodality", "two modes", "present", 20, 0.85, 0.64, 0.95),
        ("bimodality", "one mode", "absent", 20, 0.1, 0.03, 0.30),
    ]
    columns = ["claim", "family", "planted", "n", "holds", "holds_ci_low", "holds_ci_high"]
    return pd.DataFrame(rows, columns=columns).assign(target="t")


def test_calibration_glue_reads_the_costly_families_and_the_targets():
    glued = criteria_tables.calibration_glue(_calibration_table())
    assert (glued["cal_n_cases"], glued["cal_n_token_cases"], glued["cal_n_sizes"]) == (40, 20, 2)
    assert glued["cal_costly_claims"] == "bimodality"
    assert (glued["cal_claims_met"], glued["cal_claims"]) == (1, 2)  # bimodality's absent family holds 10 %
    assert glued["cal_worst_false"] == 0.1 and glued["cal_worst_found"] == 0.85
    assert glued["cal_wilson_met"] == 0 and glued["cal_absent_wilson"] == 0.09
    assert glued["cal_max_false"] == calibration.MAX_FALSE_HOLDS


def test_wilson_view_and_percent_table_show_the_rates_as_percentages():
    view = criteria_tables.wilson_view(_calibration_table())
    assert list(view.columns) == [*criteria_tables.CALIBRATION_COLUMNS, "met (Wilson)"]
    html = criteria_tables.percent_table(view).to_html()
    assert "85%" in html and "64.0%" in html and ">20<" in html  # holds whole, bounds to a tenth, n as is


# --- the end-to-end records ---------------------------------------------------------------------------------------


def _record(rows: list[tuple], date: str = "2026-01-02T03:04:05") -> pc.PlantedTable:
    """A planted record of ``(family, claim, planted, model, verdict, value)`` rows, one case each."""
    records = [
        {"family": f, "claim": c, "planted": p, "case": i, "model": m, "verdict": v, "value": x}
        for i, (f, c, p, m, v, x) in enumerate(rows)
    ]
    return pc.PlantedTable(pc.confusion(records), {"date": date, "seconds": 600}, True, pd.DataFrame(records))


def _model(layers: int, width: int, *nuisances: str) -> str:
    return f"planted-x-g0.42-L{layers}-d{width}-s0" + "".join(f"+{n}" for n in nuisances)


def test_liquid_glue_counts_where_raw_m_crosses_by_width_and_massive_coordinate():
    narrow, wide = min(pc.WIDTHS), max(pc.WIDTHS)
    rows = [
        (
            criteria_planted.NOTHING,
            "stays_liquid",
            "present",
            _model(12, narrow, "massive"),
            "does not hold",
            0.9,
        ),
        (
            criteria_planted.NOTHING,
            "stays_liquid",
            "present",
            _model(12, narrow, "massive"),
            "inconclusive",
            0.8,
        ),
        (criteria_planted.NOTHING, "stays_liquid", "present", _model(12, wide, "massive"), "holds", 0.6),
        (criteria_planted.NOTHING, "stays_liquid", "present", _model(16, wide), "holds", 0.5),
        (criteria_planted.NOTHING, "stays_liquid_cleaned", "present", _model(16, wide), "holds", 0.4),
    ]
    glued = criteria_planted.liquid_glue(_record(rows))
    assert (glued["e2e_liquid_massive"], glued["e2e_liquid_narrow"], glued["e2e_liquid_wide"]) == (3, 2, 1)
    assert (glued["e2e_liquid_crossed"], glued["e2e_liquid_wide_crossed"], glued["e2e_liquid_wide_held"]) == (
        1,
        0,
        1,
    )
    assert (glued["e2e_liquid_without"], glued["e2e_liquid_held_without"]) == (1, 1)
    assert glued["e2e_liquid_solid"] == 0.25 and glued["e2e_liquid_meets"] is False  # 2 of 4 hold: below 80 %
    assert glued["e2e_liquid_cleaned"] == 1.0


def _class_code_rows(width: int, verdict_word: str, value: float) -> list[tuple]:
    model = _model(12, width)
    return [
        (
            criteria_planted.CLASS_CODE,
            "spectral_concentration_cleaned",
            "present",
            model,
            verdict_word,
            value,
        ),
        (criteria_planted.CLASS_CODE, "effective_rank_cleaned", "present", model, "holds", value),
        (criteria_planted.CLASS_CODE, "omega_jump_cleaned", "present", model, verdict_word, value),
        (criteria_planted.SPARSE_CODE, "omega_jump_cleaned", "present", model, "holds", value),
    ]


def test_code_share_glue_compares_the_widest_codes_and_checks_the_narrowest_records_are_the_same():
    narrow, wide = min(pc.WIDTHS), max(pc.WIDTHS)
    fixed = _record(_class_code_rows(narrow, "holds", 0.8) + _class_code_rows(wide, "does not hold", 0.95))
    share = _record(_class_code_rows(narrow, "holds", 0.8) + _class_code_rows(wide, "holds", 0.7))
    glued = criteria_planted.code_share_glue(share, fixed)
    assert (glued["e2e_fixed_pr_widest"], glued["e2e_fixed_pr_narrower"], glued["e2e_fixed_pr"]) == (
        0.0,
        1.0,
        0.5,
    )
    assert (glued["e2e_share_pr_widest"], glued["e2e_share_ratio_widest"]) == (1.0, 0.7)
    assert glued["e2e_fixed_ratio_widest"] == 0.95 and glued["e2e_fixed_jump"] == 0.5
    assert glued["e2e_narrowest_records"] == 3 and glued["e2e_narrowest_unchanged"] is True
    assert glued["e2e_fixed_date"] == "2026-01-02 03:04"
    changed = _record(_class_code_rows(narrow, "holds", 0.81) + _class_code_rows(wide, "holds", 0.7))
    assert criteria_planted.code_share_glue(changed, fixed)["e2e_narrowest_unchanged"] is False


def test_previous_run_glue_reads_the_false_holds_their_growth_and_depths():
    twin, rogue = criteria_planted.CODE_TWIN, criteria_planted.ROGUE
    erank, pr = "effective_rank_cleaned", "spectral_concentration_cleaned"
    rows = [
        (twin, erank, "absent", _model(24, 128, "growth"), "holds", 0.8),
        (twin, pr, "absent", _model(16, 128, "growth"), "holds", 0.8),
        (twin, pr, "absent", _model(24, 128), "holds", 0.8),
        (rogue, erank, "absent", _model(12, 128, "growth"), "holds", 0.8),
    ]
    rows += [
        (f, c, "absent", _model(12, 128), "holds", 1.0)
        for f in (rogue, criteria_planted.MASSIVE)
        for c in pc.SPECTRAL_ROWS
    ]
    rows += [
        (f, c, "absent", _model(12, 128), "does not hold", 1.0)
        for f in (criteria_planted.GROWING, criteria_planted.GROWING_WRITING)
        for c in pc.SPECTRAL_ROWS
    ]
    previous = _record(rows)
    glued = criteria_planted.previous_run_glue(previous, previous)
    assert (glued["e2e_prev_cct_erank_holds"], glued["e2e_prev_cct_erank_growing"]) == (1, 1)
    assert (glued["e2e_prev_cct_pr_holds"], glued["e2e_prev_cct_pr_growing"]) == (2, 1)
    assert (glued["e2e_prev_cct_layers"], glued["e2e_prev_cct_pr_layers"]) == ("24", "16 or 24")
    assert glued["e2e_prev_rogue_layers"] == "12" and glued["e2e_prev_rogue_erank_holds"] == 1
    assert (
        glued["e2e_prev_massive_raw"] == glued["e2e_prev_rogue_raw"] == 1.0
        and glued["e2e_prev_growth_raw"] == 0
    )


def test_artefact_glue_counts_the_omega_cells_that_miss_on_the_artefacts():
    families = (*criteria_planted.OMEGA_ARTEFACTS, criteria_planted.CODE_TWIN)
    cases = [(f, c, "absent", _model(12, 128)) for f in families for c in pc.OMEGA_ROWS] * 80
    rows = [(*case, "does not hold", 0.0) for case in cases]
    rows[0] = (*cases[0], "holds", 0.0)  # one false "holds" in 80: that cell's Wilson bound misses 5 %
    rows[2] = (*cases[2], "holds", 0.0)
    glued = criteria_planted.artefact_glue(_record(rows))
    assert glued["e2e_artefacts_missed"] == 2 and glued["e2e_growth_omega"] == 0.0
    assert glued["e2e_cct_omega"] == 0.0
    rows[-1] = (*cases[-1], "holds", 0.0)  # the code twin's last Omega row
    assert criteria_planted.artefact_glue(_record(rows))["e2e_cct_omega"] == pytest.approx(1 / 80)


def test_flow_glue_reads_the_contraction_rows_false_holds_before_and_now():
    tc, cool = criteria_flow.CONTRACTION, criteria_flow.COOLING
    families = [
        (criteria_flow.CONTRACTING, "present"),
        (criteria_flow.SHARPENING, "present"),
        (criteria_flow.CODE_ALONE, "absent"),
        (criteria_flow.UNIFORM, "absent"),
        ("the twin contracts too", "absent"),
        ("the twin sharpens too", "absent"),
        (criteria_flow.NOTHING, "absent"),
        (criteria_flow.SINK, "absent"),
    ]

    def rows(fooled: int) -> list[tuple]:
        out = [
            (f, c, p, _model(12, 128), "holds" if p == "present" else "does not hold", 0.5)
            for f, p in families
            for c in (tc, cool)
        ]
        out += [(criteria_flow.UNIFORM, tc, "absent", _model(16, 128), "holds", 0.4)] * fooled
        return out

    glued = criteria_flow.flow_glue(_record(rows(0)), _record(rows(2), date="2025-12-01"))
    assert (glued["flow_fooled"], glued["flow_before_fooled"], glued["flow_before_cases"]) == (0, 2, 2)
    assert glued["flow_before_q"] == 0.4 and glued["flow_before_date"] == "2025-12-01"
    assert glued["flow_found"] == 1.0 and glued["flow_sharp_found"] == 1.0 and glued["flow_code"] == 0.0
    assert glued["flow_sink_meets"] is False  # one case cannot bring the Wilson bound below 5 %
    assert glued["flow_fooled_upper"] == pytest.approx(verdict.wilson_interval(0.0, 1)[1])


def test_tails_glue_reads_each_omega_row_on_the_families_with_no_object():
    """The gated product holds the jump on 1 of 80 models, every other heavy-tailed cell on none, and the redrawn
    code holds all three rows: every one of those cells is the m_z rows' scope (``UNSEPARABLE``), while the
    learned-basis row, which holds on none of them, has each as a target."""
    tails = criteria_planted.TAILS
    rows_judged = (*pc.OMEGA_ROWS, pc.LEARNED_ROW)
    cases = [(f, c, "absent", _model(12, 128)) for f in tails.values() for c in rows_judged] * 80

    def verdict_of(case) -> str:
        return "holds" if case[0] == tails["redrawn"] and case[1] != pc.LEARNED_ROW else "does not hold"

    rows = [(*case, verdict_of(case), 0.0) for case in cases]
    record = _record(rows)
    glued = criteria_planted.tails_glue(record)
    assert glued["e2e_tails_n"] == 80 and glued["e2e_tails_redrawn_omega_jump"] == 1.0
    assert glued["e2e_tails_gated_omega_jump"] == 0.0 and glued["e2e_tails_omega_jump_max"] == 0.0
    gated = next(i for i, case in enumerate(cases) if case[:2] == (tails["gated"], "omega_jump"))
    rows[gated] = (*cases[gated], "holds", 0.0)
    glued = criteria_planted.tails_glue(_record(rows))
    assert glued["e2e_tails_gated_omega_jump"] == pytest.approx(1 / 80)
    assert glued["e2e_tails_omega_jump_max"] == pytest.approx(1 / 80)  # the redrawn code is not a heavy tail
    assert glued["e2e_tails_critical_depth_max"] == 0.0
    view = criteria_planted.tails_view(record)
    assert view.loc[tails["redrawn"], "outside a row's scope"] == ", ".join(pc.OMEGA_ROWS)
    assert view.loc[tails["laplace"], "outside a row's scope"] == ", ".join(pc.OMEGA_ROWS)
    counted = criteria_planted.calibrated_cells(record.table)
    assert counted == {"e2e_cells": 5, "e2e_cells_met": 5, "e2e_limits": 15}
