"""Chapter 9's landmarks on the ladder (study.ladder_landmarks): one ladder model read end to end, and the counts
chapter 7 shows, on a record whose answer is known."""

import json

import numpy as np
import pytest

from latentbook.errors import InvalidInputError
from latentbook.ladder import task
from latentbook.study import ladder_landmarks as ll


def _entry(found: dict[str, float | None], n_depths: int = 9) -> dict:
    rows = [
        {
            "landmark": name,
            "gamma": found.get(name) if found.get(name) is not None else float("nan"),
            "found": found.get(name) is not None,
        }
        for name in ll.SHOWN
    ]
    return {"model": "m", "sha256": "0" * 64, "n_depths": n_depths, "landmarks": rows}


RECORD = {
    "models": {
        "l8-d64-s0": {
            "trained": _entry({"lens convergence": 0.875}),
            "null": _entry({"ID peak (Gride)": 0.25}),
        },
        "l8-d64-s1": {
            "trained": _entry({"lens convergence": 1.0, "ID peak (Gride)": 0.5}),
            "null": _entry({}),
        },
        "l1-d64-s0": {"trained": _entry({}, n_depths=2), "null": _entry({}, n_depths=2)},
    }
}


def test_counts_say_how_many_seeds_show_each_landmark_and_where():
    counts = ll.landmark_counts(ll.landmark_rows(RECORD))
    assert list(counts.columns) == list(ll.SHOWN)
    deep = counts.loc[("l8-d64", "trained", 9)]
    assert deep["lens convergence"] == "2 of 2 at 0.94" and deep["ID peak (Gride)"] == "1 of 2 at 0.50"
    assert deep["massive onset"] == "0 of 2"
    assert counts.loc[("l8-d64", "untrained", 9)]["ID peak (Gride)"] == "1 of 2 at 0.25"
    assert counts.loc[("l1-d64", "trained", 2)]["lens convergence"] == "0 of 1"


def test_a_ladder_model_is_read_end_to_end(tiny):
    """A causal LM on the task's held-out sequences: every landmark row, its depths and the weights' sha256."""
    entry = ll.rung_landmarks(tiny, task.TaskSpec(), n_boot=20)
    assert entry["n_depths"] == tiny.n_layers + 1 and entry["sha256"] == tiny.sha
    names = [row["landmark"] for row in entry["landmarks"]]
    assert names == list(ll.SHOWN)
    lens = next(row for row in entry["landmarks"] if row["landmark"] == "lens convergence")
    assert "convergence is read past" in lens["what"]  # 3 depths: none lies past the edge
    json.dumps(entry)  # what measure_landmarks writes


def test_a_missing_record_names_the_command(tmp_path):
    with pytest.raises(InvalidInputError, match="tools/ladder_landmarks.py"):
        ll.load_record(tmp_path / "landmarks.json")
    path = tmp_path / "landmarks.json"
    path.write_text(json.dumps(RECORD))
    assert ll.load_record(path)["models"].keys() == RECORD["models"].keys()
    assert np.isnan(ll.landmark_rows(RECORD).query("found == False")["gamma"]).all()


def test_measuring_never_replaces_a_file_that_is_not_its_record(tmp_path):
    notes = tmp_path / "notes.json"
    notes.write_text('{"mine": 1}')
    with pytest.raises(InvalidInputError, match="not a ladder landmarks record"):
        ll.measure_landmarks(notes, rungs=["l4-d64-s0"])
    assert notes.read_text() == '{"mine": 1}'


def test_the_record_keeps_the_hash_of_every_module_that_reads_a_landmark(
    deep_ladder_root, monkeypatch, tmp_path
):
    """Read under a tracer on a ten-layer ladder model, every module whose code runs is one
    ``landmarks_hash`` reads; a record says whether the current code wrote it."""
    import latentbook as lb

    from .conftest import modules_run

    monkeypatch.setenv("LATENTBOOK_LADDER_DIR", str(deep_ladder_root))
    entry = {}
    spec = task.TaskSpec()
    ran = modules_run(
        lambda: entry.update(ll.rung_landmarks(lb.load_model("ladder:l10-d16"), spec, n_boot=20))
    )
    assert entry["n_depths"] == 11
    assert ran - set(ll.MEASURING_MODULES) == set()

    path = ll.measure_landmarks(tmp_path / "landmarks.json", rungs=["l10-d16"])
    record = ll.load_record(path)
    assert ll.is_current(record) and not ll.is_current(RECORD)  # RECORD: from before the hash was kept
    assert ll.written_by(record) == "by the code that builds this page"
    assert ll.written_by(RECORD).startswith("by older code") and ll.COMMAND in ll.written_by(RECORD)
    monkeypatch.setattr(ll, "MEASURING_MODULES", ll.MEASURING_MODULES[:-1])
    assert not ll.is_current(record)
