"""Chapter 1's tables and glued numbers (``study.chapters.depth_as_time_tables``), on synthetic captures and small
stand-ins for a model's embedding and tokenizer: every value checked against a hand computation."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from latentbook.analysis import omega, stream, synthetic
from latentbook.capturing.accumulators import LayerStats
from latentbook.study.chapters import depth_as_time_tables as tables


def _capture(n_depths: int, n_tokens: int, d: int = 8, seed: int = 0, **provenance):
    states = np.random.default_rng(seed).standard_normal((n_depths, n_tokens, d))
    cap = synthetic.as_capture(states, np.arange(n_tokens) // 4, np.arange(n_tokens) % 4)
    cap.provenance.update(provenance)
    return cap


def test_capture_table_and_glue():
    captures = {
        "smollm2-135m": _capture(5, 40, n_prompts=10, max_length=4),
        "gemma3-270m": _capture(3, 24),
        "minilm-l6": _capture(7, 12),
    }
    table = tables.capture_table(captures)
    assert list(table.index) == ["smollm2-135m", "gemma3-270m", "minilm-l6"]
    assert table["depths L+1"].tolist() == [5, 3, 7]
    assert table["gamma step 1/L"].tolist() == pytest.approx([1 / 4, 1 / 2, 1 / 6])
    assert table["tokens captured"].tolist() == [40, 24, 12]
    values = tables.capture_glue(captures)
    state = captures["smollm2-135m"].state_dict().values()
    assert values == {
        "n_prompts": 10,
        "n_tokens": 40,
        "max_length": 4,
        "minilm_depths": 7,
        "state_mb": pytest.approx(sum(t.numel() * t.element_size() for t in state) / 2**20),
        "smollm2_layers": 4,
        "gemma_layers": 2,
        "minilm_layers": 6,
    }


def test_growth_and_step_glue():
    rms = {"a-1": np.array([1.0, 2.0, 2.2, 6.6, 6.7]), "random:a-1": np.array([2.0, 3.0, 5.0])}
    assert tables.growth_glue(rms) == pytest.approx({"growth_a-1": 6.7, "growth_random_a-1": 2.5})
    # factors after the first layer: 1.1 (l=2), 3.0 (l=3), 6.7/6.6 (l=4); the jump 1 -> 2 at l=1 is left out
    assert tables.step_glue(rms["a-1"], np.linspace(0, 1, 5), key="a") == pytest.approx(
        {"a_step_layer": 3, "a_step_gamma": 0.75, "a_step_factor": 3.0}
    )


def _model(weight: np.ndarray, scale: float | None):
    """A stand-in for a ``LoadedModel``: an embedding (with ``embed_scale`` when ``scale``) and a tokenizer
    whose token ids are a text's digits."""
    embedding = torch.nn.Embedding(*weight.shape)
    embedding.weight.data = torch.tensor(weight, dtype=torch.float32)
    embedding.weight.requires_grad_(False)  # as in a loaded model
    if scale is not None:
        embedding.embed_scale = torch.tensor(scale)

    def tokenizer(texts, truncation, max_length):
        assert truncation
        return {"input_ids": [[int(c) for c in text][:max_length] for text in texts]}

    inner = SimpleNamespace(get_input_embeddings=lambda: embedding)
    return SimpleNamespace(model=inner, tokenizer=tokenizer, d_model=weight.shape[1])


def test_embedding_scale_table_and_glue():
    weight = np.arange(40, dtype=float).reshape(10, 4) / 10
    models = {"smollm2-135m": _model(weight, None), "gemma3-270m": _model(2 * weight, 2.0)}
    texts = ["0123", "9", "55"]  # truncated to 2 tokens: ids 0, 1, 9, 5, 5
    raw = np.sqrt((weight[[0, 1, 9, 5, 5]] ** 2).mean())
    rms = {"smollm2-135m": np.array([raw, 7.0]), "gemma3-270m": np.array([8 * raw, 1.0])}
    scales = tables.embedding_scale_table(models, texts, 2, rms)
    assert list(scales.index) == ["smollm2-135m", "gemma3-270m"]
    assert scales.loc["smollm2-135m"].to_dict() == pytest.approx(
        {
            "d": 4,
            "embed_scale (module)": 1.0,
            "sqrt(d)": 2.0,
            "RMS of raw embedding rows": raw,
            "RMS of depth 0 (capture)": raw,
            "measured ratio": 1.0,
        },
        rel=1e-6,
    )
    gemma = scales.loc["gemma3-270m"]
    assert gemma["embed_scale (module)"] == 2.0 and gemma["RMS of raw embedding rows"] == pytest.approx(
        2 * raw
    )
    assert gemma["measured ratio"] == pytest.approx(4.0)
    assert tables.embedding_scale_glue(scales) == pytest.approx(
        {
            "gemma_sqrt_d": 2.0,
            "gemma_d": 4,
            "gemma_scale_ratio": 4.0,
            "smollm2_scale_ratio": 1.0,
            "gemma_eig_factor": 16.0,
        }
    )


def test_hidden_states_glue_compares_token_means():
    hidden = (
        torch.tensor([[[1.0, 0.0], [3.0, 0.0]]]),  # depth 0: mean (2, 0)
        torch.tensor([[[0.0, 1.0], [0.0, 3.0]]]),
        torch.tensor([[[3.0, 4.0], [3.0, 4.0]]]),  # the final norm's output: mean (3, 4)
    )
    means = {0: np.array([2.0, 0.0]), 2: np.array([0.0, 4.0])}
    one = SimpleNamespace(
        n_layers=2,
        mean=means.__getitem__,
        final_norm=SimpleNamespace(
            moments=SimpleNamespace(mean=torch.tensor([3.0, 4.5], dtype=torch.float64))
        ),
    )
    assert tables.hidden_states_glue(hidden, one) == pytest.approx(
        {"hs_vs_final": 0.5 / np.hypot(3, 4.5), "hs_vs_layer_L": 3 / 4, "hs0_vs_depth0": 0.0, "hs_count": 3}
    )
    assert tables.relative_difference(np.array([1.0, 1.0]), np.array([0.0, 2.0])) == pytest.approx(
        np.sqrt(2) / 2
    )


def test_final_norm_table_and_glue():
    rng = np.random.default_rng(2)
    captures = {}
    for name, scale in (("smollm2-135m", 3.0), ("gemma3-270m", 0.5)):
        cap = _capture(3, 32, seed=int(scale * 10))
        after = rng.standard_normal((32, 8)) * scale
        final = LayerStats(8)
        final.add(torch.tensor(after, dtype=torch.float32))
        captures[name] = dataclasses.replace(cap, final_norm=final)
        captures[name].after = after
    effects = tables.final_norm_table(captures, ["gemma3-270m", "smollm2-135m"])
    assert list(effects.index) == ["gemma3-270m", "smollm2-135m"]
    for name, cap in captures.items():
        assert effects.loc[name].to_dict() == pytest.approx(stream.final_norm_effect(cap))
        after = cap.after
        assert effects.loc[name, "rms_after"] == pytest.approx(np.sqrt((after**2).mean()), rel=1e-5)
        assert effects.loc[name, "max_abs_after"] == pytest.approx(np.abs(after).max(), rel=1e-6)
        assert effects.loc[name, "omega_after"] == pytest.approx(omega.omega(after).mean(), rel=1e-5)
    values = tables.final_norm_glue(effects, ["smollm2-135m", "gemma3-270m"])
    assert len(values) == 12
    for name, key in (("smollm2-135m", "smollm2"), ("gemma3-270m", "gemma3")):
        for column in tables.FINAL_NORM_COLUMNS:
            assert values[f"{key}_{column}"] == effects.loc[name, column]
    assert values["smollm2_rms_after"] > 2.0 > 1.0 > values["gemma3_rms_after"]
    twins = effects.rename(index={"smollm2-135m": "random:smollm2-135m"})
    twin_values = tables.final_norm_glue(twins, ["random:smollm2-135m"])  # a glue name has no ':'
    assert sorted(twin_values) == sorted(f"random_smollm2_{c}" for c in tables.FINAL_NORM_COLUMNS)
    assert twin_values["random_smollm2_omega_after"] == values["smollm2_omega_after"]
