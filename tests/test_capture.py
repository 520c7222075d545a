"""Capture statistics against transformers' own hidden states, on prompts the capture never saw before."""

import numpy as np
import pytest
import torch

import latentbook as lb
from latentbook.capturing.accumulators import omega_of

from .conftest import SHORT_PROMPTS


def hidden_states(loaded, prompts, exclude_first=False):
    """Reference: every depth from output_hidden_states, padding (and optionally position 0) removed."""
    enc = loaded.tokenizer(prompts, return_tensors="pt", padding=True)
    with torch.no_grad():
        out = loaded.model(**enc, output_hidden_states=True)
    mask = enc["attention_mask"].bool()
    if exclude_first:
        mask[:, 0] = False
    return [h[mask].double().numpy() for h in out.hidden_states]


def _rel(a, b):
    return float(np.abs(a - b).max() / np.abs(b).max())


@pytest.mark.parametrize("exclude_first", [False, True])
def test_statistics_match_output_hidden_states(tiny, exclude_first):
    cap = lb.capture(
        tiny, SHORT_PROMPTS, batch_size=2, precision="float64", exclude_first=exclude_first, progress=False
    )
    ref = hidden_states(tiny, SHORT_PROMPTS, exclude_first)
    L = tiny.n_layers
    assert cap.n_layers == L and len(cap.layers) == L + 1
    np.testing.assert_allclose(cap.gamma, np.arange(L + 1) / L)
    assert cap.n_tokens == len(ref[0])
    # transformers' last hidden state is after the final norm: it is the capture's `final_norm`
    depths = [*range(L), "final"]
    for depth, x in zip(depths, ref):
        stats = cap.final_norm if depth == "final" else cap.layers[depth]
        assert _rel(stats.moments.mean.numpy(), x.mean(0)) < 1e-5
        assert _rel(stats.moments.covariance().numpy(), np.cov(x.T, bias=True)) < 1e-5
        assert stats.omega.mean == pytest.approx(omega_of(torch.from_numpy(x)).mean().item(), abs=1e-6)
        assert np.allclose(stats.abs.max.numpy(), np.abs(x).max(0), rtol=1e-5)


def test_last_depth_is_before_the_final_norm(tiny):
    cap = lb.capture(tiny, SHORT_PROMPTS, progress=False)
    enc = tiny.tokenizer(SHORT_PROMPTS, return_tensors="pt", padding=True)
    with torch.no_grad():
        x = tiny.anatomy.base(**enc).last_hidden_state  # after the norm
        pre = {}
        handle = tiny.anatomy.final_norm.register_forward_hook(lambda m, a, o: pre.setdefault("x", a[0]))
        tiny.anatomy.base(**enc)
        handle.remove()
    mask = enc["attention_mask"].bool()
    assert _rel(cap.mean(-1), pre["x"][mask].double().mean(0).numpy()) < 1e-5
    assert _rel(cap.final_norm.moments.mean.numpy(), x[mask].double().mean(0).numpy()) < 1e-5


def test_batching_and_padding_do_not_change_statistics(tiny):
    one = lb.capture(tiny, SHORT_PROMPTS, batch_size=1, precision="float64", progress=False)
    many = lb.capture(tiny, SHORT_PROMPTS, batch_size=5, precision="float64", progress=False)
    for a, b in zip(one.layers, many.layers):
        assert a.n == b.n
        assert _rel(a.moments.covariance().numpy(), b.moments.covariance().numpy()) < 1e-5  # float32 model
    assert np.array_equal(one.vectors.keys, many.vectors.keys)
    np.testing.assert_allclose(one.token_vectors(1), many.token_vectors(1), rtol=1e-4, atol=1e-5)


def test_reservoir_holds_the_same_tokens_at_every_depth(tiny):
    cap = lb.capture(tiny, SHORT_PROMPTS, n_vectors=10, progress=False)
    ref = hidden_states(tiny, SHORT_PROMPTS)
    enc = tiny.tokenizer(SHORT_PROMPTS, return_tensors="pt", padding=True)
    order = {(p, t): i for i, (p, t) in enumerate(zip(*np.nonzero(enc["attention_mask"].numpy())))}
    rows = [order[(p, t)] for p, t in zip(cap.vectors.prompt_ids, cap.vectors.positions)]
    assert len(rows) == 10
    for depth in range(tiny.n_layers):
        np.testing.assert_allclose(cap.token_vectors(depth), ref[depth][rows], rtol=1e-4, atol=1e-5)


def test_save_and_load_round_trip(tiny, tmp_path):
    cap = lb.capture(tiny, SHORT_PROMPTS, progress=False, prompt_set="short")
    path = cap.save(tmp_path / "tiny.safetensors")
    back = lb.load_capture(path)
    assert back.model_name == cap.model_name and back.n_tokens == cap.n_tokens
    assert back.provenance == cap.provenance
    for depth in range(cap.n_depths):
        np.testing.assert_array_equal(back.covariance(depth), cap.covariance(depth))
        np.testing.assert_array_equal(back.omega_samples(depth), cap.omega_samples(depth))
    np.testing.assert_array_equal(back.eigvals(1), cap.eigvals(1))
    np.testing.assert_allclose(back.all_eigvals()[1], cap.eigvals(1), rtol=1e-9, atol=1e-12)
    assert set(cap.provenance["versions"]) >= {"latentbook", "torch", "transformers"}
    assert cap.provenance["n_parameters"] == sum(p.numel() for p in tiny.model.parameters())
    assert "/root" not in str(cap.provenance) and "/home" not in str(cap.provenance)


def test_eigvals_are_descending_and_match_numpy(tiny):
    cap = lb.capture(tiny, SHORT_PROMPTS, progress=False)
    ev = cap.eigvals(1)
    assert np.all(np.diff(ev) <= 0)
    np.testing.assert_allclose(ev, np.sort(np.linalg.eigvalsh(cap.covariance(1)))[::-1])
    np.testing.assert_allclose(cap.eigvals(1, centered=False).sum(), np.trace(cap.second_moment(1)))


def test_merge_of_two_captures_equals_one_capture(tiny):
    a = lb.capture(tiny, SHORT_PROMPTS[:2], precision="float64", progress=False)
    b = lb.capture(tiny, SHORT_PROMPTS[2:], precision="float64", progress=False)
    both = lb.capture(tiny, SHORT_PROMPTS, precision="float64", progress=False)
    a.merge(b)
    assert a.n_tokens == both.n_tokens
    for x, y in zip(a.layers, both.layers):
        assert _rel(x.moments.covariance().numpy(), y.moments.covariance().numpy()) < 1e-5  # float32 model
