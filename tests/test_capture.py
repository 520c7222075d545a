"""Capture statistics against transformers' own hidden states, on prompts the capture never saw before."""

import numpy as np
import pytest
import torch

import latentbook as lb
from latentbook.capturing.accumulators import omega_of
from latentbook.errors import InvalidInputError

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


# --- depths=...: statistics at chosen depths only (issue #19) -------------------------------------------


@pytest.fixture(scope="module")
def six_layers(tiny):
    """A random 6-layer Llama (d=64) with the tiny model's tokenizer: enough depths to choose from."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from latentbook.models.anatomy import anatomy_of
    from latentbook.models.zoo import LoadedModel

    config = LlamaConfig(
        vocab_size=len(tiny.tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=6,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).eval().requires_grad_(False)
    return LoadedModel(
        model, tiny.tokenizer, "random-llama-6", "llama", "causal", "0" * 64, anatomy_of(model)
    )


@pytest.fixture(scope="module")
def six_full(six_layers):
    return lb.capture(six_layers, SHORT_PROMPTS * 2, batch_size=3, precision="float64", progress=False)


def _assert_same_statistics(part, ref, tol=1e-12):
    """Every float64 statistic to ``tol`` (relative), counts and the sampled tokens exactly."""
    assert np.array_equal(part.depths, ref.depths) and np.allclose(part.gamma, ref.gamma, rtol=0, atol=0)
    assert (part.final_norm is None) == (ref.final_norm is None)
    sa, sb = part.state_dict(), ref.state_dict()
    assert sa.keys() == sb.keys()
    for key in sa:
        x, y = sa[key], sb[key]
        if not x.is_floating_point():
            assert torch.equal(x, y), key
        elif y.numel():
            assert (x - y).abs().max().item() <= tol * max(y.abs().max().item(), 1e-300), key


@pytest.mark.parametrize(
    "depths, held",
    [([0, 3, 6], [0, 3, 6]), ([2, 4], [2, 4]), ([6], [6]), ([0], [0]), ("0.5", [3]), ([-1, 1], [1, 6])],
    ids=str,
)
def test_capture_at_depths_equals_the_full_capture_restricted(six_layers, six_full, depths, held):
    part = lb.capture(
        six_layers, SHORT_PROMPTS * 2, batch_size=3, precision="float64", progress=False, depths=depths
    )
    assert part.depths.tolist() == held and part.n_depths == len(held) and not part.complete
    np.testing.assert_array_equal(part.gamma, np.array(held) / 6)
    assert part.n_tokens == six_full.n_tokens and part.provenance["depths"] == held
    _assert_same_statistics(part, six_full.at_depths(held))
    for index, depth in enumerate(held):
        np.testing.assert_array_equal(part.covariance(depth), six_full.covariance(depth))
        np.testing.assert_array_equal(part.token_vectors(depth), six_full.token_vectors(depth))
        assert part.omega_mean()[index] == six_full.omega_mean()[depth]
    assert (part.final_norm is not None) == (6 in held)
    missing = next(d for d in range(7) if d not in held)
    with pytest.raises(InvalidInputError, match=f"Depth {missing} is not in this capture"):
        part.covariance(missing)


def test_default_capture_holds_every_depth(tiny):
    cap = lb.capture(tiny, SHORT_PROMPTS, progress=False)
    assert cap.complete and cap.depths.tolist() == [0, 1, 2] and "depths" not in cap.provenance
    same = lb.capture(tiny, SHORT_PROMPTS, progress=False, depths="0,1,2")  # every depth: the default
    assert same.complete and "depths" not in same.provenance
    _assert_same_statistics(same, cap, tol=0)


def test_forward_stops_after_the_last_depth_asked_for(six_layers):
    calls = [0] * 6
    handles = [
        layer.register_forward_hook(lambda m, a, o, i=i: calls.__setitem__(i, calls[i] + 1))
        for i, layer in enumerate(six_layers.anatomy.layers)
    ]
    norm_calls = []
    handles.append(six_layers.anatomy.final_norm.register_forward_hook(lambda m, a, o: norm_calls.append(1)))
    try:
        part = lb.capture(six_layers, SHORT_PROMPTS, batch_size=2, progress=False, depths=[1, 3])
        assert calls == [3, 3, 3, 0, 0, 0] and not norm_calls  # 3 batches; layers 4..6 never ran
        assert part.provenance["stopped_after_depth"] == 3
        calls[:] = [0] * 6
        last = lb.capture(six_layers, SHORT_PROMPTS, batch_size=2, progress=False, depths=[1, 6])
        assert calls == [3] * 6 and len(norm_calls) == 3 and "stopped_after_depth" not in last.provenance
    finally:
        for handle in handles:
            handle.remove()


def test_partial_capture_saves_loads_and_merges_with_the_same_depths(tiny, tmp_path):
    a = lb.capture(tiny, SHORT_PROMPTS[:2], depths=[1], precision="float64", progress=False)
    back = lb.load_capture(a.save(tmp_path / "part.safetensors"))
    assert back.depths.tolist() == [1] and back.final_norm is None
    _assert_same_statistics(back, a, tol=0)
    b = lb.capture(tiny, SHORT_PROMPTS[2:], depths=[1], precision="float64", progress=False)
    both = lb.capture(tiny, SHORT_PROMPTS, depths=[1], precision="float64", progress=False)
    a.merge(b)
    assert a.n_tokens == both.n_tokens and a.depths.tolist() == [1]
    assert _rel(a.covariance(1), both.covariance(1)) < 1e-5  # float32 model, other batches


def test_schema_2_capture_files_still_load(tiny, tmp_path):
    """A file written before captures recorded their depths (schema 2) holds every depth."""
    import json

    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    from latentbook.capturing.capture_file import digest as _digest

    cap = lb.capture(tiny, SHORT_PROMPTS, progress=False)
    path = cap.save(tmp_path / "new.safetensors")
    with safe_open(str(path), framework="pt") as f:
        header = json.loads(f.metadata()["latentbook"])
    assert header["schema"] == 3 and header["depths"] == [0, 1, 2]
    del header["depths"]
    header["schema"] = 2
    state = load_file(str(path))
    header["sha256"] = _digest(state, header)
    old = tmp_path / "old.safetensors"
    save_file(state, str(old), metadata={"latentbook": json.dumps(header)})
    back = lb.load_capture(old)
    assert back.complete and back.depths.tolist() == [0, 1, 2]
    _assert_same_statistics(back, cap, tol=0)


def test_resume_with_other_depths_is_refused(tiny, tmp_path):
    from latentbook.errors import CheckpointMismatchError

    checkpoint = tmp_path / "ck.safetensors"

    def stop(done, total):
        if done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        lb.capture(
            tiny,
            SHORT_PROMPTS,
            batch_size=2,
            depths=[1],
            checkpoint=checkpoint,
            progress=False,
            checkpoint_every=1,
            on_batch=stop,
        )
    with pytest.raises(CheckpointMismatchError, match="depths"):
        lb.capture(tiny, SHORT_PROMPTS, batch_size=2, checkpoint=checkpoint, progress=False)
    resumed = lb.capture(tiny, SHORT_PROMPTS, batch_size=2, depths=[1], checkpoint=checkpoint, progress=False)
    whole = lb.capture(tiny, SHORT_PROMPTS, batch_size=2, depths=[1], progress=False)
    _assert_same_statistics(resumed, whole, tol=1e-12)


def test_analyses_of_a_partial_capture_use_the_depths_it_holds():
    """Profiles, spectra and fits of a capture of some depths are those of the full capture at those depths,
    labelled with their own depth and gamma; what needs every depth refuses, naming the depth it lacks."""
    from latentbook.analysis import (
        confounds,
        contraction,
        layer_spectra,
        omega_profiles,
        spectra,
        synthetic,
        transition,
    )
    from latentbook.view.explorer import ModelViews

    rng = np.random.default_rng(0)
    n_depths, n, d = 21, 300, 16
    drift = np.cumsum(rng.normal(size=(n_depths, 1, d)), axis=0)
    states = drift + rng.normal(size=(n_depths, n, d)) * np.linspace(1, 3, n_depths)[:, None, None]
    full = synthetic.as_capture(states, prompt_ids=np.arange(n) // 10, positions=np.arange(n) % 10)
    held = list(range(0, 21, 2))
    part = full.at_depths(held)
    assert part.gamma.tolist() == [h / 20 for h in held]

    prof, ref = omega_profiles.profile(part, n_boot=200), omega_profiles.profile(full, n_boot=200)
    np.testing.assert_array_equal(prof.gamma, part.gamma)
    np.testing.assert_array_equal(prof.m, ref.m[held])
    nulls, ref_nulls = omega_profiles.null_profiles(part), omega_profiles.null_profiles(full)
    np.testing.assert_array_equal(nulls.to_numpy(), ref_nulls.iloc[held].to_numpy())
    np.testing.assert_array_equal(
        omega_profiles.distributions(part)[1], omega_profiles.distributions(full)[1][held]
    )
    np.testing.assert_array_equal(confounds.massive_ratio(part), confounds.massive_ratio(full)[held])
    table, ref_table = spectra.streamed_spectrum_profile(part), spectra.streamed_spectrum_profile(full)
    assert table["layer"].tolist() == held
    np.testing.assert_allclose(table.to_numpy(), ref_table.iloc[held].to_numpy(), rtol=1e-9)
    rows = layer_spectra.token_sample_spectrum_profile(part, exclude_positions=())
    ref_rows = layer_spectra.token_sample_spectrum_profile(full, exclude_positions=())
    assert rows["layer"].tolist() == held
    np.testing.assert_allclose(
        rows.drop(columns="settled").to_numpy(float),
        ref_rows.iloc[held].drop(columns="settled").to_numpy(float),
        rtol=1e-9,
    )
    fit = transition.critical_depth(part, n_boot=50)
    assert set(fit.fitted_gamma.tolist()) <= set(part.gamma.tolist())
    q = contraction.contraction_fit(part, 4, 12, k=2, n_boot=20)
    assert len(q.share) == 5  # depths 4, 6, 8, 10, 12
    with pytest.raises(InvalidInputError, match="at least 2"):
        contraction.contraction_fit(part, 5, 6, k=2, n_boot=20)
    with pytest.raises(InvalidInputError, match="Depth 1 is not in this capture"):
        part.eigvals(1)
    with pytest.raises(InvalidInputError, match="holds depths"):
        ModelViews("partial", part)
    with pytest.raises(InvalidInputError, match="gamma fractions lie in"):
        full.at_depths([1.5])


def test_attention_at_chosen_depths_records_their_layers_only(tiny):
    from latentbook.analysis import cooling, thermo

    part = lb.capture(tiny, SHORT_PROMPTS, depths=[1], attention=True, progress=False)
    full = lb.capture(tiny, SHORT_PROMPTS, attention=True, progress=False)
    rows = part.attention.n_rows()
    assert rows[0].min() > 0 and rows[1].max() == 0  # layer 1 feeds depth 1; layer 2 did not run
    np.testing.assert_array_equal(part.attention.entropy()[0], full.attention.entropy()[0])
    table = thermo.cooling(part)
    assert table["layer"].tolist() == [1] and table["gamma"].tolist() == [0.5]
    with pytest.raises(InvalidInputError, match="hold no attention rows"):
        cooling.attention_sums(part)


def test_device_map_capture_equals_the_single_device_capture(tiny):
    """``device_map`` through accelerate on CPU devices: the same hooks and the same statistics; every
    depth's pending Gram sits on its layer's device and the float64 sums on the host."""
    mapped = lb.load_model(
        "random:llama-tiny",
        device="cpu",
        device_map={
            "model.embed_tokens": "cpu",
            "model.layers": "cpu",
            "model.norm": "cpu",
            "model.rotary_emb": "cpu",
            "lm_head": "cpu",
        },
    )
    a = lb.capture(mapped, SHORT_PROMPTS, batch_size=2, precision="float64", progress=False)
    b = lb.capture(tiny, SHORT_PROMPTS, batch_size=2, precision="float64", progress=False)
    assert {device for s in a.layers for device in s.nbytes()} == {"host"}
    _assert_same_statistics(a, b, tol=0)
