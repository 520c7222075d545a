"""The registry of long-run records (``study.records``) and ``latentbook records status``."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from latentbook.cli import main
from latentbook.ladder import report
from latentbook.study import ladder_landmarks, records

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results"


def test_every_record_the_book_reads_is_registered_and_found():
    lines = records.status(RESULTS)
    assert [line.name for line in lines] == [record.name for record in records.RECORDS]
    for line in lines:
        assert Path(line.file).is_file(), line
        assert line.state == records.CURRENT or line.state.startswith("stale: "), line
    assert "ladder/measurements.json" in {record.file for record in records.RECORDS}
    assert report.COMMAND in {record.command for record in records.RECORDS}
    assert ladder_landmarks.FILE == "landmarks.json"


def _copy_calibration(tmp_path: Path) -> Path:
    results = tmp_path / "results"
    shutil.copytree(RESULTS / "calibration", results / "calibration")
    return results


def test_a_record_of_other_code_is_stale_a_missing_one_missing_a_broken_one_unreadable(tmp_path):
    results = _copy_calibration(tmp_path)
    by_name = {line.name: line.state for line in records.status(results)}
    assert by_name["jump power"] == records.CURRENT  # the committed record, read from the copy
    path = results / "calibration" / "jump_power.json"
    record = json.loads(path.read_text())
    record["provenance"]["code"]["latentbook.analysis.transition"] = "0" * 64  # made by other code than now
    path.write_text(json.dumps(record))
    (results / "calibration" / "slow_families.json").write_text("{not json")
    by_name = {line.name: line.state for line in records.status(results)}
    assert by_name["jump power"] == "stale: latentbook.analysis.transition changed"  # named
    assert by_name["slow families"].startswith("unreadable: ")
    assert by_name["ladder measurements (ladder)"] == records.MISSING  # not copied


def test_a_ladder_record_counts_its_models_measured_by_older_code(tmp_path):
    folder = tmp_path / "results" / "ladder"
    folder.mkdir(parents=True)
    code = report.diagnostics_hash()
    measured = {
        "command": report.COMMAND,
        "rungs": ["a", "b"],
        "models": {
            "a": {"measured_by": code, "checkpoints": {"10": {"measured_by": "old"}}},
            "b": {"measured_by": code},
        },
    }
    (folder / report.MEASUREMENTS).write_text(json.dumps(measured))
    state = {line.name: line.state for line in records.status(tmp_path / "results")}
    assert state["ladder measurements (ladder)"] == "stale: 1 of 3 models measured by older code"
    measured["models"]["a"]["checkpoints"]["10"]["measured_by"] = code
    (folder / report.MEASUREMENTS).write_text(json.dumps(measured))
    state = {line.name: line.state for line in records.status(tmp_path / "results")}
    assert state["ladder measurements (ladder)"] == records.CURRENT


def test_the_command_prints_a_line_per_record_and_refuses_a_missing_folder(tmp_path, capsys):
    results = _copy_calibration(tmp_path)
    assert main(["records", "status", "--results", str(results)]) == 0
    out = capsys.readouterr().out
    for record in records.RECORDS:
        assert record.name in out and record.command in out
    assert records.MISSING in out
    assert main(["records", "status", "--results", str(tmp_path / "nowhere")]) == 2
    assert "pass --results FOLDER" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["records"])  # an action is required


def test_the_ladder_records_rerun_with_the_commands_that_wrote_them():
    assert records.find("ladder measurements (ladder)").command == report.COMMAND
    assert records.find("ladder-measurements-ladder-v2").command == report.V2_COMMAND


def test_records_run_runs_the_producer_from_the_repository_with_its_arguments(monkeypatch, capsys):
    calls = []

    def fake_run(argv, cwd):
        calls.append((argv, Path(cwd)))
        return type("Done", (), {"returncode": 0})()

    monkeypatch.setattr("subprocess.run", fake_run)
    main(["records", "restamp", "Planted-Calibration", "--", "--n-cases", "3"])
    argv, cwd = calls.pop()
    assert cwd == ROOT and Path(argv[0]).name.startswith("python")
    assert argv[1:] == ["tools/calibrate_planted.py", "--jobs", "2", "--restamp", "--n-cases", "3"]
    main(["records", "run", "ladder measurements (ladder)"])
    argv, _ = calls.pop()
    assert argv[1:] == ["-m", "latentbook", "train-ladder", "--measure"]
    main(["records", "run", "jump-power", "--dry-run"])
    assert not calls and "tools/jump_power.py" in capsys.readouterr().out


def test_records_run_passes_on_the_producers_failure(monkeypatch):
    monkeypatch.setattr("subprocess.run", lambda argv, cwd: type("Done", (), {"returncode": 3})())
    with pytest.raises(SystemExit) as exit_info:
        main(["records", "run", "slow-families"])
    assert exit_info.value.code == 3


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["records", "run", "planted"], "The records are: planted-calibration, "),
        (["records", "restamp", "jump-power"], "latentbook records run jump-power"),
        (["records", "run", "jump-power", "--repository", "{tmp}"], "tools/jump_power.py is not in"),
    ],
)
def test_records_run_refuses_what_it_cannot_run_and_names_the_fix(
    argv, message, tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr("subprocess.run", lambda *a, **k: pytest.fail("nothing may run"))
    assert main([part.format(tmp=tmp_path) for part in argv]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("record", [r for r in records.RECORDS if r.restamp], ids=lambda r: r.slug)
def test_a_record_that_offers_a_restamp_has_a_producer_that_takes_one(record):
    argv = records.producer_argv(record, "restamp", ROOT, ["--help"])
    shown = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "--restamp" in shown


def test_each_calibration_record_names_the_producer_whose_modules_it_hashed():
    """A record's registered ``producer`` is the module its script ran: the modules its committed ``code`` hashes
    are that module's imports, so a wrong producer in ``RECORDS`` cannot read a record as current."""
    from latentbook._code_hash import imported_modules

    producers = [record for record in records.RECORDS if record.producer is not None]
    assert len(producers) == 7
    for record in producers:
        code = json.loads((RESULTS / record.file).read_text())["provenance"]["code"]
        assert sorted(code) == list(imported_modules(record.producer)), record.name
