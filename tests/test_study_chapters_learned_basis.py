"""study.chapters.learned_basis_tables: chapter 3's Omega in a learned basis, model beside twin, on captures with a
known answer (a rotated sparse code switched on halfway, tokens correlated within a prompt)."""

import numpy as np
import pytest

from latentbook.analysis import cloud_families, learned_basis, omega, synthetic
from latentbook.study.chapters import learned_basis_tables as lbt

D, N_PROMPTS, PER_PROMPT = 96, 128, 4


def _capture(clouds, name):
    states = np.stack([c.x for c in clouds]).astype(np.float32)
    positions = 1 + np.arange(len(clouds[0].x)) % PER_PROMPT  # position 0 (the sink) is never sampled
    return synthetic.as_capture(states, prompt_ids=clouds[0].prompt_ids, positions=positions, name=name)


@pytest.fixture(scope="module")
def captures():
    options = {"n_prompts": N_PROMPTS, "per_prompt": PER_PROMPT, "d": D}
    gaussian = [cloud_families.noise("gaussian", seed=s, **options) for s in range(5)]
    code = [cloud_families.rotated_code(1.0, seed=10 + s, **options) for s in range(3)]
    # the same prompts at every depth: the code's clouds share the Gaussian ones' prompt ids
    code = [cloud_families.Cloud(c.x, gaussian[0].prompt_ids, c.labels) for c in code]
    return {
        "toy-1m": _capture(gaussian[:2] + code, "toy-1m"),
        "random:toy-1m": _capture(gaussian, "random:toy-1m"),
    }


def test_nearest_depths_are_captured_depths_each_once(captures):
    cap = captures["toy-1m"]
    assert learned_basis.nearest_depths(cap, (0.0, 0.1, 0.5, 0.49, 1.0)) == [0, 2, 4]


@pytest.fixture(scope="module")
def profiles(captures):
    """The profiles ``measure(learned=True)`` keeps, at every depth of the toy captures."""
    return {label: learned_basis.capture_profile(cap, n_boot=200) for label, cap in captures.items()}


def test_the_table_finds_the_code_where_it_was_planted_and_not_in_the_twin(profiles):
    table = lbt.learned_table(profiles, ["toy-1m"])
    assert list(table["gamma"]) == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert (table.loc[:1, "low"] <= 0).all() and (0 <= table.loc[:1, "high"]).all()  # Gaussian in both
    assert (table.loc[2:, "low"] > 0.02).all()  # the rotated code, off every axis, read in the learned basis
    assert list(table["found"]) == [False, False, True, True, True] and not table["twin found"].any()
    assert (table["difference"] == table["m_ICA"] - table["twin m_ICA"]).all()


def test_the_row_holds_at_the_step_where_the_code_switches_on(profiles):
    rises = lbt.rise_table(profiles, ["toy-1m"])
    assert list(rises["gamma_from"]) == [0.0, 0.25, 0.5, 0.75]
    switch = rises.loc[1]
    assert switch["low"] > learned_basis.RISE_BAR  # 0.25 -> 0.5: the code appears
    assert (rises.drop(index=1)["low"] < learned_basis.RISE_BAR).all()
    assert set(rises["verdict"]) == {"holds"}

    table = lbt.learned_table(profiles, ["toy-1m"])
    glued = lbt.learned_glue(table, rises)
    assert glued["lb_gauss"] == pytest.approx(omega.gaussian_omega(32))
    assert (glued["lb_bar"], glued["lb_n_holds"]) == (learned_basis.RISE_BAR, 1)
    assert (glued["toy_lb_n"], glued["toy_lb_n_above"], glued["toy_lb_n_below"]) == (5, 3, 0)
    assert glued["toy_lb_min"] == pytest.approx(table["difference"].min())
    assert glued["toy_lb_gmax"] >= 0.5 and glued["toy_lb_max"] == table["difference"].max()
    assert glued["toy_lb_twin_max"] == table["twin m_ICA"].max()
    assert (glued["toy_lb_verdict"], glued["toy_lb_rise_from"], glued["toy_lb_rise_to"]) == (
        "holds",
        0.25,
        0.5,
    )
    assert glued["toy_lb_rise_low"] <= glued["toy_lb_rise"] <= glued["toy_lb_rise_high"]


def test_a_twin_read_against_another_twin_does_not_hold(profiles, captures):
    other = {"toy-1m": profiles["random:toy-1m"]}
    options = {"n_prompts": N_PROMPTS, "per_prompt": PER_PROMPT, "d": D}
    noise = [cloud_families.noise("gaussian", seed=20 + s, **options) for s in range(5)]
    noise = [cloud_families.Cloud(c.x, captures["toy-1m"].vectors.prompt_ids, c.labels) for c in noise]
    other["random:toy-1m"] = learned_basis.capture_profile(_capture(noise, "random:toy-1m"), n_boot=200)
    rises = lbt.rise_table(other, ["toy-1m"])
    assert set(rises["verdict"]) == {"does not hold"}
