"""study.chapters.learned_basis_tables: chapter 3's Omega in a learned basis, model beside twin, on captures with a
known answer (a rotated sparse code switched on halfway, tokens correlated within a prompt)."""

import numpy as np
import pytest

from latentbook.analysis import cloud_families, omega, synthetic
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
    assert lbt.nearest_depths(cap, (0.0, 0.1, 0.5, 0.49, 1.0)) == [0, 2, 4]


def test_the_table_finds_the_code_where_it_was_planted_and_not_in_the_twin(captures):
    table = lbt.learned_table(captures, ["toy-1m"], gammas=(0.0, 0.5, 1.0), n_boot=100)
    assert list(table["gamma"]) == [0.0, 0.5, 1.0]
    assert table.loc[0, "low"] <= 0 <= table.loc[0, "high"]  # Gaussian in both: no excess
    assert (table.loc[1:, "low"] > 0.02).all()  # the rotated code, off every axis, read in the learned basis
    assert list(table["found"]) == [False, True, True] and not table["twin found"].any()
    assert (table["difference"] == table["m_ICA"] - table["twin m_ICA"]).all()

    glued = lbt.learned_glue(table)
    assert glued["lb_gauss"] == pytest.approx(omega.gaussian_omega(32))
    assert (glued["toy_lb_n"], glued["toy_lb_n_above"], glued["toy_lb_n_below"]) == (3, 2, 0)
    assert glued["toy_lb_min"] == pytest.approx(table["difference"].min())
    assert glued["toy_lb_gmax"] in (0.5, 1.0) and glued["toy_lb_max"] == table["difference"].max()
    assert glued["toy_lb_twin_max"] == table["twin m_ICA"].max()
