"""Attention statistics from the actual logits equal those of transformers' eager attention weights."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import latentbook as lb
from latentbook.analysis import thermo
from latentbook.capturing.attention import AttentionStats, attention_recorder

from .conftest import SHORT_PROMPTS


def _eager_reference(loaded, prompts, exclude_first=False):
    """Per-head mean entropy and max weight over every real row, one prompt at a time (no padding at all)."""
    model = loaded.model
    previous = model.config._attn_implementation
    model.set_attn_implementation("eager")
    entropy, max_weight, rows = 0.0, 0.0, 0
    try:
        with torch.inference_mode():
            for text in prompts:
                enc = loaded.tokenizer([text], return_tensors="pt")
                kwargs = {"use_cache": False} if loaded.kind == "causal" else {}
                out = loaded.anatomy.base(**enc, output_attentions=True, **kwargs)
                weights = torch.stack(out.attentions)[:, 0].double()  # (L, H, T, T)
                if exclude_first:
                    weights = weights[:, :, 1:]
                entropy = entropy - torch.special.xlogy(weights, weights).sum((-1, -2))
                max_weight = max_weight + weights.amax(-1).sum(-1)
                rows += weights.shape[2]
    finally:
        model.set_attn_implementation(previous)
    return (entropy / rows).numpy(), (max_weight / rows).numpy()


def _gemma2_tiny(tokenizer):
    """A random Gemma 2 with strong logit soft-capping, so a missing cap would show."""
    from transformers import AutoModelForCausalLM, Gemma2Config

    from latentbook.models.anatomy import anatomy_of
    from latentbook.models.zoo import LoadedModel

    config = Gemma2Config(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        attn_logit_softcapping=0.5,
        query_pre_attn_scalar=16,
        sliding_window=4,
    )
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config).eval()
    with torch.no_grad():  # larger q/k weights, so the logits reach the cap
        for layer in model.model.layers:
            layer.self_attn.q_proj.weight.mul_(30.0)
    return LoadedModel(model, tokenizer, "gemma2-tiny", "gemma2", "causal", "none", anatomy_of(model))


@pytest.fixture(scope="module")
def gemma_tiny():
    return lb.load_model("random:gemma-tiny")  # Gemma 3: q/k norms and sliding windows


@pytest.mark.parametrize("which", ["tiny", "gemma_tiny", "gemma2"])
def test_entropy_and_max_weight_match_eager_attention(which, request, tiny):
    loaded = _gemma2_tiny(tiny.tokenizer) if which == "gemma2" else request.getfixturevalue(which)
    cap = lb.capture(loaded, SHORT_PROMPTS, batch_size=3, progress=False, attention=True)
    entropy, max_weight = _eager_reference(loaded, SHORT_PROMPTS)
    np.testing.assert_allclose(cap.attention.entropy(), entropy, atol=1e-5, rtol=0)
    np.testing.assert_allclose(cap.attention.max_weight(), max_weight, atol=1e-5, rtol=0)
    assert cap.attention.entropy().shape == (loaded.n_layers, loaded.model.config.num_attention_heads)
    assert np.all(cap.attention.variational_gap() < 1e-5)
    if which == "gemma2":  # the cap bounds every logit, so the row std cannot exceed it
        assert np.all(cap.attention.beta_eff() <= 0.5 + 1e-6) and np.all(cap.attention.beta_eff() > 0.05)


def test_free_energy_and_beta_match_logits_rebuilt_from_q_and_k(tiny):
    """F_min, logit std, query and key norms against Llama logits rebuilt independently in float64."""
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    text = SHORT_PROMPTS[1]
    enc = tiny.tokenizer([text], return_tensors="pt")
    inputs = {}

    def grab(module, args, kwargs):
        inputs[id(module)] = (kwargs["hidden_states"], kwargs["position_embeddings"])

    stats = AttentionStats(tiny.n_layers)
    handles = [a.register_forward_pre_hook(grab, with_kwargs=True) for a in tiny.anatomy.attention]
    try:
        with torch.inference_mode(), attention_recorder(tiny, stats) as recorder:
            recorder.set_rows(enc["attention_mask"].bool())
            tiny.anatomy.base(**enc, use_cache=False)
    finally:
        for handle in handles:
            handle.remove()
    t = enc["input_ids"].shape[1]
    np.testing.assert_allclose(stats.n_keys(), (t + 1) / 2)  # causal: row i sees i+1 keys
    np.testing.assert_allclose(stats.log_keys(), np.log(np.arange(1, t + 1)).mean())
    for layer, module in enumerate(tiny.anatomy.attention):
        hidden, (cos, sin) = inputs[id(module)]
        shape = (1, t, -1, module.head_dim)
        q = module.q_proj(hidden).view(shape).transpose(1, 2)
        k = module.k_proj(hidden).view(shape).transpose(1, 2)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        q, k = q[0].double().numpy(), k[0].double().numpy().repeat(module.num_key_value_groups, axis=0)
        for head in range(q.shape[0]):
            z = [q[head, i] @ k[head, : i + 1].T * module.scaling for i in range(t)]
            f_min = np.mean([thermo.f_min(-row) for row in z])
            beta = np.mean([thermo.logit_scale(row) for row in z[1:]])  # rows with >= 2 keys
            assert abs(stats.free_energy()[layer, head] - f_min) < 1e-5
            assert abs(stats.beta_eff()[layer, head] - beta) < 1e-6
            assert abs(stats.query_norm()[layer, head] - np.linalg.norm(q[head], axis=-1).mean()) < 1e-5
            assert abs(stats.key_norm()[layer, head] - np.linalg.norm(k[head], axis=-1).mean()) < 1e-5


def test_row_statistics_agree_with_thermo_on_known_logits():
    rng = np.random.default_rng(0)
    z = rng.normal(scale=3.0, size=(2, 3, 5, 6))
    valid = np.tril(np.ones((5, 6), dtype=bool), k=1)[None, None]
    rows = np.array([[True] * 5, [True, True, False, False, False]])
    from latentbook.capturing.attention import row_statistics

    zt = torch.from_numpy(z).float()
    used = torch.softmax(zt.masked_fill(~torch.from_numpy(valid), float("-inf")), -1)
    got = row_statistics(zt, torch.from_numpy(valid), used, torch.from_numpy(rows))
    picked = [(b, i) for b in range(2) for i in range(5) if rows[b, i]]
    for h in range(3):
        logits = [z[b, h, i][valid[0, 0, i]] for b, i in picked]
        p = [thermo.gibbs(-row) for row in logits]
        assert got["rows"][h] == len(picked)
        assert abs(got["entropy"][h] - sum(thermo.entropy(r) for r in p)) < 1e-4
        assert abs(got["max_weight"][h] - sum(r.max() for r in p)) < 1e-5
        assert abs(got["free_energy"][h] - sum(thermo.f_min(-row) for row in logits)) < 1e-4
        assert abs(got["logit_std"][h] - sum(thermo.logit_scale(row) for row in logits)) < 1e-4
        assert got["keys"][h] == sum(len(row) for row in logits)
    assert float(got["variational_gap"].max()) < 1e-5


def test_padding_does_not_change_the_statistics(tiny):
    together = lb.capture(tiny, SHORT_PROMPTS, batch_size=5, progress=False, attention=True)
    alone = lb.capture(tiny, SHORT_PROMPTS[:1], batch_size=1, progress=False, attention=True)
    for text in SHORT_PROMPTS[1:]:
        alone.merge(lb.capture(tiny, [text], batch_size=1, progress=False, attention=True))
    for name, value in together.attention.sums.items():
        np.testing.assert_allclose(value.numpy(), alone.attention.sums[name].numpy(), rtol=1e-5, atol=1e-6)
    n_tokens = sum(len(tiny.tokenizer(p)["input_ids"]) for p in SHORT_PROMPTS)
    assert np.all(together.attention.n_rows() == n_tokens)


def test_exclude_first_drops_query_row_zero_only(tiny):
    cap = lb.capture(tiny, SHORT_PROMPTS, batch_size=2, progress=False, attention=True, exclude_first=True)
    entropy, max_weight = _eager_reference(tiny, SHORT_PROMPTS, exclude_first=True)
    np.testing.assert_allclose(cap.attention.entropy(), entropy, atol=1e-5, rtol=0)
    np.testing.assert_allclose(cap.attention.max_weight(), max_weight, atol=1e-5, rtol=0)
    assert np.all(cap.attention.n_rows() == cap.n_tokens)


def test_residual_statistics_are_unchanged_and_the_implementation_restored(tiny):
    before = tiny.model.config._attn_implementation
    plain = lb.capture(tiny, SHORT_PROMPTS, batch_size=2, progress=False)
    recorded = lb.capture(tiny, SHORT_PROMPTS, batch_size=2, progress=False, attention=True)
    assert tiny.model.config._attn_implementation == before
    assert plain.attention is None
    np.testing.assert_allclose(recorded.covariance(2), plain.covariance(2), atol=1e-5)


def test_save_load_round_trip_keeps_attention(tiny, tmp_path):
    cap = lb.capture(tiny, SHORT_PROMPTS, batch_size=2, progress=False, attention=True)
    loaded = lb.load_capture(cap.save(tmp_path / "cap.safetensors"))
    for read in ("entropy", "max_weight", "beta_eff", "free_energy", "query_norm", "key_norm", "n_keys"):
        np.testing.assert_array_equal(getattr(loaded.attention, read)(), getattr(cap.attention, read)())
    frame = thermo.cooling(loaded)
    assert list(frame["layer"]) == [1, 2] and np.all(frame["normalized_entropy"] <= 1 + 1e-9)


def test_merge_is_exact_and_checks_shapes():
    a, b = AttentionStats(2, 3), AttentionStats(2, 3)
    a.sums["rows"] += 2.0
    a.sums["entropy"] += 1.0
    b.sums["rows"] += 2.0
    b.sums["entropy"] += 3.0
    b.sums["variational_gap"] += 1e-7
    a.merge(b)
    np.testing.assert_allclose(a.entropy(), 1.0)
    np.testing.assert_allclose(a.variational_gap(), 1e-7)
    with pytest.raises(lb.InvalidInputError, match="heads"):
        a.merge(AttentionStats(2, 4))
    with pytest.raises(lb.InvalidInputError, match="empty"):
        AttentionStats(2).entropy()


def test_bert_encoder_is_supported():
    minilm = lb.load_model("minilm-l6")
    prompts = SHORT_PROMPTS[:3]
    cap = lb.capture(minilm, prompts, batch_size=3, progress=False, attention=True)
    entropy, max_weight = _eager_reference(minilm, prompts)
    np.testing.assert_allclose(cap.attention.entropy(), entropy, atol=1e-5, rtol=0)
    np.testing.assert_allclose(cap.attention.max_weight(), max_weight, atol=1e-5, rtol=0)


def test_checkpoint_resume_keeps_attention(tiny, tmp_path):
    path = tmp_path / "ckpt.safetensors"
    first = lb.capture(tiny, SHORT_PROMPTS, batch_size=2, progress=False, attention=True, checkpoint=path)
    resumed = lb.capture(tiny, SHORT_PROMPTS, batch_size=2, progress=False, attention=True, checkpoint=path)
    np.testing.assert_array_equal(resumed.attention.entropy(), first.attention.entropy())
    with pytest.raises(lb.CheckpointMismatchError, match="attention"):
        lb.capture(tiny, SHORT_PROMPTS, batch_size=2, progress=False, checkpoint=path)


@pytest.mark.parametrize("which", ["tiny", "gemma_tiny"])
def test_sink_excluded_sums_equal_rows_renormalised_without_their_first_key(which, request):
    """The capture's ``*_nosink`` sums (batched, padded) against ``cooling.row_sums`` of each prompt's own
    logits with key 0 dropped: a sink left in, or the wrong key dropped under padding, would differ."""
    from latentbook.analysis import cooling
    from latentbook.capturing.attention import attention_rows

    loaded = request.getfixturevalue(which)
    cap = lb.capture(loaded, SHORT_PROMPTS, batch_size=3, progress=False, attention=True)
    assert cap.attention.has_nosink
    want = {name: 0.0 for name in ("entropy", "log_keys", "rows", "logit_std", "std_rows")}
    for text in SHORT_PROMPTS:
        for layer in range(loaded.n_layers):
            rows = attention_rows(loaded, text, layer)
            got = cooling.row_sums(rows.logits, rows.valid, drop_sink=True)
            for name in want:
                want[name] = (
                    want[name] + np.asarray(got[name])[None] * (np.arange(loaded.n_layers) == layer)[:, None]
                )
    for name, value in want.items():
        np.testing.assert_allclose(cap.attention.sums[f"{name}_nosink"].numpy(), value, rtol=1e-5, atol=1e-4)
    # the first query keeps no key once its sink goes, and every other row loses one: the test can see a sink left in
    assert np.all(
        cap.attention.sums["rows_nosink"].numpy() == cap.attention.sums["rows"].numpy() - len(SHORT_PROMPTS)
    )
    assert np.all(want["log_keys"] < cap.attention.sums["log_keys"].numpy())
    summary = cooling.attention_sums(cap)
    assert summary.sink_excluded and np.allclose(summary.entropy[0], want["entropy"])


def test_statistics_saved_before_the_sink_excluded_sums_load_and_say_so(tiny, tmp_path):
    from latentbook.analysis import cooling
    from latentbook.capturing.attention import NOSINK_FIELDS

    cap = lb.capture(tiny, SHORT_PROMPTS, batch_size=2, progress=False, attention=True)
    old = {k: v for k, v in cap.attention.state_dict().items() if k not in NOSINK_FIELDS}
    stats = AttentionStats.from_state_dict(old)
    assert not stats.has_nosink
    summary = cooling.attention_sums(stats)
    assert not summary.sink_excluded
    np.testing.assert_allclose(summary.entropy[0], cap.attention.sums["entropy"].numpy())
    fresh = AttentionStats.from_state_dict(cap.attention.state_dict())
    fresh.merge(stats)  # an old and a new capture merge to what both have: sums with the sink
    assert not fresh.has_nosink
    np.testing.assert_allclose(fresh.sums["entropy"].numpy(), 2 * cap.attention.sums["entropy"].numpy())
