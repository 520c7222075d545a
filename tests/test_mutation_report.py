"""tools/mutation_report.py: how mutmut's results become results/bench/mutation.md (no mutmut run here)."""

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
    return module


def _diff(removed: str, added: str) -> str:
    return f"-{removed}\n+{added}"


def test_every_module_and_its_own_tests_exist(tool):
    for source, tests in tool.MODULES.values():
        assert (tool.ROOT / source).is_file() and all((tool.ROOT / t).is_file() for t in tests), source
    assert "contraction" in tool.MODULES and not set(tool.PENDING) & set(tool.MODULES)


def test_a_survivors_rerun_takes_the_survivors_and_todays_tests_and_refuses_a_changed_source(
    tool, tmp_path, monkeypatch
):
    source, tests = tool.MODULES["flow"]
    monkeypatch.setattr(tool, "WORK", tmp_path / "work")
    with pytest.raises(SystemExit, match="run it in full first"):
        tool.survivors_to_rerun("flow")
    work = tmp_path / "work" / "flow"
    (work / "mutants").mkdir(parents=True)
    (work / "tests").mkdir()
    (work / tests[0]).write_text("# the test file as it was")
    (work / source).parent.mkdir(parents=True)
    (work / source).write_bytes((tool.ROOT / source).read_bytes())
    mutants = {
        "m.x_f__mutmut_1": {"status": "killed", "diff": None},
        "m.x_f__mutmut_2": {"status": "survived", "diff": "-a\n+b"},
        "m.x_f__mutmut_3": {"status": "no tests", "diff": "-a\n+c"},
        "m.x_f__mutmut_4": {"status": "timeout", "diff": None},
    }
    result = {
        "fingerprint": {source: tool.sha256(tool.ROOT / source)},
        "mutants": mutants,
        "date": "2026-12-01",
    }
    tool.RESULTS.mkdir(parents=True)
    (tool.RESULTS / "flow.json").write_text(json.dumps(result))
    got, names, previous = tool.survivors_to_rerun("flow")
    assert (
        got == work and names == ["m.x_f__mutmut_2", "m.x_f__mutmut_3"] and previous["date"] == "2026-12-01"
    )
    assert (work / tests[0]).read_text() == (tool.ROOT / tests[0]).read_text()  # today's tests
    result["fingerprint"][source] = "0" * 64
    (tool.RESULTS / "flow.json").write_text(json.dumps(result))
    with pytest.raises(SystemExit, match="changed since the last run"):
        tool.survivors_to_rerun("flow")
    result["fingerprint"][source] = tool.sha256(tool.ROOT / source)
    (tool.RESULTS / "flow.json").write_text(json.dumps(result))
    (work / source).write_text("# a scratch copy of another version")
    with pytest.raises(SystemExit, match="changed since the last run"):
        tool.survivors_to_rerun("flow")


def test_names_equivalence_and_message_text(tool):
    assert tool.function_of("latentbook.analysis.thermo.x__simplex__mutmut_3") == "_simplex"
    assert tool.function_of("latentbook.analysis.omega.x\u01c1Bimodality\u01c1to_frame__mutmut_12") == (
        "Bimodality.to_frame"
    )
    quiet = _diff('    with np.errstate(divide="ignore"):', "    with np.errstate(divide=None):")
    assert tool.equivalence(quiet).startswith("errstate")
    assert tool.equivalence(_diff("    q = a / b", "    q = a * b")) is None
    assert tool.is_message(
        _diff('            "the message goes on."', '            "XXthe message goes on.XX"')
    )
    assert tool.is_message(_diff('    raise E("bad input")', '    raise E("BAD INPUT")'))
    assert not tool.is_message(_diff('    "layer": np.arange(1, n),', '    "XXlayerXX": np.arange(1, n),'))


def test_report_counts_kill_rate_without_equivalents_and_lists_modules_not_run(tool):
    source, tests = tool.MODULES["thermo"]
    mutants = {
        f"latentbook.analysis.thermo.x_f__mutmut_{i}": {"status": "killed", "diff": None} for i in range(8)
    }
    mutants["latentbook.analysis.thermo.x_f__mutmut_8"] = {
        "status": "survived",
        "diff": _diff("    y = x + 1", "    y = x - 1"),
    }
    mutants["latentbook.analysis.thermo.x_g__mutmut_1"] = {
        "status": "survived",
        "diff": _diff('    with np.errstate(all="ignore"):', "    with np.errstate(all=None):"),
    }
    mutants["latentbook.analysis.thermo.x_g__mutmut_2"] = {"status": "timeout", "diff": None}
    result = {
        "module": "thermo",
        "source": source,
        "tests": list(tests),
        "date": "2026-12-01T00:00:00+00:00",
        "commit": "abc1234",
        "fingerprint": tool.fingerprint("thermo"),
        "mutmut": "3.8.1",
        "wall_seconds": 60.0,
        "load_average": 1.0,
        "mutants": mutants,
    }
    summary = tool.summarise(result)
    assert summary["total"] == 11 and summary["counts"]["equivalent"] == 1 and not summary["stale"]
    assert summary["rate"] == pytest.approx(9 / 10)  # 8 killed + 1 timeout of 10 non-equivalent
    tool.RESULTS.mkdir()
    (tool.RESULTS / "thermo.json").write_text(json.dumps(result))
    text = tool.report().read_text()
    assert "| thermo | test_thermo.py, test_thermo_rows.py | 11 | 9 | 1 (0) | 1 | 90.0% | met |" in text
    assert "| omega | test_omega.py | | | | | | not run yet | `make mutation MODULES=omega` |" in text
    assert "`y = x + 1` -> `y = x - 1`" in text and "| contraction |" in text
    result["fingerprint"] = {source: "0" * 64}
    assert tool.summarise(result)["stale"]
    # a stopped run: mutants not yet run are neither caught nor survivors, and the row says it is partial
    result["fingerprint"] = tool.fingerprint("thermo")
    result["mutants"]["latentbook.analysis.thermo.x_g__mutmut_3"] = {"status": "not checked", "diff": None}
    result["partial"] = True
    summary = tool.summarise(result)
    assert summary["not_checked"] == 1 and summary["rate"] == pytest.approx(9 / 10)
    assert all(key != "latentbook.analysis.thermo.x_g__mutmut_3" for key, _ in summary["survivors"])
    (tool.RESULTS / "thermo.json").write_text(json.dumps(result))
    assert (
        "| 90.0% | partial: 1 of 12 not run yet (`run thermo --survivors` goes on) |"
        in tool.report().read_text()
    )
