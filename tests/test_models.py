"""The zoo: every embedded model loads offline, and its captured depths match transformers' hidden states."""

import numpy as np
import pytest
import torch

import latentbook as lb

PROMPTS = [
    "Water boils at a lower temperature on a high mountain.",
    "Where did the key go? It is in the box.",
]


def _compare(loaded, prompts, depths):
    cap = lb.capture(loaded, prompts, precision="float64", progress=False)
    enc = loaded.tokenizer(prompts, return_tensors="pt", padding=True)
    with torch.no_grad():
        out = loaded.model(**enc, output_hidden_states=True)
    mask = enc["attention_mask"].bool()
    for depth in depths:
        x = out.hidden_states[depth][mask].double().numpy()
        np.testing.assert_allclose(cap.mean(depth), x.mean(0), rtol=1e-4, atol=1e-4 * np.abs(x).max())
        cov = np.cov(x.T, bias=True)
        assert np.abs(cap.covariance(depth) - cov).max() < 1e-4 * np.abs(cov).max()
    return cap


def test_models_table_lists_the_zoo():
    table = lb.models()
    assert {"smollm2-135m", "gemma3-270m", "minilm-l6", "random:llama-tiny", "random:gemma-1b"} <= set(
        table.name
    )
    row = table.set_index("name").loc["smollm2-135m"]
    assert (row.layers, row.d_model) == (30, 576)


@pytest.mark.slow
@pytest.mark.parametrize(
    "name, layers, d",
    [("smollm2-135m", 30, 576), ("gemma3-270m", 18, 640), ("minilm-l6", 6, 384)],
)
def test_embedded_model_loads_offline_and_matches_transformers(name, layers, d, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    loaded = lb.load_model(name)
    assert (loaded.n_layers, loaded.d_model) == (layers, d)
    assert loaded.device.type == "cpu" and loaded.dtype == torch.float32
    assert len(loaded.sha) == 64
    _compare(loaded, PROMPTS, depths=[0, 1, layers // 2])


@pytest.mark.parametrize("family", ["llama", "qwen2", "gemma"])
def test_random_models_are_seeded_and_capture(family):
    a = lb.load_model(f"random:{family}-tiny")
    b = lb.load_model(f"random:{family}-tiny")
    assert a.sha == b.sha
    for p, q in zip(a.model.parameters(), b.model.parameters()):
        assert torch.equal(p, q)
    _compare(a, PROMPTS, depths=[0, 1])


def test_second_gguf_load_uses_the_safetensors_cache(smollm2, monkeypatch):
    """The GGUF is dequantised once: a second load reads the cached safetensors (how long it takes is the
    benchmarks' business, not a test's)."""
    from latentbook.models import embedded

    def dequantise_again(gguf, into):
        raise AssertionError(f"{gguf} was dequantised again instead of read from the cache")

    monkeypatch.setattr(embedded, "_dequantise", dequantise_again)
    again = lb.load_model("smollm2-135m")
    assert again.sha == smollm2.sha
    for p, q in zip(again.model.parameters(), smollm2.model.parameters()):
        assert torch.equal(p, q)


def test_random_twin_has_the_embedded_config_and_other_weights(smollm2):
    twin = lb.load_model("random:smollm2-135m")
    assert twin.model.config.to_diff_dict()["num_hidden_layers"] == smollm2.n_layers
    assert (twin.n_layers, twin.d_model, twin.family) == (smollm2.n_layers, smollm2.d_model, smollm2.family)
    w, v = twin.anatomy.layers[0].mlp.up_proj.weight, smollm2.anatomy.layers[0].mlp.up_proj.weight
    assert w.shape == v.shape and not torch.allclose(w, v)
    assert len(twin.tokenizer) == len(smollm2.tokenizer)


def test_a_dequantisation_parses_its_gguf_once(tmp_path, monkeypatch):
    """``transformers`` opens the GGUF for the config, the tokenizer and the tensors: inside ``_one_gguf_reader``
    they share one parsed reader (the parse is most of a dequantisation's time), and the module is as before after."""
    import gguf

    from latentbook.models import embedded

    opened = []

    class CountingReader:
        def __init__(self, path, mode="r"):
            opened.append((str(path), mode))

    monkeypatch.setattr(gguf, "GGUFReader", CountingReader)
    path = tmp_path / "model.gguf"
    with embedded._one_gguf_reader():
        first = gguf.GGUFReader(path)
        assert gguf.GGUFReader(str(path)) is first  # the same file by another spelling: the same reader
        assert gguf.GGUFReader(path, "c") is not first  # another mode is another reader
    assert opened == [(str(path), "r"), (str(path), "c")]
    assert gguf.GGUFReader is CountingReader and isinstance(gguf.GGUFReader(path), CountingReader)
