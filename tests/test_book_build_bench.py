"""benchmarks/book_build.py's table: where the wall time of a cold build went, pages run in parallel or not."""

from __future__ import annotations

from .conftest import load_benchmark

RECORD = {
    "status": 0,
    "wall_s": 600.0,
    "cpu_s": 1000.0,
    "load_average": {"max": 2.0, "mean": 1.9, "n": 40},
    "pages": {"book/verdict.md": 300.0, "book/intro.md": 200.0, "book/omega.md": 100.0},
    "model_cache": "kept",
    "date": "2026-12-04T00:00:00+00:00",
    "git_commit": "0123456789abcdef",
    "machine": {"cpu": "x86_64", "cores": 2},
}


def test_pages_run_two_at_a_time_are_counted_against_their_own_wall_time():
    bench = load_benchmark("book_build")
    parallel = bench.markdown(RECORD | {"page_jobs": 2, "pages_wall_s": 330.0, "pages_run_in_sphinx": []})
    assert "pages executing 10.0 min of page time in 5.5 min of wall, 2 at a time" in parallel
    assert "Sphinx and setup 4.5 min" in parallel  # 600 - 330 s, not 600 - 600 s
    assert "| book/verdict.md | 300 | 50% |" in parallel  # a share of the page time, not of the wall
    assert "Pages Sphinx executed itself: none." in parallel
    serial = bench.markdown(RECORD | {"pages_wall_s": None, "pages_run_in_sphinx": ["book/omega.md"]})
    assert "pages executing 10.0 min, Sphinx and setup 0.0 min" in serial
    assert "Pages Sphinx executed itself: book/omega.md." in serial
    assert "Wall 10.0 min against a target of 10 min (met)" in serial
