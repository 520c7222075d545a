"""RMS norm against depth and the final-norm comparison, on planted token vectors with known answers."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import latentbook as lb
from latentbook.analysis import stream, synthetic
from latentbook.capturing.accumulators import LayerStats


def _planted(n=2000, d=32, seed=0):
    """Depth l holds Gaussian tokens of scale 2**l plus a mean offset: RMS known in closed form."""
    rng = np.random.default_rng(seed)
    states = np.stack([2.0**depth * rng.standard_normal((n, d)) + 3.0 for depth in range(4)])
    return states, synthetic.as_capture(states)


def test_rms_norm_equals_the_direct_root_mean_square():
    states, cap = _planted()
    direct = np.sqrt((states.astype(np.float64) ** 2).mean(axis=(1, 2)))
    np.testing.assert_allclose(stream.rms_norm(cap), direct, rtol=1e-6)
    # and it is the planted size: sqrt(4**l + 9) up to sampling error
    np.testing.assert_allclose(stream.rms_norm(cap), np.sqrt(4.0 ** np.arange(4) + 9.0), rtol=0.03)


def test_final_norm_effect_reads_both_sides():
    states, cap = _planted()
    last = states[-1]
    normed = last / np.sqrt((last**2).mean(1, keepdims=True))  # an RMSNorm without gain: RMS 1 per token
    cap.final_norm = LayerStats(last.shape[1])
    cap.final_norm.add(torch.from_numpy(normed.astype(np.float32)))
    effect = stream.final_norm_effect(cap)
    assert effect["rms_after"] == pytest.approx(1.0, rel=1e-5)
    assert effect["rms_before"] == pytest.approx(np.sqrt((last**2).mean()), rel=1e-6)
    assert effect["rms_ratio"] == pytest.approx(effect["rms_before"], rel=1e-5)
    # Omega is scale-free, so a gain-free RMSNorm leaves it unchanged
    assert effect["omega_after"] == pytest.approx(effect["omega_before"], abs=1e-6)
    assert effect["max_abs_before"] == pytest.approx(np.abs(last).max(), rel=1e-6)
    assert all(isinstance(v, float) for v in effect.values())


def test_no_final_norm_is_refused_with_the_reason():
    _, cap = _planted()
    with pytest.raises(lb.InvalidInputError, match="no final norm"):
        stream.final_norm_effect(cap)
