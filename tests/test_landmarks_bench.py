"""The landmark benchmark's quick run writes its table, every step timed and set against the capture."""

import json

from .conftest import load_benchmark


def test_quick_run_writes_a_table_of_every_step(tmp_path):
    bench = load_benchmark("landmarks_bench")
    bench.main(["--quick", "--out", str(tmp_path)])
    record = json.loads((tmp_path / "landmarks_quick.json").read_text())
    assert set(record["steps"]) == set(bench.STEPS)
    assert all(step["cpu_s"] > 0 and step["wall_s"] > 0 for step in record["steps"].values())
    text = (tmp_path / "landmarks_quick.md").read_text()
    assert (
        "| (b) lb.capture at the book's settings |" in text and "1.000 |" in text
    )  # the capture over itself
