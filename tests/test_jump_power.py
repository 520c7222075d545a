"""The power of the jump judge (``analysis.jump_power``) and its record as the book reads it
(``study.power_record``)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from latentbook.analysis import jump_power, transition
from latentbook.errors import InvalidInputError
from latentbook.study import power_record


def test_a_paper_size_step_is_found_and_nothing_planted_is_not():
    rng = np.random.default_rng(3)
    found = [jump_power.power_case(rng, 30, 2.0, 0)["judged"] for _ in range(6)]
    assert found.count("holds") >= 5
    flat = [jump_power.power_case(rng, 30, 0.0, 0) for _ in range(6)]
    assert not any(c["judged"] == "holds" for c in flat)
    # nothing planted at the planted noise: the judge could have seen the paper's jump, so the absence stands
    assert sum(c["weighed"] == "does not hold" for c in flat) >= 5
    assert sum(c["power"] >= 0.8 for c in flat) >= 5


def _record(tmp_path, table: pd.DataFrame, source_hash: str) -> None:
    folder = tmp_path / "calibration"
    folder.mkdir()
    provenance = {"n_cases": 4, "date": "2026-12-06T01:00:00+00:00", "source_hash": source_hash}
    (folder / "jump_power.json").write_text(
        json.dumps({"provenance": provenance, "table": table.to_dict("records")})
    )


def test_the_record_summary_reads_the_cells_it_names(tmp_path):
    cells = []
    for amplitude in (0.0, 1.0, 2.0):
        for wide in (0, 6):
            for layers in (12, 64):
                cells.append(
                    {
                        "amplitude": amplitude,
                        "layers_wide": wide,
                        "n_layers": layers,
                        "n": 4,
                        "found": {0.0: 0.0, 1.0: 0.5, 2.0: 0.75 if wide else 1.0}[amplitude]
                        - 0.25 * (layers == 12),
                        "absent": 1.0 if amplitude == 0 else 0.5,
                        "absent_weighed": 0.75 if amplitude == 0 else 0.25,
                        "inconclusive_weighed": 0.0,
                        "power": 0.9,
                    }
                )
    _record(tmp_path, pd.DataFrame(cells), jump_power.source_hash())
    record = power_record.load_power_record(tmp_path)
    s = record.summary()
    assert record.current and s["power_current"] == "the current code"
    assert s["power_paper_step"] == 0.75 and s["power_paper_wide"] == 0.5  # the lowest cell, over depths
    assert s["power_wide_layers"] == 6 and s["power_n"] == 4 and s["power_date"] == "2026-12-06"
    assert s["power_absent_paper"] == 0.5 and s["power_absent_weighed_paper"] == 0.25
    assert s["power_flat_kept"] == pytest.approx(0.75)
    assert s["power_max_width"] == transition.MAX_WIDTH


def test_a_stale_or_missing_record_says_so(tmp_path):
    with pytest.raises(InvalidInputError, match="tools/jump_power.py"):
        power_record.load_power_record(tmp_path)
    table = pd.DataFrame(
        [
            {
                "amplitude": 2.0,
                "layers_wide": 0,
                "n_layers": 12,
                "n": 1,
                "found": 1.0,
                "absent": 0.0,
                "absent_weighed": 0.0,
                "inconclusive_weighed": 0.0,
                "power": 0.9,
            }
        ]
    )
    _record(tmp_path, table, "an older hash")
    record = power_record.load_power_record(tmp_path)
    assert not record.current and "rerun tools/jump_power.py" in record.summary()["power_current"]


def test_the_committed_record_is_current_and_shows_the_papers_jump_found():
    """The record the book reads was made by the code of the package (rerun tools/jump_power.py after changing it)."""
    record = power_record.load_power_record(power_record.Path(__file__).resolve().parents[1] / "results")
    assert record.current
    assert len(record.table) == len(jump_power.AMPLITUDES) * len(jump_power.WIDTHS) * len(jump_power.LAYERS)
    steps = record.table[(record.table["amplitude"] == 2.0) & (record.table["layers_wide"] == 0)]
    assert (steps["found"] >= 0.8).all()


@pytest.mark.parametrize("script", ["jump_power.py", "calibrate_slow.py"])
def test_the_table_scripts_never_replace_a_file_that_is_not_their_record(tmp_path, script):
    """``tools/provenance.table_main`` refuses, before any work, an ``--out`` that is not a table record."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    foreign = tmp_path / "notes.json"
    foreign.write_text('{"my": "notes"}')
    done = subprocess.run(
        [sys.executable, str(root / "tools" / script), "--n-cases", "1", "--out", str(foreign)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode != 0 and "would be lost" in done.stderr
    assert foreign.read_text() == '{"my": "notes"}'
