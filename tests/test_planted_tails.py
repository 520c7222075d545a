"""The planted artefacts of issue 54 that hold no object: heavy-tailed coordinates, outlier features and a sparse
code redrawn at every token (``models.planted``), each checked at what it writes into a real forward pass."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

import latentbook as lb
from latentbook.errors import InvalidInputError
from latentbook.models import planted
from latentbook.study import planted_calibration

N_VOCAB = len(planted.vocabulary())


def _added(spec: planted.PlantSpec, texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What the plant adds at depth l* (the planted model's stream minus the base model's), the residual's norm
    there, and the token ids, over the unpadded tokens of ``texts``."""
    model, base = planted.build(spec), planted.build(replace(spec, plant="none"))
    batch = model.tokenizer(texts, return_tensors="pt", padding=True)
    mask = batch["attention_mask"].bool()
    with_plant = model.model(**batch, output_hidden_states=True).hidden_states[spec.depth][mask]
    without = base.model(**batch, output_hidden_states=True).hidden_states[spec.depth][mask]
    return (
        (with_plant - without).numpy(),
        without.norm(dim=-1).numpy(),
        batch["input_ids"][mask].numpy(),
    )


@pytest.mark.parametrize(("plant", "excess"), [("laplace", 3.0), ("t3", 6.0), ("gated", 3.0)])
def test_heavy_tailed_rows_are_dense_unit_vectors_with_the_kind_s_tails(plant, excess):
    """Every word writes a dense unit vector whose coordinates have the kind's excess kurtosis (Laplace 3, t3
    infinite: large; the gated product about 3), not a sparse code's few large coordinates."""
    spec = planted.PlantSpec(plant=plant, d=256, seed=5)
    rows = planted.written(spec, N_VOCAB)
    live = rows[3:]  # the specials write nothing (<pad>) or their own vector
    np.testing.assert_allclose(np.linalg.norm(live, axis=1), 1.0, rtol=1e-12)
    assert np.mean(np.abs(live) > 1e-6) > 0.99  # dense
    kurtosis = stats.kurtosis(live.ravel())
    assert kurtosis > excess * 0.6, kurtosis


def test_heavy_tails_reach_the_stream_at_their_depth():
    """The gated product is written where its words stand, at its strength, from depth l* on."""
    spec = planted.PlantSpec(plant="gated", gamma=0.5, n_layers=8, d=64, seed=1, strength=3.0)
    added, norms, ids = _added(spec, lb.prompts.load("general", limit=4))
    rows = planted.written(spec, N_VOCAB)
    cos = np.sum(added * rows[ids], 1) / np.linalg.norm(added, axis=1)
    assert np.median(cos) > 0.95
    assert 0.5 * spec.strength < np.median(np.linalg.norm(added, axis=1) / norms) < 2 * spec.strength


def test_outlier_features_sit_on_six_coordinates_of_a_quarter_to_two_fifths_of_the_tokens():
    texts = lb.prompts.load("general")
    counts = {}
    for text in texts:
        for word in planted.words(text):
            counts[word] = counts.get(word, 0) + 1
    vocab = planted.vocabulary()
    for seed in range(4):
        rows = planted.written(planted.PlantSpec(plant="outlier_features", d=128, seed=seed), N_VOCAB)
        dims = np.flatnonzero(np.any(rows != 0, axis=0))
        assert len(dims) == planted.N_OUTLIERS
        # one sign per coordinate, as LLM.int8's outlier features have
        assert all(len(np.unique(np.sign(rows[rows[:, j] != 0, j]))) == 1 for j in dims)
        writing = np.any(rows != 0, axis=1)
        share = sum(counts.get(w, 0) for w, on in zip(vocab, writing) if on) / sum(
            counts.get(w, 0) for w in vocab
        )
        low, high = planted.OUTLIER_SHARE
        assert low - 0.02 <= share <= high + 0.02, share


def test_the_outlier_family_writes_20_to_60_coordinate_scales():
    by_name = {family.name: family for family in planted_calibration.families()}
    family = by_name["outlier features on 25-40 % of tokens"]
    for case in range(8):
        base = planted_calibration.base_spec(case)
        spec = family.plant(base, np.random.default_rng(case))
        # each of the six coordinates carries strength * norm / sqrt(6) = size * norm / sqrt(d)
        size = spec.strength * np.sqrt(base.d / planted.N_OUTLIERS)
        assert 20 <= size <= 60 and 0.38 <= spec.gamma <= 0.46


def test_a_redrawn_code_has_the_sparse_code_s_marginals_and_no_identity():
    """Each token gets k coordinates of one size with random signs, drawn afresh: the same word gets different
    coordinates at two places and in two passes, unlike the sparse code, whose word always writes its own."""
    texts = lb.prompts.load("general", limit=4)
    spec = planted.PlantSpec(plant="redrawn_code", gamma=0.5, n_layers=8, d=64, seed=1, strength=3.0, k=4)
    added, norms, ids = _added(spec, texts)
    big = np.abs(added) > 0.5 * np.abs(added).max(axis=1, keepdims=True)
    assert np.all(big.sum(axis=1) == spec.k)  # k coordinates per token, all of one size
    sizes = np.linalg.norm(added, axis=1) / np.median(norms)
    assert 0.5 * spec.strength < np.median(sizes) < 2 * spec.strength
    word = np.bincount(ids).argmax()  # the commonest word: several places
    places = big[ids == word]
    assert len(places) >= 3 and len({row.tobytes() for row in places}) == len(places)
    again, _, _ = _added(spec, texts)  # a fresh model: the same seed draws the same codes
    np.testing.assert_allclose(again, added, atol=1e-5)
    code = planted.PlantSpec(plant="sparse_code", gamma=0.5, n_layers=8, d=64, seed=1, strength=3.0, k=4)
    fixed, _, _ = _added(code, texts)
    fixed_places = (np.abs(fixed) > 0.5 * np.abs(fixed).max(axis=1, keepdims=True))[ids == word]
    assert len({row.tobytes() for row in fixed_places}) == 1


def test_a_redrawn_code_cannot_be_saved(tmp_path):
    spec = planted.PlantSpec(plant="redrawn_code", n_layers=4, d=32)
    with pytest.raises(InvalidInputError, match="build"):
        planted.save(spec, tmp_path / "m")
    assert not list(tmp_path.iterdir())
