"""The appendix pages' tables and numbers (``study.chapters.appendix_tables``, ``performance_tables``), on inputs
written here."""

from __future__ import annotations

import builtins
import json

import pandas as pd
import pytest

from latentbook import errors
from latentbook.analysis import interval_coverage, transition
from latentbook.study.chapters import appendix_tables as at
from latentbook.study.chapters import performance_tables as pt


def test_spoken_joins_the_last_number_with_and():
    assert (at.spoken([3]), at.spoken([3, 4]), at.spoken([3, 4, 5])) == ("3", "3 and 4", "3, 4 and 5")


def _coverage_table() -> pd.DataFrame:
    names = ["m(gamma), prompts", "gamma_c, step", "jump, local", "PR ratio", "effective rank ratio"]
    return pd.DataFrame(
        {
            "estimator": names,
            "nominal": 0.95,
            "observed": [0.95, 0.99, 0.93, 0.90, 0.96],
            "ci_low": 0.9,
            "ci_high": 0.98,
            "n": [100, 100, 100, 100, 80],
            "on target": [True, False, True, False, True],
            "spread": [1.0, 1.1, 0.9, 1.5, 1.0],
            "spread on target": [True, True, True, False, True],
        }
    )


def test_coverage_glue_reads_each_estimators_row_by_its_name():
    glued = at.coverage_glue(_coverage_table())
    assert (glued["gamma_c"], glued["spread_gamma_c"], glued["pr"], glued["rank"]) == (0.99, 1.1, 0.9, 0.96)
    assert glued["nominal"] == 0.95 and glued["n"] == 80
    assert (glued["n_on_target"], glued["n_spread_on_target"], glued["n_rows"]) == (3, 4, 5)
    assert glued["target_low"] == interval_coverage.COVERAGE_TARGET[0]
    lines = [str(h) for h, degree in transition.LOCAL_FITS if degree == 1]
    assert glued["local_lines"] == at.spoken(lines) and glued["local_precision"] == transition.LOCAL_PRECISION


def test_coverage_view_puts_the_wilson_interval_beside_the_rate():
    html = at.coverage_view(_coverage_table()).to_html()
    assert "[0.90, 0.98]" in html and "99%" in html and "nominal" not in html


ROWS = [
    {
        "area": "Bad input",
        "case": "no prompts",
        "error": "InvalidInputError",
        "says": "is empty",
        "outcome": None,
    }
    | {"test": "test_empty", "file": "tests/test_faults.py", "line": 12},
    {"area": "Atomic writes", "case": "a crash", "error": None, "says": None, "outcome": "the old file stays"}
    | {"test": "test_crash", "file": "tests/test_faults.py", "line": 40},
]


def test_a_fault_areas_table_links_each_test_and_says_what_a_user_sees():
    table = at.area_tables(ROWS)
    text = table("Bad input").data
    assert "| no prompts | `InvalidInputError` (a `ValueError`): `…is empty…` |" in text
    assert f"[`test_empty`]({at.SOURCE}/tests/test_faults.py#L12)" in text and "a crash" not in text
    assert "| a crash | the old file stays |" in table("Atomic writes").data
    assert at.fault_glue(ROWS) == {"n": 2, "n_areas": 2, "areas": "Atomic writes; Bad input"}


def test_the_fault_rows_are_read_from_the_repositorys_tests():
    rows = at.fault_rows()
    assert len(rows) > 50 and {"Bad input", "Security"} <= {row["area"] for row in rows}


def test_every_error_class_is_also_a_builtin_and_the_messages_name_no_scratch_folder():
    classes = at.error_classes()
    assert "IntegrityError" in set(classes["class"]) and "LatentbookError" not in set(classes["class"])
    assert at.builtin_base(errors.InvalidInputError) == "ValueError"
    assert all(issubclass(getattr(builtins, name), Exception) for name in classes["also a"])
    messages = at.error_messages()
    assert len(messages) == 9 and not messages["message"].str.contains("/tmp").any()
    assert messages.set_index("call").loc['lb.load_capture("notes.txt")', "message"].startswith("notes.txt")


def test_plan_table_and_glue_for_the_shipped_configs():
    plans = at.shipped_plans(gpu_mem_gib=80)
    table = at.plan_table(plans)
    assert list(table["model"]) == list(plans) and set(table["fits"]) <= {"yes", "no"}
    big = table.set_index("model").loc["Qwen/Qwen2.5-32B"]
    assert big["depths"] == plans["Qwen/Qwen2.5-32B"].model.n_layers + 1 and big["parameters (B)"] > 30
    glued = at.plan_glue(plans, gpu_mem_gib=80)
    assert (
        glued["n"] == len(plans)
        and glued["mem"] == 80
        and glued["32b_host"] == big["statistics on host (GiB)"]
    )
    assert glued["70b_two"] != plans[at.TWO_GPU_MODEL].verdict  # two GPUs, not one
    assert list(at.claim_commands().columns) == ["claim", "command"]


# --- the performance appendix -----------------------------------------------------------------------------------


def _model(name: str, e: float, peers: dict[str, float]) -> dict:
    methods = {"a": {"ratio_to_a": 1.0, "median_cpu_s": 1.0, "cpu_s": [1.0, 1.0]}}
    methods["a-trunk"] = {"ratio_to_a": 0.8, "median_cpu_s": 0.8}
    methods["e"] = {"ratio_to_a": e, "median_cpu_s": e, "cpu_s": [e - 0.1, e + 0.1]}
    methods |= {k: {"status": "ok", "ratio_to_a": r} for k, r in peers.items()}
    methods["d"] = {"status": "not installed"}
    model = {"model": name, "methods": methods, "tokens_per_run": 64, "seq_len": 32, "d_model": 576}
    return model | {"e_first_read_of_all_covariances_cpu_s": 0.1}


BENCH = {
    "date": "2026-01-02T03:04",
    "machine": {"cpu": "x86_64", "logical_cores": 2, "torch_threads": 1},
    "load_average": {"start": [1.0], "end": [2.5], "after_each_round": [1.5]},
    "rss": {
        "model": "smollm2-135m",
        "tokens_N": 100,
        "methods": {
            "e": {"status": "ok", "peak_ratio_4N_to_N": 1.2},
            "b": {"status": "ok", "peak_ratio_4N_to_N": 1.5},
        },
    },
    "timing": [_model("smollm2-135m", 0.9, {"b": 1.2, "c": 0.8}), _model("random:llama-1b", 1.1, {"b": 1.3})],
}


def test_bench_glue_reads_each_model_and_the_floor_of_the_1b_model():
    perf = pt.bench_glue(BENCH)
    assert perf["load_max"] == 2.5 and perf["rss_4N"] == 400 and perf["cpu"] == "x86_64 (2 logical cores)"
    assert perf["smollm2-135m_e_over_trunk"] == pytest.approx(0.9 / 0.8)
    assert perf["random_llama-1b_head_share"] == pytest.approx(0.2) and perf["smollm2-135m_d"] == 576
    assert perf["llama_1b_slack"] == pytest.approx(pt.TARGET - perf["random_llama-1b_floor"])
    assert (
        1 < perf["random_llama-1b_floor"] < perf["smollm2-135m_floor"]
    )  # a wider stream: the Gram weighs less


def test_bench_findings_say_within_or_above_the_targets_and_which_peers_were_slower():
    text = pt.bench_findings(BENCH)
    first, second, memory = text.split("\n")
    assert "0.90 times the plain forward (within the target of 1.05; round by round 0.80 to 1.00" in first
    assert first.endswith("it was faster than (b) at 1.20, and slower than (c).")
    assert "1.10 times the plain forward (above" in second and second.endswith("(b) at 1.30.")
    assert "1.200 times that at N (above the 10% target); (b) 1.50" in memory


def test_the_gpu_sections_wait_for_a_gpu_run(tmp_path, monkeypatch):
    monkeypatch.setattr(pt, "bench_folder", lambda: tmp_path)
    assert pt.gpu_glue() == {} and pt.gpu_figures().data == pt.NO_GPU and pt.build_times().data == pt.NO_BUILD
    timing = [{"model": m, "methods": {"e": {"ratio_to_a": r}}} for m, r in (("a", 3.0), ("b", 5.0))]
    gpu = {"dry_run": False, "timing": timing, "environment": {"gpu": "H200"}}
    (tmp_path / "gpu.json").write_text(json.dumps(gpu))
    (tmp_path / "gpu.md").write_text("# GPU\n\n| table |")
    assert pt.gpu_glue() == {} and pt.gpu_figures().data == "| table |"  # no profile yet
    profile = {"batches": [{"batch_size": 8, "ratio": 6.0}, {"batch_size": 32, "ratio": 3.5}]}
    (tmp_path / "gpu_profile.json").write_text(json.dumps(profile))
    assert pt.gpu_glue() == {
        "capture_ratio_low": 3.0,
        "capture_ratio_high": 5.0,
        "profile_batch8": 6.0,
        "profile_batch32": 3.5,
        "device": "H200",
    }
    (tmp_path / "gpu.json").write_text(json.dumps(gpu | {"dry_run": True}))
    assert pt.gpu_glue() == {} and pt.gpu_figures().data == pt.NO_GPU


def test_the_build_section_shows_a_newcomers_make_book_beside_the_cold_build_once_measured(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(pt, "bench_folder", lambda: tmp_path)
    (tmp_path / "book_build.json").write_text("{}")
    (tmp_path / "book_build.md").write_text("# Cold book build\n\nWall 8.9 min\n")
    assert pt.build_times().data == "Wall 8.9 min\n"  # no newcomer measured: the cold build alone
    (tmp_path / "book_build_newcomer.json").write_text("{}")
    (tmp_path / "book_build_newcomer.md").write_text("# A newcomer's make book\n\nWall 12.6 min\n")
    shown = pt.build_times().data
    assert shown.startswith("Wall 8.9 min\n")
    assert shown.endswith("**A newcomer's make book.**\n\nWall 12.6 min\n")
    assert "\n#" not in shown  # no heading inside a cell's output
