"""study.chapters.prototype_tables: chapter 6's prototypes against one heavy-tailed cloud, model beside twin, on
captures with a known answer (tokens correlated within a prompt)."""

import numpy as np
import pytest

from latentbook.analysis import cloud_families, prototypes, synthetic
from latentbook.study.chapters import prototype_tables as pt

D, N_PROMPTS, PER_PROMPT = 64, 128, 4


def _capture(cloud, name, n_depths=3):
    states = np.stack([cloud.x] * n_depths).astype(np.float32)
    positions = 1 + np.arange(len(cloud.x)) % PER_PROMPT  # position 0 (the sink) is never sampled
    return synthetic.as_capture(states, prompt_ids=cloud.prompt_ids, positions=positions, name=name)


@pytest.fixture(scope="module")
def table():
    options = {"n_prompts": N_PROMPTS, "per_prompt": PER_PROMPT, "d": D}
    captures = {
        "toy-1m": _capture(cloud_families.rotated_prototypes(1.0, n_classes=4, seed=1, **options), "toy-1m"),
        "random:toy-1m": _capture(cloud_families.t_cloud(3.0, seed=2, **options), "random:toy-1m"),
    }
    return pt.prototype_table(captures, ["toy-1m"], gammas={"late": 0.6}, n_boot=200)


def test_four_planted_prototypes_are_called_and_one_t_cloud_is_not(table):
    model, twin = table.set_index("run").loc["toy-1m"], table.set_index("run").loc["random:toy-1m"]
    assert (
        model["depth"] == "late"
        and model["gamma"] == 0.5
        and model["prototypes"]
        and model["low"] > prototypes.MARGIN
    )
    assert model["k"] == 4 and not model["k lower bound"]
    assert not twin["prototypes"] and twin["high"] < 0  # one heavy-tailed cloud tells the twin better


def test_the_glue_reads_each_run_and_counts_the_calls(table):
    glued = pt.prototype_glue(table)
    assert (glued["pt_n_models"], glued["pt_late_n_trained"], glued["pt_late_n_twins"]) == (1, 1, 0)
    assert (glued["pt_n_tests"], glued["pt_n_lower_bounds"]) == (2, 0)
    assert glued["toy_pt_late_gamma"] == 0.5
    assert glued["toy_pt_late_k"] == 4 and glued["toy_pt_late_called"] == "prototypes"
    assert glued["random_toy_pt_late_called"] == "one cloud or undecided"
    row = table.set_index("run").loc["toy-1m"]
    got = (glued["toy_pt_late_gain"], glued["toy_pt_late_low"], glued["toy_pt_late_high"])
    assert got == (row.gain, row.low, row.high)
    assert glued["toy_pt_late_spikes"] == row.n_spikes and glued["pt_k_max"] == prototypes.K_MAX
