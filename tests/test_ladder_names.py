"""benchmarks/ladder_names.py: its variants are the knob's three settings, and one short run end to end."""

from __future__ import annotations

from pathlib import Path

import pytest

from latentbook.errors import CaptureFileError
from latentbook.ladder import report, train

from .conftest import load_benchmark


@pytest.fixture(scope="module")
def names():
    return load_benchmark("ladder_names")


def test_variants_are_the_ladder_setting_and_both_extremes(names):
    knobs = names.variants(train.LADDER_SPEC)
    assert knobs["fixed, then fresh"] == train.LADDER_CONFIG.fresh_names_from
    assert sorted(knobs.values()) == [1, 2, train.LADDER_SPEC.max_hops + 1]


def test_a_short_run_reports_both_name_splits_and_the_stages(names):
    r = names.run(fresh_names_from=1, steps=4, n_eval=8, threads=None)
    hops = list(range(1, train.LADDER_SPEC.max_hops + 1))
    assert list(r["heldout"]) == list(r["training_names"]) == hops
    assert all(0.0 <= a <= 1.0 for a in [*r["heldout"].values(), *r["training_names"].values()])
    assert r["stages"][0] == {"step": 0, "hops": 1} and r["fresh_names_from"] == 1


def test_names_table_has_one_row_per_variant_and_the_stage_steps():
    acc = {"1": 0.9, "2": 0.8, "3": 0.7, "4": 0.6}
    bench = {
        "variants": {
            "fixed, then fresh": dict(
                fresh_names_from=2,
                heldout=acc,
                training_names=acc,
                stages=[{"step": 0, "hops": 1}, {"step": 7, "hops": 2}],
            ),
            "fixed throughout": dict(
                fresh_names_from=5, heldout=acc, training_names=acc, stages=[{"step": 0, "hops": 1}]
            ),
        }
    }
    table = report.names_table(bench)
    assert list(table.index) == ["fixed, then fresh", "fixed throughout"]
    assert table.loc["fixed, then fresh", "stages opened at step"] == "7"
    assert table.loc["fixed throughout", "stages opened at step"] == "-"
    assert table.loc["fixed throughout", "held-out, 3 hop"] == 0.7
    assert table.loc["fixed throughout", "fresh codes from stage"] == 5
    with pytest.raises(CaptureFileError, match="ladder_names.py"):
        report.load_names_benchmark(Path("/nonexistent/ladder_names.json"))
