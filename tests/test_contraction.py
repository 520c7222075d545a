"""Transverse contraction on captures: planted chains through the real accumulators, and a null without it."""

from __future__ import annotations

import numpy as np
import pytest

import latentbook as lb
from latentbook.analysis import contraction, flow, planted_statistics, synthetic
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


def _scaled_capture(seed: int = 0):
    """20 prompts x positions 0..4, d = 6, depths of scales 1e-2 to 1e3 (and one zero), huge sink tokens."""
    rng = np.random.default_rng(seed)
    ids, positions = np.repeat(np.arange(20), 5), np.tile(np.arange(5), 20)
    states = rng.standard_normal((5, 100, 6)) * np.array([1e-2, 1.0, 30.0, 1e3, 0.0])[:, None, None]
    states[:, positions == 0] *= 100.0
    return synthetic.as_capture(states, ids, positions, n_vectors=100)


def test_sample_states_drops_the_excluded_positions_and_divides_each_depth_by_its_rms():
    cap = _scaled_capture()
    raw = np.stack([cap.token_vectors(depth).astype(np.float64) for depth in cap.depths])
    ids, positions = np.asarray(cap.vectors.prompt_ids), np.asarray(cap.vectors.positions)
    kept = positions != 0
    rms = np.sqrt(np.mean(np.sum(raw[:, kept] ** 2, axis=2), axis=1))
    assert rms[-1] == 0 and rms[0] < 1 < rms[2]
    states, prompts = contraction.sample_states(cap)
    assert states.dtype == np.float64 and states.shape == (5, 80, 6)
    np.testing.assert_array_equal(prompts, ids[kept])
    np.testing.assert_array_equal(np.bincount(prompts), np.full(20, 4))
    np.testing.assert_allclose(states[:-1], raw[:-1, kept] / rms[:-1, None, None], rtol=1e-12)
    np.testing.assert_array_equal(states[-1], 0.0)  # an all-zero depth stays zero (no 0 / 0)
    np.testing.assert_allclose(np.sqrt(np.mean(np.sum(states[:-1] ** 2, axis=2), axis=1)), 1.0, rtol=1e-12)
    plain, _ = contraction.sample_states(cap, normalise=False)
    assert plain.dtype == np.float64
    np.testing.assert_array_equal(plain, raw[:, kept])
    everything, every_prompt = contraction.sample_states(cap, exclude_positions=())
    assert everything.shape == (5, 100, 6)
    np.testing.assert_array_equal(every_prompt, ids)
    all_rms = np.sqrt(np.mean(np.sum(raw[:-1] ** 2, axis=2), axis=1))
    np.testing.assert_allclose(everything[:-1], raw[:-1] / all_rms[:, None, None], rtol=1e-12)
    fewer, fewer_prompts = contraction.sample_states(cap, exclude_positions=(0, 3))
    assert fewer.shape == (5, 60, 6)
    np.testing.assert_array_equal(fewer_prompts, ids[(positions != 0) & (positions != 3)])


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


def _fit(
    q: float,
    ci: tuple[float, float],
    n_prompts: int = 16,
    transverse: tuple[float, tuple[float, float]] | None = None,
    steady: tuple[float, tuple[float, float]] | None = None,
) -> contraction.GainFit:
    """A fit whose relevant gain is 1 (the transverse gain alone equals ``q``) unless ``transverse`` is given,
    every block at ``q`` (the median block's too) unless ``steady`` is given."""
    alone, alone_ci = transverse if transverse is not None else (q, ci)
    median, median_ci = steady if steady is not None else (q, ci)
    return contraction.GainFit(
        "m",
        q,
        ci,
        np.full(3, q),
        np.tile(ci, (3, 1)),
        12,
        15,
        10,
        n_prompts,
        1,
        0.95,
        alone,
        alone_ci,
        alone / q,
        (alone_ci[0] / ci[1], alone_ci[1] / ci[0]),
        median,
        median_ci,
    )


def test_bootstrap_weights_are_whole_prompts():
    """Weight 2 on a prompt equals that prompt's rows twice: draws resample prompts, the same at every block."""
    import dataclasses

    gains = _gains()
    w = np.random.default_rng(1).integers(0, 3, gains.n_prompts)
    repeated = dataclasses.replace(
        gains,
        out_sq=np.repeat(gains.out_sq, w, axis=0),
        in_sq=np.repeat(gains.in_sq, w, axis=0),
        relevant_out_sq=np.repeat(gains.relevant_out_sq, w, axis=0),
        relevant_in_sq=np.repeat(gains.relevant_in_sq, w, axis=0),
        state_sq=np.repeat(gains.state_sq, w, axis=0),
        n_tokens=np.repeat(gains.n_tokens, w),
    )
    for relevant in (False, True):
        np.testing.assert_allclose(
            contraction.block_gain_draws(gains, w[None].astype(float), relevant),
            contraction.block_gain_draws(repeated, np.ones((1, int(w.sum()))), relevant),
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
    assert judge(_fit(0.945, (0.94, 0.952)))[0] == "inconclusive"  # reaches 0.95
    assert judge(_fit(0.945, (0.94, 0.952)), twin)[0] == "does not hold"  # not 5 % below the twin's 0.98
    assert judge(_fit(0.90, (0.88, 0.92)), _fit(0.92, (0.91, 0.93)))[0] == "inconclusive"  # overlaps the twin
    assert judge(_fit(0.90, (0.88, 0.92), n_prompts=4), twin)[0] == "inconclusive"
    verdict, reason = judge(_fit(np.nan, (np.nan, np.nan)), twin)
    assert verdict == "inconclusive" and "nan" in reason
    assert judge(_fit(0.90, (0.88, 0.92)), _fit(np.nan, (np.nan, np.nan)))[0] == "inconclusive"
    assert judge(None)[0] == "not testable here"
    assert f"{contraction.MAX_Q}" in judge(_fit(0.97, (0.965, 0.975)), twin)[1]
    # every direction shrinks alike: the transverse gain alone is 0.88, relative to the relevant one 1.0
    assert judge(_fit(1.0, (0.99, 1.01), transverse=(0.88, (0.87, 0.89))), twin)[0] == "does not hold"
    # the relevant gain above 1 (an amplified direction inside U), the transverse one kept
    assert judge(_fit(0.90, (0.88, 0.92), transverse=(0.99, (0.98, 1.0))), twin)[0] == "does not hold"
    assert judge(_fit(0.90, (0.88, 0.92), transverse=(0.93, (0.91, 0.96))), twin)[0] == "inconclusive"
    assert (
        judge(
            _fit(0.90, (0.88, 0.92), transverse=(0.90, (0.88, 0.92))),
            _fit(0.98, (0.975, 0.985), transverse=(0.89, (0.88, 0.90))),
        )[0]
        == "does not hold"
    )  # the twin's transverse gain is as strong
    # tight intervals a hair apart are not a contraction beyond the twin's: the ratio must reach MAX_Q
    assert judge(_fit(0.866, (0.862, 0.870)), _fit(0.88, (0.876, 0.884)))[0] == "does not hold"
    assert judge(_fit(0.86, (0.85, 0.87)), _fit(0.90, (0.89, 0.91)))[0] == "inconclusive"


def test_the_gain_judge_meets_its_calibration_targets():
    from latentbook.analysis import calibration

    table = calibration.calibrate_statistics(
        n_cases=4, seed=2, claims=("transverse_contraction",), n_token_cases=4
    )
    assert set(table["planted"]) == {"present", "absent"} and len(table) == len(
        planted_statistics.PLANTED_KINDS
    )
    assert calibration.meets_targets(table)["transverse_contraction"], table


def test_planted_kinds_are_checked():
    with pytest.raises(lb.InvalidInputError, match="kind"):
        planted_statistics.planted_gains(np.random.default_rng(0), "huge")


# --- the concentration share: exact checks ------------------------------------------------------------------


def _exact_share(x: np.ndarray, k: int, weights: np.ndarray | None = None) -> float:
    """1 - (top k eigenvalues) / trace of the weighted covariance sum_i w_i (x_i - mu_w)(x_i - mu_w)^T / W."""
    lam = np.linalg.eigvalsh(np.cov(x, rowvar=False, aweights=weights, bias=True))
    return 1.0 - np.sort(lam)[::-1][:k].sum() / lam.sum()


@pytest.mark.parametrize(
    "n, d", [(9, 20), (20, 20), (40, 12)]
)  # the Gram branch, the boundary, the covariance one
def test_transverse_share_equals_an_explicit_weighted_eigendecomposition(n, d):
    rng = np.random.default_rng(n + d)
    states = rng.standard_normal((3, n, d)) * np.geomspace(4.0, 0.3, d) + 5.0  # an offset: centring matters
    weights = rng.uniform(0.2, 3.0, n)
    for k in (1, 3, min(n, d) - 1):
        expected = [_exact_share(x, k) for x in states]
        np.testing.assert_allclose(contraction.transverse_share(states, k), expected, rtol=1e-9, atol=1e-12)
        weighted = [_exact_share(x, k, weights) for x in states]
        np.testing.assert_allclose(
            contraction.transverse_share(states, k, weights), weighted, rtol=1e-9, atol=1e-12
        )
        # single-precision weights are read as float64 (the same numbers, not rounded normalisations)
        single = weights.astype(np.float32)
        exact_single = [_exact_share(x, k, single.astype(np.float64)) for x in states]
        np.testing.assert_allclose(
            contraction.transverse_share(states, k, single), exact_single, rtol=1e-11, atol=1e-14
        )


def test_transverse_share_refuses_bad_shapes_and_k():
    rng = np.random.default_rng(0)
    wide, tall = rng.standard_normal((2, 5, 8)), rng.standard_normal((2, 8, 5))
    for states in (wide, tall):  # k lies in (0, min(n, d)) = (0, 5) either way round
        assert contraction.transverse_share(states, 1).shape == (2,)
        assert contraction.transverse_share(states, 4).shape == (2,)
        for k in (0, 5, 2.0, -1):
            with pytest.raises(lb.InvalidInputError, match=r"k must be an integer in \(0, min\(n, d\)\)"):
                contraction.transverse_share(states, k)
    two = contraction.transverse_share(rng.standard_normal((2, 2, 4)), 1)  # two tokens: one direction
    np.testing.assert_allclose(two, 0.0, atol=1e-12)
    for states in (rng.standard_normal((2, 1, 4)), rng.standard_normal((5, 4))):
        with pytest.raises(lb.InvalidInputError, match=r"states must be \(n_depths, n_tokens >= 2, d\)"):
            contraction.transverse_share(states, 1)


@pytest.mark.parametrize("n, d", [(8, 30), (30, 8)])
def test_top_k_sum_is_the_trace_and_the_top_eigenvalues_of_the_weighted_covariance(n, d):
    rng = np.random.default_rng(n)
    x = rng.standard_normal((n, d)) * np.geomspace(3.0, 0.5, d) - 2.0
    weights = rng.uniform(0.5, 2.0, n)
    lam = np.sort(np.linalg.eigvalsh(np.cov(x, rowvar=False, aweights=weights, bias=True)))[::-1]
    total, top = contraction._top_k_sum(x, weights, 3)
    assert total == pytest.approx(lam.sum(), rel=1e-10)
    assert top == pytest.approx(lam[:3].sum(), rel=1e-10)


def test_randomised_principal_directions_are_exact_for_small_or_rank_deficient_samples():
    rng = np.random.default_rng(7)
    for n, d, rank in ((12, 40, 5), (40, 9, 5), (9, 9, 8)):  # fewer than rank + 10 tokens or coordinates
        x = rng.standard_normal((n, d)) * np.geomspace(3.0, 0.2, d) + 1.0
        total, lam, directions = contraction._principal(x, rank)
        s = np.linalg.svd(x - x.mean(0), compute_uv=False)
        assert total == pytest.approx(np.sum(s**2) / n, rel=1e-12)
        np.testing.assert_allclose(lam, s[:rank] ** 2 / n, rtol=1e-5)
        assert directions.shape == (d, rank)
        np.testing.assert_allclose(directions.T @ directions, np.eye(rank), atol=1e-10)
        default = contraction._principal(x, rank)
        explicit = contraction._principal(x, rank, iterations=4)  # the documented default: 4 power steps
        np.testing.assert_array_equal(default[1], explicit[1])
        np.testing.assert_array_equal(default[2], explicit[2])
    # centred rank 2 of 15 tokens: the 13 other eigenvalues are zero, never negative rounding
    x = rng.standard_normal((15, 2)) @ rng.standard_normal((2, 16)) + 100.0 * rng.standard_normal(16)
    total, lam, _ = contraction._principal(x, 15)
    s = np.linalg.svd(x - x.mean(0), compute_uv=False)
    np.testing.assert_allclose(lam[:2], s[:2] ** 2 / 15, rtol=1e-8)
    assert np.all(lam >= 0.0) and np.all(lam[2:] < 1e-12 * lam[0])


def test_fast_bootstrap_shares_are_exact_for_an_offset_sample_and_unequal_draw_sizes():
    """Each row of weights is one draw, normalised by its own sum, also when the rows' sums differ and the
    tokens are far from the origin (the mean's share of the second moment is then large)."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((60, 10)) * np.geomspace(3.0, 0.3, 10) + 4.0
    weights = rng.integers(0, 4, (6, 60)).astype(float)
    weights[0] *= 5.0  # a draw of another size: the same share as its normalised weights
    _, _, directions = contraction._principal(x, 10)  # every direction: the fast shares are then exact
    exact = [_exact_share(x, 3, w) for w in weights]
    np.testing.assert_allclose(contraction._share_draws(x, 3, weights, directions), exact, rtol=1e-9)


def _sink_capture(seed: int = 0):
    """The q = 0.8 chain with a position-0 token per prompt whose transverse part does not contract."""
    chain = synthetic.contraction_chain(60 * 5, 24, 8, 0.8, k_signal=4, signal_scale=10.0, seed=seed)
    ids, positions = np.repeat(np.arange(60), 5), np.tile(np.arange(5), 60)
    states = chain.states.copy()
    sink = positions == 0
    states[:, sink] = 3.0 * np.random.default_rng(seed + 1).standard_normal((int(sink.sum()), 24))
    return synthetic.as_capture(states, ids, positions, n_vectors=300)


def test_contraction_fit_reads_the_share_of_every_depth_in_start_to_stop_without_the_excluded_tokens():
    cap = _sink_capture()
    for exclude in ((0,), ()):
        states, _ = contraction.sample_states(cap, exclude)
        for start, stop in ((0, 8), (2, 5), (3, 4)):
            fit = contraction.contraction_fit(cap, start, stop, k=4, n_boot=20, exclude_positions=exclude)
            assert (fit.start, fit.stop, fit.k, fit.level) == (start, stop, 4, 0.95)
            expected = contraction.transverse_share(states[start : stop + 1], 4)
            np.testing.assert_allclose(fit.share, expected, rtol=1e-6)
            layers = np.arange(start, stop + 1, dtype=float)
            assert fit.q == pytest.approx(flow.q_from_variance_decay(layers, expected), rel=1e-6)
    default = contraction.contraction_fit(cap, 0, 8, k=4, n_boot=20)
    assert default.q == pytest.approx(0.8, abs=0.02)  # the sink is dropped by default
    assert contraction.contraction_fit(cap, 0, 8, k=4, n_boot=20, exclude_positions=()).q > 0.9
    assert contraction.contraction_fit(cap, 0, 8, k=4, n_boot=20, level=0.8).level == 0.8


def test_contraction_fit_on_a_capture_of_some_depths_reads_the_depths_held():
    cap = _chain_capture(0.8).at_depths([0, 2, 4, 6, 8])
    fit = contraction.contraction_fit(cap, 2, 6, k=4, n_boot=20)
    states, _ = contraction.sample_states(cap)
    np.testing.assert_allclose(fit.share, contraction.transverse_share(states[1:4], 4), rtol=1e-6)
    assert fit.q == pytest.approx(0.8, abs=0.02)
    with pytest.raises(
        lb.InvalidInputError,
        match=r"^This capture holds 1 of the depths 1\.\.3 \(\[0, 2, 4, 6, 8\]\): the fit needs at least 2\. "
        r"Choose start and stop among the depths held\.$",
    ):
        contraction.contraction_fit(cap, 1, 3, k=4, n_boot=20)


def test_contraction_fit_interval_is_the_prompt_bootstrap_of_the_exact_shares():
    """The interval: percentile interval of q over draws of whole prompts (resampling.cluster_weights on
    the seed), each draw's shares those of the weighted sample (the fast shares agree with the exact ones).
    """
    from latentbook.analysis import resampling

    cap = _chain_capture(0.8, n_prompts=40)
    states, prompts = contraction.sample_states(cap)
    _, groups = np.unique(prompts, return_inverse=True)
    layers = np.arange(2, 7, dtype=float)
    for seed in (0, 3):
        fit = contraction.contraction_fit(cap, 2, 6, k=4, n_boot=20, level=0.9, seed=seed)
        weights = resampling.cluster_weights(np.random.default_rng(seed), 40, 20)[:, groups]
        shares = np.array([contraction.transverse_share(states[2:7], 4, w) for w in weights])
        expected = resampling.percentile_interval(flow.q_from_variance_decay(layers, shares), 0.9)
        np.testing.assert_allclose(fit.ci, expected, rtol=0, atol=5e-6)  # draws differ by ~3e-5
        again = contraction.contraction_fit(cap, 2, 6, k=4, n_boot=20, level=0.9, seed=seed)
        assert again.ci == fit.ci
    other = contraction.contraction_fit(cap, 2, 6, k=4, n_boot=20, level=0.9, seed=4)
    assert other.ci != fit.ci and other.q == fit.q


def _assert_same_fit(a: contraction.ContractionFit, b: contraction.ContractionFit) -> None:
    assert (a.q, a.ci, a.start, a.stop, a.k, a.level) == (b.q, b.ci, b.start, b.stop, b.k, b.level)
    np.testing.assert_array_equal(a.share, b.share)


def test_contraction_fit_defaults_and_refusals():
    cap = _chain_capture(0.8, n_prompts=30)
    default = contraction.contraction_fit(cap, 1, 7, n_boot=20)
    assert default.k == 10
    _assert_same_fit(default, contraction.contraction_fit(cap, 1, 7, k=10, n_boot=20))
    assert contraction.contraction_fit(cap, 1, 7, k=1, n_boot=20).k == 1
    assert contraction.contraction_fit(cap, 1, 7, k=23, n_boot=20).k == 23  # d_model - 1
    for start, stop in ((3, 3), (4, 3), (-1, 4), (0, 9)):
        with pytest.raises(lb.InvalidInputError, match=rf"^Need 0 <= start < stop <= 8, got start={start}, "):
            contraction.contraction_fit(cap, start, stop, k=4, n_boot=20)
    for n_boot in (19, 0, 20.0):
        with pytest.raises(lb.InvalidInputError, match=r"^n_boot must be an integer >= 20, got"):
            contraction.contraction_fit(cap, 1, 7, k=4, n_boot=n_boot)
    for k in (0, 24, -1, 4.0):
        with pytest.raises(lb.InvalidInputError, match=r"^k must be an integer in \(0, 24\), got"):
            contraction.contraction_fit(cap, 1, 7, k=k, n_boot=20)


def test_contraction_after_defaults_and_windows():
    cap = _chain_capture(0.8, n_prompts=30)  # depths 0..8: gamma = l / 8, interior depths 1..7
    _assert_same_fit(
        contraction.contraction_after(cap), contraction.contraction_fit(cap, 3, 7, k=10, n_boot=100, seed=0)
    )
    _assert_same_fit(  # every argument reaches the fit
        contraction.contraction_after(cap, split=0.42, k=3, n_boot=20, seed=5),
        contraction.contraction_fit(cap, 3, 7, k=3, n_boot=20, seed=5),
    )
    fit = contraction.contraction_after(cap, split=0.7, k=4, n_boot=20)  # after: depths 6, 7 (two are enough)
    assert (fit.start, fit.stop) == (5, 7)
    fit = contraction.contraction_after(
        cap, split=0.1, k=4, n_boot=20
    )  # no depth before: start at the first after
    assert (fit.start, fit.stop) == (1, 7)
    with pytest.raises(
        lb.InvalidInputError, match=r"^Fewer than 2 interior depths after gamma = 0\.9 in synthetic"
    ):
        contraction.contraction_after(cap, split=0.9, k=4, n_boot=20)


# --- the gain of the blocks' map: exact checks --------------------------------------------------------------

_NO_TOKENS = (
    r"^These gains hold no perturbed tokens \(every prompt is a single token\?\): "
    r"measure on longer prompts\.$"
)


def test_transverse_gain_is_the_geometric_mean_of_the_block_gains_with_a_prompt_bootstrap():
    """q: the geometric mean over blocks of g⊥_l / g∥_l, each part from its own sums with the RMS ratio; the
    intervals from one prompt bootstrap shared by both parts and every block."""
    from latentbook.analysis import resampling

    gains = _gains(n_prompts=12, n_blocks=4, seed=1)
    states = gains.state_sq.sum(0)

    def part(out_sq, in_sq, w):
        return np.sqrt(
            (w @ out_sq.sum(2))
            / (w @ in_sq.sum(1))[:, None]
            * (w @ gains.state_sq)[:, :-1]
            / (w @ gains.state_sq)[:, 1:]
        )

    perp = np.sqrt(gains.out_sq.sum((0, 2)) / gains.in_sq.sum() * states[:-1] / states[1:])
    par = np.sqrt(gains.relevant_out_sq.sum((0, 2)) / gains.relevant_in_sq.sum() * states[:-1] / states[1:])
    fit = contraction.transverse_gain(gains, n_boot=20, level=0.8, seed=7)
    np.testing.assert_allclose(fit.gains, perp / par, rtol=1e-12)
    assert fit.q == pytest.approx(np.exp(np.mean(np.log(perp / par))), rel=1e-12)
    assert fit.transverse == pytest.approx(np.exp(np.mean(np.log(perp))), rel=1e-12)
    assert fit.relevant == pytest.approx(np.exp(np.mean(np.log(par))), rel=1e-12)
    assert abs(fit.relevant - 1) < 0.01 and abs(fit.q - fit.transverse) < 0.01  # the toy keeps U
    w = resampling.cluster_weights(np.random.default_rng(7), 12, 20)
    draws_perp = part(gains.out_sq, gains.in_sq, w)
    draws = draws_perp / part(gains.relevant_out_sq, gains.relevant_in_sq, w)
    np.testing.assert_allclose(
        fit.ci, np.percentile(np.exp(np.mean(np.log(draws), axis=1)), [10, 90]), rtol=1e-12
    )
    np.testing.assert_allclose(
        fit.transverse_ci, np.percentile(np.exp(np.mean(np.log(draws_perp), axis=1)), [10, 90]), rtol=1e-12
    )
    np.testing.assert_allclose(fit.gains_ci, np.percentile(draws, [10, 90], axis=0).T, rtol=1e-12)
    assert fit.steady == pytest.approx(np.median(perp / par), rel=1e-12)
    low, high = np.percentile(np.median(draws, axis=1), [10, 90])
    np.testing.assert_allclose(fit.steady_ci, (min(low, fit.steady), max(high, fit.steady)), rtol=1e-12)
    assert (fit.model_name, fit.start, fit.stop, fit.k, fit.n_prompts, fit.n_directions, fit.level) == (
        gains.model_name,
        gains.start,
        gains.stop,
        gains.k,
        12,
        gains.n_directions,
        0.8,
    )
    assert contraction.transverse_gain(gains, n_boot=20, level=0.8, seed=7).ci == fit.ci
    assert contraction.transverse_gain(gains, n_boot=20, level=0.8, seed=8).ci != fit.ci
    assert contraction.transverse_gain(gains, n_boot=20).level == 0.95


def test_transverse_gain_bounds_and_the_no_token_refusal():
    import dataclasses

    gains = _gains(n_prompts=12, n_blocks=4, seed=1)
    assert contraction.transverse_gain(gains, n_boot=20, level=0.999).level == 0.999
    for level in (0.0, 1.0, 1.5, -0.5):
        with pytest.raises(lb.InvalidInputError, match=r"^level must lie in \(0, 1\), got"):
            contraction.transverse_gain(gains, n_boot=20, level=level)
    for n_boot in (19, 20.0):
        with pytest.raises(lb.InvalidInputError, match=r"^n_boot must be an integer >= 20, got"):
            contraction.transverse_gain(gains, n_boot=n_boot)
    # tiny sums are still sums: the gains are ratios, the same at any scale
    tiny = dataclasses.replace(
        gains, out_sq=gains.out_sq * 1e-9, in_sq=gains.in_sq * 1e-9, state_sq=gains.state_sq * 1e-9
    )
    reference, scaled = (
        contraction.transverse_gain(gains, n_boot=20),
        contraction.transverse_gain(tiny, n_boot=20),
    )
    assert scaled.q == pytest.approx(reference.q, rel=1e-10)
    np.testing.assert_allclose(scaled.ci, reference.ci, rtol=1e-10)
    # one prompt without tokens is allowed (the others carry every depth)
    silent = gains.state_sq.copy()
    silent[3] = 0.0
    assert np.isfinite(contraction.transverse_gain(dataclasses.replace(gains, state_sq=silent), n_boot=20).q)
    empty_depth = gains.state_sq.copy()
    empty_depth[:, 2] = 0.0
    for broken in (
        dataclasses.replace(gains, in_sq=np.zeros_like(gains.in_sq)),
        dataclasses.replace(gains, state_sq=empty_depth),
    ):
        with pytest.raises(lb.InvalidInputError, match=_NO_TOKENS):
            contraction.transverse_gain(broken, n_boot=20)


def test_a_step_written_by_one_block_moves_q_not_the_median_block():
    """The end-to-end artefact: a code written by the window's first block (its relative gain 0.46, the others'
    unchanged) pulls the geometric mean q well below MAX_Q; the median block, and so the verdict, stays."""
    import dataclasses

    gains = _gains(n_prompts=16, n_blocks=5, seed=2)
    steady = contraction.transverse_gain(gains, n_boot=50)
    out_sq = gains.out_sq.copy()
    out_sq[:, 0] *= 0.46**2  # block 0 shrinks its transverse tangents by 0.46 more
    step = contraction.transverse_gain(dataclasses.replace(gains, out_sq=out_sq), n_boot=50)
    assert step.q == pytest.approx(steady.q * 0.46 ** (1 / 5), rel=1e-9)
    assert step.steady == pytest.approx(steady.steady, rel=1e-9)
    flat = dataclasses.replace(gains, out_sq=gains.out_sq / steady.gains[None, :, None] ** 2)
    flat_step = dataclasses.replace(
        flat, out_sq=np.concatenate([flat.out_sq[:, :1] * 0.46**2, flat.out_sq[:, 1:]], 1)
    )
    fit = contraction.transverse_gain(flat_step, n_boot=50)
    assert fit.q < contraction.MAX_Q and fit.ci[1] < contraction.MAX_Q  # q alone would call it a contraction
    assert fit.steady == pytest.approx(1.0, abs=1e-9)
    verdict, reason = contraction.judge_transverse_gain(fit)
    assert verdict == "does not hold" and "not a steady contraction" in reason


def test_judge_transverse_gain_boundaries_are_closed_at_the_minimum_effect_and_the_twin():
    judge = contraction.judge_transverse_gain
    max_q = contraction.MAX_Q
    assert judge(_fit(0.9, (0.88, 0.92), steady=(0.96, (max_q, 0.97))))[0] == "does not hold"
    assert judge(_fit(0.9, (0.88, 0.92), steady=(0.93, (0.91, max_q))))[0] == "inconclusive"
    assert judge(_fit(0.9, (0.88, 0.92), steady=(0.93, (0.91, 0.9499))))[0] == "holds"
    assert judge(_fit(0.96, (max_q, 0.97)))[0] == "does not hold"  # low == MAX_Q: not below it
    assert judge(_fit(0.93, (0.91, max_q)))[0] == "inconclusive"  # high == MAX_Q: reaches it
    # the ratios to the twin's bounds: 0.475 / 0.5 == MAX_Q exactly in floating point
    assert 0.475 / 0.5 == max_q
    assert judge(_fit(0.48, (0.475, 0.49)), _fit(0.45, (0.4, 0.5)))[0] == "does not hold"  # low / twin high
    assert judge(_fit(0.4, (0.3, 0.475)), _fit(0.55, (0.5, 0.6)))[0] == "inconclusive"  # high / twin low
    assert judge(_fit(0.4, (0.3, 0.4749)), _fit(0.55, (0.5, 0.6)))[0] == "holds"
    assert judge(_fit(0.90, (0.88, 0.92), n_prompts=contraction.MIN_PROMPTS))[0] == "holds"
    verdict, reason = judge(_fit(0.90, (0.88, 0.92), n_prompts=contraction.MIN_PROMPTS - 1))
    assert verdict == "inconclusive" and reason.endswith(
        f": fewer than {contraction.MIN_PROMPTS} prompts to resample"
    )


def test_judge_transverse_gain_reasons_say_why():
    judge = contraction.judge_transverse_gain
    twin = _fit(0.98, (0.975, 0.985))
    found = (
        "relative block gain q = 0.900 [0.880, 0.920], transverse alone 0.900 [0.880, 0.920], relevant 1.000, "
        "per layer over depths 12-15 (16 prompts x 1 tangents, k = 10)"
    )
    assert judge(_fit(0.90, (0.88, 0.92)), twin) == (
        "holds",
        found
        + ": both below 0.95, and the median block's relative gain 0.900 [0.880, 0.920], and below 0.95 of the"
        " random twin's 0.980 [0.975, 0.985] and 0.980 [0.975, 0.985]",
    )
    assert judge(_fit(0.90, (0.88, 0.92))) == (
        "holds",
        found + ": both below 0.95, and the median block's relative gain 0.900 [0.880, 0.920]",
    )
    assert judge(None) == ("not testable here", "fewer than 2 interior depths after the split")
    verdict, reason = judge(_fit(0.90, (np.nan, 0.92)), twin)
    assert verdict == "inconclusive" and reason.endswith(": a bootstrap draw had no tokens at some depth")
    verdict, reason = judge(_fit(0.90, (0.88, 0.92)), _fit(0.98, (0.97, np.inf)))
    assert verdict == "inconclusive"
    assert reason == found + ": the random twin's interval is undefined (a draw without tokens)"
    assert judge(_fit(0.96, (0.955, 0.97)), twin)[1].endswith(
        "(16 prompts x 1 tangents, k = 10): the relative gain is not below the minimum effect 0.95"
    )
    uniform = judge(_fit(1.0, (0.99, 1.01), transverse=(0.88, (0.87, 0.89))), twin)[1]
    assert "transverse alone 0.880 [0.870, 0.890], relevant 0.880" in uniform
    assert uniform.endswith(": the relative gain is not below the minimum effect 0.95")
    assert judge(_fit(0.90, (0.88, 0.92), transverse=(0.99, (0.98, 1.0))), twin)[1].endswith(
        ": the transverse gain is not below the minimum effect 0.95"
    )
    verdict, reason = judge(_fit(0.90, (0.88, 0.92)), _fit(0.86, (0.84, 0.87)))
    assert verdict == "does not hold" and reason.endswith(
        ": the relative gain over the random twin's 0.860 [0.840, 0.870] is 1.047 [1.011, 1.095], not below 0.95"
    )
    assert judge(_fit(0.93, (0.91, 0.96)), twin)[1].endswith(
        ": the relative gain's interval reaches the minimum effect 0.95"
    )
    assert judge(_fit(0.90, (0.88, 0.92)), _fit(0.92, (0.91, 0.93)))[1].endswith(
        ": the relative gain over the random twin's 0.920 [0.910, 0.930] is 0.978 [0.946, 1.011], reaching 0.95"
    )
    step = judge(_fit(0.917, (0.90, 0.93), steady=(1.0, (0.99, 1.01))), twin)
    assert step == (
        "does not hold",
        found.replace("0.900 [0.880, 0.920]", "0.917 [0.900, 0.930]")
        + ": not a steady contraction: the median block's relative gain 1.000 [0.990, 1.010] is not below 0.95"
        " (fewer than half the blocks contract)",
    )
    assert judge(_fit(0.90, (0.88, 0.92), steady=(0.93, (0.91, 0.96))), twin)[1].endswith(
        ": the median block's relative gain 0.930 [0.910, 0.960] reaches the minimum effect 0.95"
    )
    verdict, reason = judge(_fit(0.90, (0.88, 0.92), steady=(0.9, (np.nan, 0.92))), twin)
    assert verdict == "inconclusive" and reason.endswith(": a bootstrap draw had no tokens at some depth")


# --- the planted cases (the calibration of the judge): what planted_gains promises --------------------------

_PLANTED_SEEDS = range(8)


@pytest.fixture(scope="module")
def planted():
    """Every kind over a few seeds, n_boot = 20, each case with the toys and measurements it made (spied)."""
    from latentbook.capturing import jacobian

    real_toy, real_gains, real_fit = toys.block_toy, jacobian.block_gains, contraction.transverse_gain
    cases = []

    def toy(q, *, seed=0, lengths=(6, 16), growth=(1.0, 1.0), **kwargs):
        made = real_toy(q, seed=seed, lengths=lengths, growth=growth, **kwargs)
        cases[-1]["toys"].append(dict(kwargs, q=q, seed=seed, lengths=lengths, growth=growth, made_k=made.k))
        return made

    def measure(*args, **kwargs):
        cases[-1]["gains"].append(kwargs)
        return real_gains(*args, **kwargs)

    def fit(gains, n_boot=contraction.GAIN_BOOT, level=0.95, seed=0):
        cases[-1]["fits"].append({"n_boot": n_boot, "level": level, "seed": seed})
        return real_fit(gains, n_boot=n_boot, level=level, seed=seed)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(toys, "block_toy", toy)
        patch.setattr(jacobian, "block_gains", measure)
        patch.setattr(planted_statistics, "transverse_gain", fit)
        for kind in planted_statistics.PLANTED_KINDS:
            for seed in _PLANTED_SEEDS:
                cases.append({"kind": kind, "seed": seed, "toys": [], "gains": [], "fits": []})
                cases[-1]["pair"] = planted_statistics.planted_gains(
                    np.random.default_rng(seed), kind, n_boot=20
                )
    return cases


def test_planted_gains_plant_the_q_of_each_kind(planted):
    """The planted q (transverse relative to relevant) and relevant gain of each kind, read back: the transverse
    gain alone within the estimator's ~1-2 %; the relevant one exactly where the estimator's k is the planted
    one, and within -5 % to +12 % where U holds one transverse direction besides (amplified or not)."""
    planted_range = {
        "paper": planted_statistics.PLANTED_Q,
        "twin too": planted_statistics.PLANTED_Q,
        "small": (0.96, 0.99),
    }
    twin_qs = []
    for case in planted:
        kind, (model, twin) = case["kind"], case["pair"]
        (model_toy, twin_toy) = case["toys"]
        low, high = planted_range.get(kind, (1.0, 1.0))
        # "paper": a paper-size q beyond the twin's, so the model's own q is that times the twin's
        beyond = model_toy["q"] / twin_toy["q"] if kind == "paper" else model_toy["q"]
        assert low <= beyond <= high, case
        c_low, c_high = planted_statistics.PLANTED_Q if kind == "uniform" else (1.0, 1.0)
        assert c_low <= model_toy["relevant_gain"] <= c_high and twin_toy["relevant_gain"] == 1.0
        if kind == "twin too":
            assert twin_toy["q"] == model_toy["q"]
        else:
            assert 0.96 <= twin_toy["q"] <= 1.0
            twin_qs.append(twin_toy["q"])
        for fit, toy in ((model, model_toy), (twin, twin_toy)):
            assert fit.model_name == f"block toy, q = {toy['q']:.3f}"
            c = toy["relevant_gain"]
            assert fit.transverse == pytest.approx(toy["q"] * c, rel=0.025)  # within the estimator's ~1-2 %
            if fit.k == toy["k"]:
                assert fit.relevant == pytest.approx(c, rel=0.01)
                assert fit.q == pytest.approx(toy["q"], rel=0.025)
            else:
                assert c * 0.95 <= fit.relevant <= c * 1.12
            assert fit.level == 0.95 and fit.ci[0] < fit.ci[1]
        if kind in ("paper", "twin too"):
            assert 0.8 <= model.transverse <= 0.94 and (kind == "paper" or 0.84 <= twin.transverse <= 0.94)
        elif kind == "small":
            assert 0.94 <= model.transverse <= 1.01
        elif kind == "uniform":
            assert 0.84 <= model.transverse <= 0.94 and 0.88 <= model.q <= 1.025
        else:
            assert model.transverse == pytest.approx(1.0, abs=0.025)
        if kind != "twin too":
            assert 0.94 <= twin.transverse <= 1.02
    assert np.ptp(twin_qs) > 0.02  # the twins' q are drawn, not one value
    small = [case["toys"][0]["q"] for case in planted if case["kind"] == "small"]
    assert np.ptp(small) > 0.01


def test_planted_gains_shapes_cover_the_documented_cases(planted):
    blocks, prompts, directions, offsets, widths, ks, longest = (
        set(),
        set(),
        set(),
        set(),
        set(),
        set(),
        set(),
    )
    for case in planted:
        model, twin = case["pair"]
        toy = case["toys"][0]
        assert [t["made_k"] for t in case["toys"]] == [toy["k"]] * 2  # model and twin: the same shape
        for fit in (model, twin):
            assert fit.start == 0 and fit.stop - fit.start == len(fit.gains) == toy["n_layers"]
            assert (fit.k, fit.n_prompts, fit.n_directions) == (model.k, model.n_prompts, model.n_directions)
            assert fit.n_prompts == toy["n_prompts"]
        blocks.add(len(model.gains))
        prompts.add(model.n_prompts)
        directions.add(model.n_directions)
        offsets.add(model.k - toy["k"])
        widths.add(toy["d"])
        ks.update((toy["k"], model.k))
        assert toy["lengths"][0] == 6
        longest.add(toy["lengths"][1])
        assert [g["start"] for g in case["gains"]] == [0, 0]
        assert [g["k"] for g in case["gains"]] == [model.k] * 2
        assert [f["n_boot"] for f in case["fits"]] == [20, 20]
    assert blocks == {4, 8, 12, 17} and prompts == {12, 16} and directions == {1, 2}
    assert offsets == {0, 1}  # the estimator's k: the planted one or one above
    assert widths == {32, 48, 64} and longest == {10, 16}
    assert min(ks) == 2 and max(ks) == 6


def test_planted_gains_nuisances_and_independent_draws(planted):
    seeds = {kind: ([], [], []) for kind in planted_statistics.PLANTED_KINDS}
    for case in planted:
        toy_seeds, gain_seeds, boot_seeds = seeds[case["kind"]]
        model_toy, twin_toy = case["toys"]
        for toy in (model_toy, twin_toy):
            assert 0.3 <= toy["depth_correlation"] <= 0.8
            assert 0.0 <= toy["block_spread"] <= 0.05 and 0.1 <= toy["anisotropy"] <= 0.3
            if case["kind"] == "growing scale":
                assert toy["growth"] == (1.1, 1.5)  # the stream grows by 10-50 % a block
            else:
                assert toy["growth"][0] == 1.0 and 1.0 <= toy["growth"][1] <= 1.3
        assert 0.01 <= model_toy["prompt_spread"] <= 0.05
        toy_seeds += [toy["seed"] for toy in case["toys"]]
        gain_seeds += [g["seed"] for g in case["gains"]]
        boot_seeds += [f["seed"] for f in case["fits"]]
    growths = [c["toys"][0]["growth"][1] for c in planted if c["kind"] != "growing scale"]
    assert max(growths) > 1.2  # every case has a growing scale, up to 30 % a block
    for drawn in seeds.values():  # within a kind every toy, tangent and bootstrap draws its own numbers
        for some in drawn:
            assert len(set(some)) == len(some) == 2 * len(_PLANTED_SEEDS)


def test_planted_gains_are_reproducible():
    first = planted_statistics.planted_gains(np.random.default_rng(11), "paper", n_boot=20)
    second = planted_statistics.planted_gains(np.random.default_rng(11), "paper", n_boot=20)
    for a, b in zip(first, second):
        assert (a.q, a.ci) == (b.q, b.ci)
        np.testing.assert_array_equal(a.gains, b.gains)


def test_over_twin_pairs_the_bootstrap_draws_and_falls_back_to_the_widest_interval():
    """With draws on both sides, the ratio's interval is the percentile interval of the paired ratios (widened to
    contain the ratio), far narrower than bounds over bounds; without, it is bounds over bounds. A twin that
    contracts a hair less than the model is not a contraction beyond it, however tight both intervals."""
    import dataclasses

    rng = np.random.default_rng(0)
    mine_draws, their_draws = (
        0.866 + 0.002 * rng.standard_normal(200),
        0.88 + 0.002 * rng.standard_normal(200),
    )
    mine = dataclasses.replace(
        _fit(0.866, (0.862, 0.870)), q_draws=mine_draws, transverse_draws=mine_draws[::-1].copy()
    )
    theirs = dataclasses.replace(
        _fit(0.88, (0.876, 0.884)), q_draws=their_draws, transverse_draws=their_draws[::-1].copy()
    )
    (ratio, ci), (alone, alone_ci) = contraction.over_twin(mine, theirs)
    assert ratio == pytest.approx(0.866 / 0.88) and alone == pytest.approx(0.866 / 0.88)
    low, high = np.percentile(mine_draws / their_draws, [2.5, 97.5])
    assert ci == (pytest.approx(min(low, ratio)), pytest.approx(max(high, ratio)))
    assert ci[1] - ci[0] < 0.8 * (0.870 / 0.876 - 0.862 / 0.884)  # paired draws: narrower than bounds
    assert contraction.judge_transverse_gain(mine, theirs)[0] == "does not hold"
    (_, widest), _ = contraction.over_twin(_fit(0.866, (0.862, 0.870)), theirs)  # no draws on one side
    assert widest == (pytest.approx(0.862 / 0.884), pytest.approx(0.870 / 0.876))
    random_twin = dataclasses.replace(
        _fit(1.0, (0.99, 1.01)), q_draws=1 + 0.005 * rng.standard_normal(200), transverse_draws=np.ones(200)
    )
    assert contraction.judge_transverse_gain(mine, random_twin)[0] == "holds"
