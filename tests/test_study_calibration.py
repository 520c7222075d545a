"""``study.slow_calibration``: the slow families as chapter 8 reads them, from a ``slow_families.json`` written here."""

import json

import pytest

from latentbook.analysis import calibration
from latentbook.errors import InvalidInputError
from latentbook.study.slow_calibration import SLOW_FILE, slow_families


def _family(family, planted, holds):
    return {"claim": "mp_spikes", "family": family, "planted": planted, "n": 10, "holds": holds}


def _write(root, table, source_hash):
    path = root / SLOW_FILE
    path.parent.mkdir(parents=True)
    provenance = {"source_hash": source_hash, "date": "2026-12-01T22:34:04+00:00", "n_cases": 10}
    path.write_text(json.dumps({"provenance": provenance, "table": table}))


def test_the_summary_reads_the_worst_families_and_whether_the_code_is_current(tmp_path):
    table = [
        _family("5 spikes", "present", 0.9),
        _family("1 spike", "present", calibration.MIN_FOUND - 0.1),
        _family("none", "absent", 0.0),
        _family("a massive coordinate", "absent", 0.05),
    ]
    _write(tmp_path, table, calibration.source_hash())
    slow = slow_families(tmp_path)
    summary = slow.summary()
    assert slow.current and summary["current"] == "the current code"
    assert (summary["n"], summary["found"], summary["false"]) == (10, calibration.MIN_FOUND - 0.1, 0.05)
    assert summary["outcome"].startswith("a target is missed") and summary["date"] == "2026-12-01"
    assert summary["strength_high"] == 2 * calibration.SPIKE_STRENGTH
    assert (summary["prompts"], summary["per_prompt"], summary["width"]) == calibration.SPIKE_SHAPE[1:]

    table[1]["holds"] = calibration.MIN_FOUND
    (tmp_path / SLOW_FILE).unlink()
    (tmp_path / SLOW_FILE).parent.rmdir()
    _write(tmp_path, table, "another hash")
    stale = slow_families(tmp_path).summary()
    assert stale["outcome"].startswith("both targets are met")
    assert "rerun tools/calibrate_slow.py" in stale["current"]


def test_a_missing_file_names_the_command_that_writes_it(tmp_path):
    with pytest.raises(InvalidInputError, match="calibrate_slow.py"):
        slow_families(tmp_path)
