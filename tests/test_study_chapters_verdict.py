"""Chapter 8's counts of the verdict table (``study.chapters.verdict_tables``) and its heatmap, on a table written here."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import types  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from latentbook.analysis import verdict  # noqa: E402
from latentbook.study.chapters.verdict_tables import count_glue, first_screen  # noqa: E402
from latentbook.view import plots  # noqa: E402


def _row(claim, model, run, verdict_word, parameters, scope, reason="", value=float("nan")):
    return {
        "claim": claim,
        "model": model,
        "run": run,
        "verdict": verdict_word,
        "parameters": parameters,
        "scope": scope,
        "reason": reason,
        "value": value,
    }


TABLE = pd.DataFrame(
    [
        _row("omega_jump", "small", "trained", "does not hold", 135e6, verdict.BELOW_RANGE),
        _row("attention_cooling", "small", "trained", "holds", 135e6, verdict.ANY_SIZE),
        _row("omega_jump", "big", "results file", "holds", 7e9, verdict.IN_RANGE),
        _row("stays_liquid", "big", "results file", "inconclusive", 7e9, verdict.ANY_SIZE),
        _row(
            "omega_jump", "random:small", "null: random weights", "does not hold", 135e6, verdict.BELOW_RANGE
        ),
        _row(
            "attention_cooling",
            "random:small",
            "null: random weights",
            "not testable here",
            135e6,
            verdict.ANY_SIZE,
        ),
        _row("scaling", "ladder", "trained", "holds", 1e6, verdict.ANY_SIZE),  # the ladder's: not counted
        _row("omega_jump", "small (shuffled)", "null: shuffled words", "holds", 135e6, verdict.BELOW_RANGE),
    ]
)


def test_count_glue_counts_trained_runs_and_twins_apart_and_leaves_out_scaling_and_other_nulls():
    glued = count_glue(TABLE)
    assert (
        glued["n_claims_measured"] == 3 and glued["n_trained_runs"] == 2 and glued["n_trained_verdicts"] == 4
    )
    assert (
        glued["trained_holds"],
        glued["trained_not"],
        glued["trained_inconclusive"],
        glued["trained_nt"],
    ) == (
        2,
        1,
        1,
        0,
    )
    assert (glued["twin_holds"], glued["twin_not"], glued["twin_nt"], glued["n_twin_verdicts"]) == (
        0,
        1,
        1,
        2,
    )
    assert glued["largest_run_m"] == 7000.0 and glued["smallest_run_m"] == 135.0
    assert glued["holds_list"] == "attention_cooling (small); omega_jump (big)"
    assert glued["holds_titles"] == "attention cools, small; Omega jumps (standardised), big"
    # by scope: a small model's large-model claim is never counted in range (the ladder's scaling row is)
    assert glued["scope_in_range"] == "3 holds, 1 inconclusive"
    assert glued["scope_below"] == "1 does not hold"


def test_count_glue_says_none_when_nothing_holds():
    glued = count_glue(TABLE[TABLE["verdict"] != "holds"])
    assert glued["holds_list"] == "none" and glued["trained_holds"] == 0


def test_the_heatmap_labels_each_cell_by_its_verdict_and_a_disagreeing_cell_mixed():
    glance = pd.DataFrame(
        {
            "small": ["holds", "does not hold"],
            "big": ["mixed: 1 holds, 1 does not hold", "not testable here"],
        },
        index=["omega_jump", "stays_liquid"],
    )
    fig = plots.verdict_heatmap(glance)
    texts = sorted(t.get_text() for t in fig.axes[0].texts)
    assert texts == ["mix", "n/t", "no", "yes"]
    matplotlib.pyplot.close(fig)
    fig = plots.verdict_heatmap(pd.DataFrame({"small": ["uninformative", "holds"]}, index=["a", "b"]))
    assert sorted(t.get_text() for t in fig.axes[0].texts) == ["twin", "yes"]
    assert all(len(label) <= 4 for label in plots.VERDICT_SHORT.values())  # they fit a narrow cell
    matplotlib.pyplot.close(fig)


def test_count_glue_counts_the_uninformative_the_weighed_and_what_is_in_range():
    table = pd.concat(
        [
            TABLE,
            pd.DataFrame(
                [
                    _row("stays_liquid", "small", "trained", "uninformative", 135e6, verdict.BELOW_RANGE),
                    _row(
                        "omega_jump_cleaned",
                        "small",
                        "trained",
                        "inconclusive",
                        135e6,
                        verdict.BELOW_RANGE,
                        reason="jump ...; but the judge's power ... (below 80%): no evidence of absence",
                    ),
                    _row("stays_liquid", "enc", "trained", "holds", 23e6, verdict.OTHER_KIND),
                ]
            ),
        ]
    )
    glued = count_glue(table)
    assert glued["trained_uninformative"] == 1 and glued["n_weighed_by_power"] == 1
    assert glued["n_in_range"] == 1  # the 7B results file's omega_jump
    assert glued["scope_other"] == "1 holds"
    assert glued["trained_inconclusive"] == 2


def _gemma(m: np.ndarray, d: int = 640):
    return types.SimpleNamespace(omega_mean=lambda: m, gamma=np.arange(len(m)) / (len(m) - 1), d_model=d)


def _landmarks(found, m):
    from latentbook.analysis import landmarks

    gamma = np.arange(len(m)) / (len(m) - 1)
    step = landmarks.raw_step(gamma, m, np.tile(m, (200, 1)))
    return types.SimpleNamespace(found=lambda: found, raw_step=step)


E2E = pd.DataFrame(
    {
        "claim": ["learned_basis_jump", "learned_basis_jump", "omega_jump"],
        "planted": ["present", "absent", "absent"],
        "holds": [0.9, 0.0, 0.2],
        "holds_ci_high": [0.95, 0.049, 0.3],
        "meets": [True, True, False],
        "n": [74, 80, 74],
    }
)


def test_first_screen_reads_where_raw_m_first_turns_solid_away_from_the_edges():
    solid = verdict.solid_threshold(640)
    m = np.full(19, 0.3)
    m[1] = solid + 0.05  # the first block's output: an edge depth, not read
    m[2:] = solid + 0.1
    m[2] = solid + 0.2
    table = pd.DataFrame(
        [
            _row("stays_liquid_cleaned", "gemma3-270m", "trained", "holds", 268e6, "", value=0.55),
            _row("omega_jump", "smollm2-135m", "trained", "holds", 135e6, ""),
        ]
    )
    onset = [("ID peak (TwoNN)", 0.5, (0.4, 0.6)), ("massive onset", 1 / 18, (0.0, 0.1))]
    screen = first_screen(table, _gemma(m), _landmarks(onset, m), E2E)
    assert screen["gemma_cross_gamma"] == pytest.approx(2 / 18)
    assert screen["gemma_cross_m"] == pytest.approx(solid + 0.2) and screen["gemma_solid"] == solid
    assert screen["gemma_clean_m"] == 0.55 and screen["gemma_onset"] == pytest.approx(1 / 18)
    assert screen["gemma_onset_words"].startswith("the depth where raw m rises most")
    assert screen["below_factor"] == pytest.approx(1.5e9 / 268e6)
    assert (screen["e2e_cells"], screen["e2e_cells_met"], screen["e2e_n"]) == (3, 2, 74)
    assert (screen["e2e_lb_found"], screen["e2e_lb_false_high"]) == (0.9, 0.049)  # not the m_z row's 0.3
    far = [("massive onset", 0.5, (0.45, 0.55))]
    assert first_screen(table, _gemma(m), _landmarks(far, m), E2E)["gemma_onset_words"].startswith("apart")
    flat = np.full(19, 0.3)
    none = first_screen(table, _gemma(flat), _landmarks([], flat), E2E)
    assert np.isnan(none["gemma_cross_gamma"]) and none["gemma_onset_words"] == "no onset found"


def test_binding_tco_scores_each_run_on_its_binding_states_and_leaves_shuffled_words_out(monkeypatch):
    from latentbook.analysis import tco
    from latentbook.study.chapters.verdict_tables import binding_tco

    monkeypatch.setattr(tco, "score_token_states", lambda states, written: (states, len(written)))
    runs = [
        types.SimpleNamespace(label=label, kind=kind, binding_states=lambda label=label: f"states of {label}")
        for label, kind in (("m", "trained"), ("random:m", "random twin"), ("m (shuffled)", "shuffled words"))
    ]
    scored = binding_tco(runs)
    assert list(scored) == ["m", "random:m"]
    assert scored["random:m"] == ("states of random:m", 96)  # the book's 96 binding programs


def _interval_row(claim, model, run, value, low, high):
    return _row(claim, model, run, "holds", 1e8, "", value=value) | {"ci_low": low, "ci_high": high}


def test_source_counts_reads_the_results_files_the_problems_and_the_rows_outside_their_interval():
    from latentbook.study.chapters.verdict_tables import results_files, source_counts

    table = pd.DataFrame(
        [
            _interval_row("omega_jump", "b.safetensors", "results file", 0.5, 0.4, 0.6),
            _interval_row("bimodality", "b.safetensors", "results file", 0.5, 0.6, 0.7),  # outside
            _interval_row("omega_jump", "a.safetensors", "results file", 0.5, 0.4, 0.6),
            _interval_row(
                "omega_jump", "small", "trained", float("nan"), 0.1, 0.2
            ),  # no estimate: not a problem
        ]
    )
    table.attrs["problems"] = ["c.safetensors: not a capture"]
    assert results_files(table) == ["a.safetensors", "b.safetensors"]
    assert source_counts(table) == {"n_results": 2, "n_problems": 1, "n_interval_problems": 1}


def test_the_grid_puts_the_measured_runs_first_in_table_order_and_titles_the_claims():
    from latentbook.study.chapters.verdict_tables import grid

    runs = [
        ("zeta", "trained"),
        ("random:zeta", "null: random weights"),
        ("zeta (shuffled)", "null: shuffled words"),
    ]
    runs += [("alpha", "trained"), ("a.safetensors", "results file")]
    rows = [_row("omega_jump", model, run, "holds", 1e8, "") for model, run in runs]
    rows.append(_row("scaling", "all trained runs", "trained", "not testable here", 0.0, ""))
    glance = grid(pd.DataFrame(rows))
    assert list(glance.columns) == [
        "zeta",
        "random:zeta",
        "alpha",
        "a.safetensors",
        "all trained runs",
        "zeta (shuffled)",
    ]
    assert list(glance.index) == [verdict.CLAIM_TITLES["omega_jump"], verdict.CLAIM_TITLES["scaling"]]


def _reading_table():
    from latentbook.study.chapters.verdict_reading import BOOK_MODELS, ROWS

    rows = []
    for i, model in enumerate(BOOK_MODELS):
        for j, (_, claim) in enumerate(ROWS):
            rows.append(
                _row(
                    claim,
                    model,
                    "trained",
                    f"{claim} on {model}",
                    1e8,
                    "",
                    f"why {claim} {model}",
                    i + j / 10,
                )
            )
        rows.append(
            _row("stays_liquid", f"random:{model}", "null: random weights", "holds", 1e8, "", value=9.0)
        )
    ladder = (("l1", "holds"), ("l2", "inconclusive"), ("l3", "holds"), ("l4", "not testable here"))
    rows += [_row("tco", name, "ladder", word, 1e6, "") for name, word in ladder]
    rows.append(_row("tco", "l5", "ladder, along training", "does not hold", 1e6, ""))
    rows.append(_row("scaling", "all trained runs", "trained", "not testable here", 0.0, "", "too small"))
    return pd.DataFrame(rows)


def test_reading_glue_reads_each_models_rows_by_their_claims_and_the_ladders_tco_by_verdict():
    from latentbook.study.chapters.verdict_reading import BOOK_MODELS, reading_glue

    def rate(accuracy):
        return types.SimpleNamespace(accuracy=accuracy)

    tco = {
        m: types.SimpleNamespace(control=rate(0.6 + i / 10), control_bag=rate(0.5 - i / 10))
        for i, m in enumerate(BOOK_MODELS)
    }
    runs = {m: types.SimpleNamespace(transition=None) for m in BOOK_MODELS}
    glued = reading_glue(_reading_table(), runs, tco)
    assert glued["critical_gemma3"] == "critical_depth on gemma3-270m"
    assert glued["concentration_minilm"] == "spectral_concentration on minilm-l6"
    assert glued["liquid_m_gemma3"] == 1.0 and glued["liquid_clean_m_gemma3"] == pytest.approx(
        1.1
    )  # not the twin's
    assert glued["raw_transition_smollm2"] == "too few depths for a fit"
    assert (
        glued["tco_control_minilm"] == pytest.approx(0.8) and glued["tco_bag"] == 0.5
    )  # the first model's bag
    assert glued["critical_reason_minilm"] == "why critical_depth minilm-l6"
    assert glued["massive_step_reason_gemma3"] == "why massive_step gemma3-270m"
    assert (glued["tco_ladder_n"], glued["tco_ladder_holds"], glued["tco_ladder_not"]) == (
        4,
        "l1, l3",
        "none",
    )
    assert (glued["tco_ladder_inconclusive"], glued["tco_ladder_nt"]) == ("l2", "l4")
    assert (glued["scaling"], glued["scaling_reason"]) == ("not testable here", "too small")


def test_ladder_glue_counts_the_diagnostics_across_and_along_and_says_not_measured_without_a_ladder():
    from latentbook.study.chapters.verdict_reading import FINDINGS, ladder_glue

    rows = [_row("reasoning_diagnostics", f"d{i}", "ladder", w, 1e6, "") for i, w in enumerate("aab")]
    rows.append(_row("reasoning_diagnostics", "d9", "ladder, along training", "b", 1e6, ""))
    rows.append(_row("tco", "d0", "ladder", "a", 1e6, ""))  # another claim: not counted
    glued = ladder_glue(pd.DataFrame(rows), None)
    assert (glued["ladder_n"], glued["ladder_verdicts"]) == (3, "2 a, 1 b")
    assert (glued["ladder_along_n"], glued["ladder_along_verdicts"]) == (1, "1 b")
    assert all(glued[f"ladder_{key}"] == "not measured" for key in FINDINGS)
    assert ladder_glue(pd.DataFrame(rows[-1:]), None)["ladder_verdicts"] == "none"
