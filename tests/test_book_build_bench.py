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


def test_a_newcomers_build_counts_its_setup_apart_from_the_pages_and_sphinx():
    bench = load_benchmark("book_build")
    steps = [
        {"step": "test -x .venv/bin/python || python3 -m venv .venv", "seconds": 30.0},
        {"step": ".venv/bin/python -m pip install -q -c constraints.txt torch==2.13.0", "seconds": 90.0},
        {"step": "make book (setup found done)", "seconds": 480.0},
    ]
    text = bench.markdown(
        RECORD
        | {"model_cache": "newcomer", "setup_steps": steps, "page_jobs": 2, "pages_wall_s": 330.0}
        | {"pages_run_in_sphinx": []}
    )
    assert text.startswith("# A newcomer's make book (a fresh clone, an empty HOME, setup included)")
    # 600 s of wall: 120 s of setup, 330 s of pages, and the 150 s left are Sphinx's
    assert "setup 2.0 min; pages executing 10.0 min of page time in 5.5 min of wall" in text
    assert "(`tools/execute_pages.py`); Sphinx 2.5 min." in text
    assert "| `test -x .venv/bin/python \\|\\| python3 -m venv .venv` | 30 |" in text  # pipes escaped
    assert "| `make book (setup found done)` | 480 |" in text


def test_a_newcomer_has_the_machines_pip_configuration_and_none_of_its_caches(tmp_path, monkeypatch):
    bench = load_benchmark("book_build")
    own_home = tmp_path / "own"
    (own_home / ".config" / "pip").mkdir(parents=True)
    (own_home / ".config" / "pip" / "pip.conf").write_text("[global]\nfind-links = /opt/wheels\n")
    (own_home / ".cache" / "latentbook").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(own_home))
    for name in ("LATENTBOOK_CACHE", "XDG_CACHE_HOME", "HF_HOME", "PIP_CACHE_DIR"):
        monkeypatch.setenv(name, str(own_home / ".cache"))
    monkeypatch.setenv("PIP_FIND_LINKS", "/opt/wheels")  # the machine's registries stay
    home = bench.newcomer_home(tmp_path / "home")
    assert (home / ".config" / "pip" / "pip.conf").read_text().endswith("/opt/wheels\n")
    assert not (home / ".cache").exists()
    env = bench.newcomer_env(home)
    assert env["HOME"] == str(home) and env["PIP_FIND_LINKS"] == "/opt/wheels"
    assert not {"LATENTBOOK_CACHE", "XDG_CACHE_HOME", "HF_HOME", "PIP_CACHE_DIR"} & set(env)


def test_the_runs_shared_work_is_its_own_part_of_the_wall_time():
    bench = load_benchmark("book_build")
    shared = {"shared_wall_s": 120.0, "shared_models": {"gemma3-270m": 120.0, "minilm-l6": 10.0}}
    text = bench.markdown(
        RECORD | {"page_jobs": 2, "pages_wall_s": 330.0, "pages_run_in_sphinx": []} | shared
    )
    assert (
        "the runs' shared captures and measurements 2.0 min (`tools/warm_book.py`: gemma3-270m 120 s" in text
    )
    assert "Sphinx and setup 2.5 min" in text  # 600 - 120 - 330 s


def test_a_continued_setup_line_is_one_command_and_one_cell(tmp_path):
    bench = load_benchmark("book_build")
    (tmp_path / "Makefile").write_text(
        "setup:\n\techo a\n\techo b & x=$$!; \\\n\t  echo c; \\\n\t  wait $$x\n\ttouch done\n"
    )
    steps = bench.setup_steps(tmp_path, {"PATH": "/usr/bin:/bin"})
    assert steps[0] == "echo a" and steps[-1] == "touch done" and len(steps) == 3
    assert steps[1].startswith("echo b & x=$!; \\\n") and steps[1].endswith("wait $x")
    text = bench.markdown(
        RECORD
        | {"model_cache": "newcomer", "page_jobs": 2, "pages_wall_s": 330.0, "pages_run_in_sphinx": []}
        | {"setup_steps": [{"step": steps[1], "seconds": 5.0}]}
    )
    assert "| `echo b & x=$!; echo c; wait $x` | 5 |" in text
