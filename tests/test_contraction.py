"""Transverse contraction on captures: planted chains through the real accumulators, and a null without it."""

from __future__ import annotations

import numpy as np
import pytest

import latentbook as lb
from latentbook.analysis import contraction, flow, synthetic


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
