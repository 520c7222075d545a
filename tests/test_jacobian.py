"""Transverse gains by forward-mode AD: the JVP against finite differences, planted blocks read back, the subspace
held fixed, draws per prompt, the sink left out, a real (tiny, random) model, and the file format."""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest
import torch

import latentbook as lb
from latentbook.analysis import contraction, synthetic
from latentbook.capturing import jacobian, toys
from latentbook.models.anatomy import anatomy_of

from .conftest import SHORT_PROMPTS


def _measure(toy: toys.BlockToy, k: int | None = None, n_directions: int = 2, seed: int = 0):
    with torch.no_grad():
        return jacobian.block_gains(
            toy.anatomy,
            toy.batches,
            start=0,
            stop=len(toy.growth),
            k=toy.k if k is None else k,
            n_directions=n_directions,
            seed=seed,
        )


def _raw_gain(gains: jacobian.TransverseGains) -> float:
    """The gain without the RMS normalisation: what a wrong normalisation would read."""
    return float(np.exp(np.mean(np.log(np.sqrt(gains.out_sq.sum((0, 2)) / gains.in_sq.sum())))))


def test_jvp_sums_match_central_finite_differences(tiny):
    """out_sq of a real transformer block (attention across positions included) against (f(h + eV) - f(h - eV)) / 2e,
    in float64; the identity map (the residual path alone) is far off, so the check has teeth."""
    model = copy.deepcopy(tiny.model).double()
    loaded = dataclasses.replace(tiny, model=model, anatomy=anatomy_of(model))
    prompts = [SHORT_PROMPTS[i] for i in (0, 1, 4)]  # each more than one token
    gains = jacobian.transverse_gains(loaded, prompts, window=(0, 2), k=4, batch_size=3, seed=5)
    batch = jacobian._batches(loaded, prompts, 64, 3)[0]
    u = torch.from_numpy(gains.basis)
    keep = batch.keep
    v = torch.zeros(*keep.shape, loaded.d_model, dtype=torch.float64)
    for row, prompt in enumerate(batch.prompts):
        v[row, keep[row]] = jacobian._tangent(
            5, int(prompt), 0, int(keep[row].sum()), loaded.d_model
        ).double()
    v = (v - (v @ u) @ u.T) * keep[..., None]

    def block_output(depth: int, step: float) -> torch.Tensor:
        seen = {}

        def at_depth(d, hidden):
            if d == depth:
                return hidden + step * v
            seen["out"] = hidden.clone()

        jacobian._run(loaded.anatomy, batch, depth, depth + 1, at_depth)
        return seen["out"]

    with torch.no_grad(), jacobian.eager_attention(model):
        for depth in (0, 1):
            fd = (block_output(depth, 1e-4) - block_output(depth, -1e-4)) / 2e-4
            fd = fd - (fd @ u) @ u.T
            expected = (fd.pow(2).sum(-1) * keep).sum(1).numpy()
            measured = gains.out_sq[batch.prompts, depth, 0]
            np.testing.assert_allclose(measured, expected, rtol=1e-4)
            identity = ((v - (v @ u) @ u.T).pow(2).sum(-1) * keep).sum(1).numpy()
            assert np.max(np.abs(identity / expected - 1)) > 0.05


def test_an_identity_block_has_gain_one():
    toy = toys.block_toy(1.0, prompt_spread=0.0, anisotropy=0.0, sink_gain=1.0, seed=2)
    fit = contraction.transverse_gain(_measure(toy), n_boot=20)
    np.testing.assert_allclose(fit.gains, 1.0, atol=1e-5)
    assert fit.ci == pytest.approx((1.0, 1.0), abs=1e-5)


@pytest.mark.parametrize("q", [0.8, 0.9])
def test_a_planted_contraction_is_recovered_under_a_growing_scale(q):
    """Blocks that scale the whole stream by 1.2-1.5 and contract the transverse part by q: the normalised gain
    reads q within 0.01, while the unnormalised one is off by more than 0.15."""
    toy = toys.block_toy(q, growth=(1.2, 1.5), prompt_spread=0.03, block_spread=0.04, seed=3)
    gains = _measure(toy)
    fit = contraction.transverse_gain(gains, n_boot=100)
    assert fit.q == pytest.approx(q, abs=0.01)
    assert fit.ci[0] < q < fit.ci[1]
    assert abs(_raw_gain(gains) - q) > 0.15


def test_the_subspace_is_held_fixed_across_the_window():
    """One orthonormal basis, and every block's read-out equals ||P⊥ J_l V||^2 computed by hand with that same
    basis for the toy's known Jacobian (the injection and the read-out share it at every depth)."""
    toy = toys.block_toy(0.9, d=24, k=3, n_layers=5, n_prompts=6, prompt_spread=0.05, seed=4)
    gains = _measure(toy, n_directions=1, seed=9)
    u = gains.basis
    assert u.shape == (24, 3)
    np.testing.assert_allclose(u.T @ u, np.eye(3), atol=1e-10)
    perp = np.eye(24) - u @ u.T
    for batch in toy.batches:
        for row, prompt in enumerate(batch.prompts):
            keep = batch.keep[row].numpy()
            g = jacobian._tangent(9, int(prompt), 0, int(keep.sum()), 24).double().numpy()
            v = g @ perp
            assert gains.in_sq[prompt, 0] == pytest.approx(np.sum(v**2), rel=1e-5)
            for depth, block in enumerate(toy.anatomy.layers):
                jv = block.scale * v * block.gain[prompt].double().numpy()
                assert gains.out_sq[prompt, depth, 0] == pytest.approx(np.sum((jv @ perp) ** 2), rel=1e-4)


def test_the_relevant_pass_reads_tangents_in_u_on_u():
    """relevant_out_sq equals ||P_U J_l V_U||^2 by hand for a toy whose every direction shrinks by 0.9 (the bias
    holds the stream's scale), V_U the same Gaussian draw projected onto U."""
    toy = toys.block_toy(1.0, d=24, k=3, n_layers=4, n_prompts=6, relevant_gain=0.9, seed=4)
    gains = _measure(toy, n_directions=1, seed=9)
    along = gains.basis @ gains.basis.T
    for batch in toy.batches:
        for row, prompt in enumerate(batch.prompts):
            keep = batch.keep[row].numpy()
            v = jacobian._tangent(9, int(prompt), 0, int(keep.sum()), 24).double().numpy() @ along
            assert gains.relevant_in_sq[prompt, 0] == pytest.approx(np.sum(v**2), rel=1e-5)
            for depth, block in enumerate(toy.anatomy.layers):
                jv = block.scale * 0.9 * v * block.gain[prompt].double().numpy()
                assert gains.relevant_out_sq[prompt, depth, 0] == pytest.approx(
                    np.sum((jv @ along) ** 2), rel=1e-4
                )


@pytest.mark.parametrize("c", [0.85, 0.92])
def test_a_contraction_of_every_direction_is_no_relative_contraction(c):
    """Every direction shrinks by c while the stream keeps its scale: the transverse gain alone reads c (what the
    criterion before the relevant pass judged a contraction), relative to the relevant gain 1."""
    toy = toys.block_toy(1.0, relevant_gain=c, growth=(1.0, 1.3), prompt_spread=0.03, seed=5)
    fit = contraction.transverse_gain(_measure(toy), n_boot=50)
    assert fit.transverse == pytest.approx(c, abs=0.01) and fit.relevant == pytest.approx(c, abs=0.01)
    assert fit.q == pytest.approx(1.0, abs=0.01)
    assert contraction.judge_transverse_gain(fit)[0] == "does not hold"


def test_tangents_are_drawn_per_prompt_whatever_the_batching(tiny):
    prompts = [SHORT_PROMPTS[i] for i in (0, 1, 4)]
    settings = dict(window=(0, 2), k=4, n_directions=2)
    one = jacobian.transverse_gains(tiny, prompts, batch_size=1, **settings)
    all_ = jacobian.transverse_gains(tiny, prompts, batch_size=3, **settings)
    np.testing.assert_allclose(one.in_sq, all_.in_sq, rtol=1e-5)
    np.testing.assert_allclose(one.out_sq, all_.out_sq, rtol=1e-4)
    np.testing.assert_allclose(one.state_sq, all_.state_sq, rtol=1e-5)
    other = jacobian.transverse_gains(tiny, prompts, batch_size=3, seed=1, **settings)
    assert not np.allclose(other.in_sq, one.in_sq)


def test_the_sink_is_left_out_of_the_subspace_the_tangents_and_the_rms():
    """A sink with a huge norm along a transverse coordinate and a gain of 5: q still reads 0.9 and the sink's
    direction is not in U. Counting it would put it in U and move the RMS by orders of magnitude."""
    toy = toys.block_toy(0.9, k=4, sink_gain=5.0, prompt_spread=0.0, seed=6)
    gains = _measure(toy)
    assert contraction.transverse_gain(gains, n_boot=20).q == pytest.approx(0.9, abs=0.005)
    assert np.linalg.norm(gains.basis[toy.k]) < 0.05  # coordinate k: the sink's own direction
    for batch in toy.batches:
        assert not batch.keep[:, 0].any()


def test_the_first_real_token_is_the_sink_whichever_side_pads(tiny):
    for side in ("right", "left"):
        loaded = dataclasses.replace(tiny, tokenizer=copy.copy(tiny.tokenizer))
        loaded.tokenizer.padding_side = side
        batch = jacobian._batches(loaded, SHORT_PROMPTS, 64, 5)[0]
        real = batch.inputs["attention_mask"].bool()
        assert torch.equal(batch.keep.sum(1), real.sum(1) - 1)
        first = real.int().argmax(1)
        assert not batch.keep[torch.arange(5), first].any()


def test_a_fast_run_on_a_tiny_random_model(tiny):
    gains = jacobian.transverse_gains(tiny, SHORT_PROMPTS, window=(0, 2), k=4, prompt_set="short")
    assert (gains.start, gains.stop, gains.n_prompts, gains.n_directions, gains.k) == (0, 2, 5, 1, 4)
    assert gains.out_sq.shape == (5, 2, 1) and gains.state_sq.shape == (5, 3)
    assert gains.n_tokens[2] == len(tiny.tokenizer("Hello")["input_ids"]) - 1
    fit = contraction.transverse_gain(gains, n_boot=50)
    assert np.all(np.isfinite(fit.gains)) and 0.3 < fit.q < 1.5
    assert fit.ci[0] <= fit.q <= fit.ci[1]
    assert tiny.model.config._attn_implementation == "sdpa"  # eager only while measuring
    provenance = gains.provenance
    assert provenance["model"] == "random:llama-tiny" and provenance["prompt_set"] == "short"
    assert provenance["prompt_set_sha256"] == lb.capturing.prompt_set_hash(SHORT_PROMPTS)
    assert provenance["window"] == [0, 2] and provenance["versions"]["latentbook"] == lb.__version__


def test_the_window_after_the_split():
    assert jacobian.window_after(30, 0.42) == (12, 29)  # gamma 12/30 <= 0.42 < 13/30 .. 29/30
    assert jacobian.window_after(18, 0.42) == (7, 17)
    with pytest.raises(lb.InvalidInputError, match="window="):
        jacobian.window_after(2, 0.42)


def test_bad_settings_are_refused_with_the_fix(tiny):
    with pytest.raises(lb.InvalidInputError, match="below d_model"):
        jacobian.transverse_gains(tiny, SHORT_PROMPTS, window=(0, 2), k=64)
    with pytest.raises(lb.InvalidInputError, match="n_directions"):
        jacobian.transverse_gains(tiny, SHORT_PROMPTS, window=(0, 2), n_directions=0)
    with pytest.raises(lb.InvalidInputError, match="list of strings"):
        jacobian.transverse_gains(tiny, "one prompt", window=(0, 2))
    with pytest.raises(lb.InvalidInputError, match="start < stop"):
        jacobian.transverse_gains(tiny, SHORT_PROMPTS, window=(2, 2), k=4)
    with pytest.raises(lb.InvalidInputError, match="kept tokens"):
        jacobian.transverse_gains(tiny, ["Hello"], window=(0, 2), k=4)


def test_save_load_round_trip_refuses_overwrite_and_detects_damage(tmp_path, monkeypatch):
    toy = toys.block_toy(0.9, n_layers=3, n_prompts=8, seed=7)
    gains = _measure(toy)
    gains.provenance = {"where": str(tmp_path.home() / "models" / "x"), "k": gains.k}
    path = gains.save(tmp_path / "gains.safetensors")
    loaded = jacobian.load_gains(path)
    for name in jacobian.ARRAYS:
        np.testing.assert_array_equal(getattr(loaded, name), getattr(gains, name))
    assert (loaded.start, loaded.stop, loaded.n_layers) == (0, 3, 3)
    assert loaded.provenance["where"] == "~/models/x"
    assert contraction.transverse_gain(loaded).q == contraction.transverse_gain(gains).q
    with pytest.raises(lb.LatentbookError, match="force=True"):
        gains.save(path)
    gains.save(path, force=True)
    data = bytearray(path.read_bytes())
    data[-8] ^= 0xFF
    damaged = tmp_path / "damaged.safetensors"
    damaged.write_bytes(bytes(data))
    with pytest.raises(lb.CaptureFileError, match="checksum"):
        jacobian.load_gains(damaged)
    with pytest.raises(lb.CaptureFileError, match="No transverse-gain file"):
        jacobian.load_gains(tmp_path / "missing.safetensors")
    cap_file = synthetic.as_capture(np.zeros((2, 3, 4)) + 1.0).save(tmp_path / "capture.safetensors")
    with pytest.raises(lb.CaptureFileError, match="format/schema"):
        jacobian.load_gains(cap_file)
    monkeypatch.setattr(jacobian, "SCHEMA_VERSION", 1)  # a file from before the relevant pass
    old = gains.save(tmp_path / "schema1.safetensors")
    monkeypatch.undo()
    with pytest.raises(lb.CaptureFileError, match="schema 2"):
        jacobian.load_gains(old)
