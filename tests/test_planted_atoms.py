"""The atom code (``models.planted``, issue 54): a sparse code of ``k`` of ``n_atoms`` orthonormal directions off the
coordinate axes, checked at its rows and at what it writes into a real forward pass."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import latentbook as lb
from latentbook.errors import InvalidInputError
from latentbook.models import planted

N_VOCAB = len(planted.vocabulary())
SPEC = planted.PlantSpec(
    plant="atom_code", gamma=0.5, n_layers=8, d=64, seed=3, strength=3.0, k=3, n_atoms=16
)


def test_each_word_writes_k_of_n_atoms_orthonormal_directions_off_the_axes():
    rows = planted.written(SPEC, N_VOCAB)
    live = np.linalg.norm(rows, axis=1) > 0
    assert live.sum() == N_VOCAB - 1  # every word but <pad>
    np.testing.assert_allclose(np.linalg.norm(rows[live], axis=1), 1.0, atol=1e-12)
    singular = np.linalg.svd(rows, compute_uv=False)
    assert singular[SPEC.n_atoms - 1] > 1.0 and singular[SPEC.n_atoms] < 1e-9  # a span of exactly n_atoms
    # in the atoms' own basis each row has k coordinates of size 1/sqrt(k): recovered as the columns of the
    # planted basis, up to sign and order, by the rows' own sparse structure
    rng = np.random.default_rng([SPEC.seed, 1])
    atoms, _ = np.linalg.qr(rng.standard_normal((SPEC.d, SPEC.n_atoms)))
    codes = rows[live] @ atoms
    assert np.all((np.abs(codes) > 1e-9).sum(axis=1) == SPEC.k)
    np.testing.assert_allclose(np.abs(codes[np.abs(codes) > 1e-9]), 1 / np.sqrt(SPEC.k), atol=1e-12)
    # off the coordinate axes: every row spreads over most coordinates
    assert np.median((np.abs(rows[live]) > 1e-3).sum(axis=1)) > SPEC.d / 2
    np.testing.assert_array_equal(rows, planted.written(SPEC, N_VOCAB))
    assert not np.allclose(rows, planted.written(replace(SPEC, seed=4), N_VOCAB))


def test_the_atom_code_reaches_the_stream_at_its_depth_and_strength():
    model, base = planted.build(SPEC), planted.build(replace(SPEC, plant="none"))
    batch = model.tokenizer(lb.prompts.load("general", limit=4), return_tensors="pt", padding=True)
    mask = batch["attention_mask"].bool()
    with_code = model.model(**batch, output_hidden_states=True).hidden_states
    without = base.model(**batch, output_hidden_states=True).hidden_states
    for depth in range(SPEC.depth):
        np.testing.assert_allclose(with_code[depth][mask].numpy(), without[depth][mask].numpy(), atol=1e-5)
    added = (with_code[SPEC.depth] - without[SPEC.depth])[mask].numpy()
    rows = planted.written(SPEC, N_VOCAB)[batch["input_ids"][mask].numpy()]
    cos = np.sum(added * rows, 1) / np.linalg.norm(added, axis=1)
    assert np.median(cos) > 0.95
    ratio = np.linalg.norm(added, axis=1) / np.linalg.norm(without[SPEC.depth][mask].numpy(), axis=1)
    assert 0.5 * SPEC.strength < np.median(ratio) < 2 * SPEC.strength


@pytest.mark.parametrize(("k", "n_atoms"), [(3, 3), (8, 4), (3, 65)])
def test_an_atom_code_needs_more_atoms_than_active_ones_and_at_most_d(k, n_atoms):
    with pytest.raises(InvalidInputError, match="k < n_atoms <= d"):
        replace(SPEC, k=k, n_atoms=n_atoms)
