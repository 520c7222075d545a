"""tools/mutation_report.py: how mutmut's results and the source's pragmas become results/bench/mutation.md (no
mutmut run here: its command line is replaced by recorded output)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parent.parent / "tools" / "mutation_report.py"


@pytest.fixture()
def tool(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("mutation_report", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "RESULTS", tmp_path / "mutation")
    monkeypatch.setattr(module, "REPORT", tmp_path / "mutation.md")
    monkeypatch.setattr(module, "WORK", tmp_path / "work")
    (tmp_path / "mutation").mkdir()
    return module


def _diff(removed: str, added: str) -> str:
    return f"-{removed}\n+{added}"


SOURCE = """
def f(x, seed: int = 0):  # pragma: no mutate: default seed
    y = x + 1
    with np.errstate(all="ignore"):  # pragma: no mutate: errstate
        z = y / x
    # pragma: no mutate start (a block of two lines)
    a = np.sort(z, kind="stable")
    b = a.reshape(-1, 2)
    # pragma: no mutate end
    return b


class Model:
    def g(self, x):
        # equivalent mutants here: the weights' scale
        w = 1.0 / x  # pragma: no mutate
        y = x + 1
        return w * y
"""


def test_every_module_and_its_own_tests_exist_and_their_marks_are_read(tool):
    for source, tests in tool.MODULES.values():
        assert (tool.ROOT / source).is_file() and all((tool.ROOT / t).is_file() for t in tests), source
    assert tool.MODULES["thermo"][1] == ("tests/test_thermo.py", "tests/test_thermo_rows.py")
    marked = tool.marked_lines((tool.ROOT / tool.MODULES["resampling"][0]).read_text())
    assert any(marked.values())  # the estimator modules carry their equivalent mutants' marks


def test_marked_lines_are_read_per_function_in_all_three_forms(tool):
    marked = tool.marked_lines(SOURCE)
    assert marked["f"] == {
        "def f(x, seed: int = 0):",
        'with np.errstate(all="ignore"):',
        'a = np.sort(z, kind="stable")',
        "b = a.reshape(-1, 2)",
    }
    assert marked["Model.g"] == {"w = 1.0 / x"} and marked["Model"] == {"w = 1.0 / x"}
    assert "y = x + 1" not in marked["f"] | marked["Model.g"]  # an unmarked line between marked ones
    assert tool.function_of("latentbook.analysis.thermo.x__simplex__mutmut_3") == "_simplex"
    assert tool.function_of("latentbook.analysis.omega.x\u01c1Model\u01c1g__mutmut_12") == "Model.g"


def _result(tool, mutants: dict, source: str) -> dict:
    return {
        "module": "thermo",
        "source": source,
        "tests": ["tests/test_thermo.py"],
        "date": "2026-12-01T00:00:00+00:00",
        "commit": "abc1234",
        "fingerprint": tool.fingerprint("thermo"),
        "mutmut": "3.8.1",
        "wall_seconds": 60.0,
        "load_average": 1.0,
        "mutants": mutants,
    }


def test_report_counts_marked_mutants_apart_and_lists_survivors_and_modules_not_run(
    tool, tmp_path, monkeypatch
):
    source = tmp_path / "module.py"
    source.write_text(SOURCE)
    monkeypatch.setattr(tool, "ROOT", tmp_path)  # the result's source and the fingerprint read from here
    thermo, tests = tool.MODULES["thermo"]
    for path in (thermo, *tests):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("x = 1\n")
    key = "latentbook.analysis.thermo.x_{}__mutmut_{}".format
    mutants = {key("f", i): {"status": "killed", "diff": None} for i in range(8)}
    mutants[key("f", 8)] = {"status": "survived", "diff": _diff("    y = x + 1", "    y = x - 1")}
    # recorded before the line was marked: counted as marked, not as a survivor
    mutants[key("f", 9)] = {
        "status": "survived",
        "diff": _diff('    a = np.sort(z, kind="stable")', "    a = 0"),
    }
    # the same text marked in f, but this mutant is g's and its own line is not marked: a survivor
    mutants["latentbook.analysis.thermo.x\u01c1Model\u01c1g__mutmut_1"] = {
        "status": "survived",
        "diff": _diff("        y = x + 1", "        y = x + 2"),
    }
    mutants[key("f", 10)] = {"status": "timeout", "diff": None}
    mutants[key("f", 11)] = {
        "status": "survived",
        "diff": _diff('    raise E("bad input")', '    raise E("XX")'),
    }
    result = _result(tool, mutants, "module.py")
    summary = tool.summarise(result)
    counts = summary["counts"]
    assert (counts["caught"], counts["survived"], counts["message"], counts["marked"]) == (9, 3, 1, 1)
    assert summary["total"] == 13 and summary["rate"] == pytest.approx(9 / 12) and not summary["stale"]
    (tool.RESULTS / "thermo.json").write_text(json.dumps(result))
    text = tool.report().read_text()
    assert (
        "| thermo | test_thermo.py, test_thermo_rows.py | 13 | 9 | 3 (1) | 1 | 75.0% | **not met** |" in text
    )
    assert "| omega | test_omega.py | | | | | | not run yet | `make mutation MODULES=omega` |" in text
    assert "`y = x + 1` -> `y = x - 1`" in text and "- `Model.g` (1):" in text
    (tmp_path / tests[0]).write_text("x = 2\n")  # the tests' code changed since the run
    assert tool.summarise(result)["stale"]
    (tmp_path / tests[0]).write_text("x = 1  # a comment changes no code\n")
    assert not tool.summarise(result)["stale"]
    result["mutants"][key("f", 12)] = {"status": "not checked", "diff": None}
    result["partial"] = True
    assert tool.summarise(result)["rate"] == pytest.approx(9 / 12)  # not run: neither caught nor survived
    (tool.RESULTS / "thermo.json").write_text(json.dumps(result))
    assert "| 75.0% | partial: 1 not run |" in tool.report().read_text()


def test_collect_reads_mutmuts_command_line_output(tool, monkeypatch):
    work = tool.WORK / "flow"
    work.mkdir(parents=True)
    (work / "run.json").write_text(json.dumps({"fingerprint": {"a.py": "0"}, "commit": "abc1234"}))
    (work / "mutmut.log").write_text("done")
    results = "    pkg.flow.x_f__mutmut_1: killed\n    pkg.flow.x_f__mutmut_2: survived\n    pkg.flow.x_f__mutmut_3: not checked\n"
    shown = "# pkg.flow.x_f__mutmut_2: survived\n--- a.py\n+++ a.py\n@@ -1 +1 @@\n-    y = x + 1\n+    y = x - 1\n"
    calls = []

    def fake(work_dir, *args, log=None):
        calls.append(args)
        return results if args[0] == "results" else shown

    monkeypatch.setattr(tool, "mutmut", fake)
    monkeypatch.setattr(
        tool, "version", lambda name: "3.8.1"
    )  # mutmut is the mutation extra, not installed for tests
    result = json.loads(tool.collect("flow").read_text())
    assert calls == [
        ("results", "--all", "true"),
        ("show", "pkg.flow.x_f__mutmut_2"),
        ("show", "pkg.flow.x_f__mutmut_3"),
    ]
    assert result["mutants"]["pkg.flow.x_f__mutmut_1"] == {"status": "killed", "diff": None}
    assert result["mutants"]["pkg.flow.x_f__mutmut_2"]["diff"] == "-    y = x + 1\n+    y = x - 1"
    assert result["partial"] and result["commit"] == "abc1234" and result["fingerprint"] == {"a.py": "0"}
    assert result["source"] == "src/latentbook/analysis/flow.py" and not list(tool.RESULTS.glob("*.tmp"))
