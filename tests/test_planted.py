"""Planted models end to end: built as Hugging Face folders, captured and reported by the command line as a user
would, and judged by the verdict's rows (``models.planted``, ``study.planted_calibration``)."""

from __future__ import annotations

import json
import zlib
from dataclasses import replace

import numpy as np
import pytest

import latentbook as lb
from latentbook.cli import main
from latentbook.errors import InvalidInputError
from latentbook.models import planted
from latentbook.study import planted_calibration

SHAPE = dict(n_layers=12, d=128, seed=3)
OMEGA_ROWS = planted_calibration.OMEGA_ROWS
CLEAN_SPECTRA = planted_calibration.CLEAN_SPECTRAL_ROWS


def _capture_and_report(tmp_path, spec: planted.PlantSpec, twin: str | None, capsys) -> tuple[str, dict]:
    """``latentbook capture FOLDER`` then ``latentbook report CAPTURE [--twin TWIN]``: the capture's path and
    the verdict of each row, read from the CSV that ``latentbook verdict`` writes for the same file."""
    folder = planted.save(spec, tmp_path / spec.name)
    out = tmp_path / f"{spec.name}.safetensors"
    assert (
        main(
            ["capture", str(folder), "--prompts", "general", "--max-prompts", "64", "--max-length", "64"]
            + ["--out", str(out)]
        )
        == 0
    )
    capsys.readouterr()
    args = ["report", str(out)] + (["--twin", twin] if twin else [])
    assert main(args) == 0
    text = capsys.readouterr().out
    cap = lb.load_capture(out)
    from latentbook.study.capture_report import verdict_rows

    rows = verdict_rows(cap, cap.model_name, lb.load_capture(twin) if twin else None)
    verdicts = {row.claim: row.verdict for row in rows}
    for claim, verdict in verdicts.items():  # what the report prints is what the rows say
        assert any(claim in line and verdict in line for line in text.splitlines()), (claim, verdict)
    return str(out), verdicts


@pytest.mark.slow
def test_cli_report_finds_a_planted_phase_and_is_not_fooled_by_its_artefacts(tmp_path, capsys):
    twin, _ = _capture_and_report(tmp_path, planted.twin_spec(planted.PlantSpec(**SHAPE)), None, capsys)
    present = planted.PlantSpec(plant="sparse_code", gamma=5 / 12, strength=3.0, **SHAPE)
    _, found = _capture_and_report(tmp_path, present, twin, capsys)
    assert all(found[claim] == "holds" for claim in OMEGA_ROWS), found
    late = replace(present, gamma=9 / 12)
    _, at_late = _capture_and_report(tmp_path, late, twin, capsys)
    assert at_late["critical_depth"] == "does not hold" and at_late["omega_jump"] == "holds", at_late
    # a sparse code off the axes: the learned-basis row of the report finds it, the m_z rows do not
    atoms = replace(present, plant="atom_code", k=planted_calibration.ATOM_K)
    _, off_axes = _capture_and_report(tmp_path, atoms, twin, capsys)
    assert off_axes[planted_calibration.LEARNED_ROW] == "holds", off_axes
    assert all(off_axes[claim] != "holds" for claim in OMEGA_ROWS), off_axes
    for plant in ("massive", "rogue", "norm_growth"):
        spec = planted.PlantSpec(plant=plant, gamma=5 / 12, strength=10.0, massive=True, sink=True, **SHAPE)
        _, judged = _capture_and_report(tmp_path, spec, twin, capsys)
        # the raw spectral rows too: a covariance falling where the correlation matrix does not is no evidence
        absent = (
            OMEGA_ROWS
            + CLEAN_SPECTRA
            + planted_calibration.SPECTRAL_ROWS
            + (planted_calibration.LEARNED_ROW,)
        )
        assert all(judged[claim] != "holds" for claim in absent), (plant, judged)


def test_planted_writer_puts_the_change_at_its_depth_and_nowhere_else():
    """The residual stream before depth l* is the base model's; from l* on each token carries its word's code."""
    spec = planted.PlantSpec(plant="sparse_code", gamma=0.5, n_layers=8, d=64, seed=1, strength=3.0, k=4)
    model, base = planted.build(spec), planted.build(replace(spec, plant="none"))
    texts = lb.prompts.load("general", limit=4)
    batch = model.tokenizer(texts, return_tensors="pt", padding=True)
    with_code = model.model(**batch, output_hidden_states=True).hidden_states
    without = base.model(**batch, output_hidden_states=True).hidden_states
    mask = batch["attention_mask"].bool()
    for depth in range(spec.depth):
        np.testing.assert_allclose(with_code[depth][mask].numpy(), without[depth][mask].numpy(), atol=1e-5)
    added = (with_code[spec.depth] - without[spec.depth])[mask].numpy()
    rows = planted.written(spec, len(planted.vocabulary()))
    ids = batch["input_ids"][mask].numpy()
    # the written vector of each token is its word's code (up to its size): cosine near 1, and about the
    # planted strength times the residual norm
    cos = np.sum(added * rows[ids], 1) / np.linalg.norm(added, axis=1)
    assert np.median(cos) > 0.95
    ratio = np.linalg.norm(added, axis=1) / np.linalg.norm(without[spec.depth][mask].numpy(), axis=1)
    assert 0.5 * spec.strength < np.median(ratio) < 2 * spec.strength


def test_rogue_coordinates_are_read_by_no_later_layer():
    """Rogue coordinates carry variance, not computation: every layer after the writer gives the written
    coordinates no weight in its norms, and every other coordinate and every earlier layer keeps its weight."""
    spec = planted.PlantSpec(plant="rogue", n_layers=8, d=64, seed=2, strength=3.0, sink=True, massive=True)
    layers = planted.build(spec).model.model.layers
    rogue = np.flatnonzero(np.any(planted.written(spec, len(planted.vocabulary())) != 0, axis=0))
    assert len(rogue) == spec.n_rogue
    others = np.setdiff1d(np.arange(spec.d), rogue)
    for index, layer in enumerate(layers):
        for norm in (layer.input_layernorm, layer.post_attention_layernorm):
            weight = norm.weight.numpy()
            assert np.all(weight[others] != 0)
            assert np.all(weight[rogue] == 0) == (index >= spec.depth), index


@pytest.mark.slow
def test_rogue_coordinates_do_not_concentrate_a_growing_model_once_cleaned():
    """The case that the cleaned effective rank counted as a concentration while the later layers still read the
    rogue coordinates (case 20: 24 layers, d = 384, a sink, a massive coordinate, a norm growing 1.08 a layer;
    after / before was 0.870 [0.858, 0.882]): random layers writing more and more spread each word's three
    rogue values into every coordinate. Read by no later layer, they leave the cleaned spectrum as it was."""
    from latentbook.analysis import spectral_contrasts
    from latentbook.study.measure import ERANK_GROUPS

    by_name = {family.name: family for family in planted_calibration.families()}
    rng = np.random.default_rng([0, 20, zlib.crc32(b"rogue coordinates at 0.42")])
    spec = by_name["rogue coordinates at 0.42"].plant(planted_calibration.base_spec(20), rng)
    assert (spec.n_layers, spec.d, spec.sink, spec.massive, spec.growth) == (24, 384, True, True, 1.08)
    cap = lb.capture(
        planted.build(spec),
        lb.prompts.load("general", limit=64),
        max_length=64,
        batch_size=16,
        progress=False,
    )
    erank = spectral_contrasts.effective_rank_contrast(cap, n_groups=ERANK_GROUPS, standardised=True)
    assert erank.ci[0] > 0.95, erank


def test_planted_folders_load_as_user_models_and_refuse_bad_specs(tmp_path):
    spec = planted.PlantSpec(plant="massive", n_layers=4, d=32, seed=0)
    folder = planted.save(spec, tmp_path / "m")
    loaded = lb.load_model(str(folder), device="cpu")
    assert loaded.n_layers == 4 and loaded.d_model == 32 and planted.load_spec(folder) == spec
    assert json.loads((folder / planted.SPEC_FILE).read_text())["plant"] == "massive"
    with pytest.raises(InvalidInputError, match="already exists"):
        planted.save(spec, folder)
    assert not list(tmp_path.glob(".*tmp"))  # nothing half-written left behind
    for bad in (dict(plant="glow"), dict(n_layers=2), dict(d=100), dict(gamma=0.0), dict(k=0)):
        with pytest.raises(InvalidInputError):
            planted.PlantSpec(**bad)
    with pytest.raises(InvalidInputError, match="not a planted model"):
        planted.load_spec(tmp_path)


def test_twin_has_the_shape_and_nothing_planted():
    spec = planted.PlantSpec(plant="rogue", sink=True, massive=True, growth=1.1, seed=4)
    twin = planted.twin_spec(spec)
    assert (twin.n_layers, twin.d, twin.plant) == (spec.n_layers, spec.d, "none")
    assert twin.seed != spec.seed and not (twin.sink or twin.massive) and twin.growth == 1.0


def test_calibration_families_plant_where_they_say():
    class_code = "class code, step in 0.33-0.51"
    for case in range(6):
        base = planted_calibration.base_spec(case)
        for family in planted_calibration.families():
            spec = family.plant(base, np.random.default_rng(case))
            spec = getattr(spec, "base", spec)  # a planted_flow.FlowSpec: its code's depth
            step = ((spec.depth - 1) / spec.n_layers, spec.depth / spec.n_layers)
            if family.name.startswith("sparse code, step in 0.33"):
                assert 0.33 <= step[0] and step[1] <= 0.51
            if "0.66-0.84" in family.name:
                assert step[0] > 0.52  # wholly outside the judge's window: critical depth must not hold
            if family.draws == class_code or family.name == class_code:
                # each prototype touches a sixteenth of the coordinates, at every width
                assert spec.plant == "class_code" and 16 * spec.k == spec.d
            assert not set(family.present) & set(family.absent)


def test_confusion_table_counts_and_targets():
    records = [
        {"family": "f", "claim": "omega_jump", "planted": "absent", "verdict": "does not hold"}
    ] * 74 + [
        {"family": "g", "claim": "omega_jump", "planted": "present", "verdict": v}
        for v in ["holds"] * 8 + ["inconclusive"] * 2
    ]
    table = planted_calibration.confusion(records).set_index("family")
    assert table.loc["f", "n"] == 74 and table.loc["f", "holds_ci_high"] <= 0.05 and table.loc["f", "meets"]
    assert table.loc["g", "holds"] == 0.8 and table.loc["g", "meets"]
    one_false = records[:73] + [{**records[0], "verdict": "holds"}]
    assert not planted_calibration.confusion(one_false)["meets"].iloc[0]


def test_conclusion_names_what_meets_and_what_misses_with_the_tables_numbers():
    absent = {"family": "massive", "planted": "absent"}
    records = (
        [{**absent, "claim": "omega_jump", "verdict": "does not hold"}] * 80
        + [{**absent, "claim": "spectral_concentration", "verdict": "holds"}] * 60
        + [{**absent, "claim": "spectral_concentration", "verdict": "does not hold"}] * 20
        + [{"family": "code", "planted": "present", "claim": "omega_jump", "verdict": "holds"}] * 80
    )
    table = planted_calibration.confusion(records)
    met, missed = planted_calibration.claims_meeting_targets(table)
    assert met == ["omega_jump"] and missed == {"spectral_concentration": ("massive", 0.75)}
    text = planted_calibration.conclusion(table)
    assert text.startswith("omega_jump meet both targets on every family (80 cases")
    assert "spectral_concentration does not (massive: holds in 75% of cases)" in text


def test_the_liquid_families_fall_on_either_side_of_the_solid_level():
    """End to end on one small case: the one-hot code crosses the solid level (both liquid rows: does not hold),
    the same model with nothing planted stays below it (both hold), and a massive coordinate lifts only raw m."""
    from latentbook.study.rows import claim_rows

    base = replace(
        planted_calibration.base_spec(0), n_layers=12, d=128, sink=False, massive=False, growth=1.0
    )
    twin = planted_calibration.measure_spec(planted.twin_spec(base), spectra=False)
    by_family = {family.name: family for family in planted_calibration.families()}
    rng = np.random.default_rng(0)
    verdicts = {}
    for name in ("a one-hot code above the solid level", "nothing planted", "massive coordinate at 0.42"):
        measured = planted_calibration.measure_spec(by_family[name].plant(base, rng), spectra=False)
        rows = {row.claim: row for row in claim_rows(measured, twin, run="planted")}
        verdicts[name] = tuple(rows[claim].verdict for claim in planted_calibration.LIQUID_ROWS)
    assert verdicts["a one-hot code above the solid level"] == ("does not hold", "does not hold")
    assert verdicts["nothing planted"] == ("holds", "holds")
    assert verdicts["massive coordinate at 0.42"] == ("does not hold", "holds")


def test_tokenizer_splits_as_words_and_spaces_are_not_tokens():
    """Every token is a word of ``planted.words`` (whitespace dropped, not a ``<unk>`` between words), so a
    token-specific code is specific to words, and the vocabulary covers most of the prompts' words."""
    vocab = planted.vocabulary()
    tokenizer = planted.build_tokenizer(vocab)
    texts = lb.prompts.load("general")
    for text in texts[:40] + ["Two  spaces,\ta tab\nand a line."]:
        tokens = [vocab[i] for i in tokenizer(text)["input_ids"]]
        assert tokens == ["<bos>"] + [w if w in vocab else "<unk>" for w in planted.words(text)]
    ids = np.concatenate([tokenizer(t, truncation=True, max_length=64)["input_ids"] for t in texts[:64]])
    assert np.mean(ids == vocab.index("<unk>")) < 0.1


def test_holds_carrying_counts_the_nuisances_of_the_models_a_row_holds_on():
    import pandas as pd

    rows = [
        ("f", "erank", "holds", "planted-norm_growth-g0.42-L12-d128-s1+sink+massive+growth1.08"),
        ("f", "erank", "holds", "planted-norm_growth-g0.42-L24-d128-s2+growth1.08"),
        ("f", "erank", "does not hold", "planted-norm_growth-g0.42-L12-d128-s3+massive"),
        ("f", "pr", "holds", "planted-norm_growth-g0.42-L12-d128-s4+massive"),
        ("g", "erank", "holds", "planted-none-g0.42-L12-d128-s5+massive"),
    ]
    records = pd.DataFrame(rows, columns=["family", "claim", "verdict", "model"])
    assert planted_calibration.holds_carrying(records, "f", "erank", "massive") == (2, 1)
    assert planted_calibration.holds_carrying(records, "f", "erank", "growth") == (2, 2)
    assert planted_calibration.holds_carrying(records, "f", "erank", "sink") == (2, 1)
    assert planted_calibration.holds_carrying(records, "f", "erank", ("sink", "growth")) == (2, 1)
    assert planted_calibration.holds_carrying(records, "f", "erank", ("sink", "massive", "growth")) == (2, 1)
    assert planted_calibration.holds_carrying(records, "g", "erank", ("sink", "massive")) == (1, 0)
    # the depths of the models it holds on: one per model, not the 12 of the model it does not hold on
    assert planted_calibration.held_layers(records, "f", "erank") == [12, 24]
    assert planted_calibration.held_layers(records, "f", "pr") == [12]
    assert planted_calibration.held_layers(records, "h", "erank") == []
    # the records of a family, of one row where it is named
    assert planted_calibration.family_records(records, "f").index.tolist() == [0, 1, 2, 3]
    assert planted_calibration.family_records(records, "f", "erank").index.tolist() == [0, 1, 2]
    for bad in ("+massive", (), ("sink", "rogue")):
        with pytest.raises(InvalidInputError, match="nuisance must be"):
            planted_calibration.holds_carrying(records, "f", "erank", bad)


def test_class_codes_hold_on_spectra_and_m_z_and_norm_growth_against_a_writing_twin_does_not():
    """End to end on one small case without nuisances: the cleaned spectral rows and the Omega jumps hold on a class
    code (the mixture the paper's spectral claims describe; m_z scaled by the SD misses it) and not on the same
    norm growth judged against a twin whose layers write as much."""
    from latentbook.study.rows import claim_rows

    base = replace(
        planted_calibration.base_spec(1), n_layers=12, d=128, sink=False, massive=False, growth=1.08
    )
    by_family = {family.name: family for family in planted_calibration.families()}
    rng = np.random.default_rng(0)
    verdicts = {}
    for name in ("class code, step in 0.33-0.51", "norm growth, twin writing as much"):
        family = by_family[name]
        spec = family.plant(base, rng)
        twin = (family.twin or (lambda s, _: planted.twin_spec(s)))(spec, rng)
        rows = claim_rows(
            planted_calibration.measure_spec(spec), planted_calibration.measure_spec(twin), run="p"
        )
        verdicts[name] = {row.claim: row.verdict for row in rows}
    for claim in CLEAN_SPECTRA + ("omega_jump", "omega_jump_cleaned"):
        assert verdicts["class code, step in 0.33-0.51"][claim] == "holds", claim
        assert verdicts["norm growth, twin writing as much"][claim] != "holds", claim


def test_a_family_a_row_cannot_separate_is_its_scope_not_a_target():
    """The redrawn code holds every Omega row by construction (it keeps the marginals they read): its cells are
    shown, marked ``limit``, left out of the rows that meet or miss, and named in the conclusion; any other
    family's false holds still make the row miss."""
    redrawn = planted_calibration.REDRAWN
    records = (
        [{"family": redrawn, "claim": "omega_jump", "planted": "absent", "verdict": "holds"}] * 74
        + [{"family": "nothing", "claim": "omega_jump", "planted": "absent", "verdict": "does not hold"}] * 74
        + [{"family": "code", "claim": "omega_jump", "planted": "present", "verdict": "holds"}] * 74
    )
    table = planted_calibration.confusion(records).set_index("family")
    assert table.loc[redrawn, "limit"] and not table.loc["nothing", "limit"]
    assert table.loc[redrawn, "target"] == "none: the row's scope" and not table.loc[redrawn, "meets"]
    met, missed = planted_calibration.claims_meeting_targets(table.reset_index())
    assert met == ["omega_jump"] and not missed
    text = planted_calibration.conclusion(table.reset_index())
    assert f"omega_jump cannot tell {redrawn} from the phenomenon" in text and "100%-100%" in text
    # a family outside UNSEPARABLE that holds as often is a miss
    other = [{**r, "family": "heavy tails"} if r["family"] == redrawn else r for r in records]
    met, missed = planted_calibration.claims_meeting_targets(planted_calibration.confusion(other))
    assert met == [] and missed == {"omega_jump": ("heavy tails", 1.0)}
    assert planted_calibration.unseparable(redrawn, "critical_depth")
    assert not planted_calibration.unseparable(redrawn, "spectral_concentration")
