"""Every landmark of a capture (study.run_landmarks) and chapter 9's tables, on captures with planted landmarks built
by the same accumulators as a model's capture (synthetic.as_capture)."""

import dataclasses
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from latentbook.analysis.synthetic import as_capture, curved_manifold
from latentbook.errors import InvalidInputError
from latentbook.study import run_landmarks
from latentbook.study.chapters import landmarks_tables as tables

N_PROMPTS, PER_PROMPT, D = 100, 5, 96  # positions 0..4: position 0 is the sink, left out
DIMENSIONS = (2, 3, 4, 5, 8, 12, 8, 5, 4, 3, 3, 2, 2)  # Gride's planted peak at depth 5 of 12
ONSET = 9


def planted_capture() -> tuple:
    rng = np.random.default_rng(0)
    states = []
    for depth, k in enumerate(DIMENSIONS):
        cloud = curved_manifold(N_PROMPTS, PER_PROMPT, k, D, rho=0.2, curvature=0.3, seed=depth).x
        cloud = cloud / np.linalg.norm(cloud, axis=1, keepdims=True).mean() + 0.01 * rng.standard_normal(
            cloud.shape
        )
        if depth >= ONSET:
            cloud[::PER_PROMPT, 7] = 400.0  # a massive coordinate in every prompt's first token
        states.append(cloud)
    positions = np.tile(np.arange(PER_PROMPT), N_PROMPTS)
    prompts = np.repeat(np.arange(N_PROMPTS), PER_PROMPT)
    return (
        as_capture(np.stack(states), prompts, positions, n_vectors=N_PROMPTS * PER_PROMPT),
        prompts,
        positions,
    )


@pytest.fixture(scope="module")
def planted():
    cap, _, _ = planted_capture()
    kl = np.linspace(4.0, 0.0, 13)[:, None] * np.ones((1, 60))
    kl[8:] = 0.0  # converged from depth 8 on
    lens = run_landmarks.Lens(kl, cap.vectors.prompt_ids[cap.vectors.positions > 0][:60])
    return cap, run_landmarks.depth_landmarks(cap, "planted", lens=lens, n_boot=100)


def test_the_sample_leaves_out_the_first_position(planted):
    cap, _ = planted
    vectors, prompts = run_landmarks.sample(cap)
    assert vectors.shape == (13, N_PROMPTS * (PER_PROMPT - 1), D)
    assert np.abs(vectors[ONSET:, :, 7]).max() < 50  # the sink's massive coordinate is not in it


def test_planted_landmarks_are_found_where_planted(planted):
    cap, result = planted
    table = pd.DataFrame(result.table()).set_index("landmark")
    assert table.loc["ID peak (Gride)", "gamma"] == pytest.approx(5 / 12)
    assert table.loc["ID peak (Gride)", "near 0.42"]
    assert table.loc["massive onset", "gamma"] == pytest.approx(ONSET / 12)
    assert table.loc["massive onset", "found"] and not table.loc["massive onset", "near 0.42"]
    assert table.loc["lens convergence", "gamma"] == pytest.approx(8 / 12)
    assert not table["with the Omega jump"].any()  # no Omega jump was planted, none is coincided with


def test_a_jump_is_coincided_with_only_by_overlapping_landmarks(planted):
    _, result = planted
    jump = _jump()
    table = pd.DataFrame(dataclasses.replace(result, omega_jump=jump).table()).set_index("landmark")
    assert table.loc["ID peak (Gride)", "with the Omega jump"]
    assert not table.loc["massive onset", "with the Omega jump"]
    assert not table.loc["Omega jump (m_z)", "with the Omega jump"]  # a jump does not coincide with itself
    absent = SimpleNamespace(
        has_transition=False, gamma_c=0.42, ci=(0.40, 0.45), amplitude=0.0, reason="flat"
    )
    table = pd.DataFrame(dataclasses.replace(result, omega_jump=absent).table()).set_index("landmark")
    assert not table["with the Omega jump"].any()


def test_an_end_peak_is_no_landmark(planted):
    cap, _ = planted
    rising = cap.at_depths(list(range(0, 6)))  # depths 0..5: the ID rises to the last depth read
    result = run_landmarks.depth_landmarks(rising, "rising", n_boot=50)
    row = pd.DataFrame(result.table()).set_index("landmark").loc["ID peak (Gride)"]
    assert not row["found"] and np.isnan(row["gamma"]) and "no interior peak" in row["what"]


def test_a_one_layer_model_reads_what_two_depths_allow(planted):
    """Two depths (a 1-layer model, as the ladder's l1 rungs): no lens convergence past the edge depths, no
    interior ID peak, no Omega fit; each row says why instead of the whole table failing."""
    cap, _ = planted
    two = cap.at_depths([0, 1])
    lens = run_landmarks.Lens(np.ones((2, 60)), cap.vectors.prompt_ids[cap.vectors.positions > 0][:60])
    result = run_landmarks.depth_landmarks(two, "one layer", lens=lens, n_boot=50)
    table = pd.DataFrame(result.table()).set_index("landmark")
    assert not table["found"].any()
    assert "2 depths: convergence is read past the first 2" in table.loc["lens convergence", "what"]
    assert table.loc["Omega jump (m_z)", "what"] == "too few depths for the fit"


def test_too_few_tokens_are_refused():
    cap = as_capture(np.random.default_rng(0).standard_normal((4, 10, 8)))
    with pytest.raises(InvalidInputError, match="sampled tokens"):
        run_landmarks.depth_landmarks(cap)


def test_planted_table_reads_clean_clouds_within_15_percent():
    table = tables.planted_table()
    clean = table[table["noise"] == 0]
    assert clean["TwoNN error"].abs().max() < 0.15 and clean["Gride error"].abs().max() < 0.15
    glued = tables.planted_glue(table)
    assert glued["planted_noisy_two_nn"] > glued["planted_noisy_gride"]


def test_landmark_glue_counts_the_trained_runs_only(planted):
    _, result = planted
    rows = pd.DataFrame(result.table())
    twin = rows.assign(run="random:planted")
    glued = tables.landmark_glue(pd.concat([rows, twin]), ["planted"])
    assert (
        glued["n_trained_found"] == 4
    )  # two ID peaks, the onset and the lens; the jump row is not a landmark
    assert glued["n_trained_near"] == int(rows["near 0.42"].sum())
    assert glued["planted_onset"] == pytest.approx(ONSET / 12)
    assert glued["n_trained_jumps"] == 0 and glued["n_trained_with_jump"] == 0
    assert "massive onset" not in glued["near_list"]


def test_profile_ends_glue_reads_each_runs_update_norm_and_two_nn_ends():
    def run(updates, two_nn):
        return SimpleNamespace(
            updates=SimpleNamespace(mean=np.array(updates)),
            id_two_nn=SimpleNamespace(dimension=np.array(two_nn)),
        )

    results = {"smollm2-135m": run([0.9, 0.1, 0.3], [4, 9, 6]), "random:smollm2-135m": run([2, 4, 1], [7, 5])}
    glued = tables.profile_ends_glue(results)
    assert glued == {
        "smollm2_update_first": 0.9,
        "smollm2_update_last": 0.3,
        "smollm2_update_min": 0.1,
        "smollm2_update_max": 0.9,
        "smollm2_two_nn_first": 4.0,
        "smollm2_two_nn_last": 6.0,
        "random_smollm2_update_first": 2.0,
        "random_smollm2_update_last": 1.0,
        "random_smollm2_update_min": 1.0,
        "random_smollm2_update_max": 4.0,
        "random_smollm2_two_nn_first": 7.0,
        "random_smollm2_two_nn_last": 5.0,
    }


def test_the_landmark_figure_has_three_panels_per_model_with_its_runs(planted):
    from latentbook.figure_standard import check as figure_check
    from latentbook.view.landmark_plots import plot_landmarks

    _, result = planted
    labels = ("smollm2-135m", "random:smollm2-135m", "gemma3-270m")
    results = {label: dataclasses.replace(result, label=label) for label in labels}
    fig = plot_landmarks(results, ["smollm2-135m", "gemma3-270m"])
    axes = fig.axes
    assert len(axes) == 6
    assert [ax.get_title(loc="left") for ax in axes[::3]] == ["smollm2-135m", "gemma3-270m"]
    for ax, runs in ((axes[0], labels[:2]), (axes[1], labels[:2]), (axes[4], labels[2:])):
        drawn = [line for line in ax.get_lines() if not line.get_label().startswith("_")]
        assert [line.get_label() for line in drawn] == list(runs)
    gride = [line for line in axes[3].get_lines() if line.get_label() == "gemma3-270m"][0]
    np.testing.assert_allclose(gride.get_ydata(), result.id_gride.dimension)
    assert figure_check.problems(fig) == []


def _jump(gamma_c=0.42, ci=(0.40, 0.45), has=True, amplitude_ci=(0.15, 0.25)):
    return SimpleNamespace(
        has_transition=has, gamma_c=gamma_c, ci=ci, amplitude=0.2, amplitude_ci=amplitude_ci, reason="flat"
    )


def test_judge_landmark_cases():
    from latentbook.analysis.verdict import judge_landmark

    assert judge_landmark(None, [], 6)[0] == "not testable here"
    assert (
        judge_landmark(_jump(has=False), [("massive onset", 0.42, (0.42, 0.42))], 31)[0]
        == "not testable here"
    )
    # a step the critical depth would not call a transition has no gamma_c to place, wherever it lies
    small = _jump(amplitude_ci=(0.004, 0.2))
    assert judge_landmark(small, [("massive onset", 0.42, (0.42, 0.42))], 31) == (
        "not testable here",
        "no Omega transition to place: jump +0.200 [0.004, 0.200] is not above 0.053",
    )
    assert judge_landmark(_jump(), [], 31)[0] == "does not hold"
    assert judge_landmark(_jump(), [("massive onset", 0.40, (0.40, 0.40))], 31)[0] == "holds"
    assert (
        judge_landmark(_jump(), [("massive onset", 0.47, (0.47, 0.47))], 31)[0] == "does not hold"
    )  # outside CI
    assert (
        judge_landmark(_jump(), [("ID peak", 0.60, (0.30, 0.90))], 31)[0] == "inconclusive"
    )  # overlaps, far
    assert judge_landmark(_jump(), [("ID peak", 0.60, (0.55, 0.90)), ("lens", 0.1, (0.0, 0.2))], 31)[0] == (
        "does not hold"
    )


def test_landmark_calibration_reads_the_planted_families():
    from latentbook.study import landmark_calibration as lc

    records = lc.run_case(0) + lc.run_case(1)
    table = lc.confusion(records).set_index("family")
    near, far, none, massive, both, code, sink = (f.name for f in lc.FAMILIES)
    assert table.loc[near, "holds"] == 2
    assert table.loc[far, "holds"] == 0 and table.loc[none, "holds"] == 0
    assert table.loc[none, "not testable"] == 2  # no jump: nothing to place
    assert not table.loc[far, "meets target"]  # 0 of 2 cannot show a 5 % rate
    # the massive-step row: raw m's step is the massive onset where one is planted in every token, never where a
    # code makes the step and the massive coordinate is absent or elsewhere
    assert table.loc[massive, "holds"] == table.loc[both, "holds"] == 2
    assert table.loc[code, "does not hold"] == table.loc[sink, "does not hold"] == 2
    assert set(table.loc[[massive, both, code, sink], "claim"]) == {"massive_step"}


def test_landmark_calibration_file_round_trip(tmp_path):
    import json

    from latentbook.study import landmark_calibration as lc

    path = tmp_path / lc.FILE
    with pytest.raises(InvalidInputError, match="calibrate_landmarks"):
        lc.load_record(tmp_path)
    path.parent.mkdir(parents=True)
    records = [{"family": f.name, "case": 0, "verdict": "holds", "reason": ""} for f in lc.FAMILIES]
    path.write_text(json.dumps({"provenance": {"source_hash": lc.source_hash()}, "records": records}))
    loaded = lc.load_record(tmp_path)
    assert loaded.current and loaded.table["holds"].tolist() == [1] * len(lc.FAMILIES)
    path.write_text(json.dumps({"provenance": {"source_hash": "old"}, "records": records}))
    assert not lc.load_record(tmp_path).current


def test_the_report_shows_every_landmark_and_the_landmark_row(planted):
    from latentbook.study.capture_report import capture_report

    cap, _ = planted
    report = capture_report(cap, "planted", n_boot=100)
    text = report.text()
    section = text[text.index("Other clocks of depth") :]
    assert "massive onset" in section and f"{ONSET / 12:.3f}" in section
    assert "not computed: the lens needs the model" in " ".join(section.split())
    assert max(len(line) for line in text.splitlines()) <= 100
    row = report.rows.set_index("claim").loc["landmark_coincidence"]
    assert row["verdict"] in ("not testable here", "does not hold", "holds", "inconclusive")
    assert row["reason"] == run_landmarks.depth_landmarks(cap, "planted").verdict()[1]


def test_the_calibration_script_never_replaces_a_file_that_is_not_its_record(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    foreign = tmp_path / "capture.safetensors"
    foreign.write_bytes(b"not a calibration record")
    done = subprocess.run(
        [
            sys.executable,
            str(root / "tools" / "calibrate_landmarks.py"),
            "--n-cases",
            "1",
            "--out",
            str(foreign),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode != 0 and "not a calibration record" in done.stderr
    assert foreign.read_bytes() == b"not a calibration record"


def test_raw_step_finds_the_largest_one_layer_rise_and_its_intervals():
    from latentbook.analysis import landmarks

    gamma = np.arange(13) / 12
    m = np.full(13, 0.3)
    m[1] = 0.4  # an edge rise of 0.1
    m[5:] = 0.65  # the largest rise, at depth 5
    m[6:] = 0.7
    rng = np.random.default_rng(0)
    draws = m + 0.005 * rng.standard_normal((200, 13))
    step = landmarks.raw_step(gamma, m, draws)
    assert step.gamma == pytest.approx(5 / 12) and step.size == pytest.approx(0.35)
    assert step.ci == pytest.approx((5 / 12, 5 / 12))  # every draw finds the same depth
    assert step.size_ci[0] < 0.35 < step.size_ci[1] and step.size_ci[1] - step.size_ci[0] < 0.05
    # two rises of nearly one size: the depth's interval spans both, and holds the estimate
    m2 = m.copy()
    m2[9:] = 0.7 + 0.349
    noisy = landmarks.raw_step(gamma, m2, m2 + 0.01 * rng.standard_normal((200, 13)))
    assert noisy.ci[0] <= noisy.gamma <= noisy.ci[1] and noisy.ci[1] - noisy.ci[0] >= 4 / 12 - 1e-9
    with pytest.raises(InvalidInputError, match="finite"):
        landmarks.raw_step(gamma, np.where(gamma > 0.5, np.nan, m), draws)
    with pytest.raises(InvalidInputError, match="one value per depth"):
        landmarks.raw_step(gamma, m[:-1], draws)


def test_judge_massive_step_cases():
    from latentbook.analysis import landmarks, verdict

    step = landmarks.RawStep(0.42, (0.40, 0.44), 0.3, (0.28, 0.32))
    assert verdict.judge_massive_step(step, 0.42, True)[0] == "holds"
    assert verdict.judge_massive_step(step, 0.46, True)[0] == "holds"  # within the tolerance of both
    assert verdict.judge_massive_step(step, 0.42, False)[0] == "does not hold"  # no onset at all
    assert verdict.judge_massive_step(step, 0.83, True)[0] == "does not hold"  # far from the step
    wide = landmarks.RawStep(0.42, (0.30, 0.70), 0.3, (0.28, 0.32))
    assert verdict.judge_massive_step(wide, 0.60, True)[0] == "inconclusive"  # inside the interval, not near
    small = landmarks.RawStep(0.42, (0.40, 0.44), 0.04, (0.03, 0.05))
    assert verdict.judge_massive_step(small, 0.42, True)[0] == "not testable here"  # no step to explain
    nan = landmarks.RawStep(0.42, (0.40, 0.44), 0.3, (float("nan"), 0.32))
    assert verdict.judge_massive_step(nan, 0.42, True)[0] == "not testable here"  # NaN is no step
