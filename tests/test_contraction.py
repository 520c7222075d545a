"""Transverse contraction on captures: planted chains through the real accumulators, and a null without it."""

from __future__ import annotations

import numpy as np
import pytest

import latentbook as lb
from latentbook.analysis import contraction, flow, synthetic
from latentbook.capturing import toys


def _chain_capture(
    q: float, n_prompts: int = 100, per_prompt: int = 4, d: int = 24, steps: int = 8, seed: int = 0
):
    chain = synthetic.contraction_chain(
        n_prompts * per_prompt, d, steps, q, k_signal=4, signal_scale=10.0, seed=seed
    )
    ids = np.repeat(np.arange(n_prompts), per_prompt)
    positions = np.tile(np.arange(1, per_prompt + 1), n_prompts)
    return synthetic.as_capture(chain.states, ids, positions, n_vectors=n_prompts * per_prompt)


def test_transverse_share_matches_flow_transverse_variance():
    chain = synthetic.contraction_chain(300, 16, 3, 0.7, k_signal=4, seed=1)
    share = contraction.transverse_share(chain.states, 4)
    total = np.array([np.trace(np.cov(s, rowvar=False, bias=True)) for s in chain.states])
    np.testing.assert_allclose(share, flow.transverse_variance(chain.states, 4) * 12 / total, rtol=1e-8)


def test_weights_equal_duplicated_tokens():
    x = np.random.default_rng(2).standard_normal((1, 40, 12)) * np.linspace(0.3, 3, 12)
    w = np.random.default_rng(3).integers(0, 3, 40)
    duplicated = np.repeat(x, w, axis=1)
    np.testing.assert_allclose(
        contraction.transverse_share(x, 3, w.astype(float)), contraction.transverse_share(duplicated, 3)
    )


@pytest.mark.parametrize("q", [0.7, 0.85])
def test_planted_q_is_recovered_with_an_interval_that_excludes_one(q):
    fit = contraction.contraction_fit(_chain_capture(q), 0, 8, k=4, n_boot=40)
    assert fit.q == pytest.approx(q, abs=0.02)
    assert fit.ci[0] < fit.q < fit.ci[1] < 1.0


def test_no_contraction_gives_q_near_one_and_an_interval_around_it():
    fit = contraction.contraction_fit(_chain_capture(1.0), 0, 8, k=4, n_boot=40)
    assert fit.q == pytest.approx(1.0, abs=0.02)
    assert fit.ci[0] < 1.0 < fit.ci[1]


def test_normalising_removes_a_growing_scale():
    """A stream whose norm grows by 1.5 per layer but keeps its shape has no contraction."""
    cap = _chain_capture(1.0)
    grown = synthetic.as_capture(
        np.stack([cap.token_vectors(depth) * 1.5**depth for depth in range(cap.n_depths)]),
        cap.vectors.prompt_ids,
        cap.vectors.positions,
        n_vectors=400,
    )
    assert contraction.contraction_fit(grown, 0, 8, k=4, n_boot=20).q == pytest.approx(1.0, abs=0.02)


def test_contraction_after_uses_the_window_after_the_split_and_refuses_too_few_depths():
    cap = _chain_capture(0.8)
    fit = contraction.contraction_after(cap, split=0.42, k=4, n_boot=20)
    assert (fit.start, fit.stop) == (3, 7)  # gamma 3/8 <= 0.42 < 4/8 .. 7/8 (the last depth is an edge)
    with pytest.raises(lb.InvalidInputError, match="Fewer than 2"):
        contraction.contraction_after(cap, split=0.8, k=4, n_boot=20)


def test_fast_bootstrap_shares_match_exact_ones():
    x = np.random.default_rng(4).standard_normal((200, 60)) * np.geomspace(5, 0.2, 60)
    weights = np.random.default_rng(5).multinomial(200, np.full(200, 1 / 200), size=8).astype(float)
    _, _, directions = contraction._principal(x, 25)
    fast = contraction._share_draws(x, 5, weights, directions)
    exact = [contraction.transverse_share(x[None], 5, w)[0] for w in weights]
    np.testing.assert_allclose(fast, exact, rtol=0.02)


@pytest.mark.parametrize("n", [30, 120])
def test_randomised_principal_directions_agree_with_the_svd(n):
    x = np.random.default_rng(n).standard_normal((n, 60)) * np.geomspace(4, 0.1, 60)
    total, lam, directions = contraction._principal(x, 5)
    _, s, vt = np.linalg.svd(x - x.mean(0), full_matrices=False)
    assert total == pytest.approx(np.sum(s**2) / n)
    np.testing.assert_allclose(lam, s[:5] ** 2 / n, rtol=1e-5)
    np.testing.assert_allclose(np.abs(np.sum(directions * vt[:5].T, axis=0)), 1.0, atol=1e-5)


# --- the gain of the blocks' map (capturing.jacobian -> transverse_gain -> judge_transverse_gain) ---------------


def _gains(n_prompts: int = 12, n_blocks: int = 4, seed: int = 0):
    """TransverseGains of a planted toy, measured by forward-mode AD."""
    import torch

    from latentbook.capturing import jacobian

    toy = toys.block_toy(0.9, n_layers=n_blocks, n_prompts=n_prompts, prompt_spread=0.05, seed=seed)
    with torch.no_grad():
        return jacobian.block_gains(toy.anatomy, toy.batches, start=0, stop=n_blocks, k=toy.k, n_directions=2)


def _fit(q: float, ci: tuple[float, float], n_prompts: int = 16) -> contraction.GainFit:
    return contraction.GainFit("m", q, ci, np.full(3, q), np.tile(ci, (3, 1)), 12, 15, 10, n_prompts, 1, 0.95)


def test_bootstrap_weights_are_whole_prompts():
    """Weight 2 on a prompt equals that prompt's rows twice: draws resample prompts, the same at every block."""
    import dataclasses

    gains = _gains()
    w = np.random.default_rng(1).integers(0, 3, gains.n_prompts)
    repeated = dataclasses.replace(
        gains,
        out_sq=np.repeat(gains.out_sq, w, axis=0),
        in_sq=np.repeat(gains.in_sq, w, axis=0),
        state_sq=np.repeat(gains.state_sq, w, axis=0),
        n_tokens=np.repeat(gains.n_tokens, w),
    )
    np.testing.assert_allclose(
        contraction.block_gain_draws(gains, w[None].astype(float)),
        contraction.block_gain_draws(repeated, np.ones((1, int(w.sum())))),
    )


def test_transverse_gain_interval_contains_the_estimate_and_refuses_bad_input():
    import dataclasses

    gains = _gains()
    fit = contraction.transverse_gain(gains, n_boot=100)
    assert fit.ci[0] <= fit.q <= fit.ci[1]
    assert fit.gains.shape == (4,) and fit.gains_ci.shape == (4, 2)
    assert np.all(fit.gains_ci[:, 0] <= fit.gains) and np.all(fit.gains <= fit.gains_ci[:, 1])
    with pytest.raises(lb.InvalidInputError, match="NaN"):
        contraction.transverse_gain(dataclasses.replace(gains, out_sq=gains.out_sq * np.nan))
    with pytest.raises(lb.InvalidInputError, match="n_boot"):
        contraction.transverse_gain(gains, n_boot=5)
    with pytest.raises(lb.InvalidInputError, match="shape"):
        contraction.transverse_gain(dataclasses.replace(gains, in_sq=gains.in_sq[:, :1]))


def test_judge_transverse_gain_needs_a_minimum_effect_and_to_beat_the_twin():
    judge = contraction.judge_transverse_gain
    twin = _fit(0.98, (0.975, 0.985))
    assert judge(_fit(0.90, (0.88, 0.92)), twin)[0] == "holds"
    assert judge(_fit(0.90, (0.88, 0.92)))[0] == "holds"
    assert (
        judge(_fit(0.97, (0.965, 0.975)), twin)[0] == "does not hold"
    )  # below 1 and the twin, not below 0.95
    assert judge(_fit(0.90, (0.88, 0.92)), _fit(0.86, (0.84, 0.87)))[0] == "does not hold"  # the twin's too
    assert judge(_fit(0.945, (0.94, 0.952)), twin)[0] == "inconclusive"  # reaches 0.95
    assert judge(_fit(0.90, (0.88, 0.92)), _fit(0.92, (0.91, 0.93)))[0] == "inconclusive"  # overlaps the twin
    assert judge(_fit(0.90, (0.88, 0.92), n_prompts=4), twin)[0] == "inconclusive"
    verdict, reason = judge(_fit(np.nan, (np.nan, np.nan)), twin)
    assert verdict == "inconclusive" and "nan" in reason
    assert judge(_fit(0.90, (0.88, 0.92)), _fit(np.nan, (np.nan, np.nan)))[0] == "inconclusive"
    assert judge(None)[0] == "not testable here"
    assert f"{contraction.MAX_Q}" in judge(_fit(0.97, (0.965, 0.975)), twin)[1]


def test_the_gain_judge_meets_its_calibration_targets():
    from latentbook.analysis import calibration

    table = calibration.calibrate(n_cases=4, seed=2, claims=("transverse_contraction",), n_token_cases=4)
    assert set(table["planted"]) == {"present", "absent"} and len(table) == len(contraction.PLANTED_KINDS)
    assert calibration.meets_targets(table)["transverse_contraction"], table


def test_planted_kinds_are_checked():
    with pytest.raises(lb.InvalidInputError, match="kind"):
        contraction.planted_gains(np.random.default_rng(0), "huge")
