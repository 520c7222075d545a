"""Planted flows in real Llama weights (``models.planted_flow``): the contraction the writers plant is the one the
Jacobian-vector measurement reads, a contraction of every direction is not one, sharpening lowers the attention
entropy, and the models load as user folders; and the flow families of the end-to-end calibration judge as the
verdict table would."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

import latentbook as lb
from latentbook.analysis import contraction, cooling
from latentbook.capturing.jacobian import transverse_gains
from latentbook.errors import InvalidInputError
from latentbook.models import planted, planted_flow
from latentbook.prompts import load
from latentbook.study import planted_calibration

BASE = planted.PlantSpec(
    plant="class_code", gamma=0.42, n_layers=12, d=128, seed=5, strength=3.0, n_classes=5, sink=True
)
C = 0.12


def _gain(spec: planted_flow.FlowSpec) -> contraction.GainFit:
    model = planted_flow.build(spec)
    return contraction.transverse_gain(transverse_gains(model, load("general", limit=16), k=spec.k))


def test_an_empty_flow_keeps_the_base_models_function():
    """The MLP biases the writers need are zero elsewhere: the flow "none" computes what ``planted.build`` does."""
    batch_of = planted.build(BASE)
    flow = planted_flow.build(planted_flow.FlowSpec(BASE, "none"))
    batch = batch_of.tokenizer(load("general", limit=4), return_tensors="pt", padding=True)
    with torch.no_grad():
        assert torch.equal(batch_of.model(**batch).logits, flow.model(**batch).logits)
    assert flow.model.config.mlp_bias and flow.name == BASE.name


def test_the_planted_transverse_gain_is_read_back_and_a_uniform_shrink_is_not_one():
    """Theorem 6.1 planted in the weights: ``q = q⊥ / q∥`` reads ``1 - c`` and so does ``q⊥``; shrinking every
    direction leaves both near 1 (the judge's ``MAX_Q`` far away), and the code alone contracts nothing."""
    found = _gain(planted_flow.FlowSpec(BASE, "transverse", C))
    assert found.q == pytest.approx(1 - C, abs=0.02) and found.transverse == pytest.approx(1 - C, abs=0.02)
    assert found.ci[1] < contraction.MAX_Q
    uniform = _gain(planted_flow.FlowSpec(BASE, "uniform", C))
    assert uniform.transverse > 0.98 and uniform.q > 0.96
    alone = _gain(planted_flow.FlowSpec(BASE, "none", C))
    assert alone.transverse > 0.98


def test_sharpening_lowers_the_attention_entropy_after_its_depth_only():
    sharp = planted_flow.FlowSpec(replace(BASE, plant="none"), "sharpening", 8.0)
    summaries = {}
    for spec in (sharp, replace(sharp, flow="none")):
        cap = lb.capture(
            planted_flow.build(spec), load("general", limit=16), max_length=32, attention=True, progress=False
        )
        summaries[spec.flow] = cooling.cooling_summary(cap)
    assert summaries["none"].estimate > 0.98
    assert summaries["sharpening"].estimate < 0.85
    before = np.asarray(summaries["sharpening"].before)
    np.testing.assert_allclose(
        summaries["sharpening"].entropy[before], summaries["none"].entropy[before], rtol=1e-6
    )


def test_a_planted_sink_draws_the_attention_and_leaves_the_other_keys_alone():
    """From its depth on, the sink takes most of every row (the raw entropy halves), while the entropy over the
    other keys, which the cooling judge reads, moves by under 5 %; before it nothing changes."""
    base = replace(BASE, plant="none")
    caps = {}
    for flow in ("sink", "none"):
        model = planted_flow.build(planted_flow.FlowSpec(base, flow, 5.0))
        caps[flow] = lb.capture(
            model, load("general", limit=16), max_length=32, attention=True, progress=False
        )
    after = slice(base.depth, None)
    drawn, plain = caps["sink"].attention, caps["none"].attention
    assert drawn.max_weight()[after].mean() > 0.7 and plain.max_weight()[after].mean() < 0.3
    assert drawn.entropy()[after].mean() < 0.6 * plain.entropy()[after].mean()
    np.testing.assert_allclose(drawn.entropy()[: base.depth], plain.entropy()[: base.depth], rtol=1e-6)
    summary = cooling.cooling_summary(caps["sink"])
    assert summary.estimate > 0.95
    assert cooling.judge_cooling(summary, cooling.cooling_summary(caps["none"]))[0] != "holds"


def test_flow_models_save_as_folders_that_load_as_user_models(tmp_path):
    spec = planted_flow.FlowSpec(BASE, "transverse", C)
    folder = planted_flow.save(spec, tmp_path / "flow")
    loaded, built = lb.load_model(str(folder)), planted_flow.build(spec)
    batch = built.tokenizer(load("general", limit=3), return_tensors="pt", padding=True)
    with torch.no_grad():
        torch.testing.assert_close(loaded.model(**batch).logits, built.model(**batch).logits)
    with pytest.raises(InvalidInputError, match="already exists"):
        planted_flow.save(spec, folder)


def test_flow_specs_refuse_what_cannot_be_planted():
    for bad in (
        dict(flow="spin"),
        dict(flow="transverse", strength=1.0),
        dict(flow="uniform", strength=0.0),
        dict(flow="sharpening", strength=-1.0),
        dict(k=0),
        dict(k=128),
        dict(flow="sink", strength=0.0),
    ):
        with pytest.raises(InvalidInputError):
            planted_flow.FlowSpec(BASE, **bad)
    with pytest.raises(InvalidInputError, match="sink=True"):
        planted_flow.FlowSpec(replace(BASE, sink=False), "sink", 5.0)


def test_flow_families_share_their_models_and_judge_contraction_against_the_twin():
    """The contraction families draw the same code and ``c`` (one model measured once per case); a model and a
    twin that contract alike are not judged to contract."""
    from latentbook.study.rows import claim_rows

    by_name = {family.name: family for family in planted_calibration.families()}
    base = replace(planted_calibration.base_spec(2), n_layers=12, d=128, massive=False, growth=1.0)
    draws = [
        by_name[name].plant(base, np.random.default_rng(7))
        for name in (
            "transverse contraction from 0.42",
            "the twin contracts too",
            "every direction shrinks from 0.42",
        )
    ]
    assert draws[0] == draws[1] and replace(draws[2], flow="transverse") == draws[0]
    family = by_name["the twin contracts too"]
    twin = family.twin(draws[0], np.random.default_rng(7))
    assert twin.flow == "transverse" and twin.base.plant == "class_code"
    assert twin.base.seed != draws[0].base.seed and not twin.base.sink
    measured = [planted_calibration.measure_spec(spec, spectra=False, flow=True) for spec in (draws[0], twin)]
    verdicts = {
        label: {row.claim: row.verdict for row in claim_rows(measured[0], other, run="p")}
        for label, other in (
            ("random twin", planted_calibration.measure_spec(planted.twin_spec(base), False, True)),
            ("contracting twin", measured[1]),
        )
    }
    assert verdicts["random twin"]["transverse_contraction"] == "holds"
    assert verdicts["contracting twin"]["transverse_contraction"] != "holds"
    assert verdicts["random twin"]["attention_cooling"] != "holds"


def test_only_the_families_judging_contraction_pay_for_the_gains(monkeypatch):
    """The Jacobian-vector gains are measured for the families with a ``transverse_contraction`` row only; the
    attention families capture attention without them."""
    import latentbook.capturing.jacobian as jacobian

    with_gains = {family.name for family in planted_calibration.families() if family.gains}
    assert with_gains == {
        "transverse contraction from 0.42",
        "a class code, no contraction",
        "every direction shrinks from 0.42",
        "the twin contracts too",
        "nothing planted, flow measured",
    }

    def refuse(*args, **kwargs):
        raise AssertionError("gains measured where no row reads them")

    monkeypatch.setattr(jacobian, "transverse_gains", refuse)
    sink = planted_flow.FlowSpec(replace(BASE, plant="none"), "sink", 5.0)
    measured = planted_calibration.measure_spec(sink, spectra=False, flow=True, gains=False)
    assert measured.contraction is None and measured.cooling is not None


def test_the_class_code_twin_writes_a_code_of_its_own_where_the_model_writes_its():
    by_name = {family.name: family for family in planted_calibration.families()}
    family = by_name["the twin has the class code too"]
    base = planted_calibration.base_spec(3)
    spec = family.plant(base, np.random.default_rng(1))
    assert spec == by_name["class code, step in 0.33-0.51"].plant(base, np.random.default_rng(1))
    twin = family.twin(spec, np.random.default_rng(1))
    assert (twin.plant, twin.gamma, twin.strength, twin.n_classes) == (
        "class_code",
        spec.gamma,
        spec.strength,
        spec.n_classes,
    )
    assert twin.seed != spec.seed and not (twin.sink or twin.massive)
    assert twin.growth == spec.growth != 1.0  # it writes as much as the model: case 3's norm grows
    assert planted.written(twin, 50).tolist() != planted.written(spec, 50).tolist()
