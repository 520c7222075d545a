"""The jump judge's power confirmed on planted models: the spread plant (``models.planted_spread``) and the record of
the confirmation run (``study.power_confirmation``, ``tools/confirm_power.py``)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import latentbook as lb
from latentbook.analysis import omega, verdict
from latentbook.errors import InvalidInputError
from latentbook.models import planted, planted_spread
from latentbook.study import power_confirmation

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "spec",
    [
        planted.PlantSpec(n_layers=6, d=64),
        planted.PlantSpec(n_layers=6, d=64, sink=True, massive=True, seed=2),
    ],
)
def test_a_width_of_one_is_the_step_weight_for_weight(spec):
    """Width 1 is ``planted.build`` itself: every existing spec keeps its weights."""
    spread = planted_spread.build(planted_spread.SpreadSpec(spec)).model.state_dict()
    step = planted.build(spec).model.state_dict()
    assert spread.keys() == step.keys()
    for name, weight in step.items():
        assert np.array_equal(spread[name].numpy(), weight.numpy()), name
    assert planted_spread.SpreadSpec(spec).name == spec.name


def test_a_spread_code_rises_over_its_width_ending_at_its_depth():
    """Written over ``width`` layers, the stream carries ``j / width`` of the step's code ``j`` depths into the rise
    (its projection on each token's code), nothing before it, and m rises at every one of those depths."""
    spec = planted.PlantSpec(plant="sparse_code", gamma=0.5, n_layers=8, d=64, seed=1, strength=3.0, k=4)
    base = planted.build(replace(spec, plant="none"))
    batch = base.tokenizer(lb.prompts.load("general", limit=4), return_tensors="pt", padding=True)
    mask = batch["attention_mask"].bool()
    ids = batch["input_ids"][mask].numpy()
    rows = planted.written(spec, len(planted.vocabulary()))

    def states(loaded) -> list[np.ndarray]:
        return [h[mask].numpy() for h in loaded.model(**batch, output_hidden_states=True).hidden_states]

    without = states(base)
    step_code = None
    for width in (1, 3):
        hidden = states(planted_spread.build(planted_spread.SpreadSpec(spec, width)))
        code = [float(np.median(np.sum((h - b) * rows[ids], axis=1))) for h, b in zip(hidden, without)]
        m = [float(np.mean(omega.omega(h))) for h in hidden]
        start = spec.depth - width  # the last depth the code has not reached
        for depth in range(start + 1):
            np.testing.assert_allclose(hidden[depth], without[depth], atol=1e-5)
        step_code = step_code or code[spec.depth]
        for j in range(1, width + 1):
            assert code[start + j] / step_code == pytest.approx(j / width, abs=0.1), (width, j, code)
            assert m[start + j] > m[start] + 0.05, (width, m)
        if width > 1:
            assert m[start + 1] < max(m), m  # the first layer writes a share of it


def test_a_spread_spec_refuses_what_it_cannot_plant():
    spec = planted.PlantSpec(plant="sparse_code", gamma=0.5, n_layers=8, d=64)
    assert planted_spread.SpreadSpec(spec, 3).name == spec.name + "+w3"
    for width in (0, spec.depth + 1, 2.0):
        with pytest.raises(InvalidInputError, match="width"):
            planted_spread.SpreadSpec(spec, width)
    with pytest.raises(InvalidInputError, match="spread"):
        planted_spread.SpreadSpec(replace(spec, plant="rogue"), 2)


def _records() -> pd.DataFrame:
    """Four cases at (30, width 0) and (30, width 2) of one row: the judge's words and the weighed ones."""
    rows = []
    for width, judged, weighed in (
        (0, ["does not hold"] * 4, ["does not hold", "does not hold", "does not hold", "inconclusive"]),
        (2, ["holds", "holds", "holds", "does not hold"], ["holds", "holds", "holds", "inconclusive"]),
    ):
        for case, (j, w) in enumerate(zip(judged, weighed)):
            rows.append(
                {
                    "case": case,
                    "n_layers": 30,
                    "width": width,
                    "strength": 3.0,
                    "model": f"m{case}",
                    "claim": "omega_jump",
                    "value": 0.2 * (width > 0),
                    "judged": j,
                    "weighed": w,
                    "reason": "",
                }
            )
    return pd.DataFrame(rows)


def test_counts_give_each_cell_its_verdicts_and_wilson_bounds():
    cells = power_confirmation.counts(_records()).set_index("width")
    assert cells.loc[0, ["n", "holds", "absent", "absent_weighed", "inconclusive"]].tolist() == [
        4,
        0,
        4,
        3,
        1,
    ]
    assert cells.loc[2, ["n", "holds", "absent", "absent_weighed", "inconclusive"]].tolist() == [
        4,
        3,
        1,
        0,
        1,
    ]
    assert (cells.loc[2, "holds_low"], cells.loc[2, "holds_high"]) == verdict.wilson_interval(0.75, 4)
    assert (cells.loc[2, "absent_low"], cells.loc[2, "absent_high"]) == verdict.wilson_interval(0.0, 4)


def _write(folder: Path, table: pd.DataFrame, source_hash: str) -> None:
    (folder / "calibration").mkdir(parents=True)
    provenance = {"n_cases": 4, "date": "2026-12-06T04:00:00+00:00", "source_hash": source_hash}
    record = {"provenance": provenance, "table": table.to_dict("records")}
    (folder / power_confirmation.FILE).write_text(json.dumps(record))


def test_the_record_reader_says_whether_it_is_current_and_what_it_shows(tmp_path, monkeypatch):
    with pytest.raises(InvalidInputError, match="tools/confirm_power.py"):
        power_confirmation.load_confirmation(tmp_path)
    monkeypatch.setattr(power_confirmation, "source_hash", lambda: "this code")
    _write(tmp_path, _records(), "older code")
    record = power_confirmation.load_confirmation(tmp_path)
    power = pd.DataFrame(
        [
            {"amplitude": 2.0, "layers_wide": w, "n_layers": n, "found": f, "absent_weighed": a}
            for w, n, f, a in ((0, 30, 1.0, 0.0), (3, 64, 0.6, 0.1), (6, 30, 0.1, 0.5), (0, 12, 0.2, 0.9))
        ]
    )
    s = record.summary(power)
    assert not record.current and "rerun tools/confirm_power.py" in s["conf_current"]
    assert (s["conf_n"], s["conf_date"]) == (4, "2026-12-06")
    assert (s["conf_found_min"], s["conf_planted_n"], s["conf_absent"], s["conf_absent_weighed"]) == (
        0.75,
        4,
        1,
        0,
    )
    assert (s["conf_two_of_30_n"], s["conf_two_of_30_holds"], s["conf_two_of_30_absent_weighed"]) == (4, 3, 0)
    assert (s["conf_control_holds"], s["conf_control_absent_weighed"]) == (0, 0.75)
    assert s["conf_bar_low"] == pytest.approx(0.2 / verdict.min_jump(power_confirmation.D))
    # the synthetic cells of the same depths and rises of up to three layers only
    assert (s["conf_synthetic_found_min"], s["conf_synthetic_absent_weighed_max"]) == (0.6, 0.1)


def test_the_committed_record_is_current_and_two_layers_of_30_never_read_does_not_hold():
    """The issue's must-show: a code written over two layers of 30 at gamma 0.42 is judged "holds" or at worst
    "inconclusive" once weighed; the record was made by the package's code (rerun tools/confirm_power.py after
    changing it)."""
    record = power_confirmation.load_confirmation(ROOT / "results")
    assert record.current
    cells = record.counts()
    widths = (0, *power_confirmation.WIDTHS)
    assert set(zip(cells["n_layers"], cells["width"])) == {
        (n, w) for n in power_confirmation.LAYERS for w in widths
    }
    two_of_30 = cells[(cells["n_layers"] == 30) & (cells["width"] == 2)]
    assert len(two_of_30) == 3 and (two_of_30["absent_weighed"] == 0).all()
    table = record.table  # the weighing turns only the judge's "does not hold" into "inconclusive"
    assert ((table["weighed"] == "holds") == (table["judged"] == "holds")).all()
    assert (table.loc[table["weighed"] == "does not hold", "judged"] == "does not hold").all()
    nothing = cells[cells["width"] == 0]
    assert (nothing["holds"] == 0).all()  # no false "holds" where nothing is planted


def test_the_script_never_replaces_a_file_that_is_not_its_record(tmp_path):
    import subprocess
    import sys

    foreign = tmp_path / "notes.json"
    foreign.write_text('{"my": "notes"}')
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "confirm_power.py"), "--n-cases", "1", "--out", str(foreign)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode != 0 and "would be lost" in done.stderr
    assert foreign.read_text() == '{"my": "notes"}'
