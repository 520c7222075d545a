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


def test_the_calibration_s_atom_code_family_writes_3_of_32_atoms_where_the_sparse_code_writes():
    from latentbook.study import planted_calibration as pc

    by_name = {family.name: family for family in pc.families()}
    atom, sparse = by_name[pc.ATOM_CODE], by_name["sparse code, step in 0.33-0.51"]
    assert atom.present == (pc.LEARNED_ROW,) and set(atom.absent) == set(pc.OMEGA_ROWS)
    learned = {family.name for family in pc.families() if family.learned}
    assert {pc.ATOM_CODE, "the twin has the atom code too", pc.REDRAWN} <= learned
    for case in range(6):
        base = pc.base_spec(case)
        spec = atom.plant(base, np.random.default_rng(case))
        code = sparse.plant(base, np.random.default_rng(case))
        assert (spec.plant, spec.k, spec.n_atoms) == ("atom_code", pc.ATOM_K, 32)
        assert (spec.gamma, spec.strength) == (code.gamma, code.strength)  # the same depth and size draws
        twin = by_name["the twin has the atom code too"].twin(spec, np.random.default_rng(case))
        assert (twin.plant, twin.k, twin.gamma) == ("atom_code", pc.ATOM_K, spec.gamma)
        assert twin.seed != spec.seed  # its own atoms


@pytest.fixture(scope="module")
def learned_rows():
    """The learned-basis row of a 12-layer model with an atom code at 0.42 and of one with nothing planted, each
    judged against the same random twin by the verdict's own code (capture -> measure -> claim_rows)."""
    from latentbook.study import planted_calibration as pc
    from latentbook.study.rows import claim_rows

    base = planted.PlantSpec(plant="none", n_layers=12, d=128, seed=7)
    twin = pc.measure_spec(planted.twin_spec(base), spectra=False, learned=True)
    judged = {}
    for plant in ("atom_code", "none"):
        spec = replace(base, plant=plant, gamma=5 / 12, strength=3.0, k=pc.ATOM_K)
        rows = claim_rows(pc.measure_spec(spec, spectra=False, learned=True), twin, run="planted")
        judged[plant] = {row.claim: row for row in rows}
    alone = pc.measure_spec(base, spectra=False, learned=True)
    judged["without twin"] = {row.claim: row for row in claim_rows(alone, None)}
    # the twin read at its first four depths only: no step of the model's has a twin's step to compare with
    fewer = replace(twin.learned, profile=_first_depths(twin.learned.profile, 4))
    judged["twin at other depths"] = {
        row.claim: row for row in claim_rows(alone, replace(twin, learned=fewer), run="planted")
    }
    return judged


def _first_depths(profile, n):
    return replace(
        profile,
        gamma=profile.gamma[:n],
        m=profile.m[:n],
        low=profile.low[:n],
        high=profile.high[:n],
        draws=profile.draws[:, :n],
    )


def test_the_learned_row_finds_the_atom_code_where_the_m_z_rows_do_not(learned_rows):
    row = learned_rows["atom_code"]["learned_basis_jump"]
    assert row.verdict == "holds", row.reason
    assert row.ci_low > 0.02 and row.ci_low <= row.value <= row.ci_high
    assert "0.33 -> 0.42" in row.measured  # the step into depth 5 = 0.42 x 12, where the code is written
    assert learned_rows["atom_code"]["omega_jump"].verdict != "holds"


def test_the_learned_row_does_not_hold_with_nothing_planted_or_test_without_a_twin(learned_rows):
    assert learned_rows["none"]["learned_basis_jump"].verdict == "does not hold"
    alone = learned_rows["without twin"]["learned_basis_jump"]
    assert alone.verdict == "not testable here" and "twin" in alone.reason
    other = learned_rows["twin at other depths"]["learned_basis_jump"]
    assert other.verdict == "not testable here" and "other depths" in other.reason


def test_a_case_measures_each_model_once_and_never_serves_a_measurement_without_what_is_asked():
    """``run_case`` mixes families measured with and without the learned basis (and the gains): a measurement
    made without one must never answer a request for it (a twin without its learned profile would make every
    learned-basis row "not testable"), and one made with it serves a request without it."""
    from latentbook.study.planted_calibration import MeasuredOnce

    made = []

    def fake(spec, spectra, flow, gains, learned):
        made.append((spec, spectra, flow, gains, learned))
        return {"gains": gains, "learned": learned}

    once = MeasuredOnce(fake)
    assert once("twin", True, False, False, False) == {"gains": False, "learned": False}
    assert once("twin", True, False, False, True)["learned"]  # not served by the one without
    assert once("twin", True, False, True, False)["gains"]
    assert once("twin", True, False, False, False)["gains"]  # the first with more than asked serves
    assert once("twin", True, False, False, True)["learned"] and len(made) == 3
    assert once("other", True, False, False, False)["learned"] is False and len(made) == 4
    fresh = MeasuredOnce(fake)
    fresh("m", False, False, True, True)
    assert fresh("m", False, False, False, False) == {"gains": True, "learned": True}  # serves the lesser ask
