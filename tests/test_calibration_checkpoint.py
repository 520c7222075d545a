"""A calibration of hours keeps every finished case (``tools/provenance.calibration_main``): a killed run carries
on where it stopped, with the records an uninterrupted run writes, and a checkpoint of other code is never mixed in
or overwritten."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from latentbook.study.cases import in_case_order, run_cases

ROOT = Path(__file__).resolve().parents[1]

FAKE = """
import os
from functools import partial
from pathlib import Path

from latentbook.study.cases import run_cases

FILE = Path("calibration") / "fake.json"
RAN = Path(os.environ["FAKE_RAN"])


class Family:
    def __init__(self, name):
        self.name = name


def families():
    return [Family(name) for name in os.environ.get("FAKE_FAMILIES", "f").split(",")]


def code_hashes():
    return {"fake_calibration": os.environ.get("FAKE_HASH", "h1")}


def source_hash():
    from latentbook._code_hash import digest

    return digest(code_hashes())


def run_case(case, seed=0, names=None):
    if case == int(os.environ.get("FAKE_DIE_AT", "-1")):
        raise KeyboardInterrupt  # the run is killed here
    names = names or [family.name for family in families()]
    with RAN.open("a") as log:
        log.write(f"{case}{''.join(names)}\\n")
    shift = int(os.environ.get("FAKE_SHIFT", "0"))
    jitter = float(os.environ.get("FAKE_JITTER", "0"))
    return [
        {
            "family": name,
            "case": case,
            "verdict": "holds" if (case + seed + shift) % 2 else "does not hold",
            "value": (1.0 + case + seed) * (1.0 + jitter),
        }
        for name in names
    ]


def iter_cases(cases, seed=0, jobs=1, names=None):
    return run_cases(partial(run_case, names=names), cases, seed, jobs)


def confusion(records):
    import pandas as pd

    return pd.DataFrame(records)
"""


@pytest.fixture
def calibration(tmp_path, monkeypatch):
    """``run(*argv, **env)``: the command line of a calibration script over a fake module, and the cases it ran."""
    (tmp_path / "fake_calibration.py").write_text(FAKE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("FAKE_RAN", str(tmp_path / "ran.txt"))
    spec = importlib.util.spec_from_file_location("provenance", ROOT / "tools" / "provenance.py")
    provenance = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(provenance)
    import fake_calibration

    def run(*argv, **env):
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        (tmp_path / "ran.txt").write_text("")
        monkeypatch.setattr(sys, "argv", ["calibrate_fake.py", *argv])
        provenance.calibration_main(fake_calibration, "calibrate_fake.py", "A fake calibration.")
        return [line.replace("f", "") for line in (tmp_path / "ran.txt").read_text().split()]

    run.checkpoint = provenance.checkpoint_path
    yield run
    sys.modules.pop("fake_calibration", None)


def test_a_killed_calibration_carries_on_to_the_records_of_an_uninterrupted_run(calibration, tmp_path):
    whole, out = tmp_path / "whole.json", tmp_path / "out.json"
    assert calibration("--n-cases", "6", "--seed", "1", "--out", str(whole), FAKE_DIE_AT="-1") == list(
        "012345"
    )
    with pytest.raises(KeyboardInterrupt):
        calibration("--n-cases", "6", "--seed", "1", "--out", str(out), FAKE_DIE_AT="3")
    checkpoint = calibration.checkpoint(out)
    assert not out.exists() and len(checkpoint.read_text().splitlines()) == 1 + 3  # header, cases 0-2
    assert calibration("--n-cases", "6", "--seed", "1", "--out", str(out), FAKE_DIE_AT="-1") == list("345")
    assert json.loads(out.read_text())["records"] == json.loads(whole.read_text())["records"]
    assert not checkpoint.exists()


def test_a_line_cut_short_by_a_kill_is_run_again_and_the_next_line_starts_clean(calibration, tmp_path):
    out = tmp_path / "out.json"
    with pytest.raises(KeyboardInterrupt):
        calibration("--n-cases", "4", "--out", str(out), FAKE_DIE_AT="2")
    checkpoint = calibration.checkpoint(out)
    checkpoint.write_text(checkpoint.read_text()[:-9])  # case 1's line cut short, no newline
    assert calibration("--n-cases", "4", "--out", str(out), FAKE_DIE_AT="-1") == list("123")
    assert [r["case"] for r in json.loads(out.read_text())["records"]] == [0, 1, 2, 3]


@pytest.mark.parametrize("change", [{"FAKE_HASH": "h2"}, {"seed": "5"}])
def test_a_checkpoint_of_other_code_or_seed_is_refused_and_kept(calibration, tmp_path, change):
    out = tmp_path / "out.json"
    with pytest.raises(KeyboardInterrupt):
        calibration("--n-cases", "4", "--out", str(out), FAKE_DIE_AT="2")
    checkpoint = calibration.checkpoint(out)
    before = checkpoint.read_text()
    seed = ["--seed", change["seed"]] if "seed" in change else []
    env = {k: v for k, v in change.items() if k != "seed"}
    with pytest.raises(SystemExit, match="cannot be mixed with this run.*delete the file"):
        calibration("--n-cases", "4", "--out", str(out), *seed, FAKE_DIE_AT="-1", **env)
    assert checkpoint.read_text() == before and not out.exists()


def test_a_record_is_extended_by_new_families_once_the_kept_ones_reproduce(calibration, tmp_path):
    out = tmp_path / "out.json"
    calibration("--n-cases", "4", "--out", str(out), FAKE_DIE_AT="-1", FAKE_FAMILIES="a,b")
    ran = calibration("--n-cases", "4", "--out", str(out), "--add-families", "c", FAKE_FAMILIES="a,c,b")
    assert ran == ["0ab", "1ab", "0c", "1c", "2c", "3c"]  # the spot check, then the new family only
    record = json.loads(out.read_text())
    assert [(r["case"], r["family"]) for r in record["records"]] == [
        (case, family) for case in range(4) for family in "acb"
    ]
    assert record["provenance"]["extended"]["families"] == ["c"]
    before = out.read_text()
    with pytest.raises(SystemExit, match="does not reproduce"):
        calibration(
            "--n-cases",
            "4",
            "--out",
            str(out),
            "--add-families",
            "d",
            FAKE_FAMILIES="a,c,b,d",
            FAKE_SHIFT="1",
        )
    with pytest.raises(SystemExit, match="not families"):
        calibration("--n-cases", "4", "--out", str(out), "--add-families", "e", FAKE_SHIFT="0")
    with pytest.raises(SystemExit, match="same --n-cases"):
        calibration("--n-cases", "5", "--out", str(out), "--add-families", "d", FAKE_FAMILIES="a,c,b,d")
    assert out.read_text() == before


def test_a_record_is_restamped_for_new_code_only_where_every_family_reproduces(calibration, tmp_path):
    out = tmp_path / "out.json"
    calibration("--n-cases", "4", "--out", str(out), FAKE_FAMILIES="a,b", FAKE_HASH="h1")
    first = json.loads(out.read_text())
    assert calibration("--n-cases", "4", "--out", str(out), "--restamp", FAKE_HASH="h1") == []  # current
    assert json.loads(out.read_text()) == first

    with pytest.raises(SystemExit, match="does not reproduce"):  # new code that moves a value
        calibration("--n-cases", "4", "--out", str(out), "--restamp", FAKE_HASH="h2", FAKE_SHIFT="1")
    assert json.loads(out.read_text()) == first
    with pytest.raises(SystemExit, match="same --n-cases"):
        calibration("--n-cases", "5", "--out", str(out), "--restamp", FAKE_HASH="h2", FAKE_SHIFT="0")

    with pytest.raises(SystemExit, match="does not reproduce"):  # a value moved by a millionth: new code
        calibration("--n-cases", "4", "--out", str(out), "--restamp", FAKE_HASH="h2", FAKE_JITTER="1e-6")
    assert json.loads(out.read_text()) == first
    # the last digits another machine's BLAS changes: the same values
    ran = calibration("--n-cases", "4", "--out", str(out), "--restamp", FAKE_HASH="h2", FAKE_JITTER="1e-13")
    assert ran == ["0ab", "1ab"]  # the spot check alone
    record = json.loads(out.read_text())
    assert record["records"] == first["records"] and record["provenance"]["code"] == {
        "fake_calibration": "h2"
    }
    assert record["provenance"]["restamped"] == {"spot_cases": [0, 1], "kept_from": first["provenance"]}
    with pytest.raises(SystemExit, match="on its own"):
        calibration("--n-cases", "4", "--out", str(out), "--restamp", "--add-families", "c", FAKE_HASH="h3")


def test_run_cases_in_processes_gives_the_records_of_one_process():
    one = in_case_order(run_cases(_square, range(5), seed=2))
    two = in_case_order(run_cases(_square, range(5), seed=2, jobs=2))
    assert one == two == [{"case": c, "value": c * c + 2} for c in range(5)]


def _square(case: int, seed: int) -> list[dict]:
    return [{"case": case, "value": case * case + seed}]


def test_records_reproduce_to_the_last_digits_a_machine_changes_and_no_further():
    spec = importlib.util.spec_from_file_location("provenance", ROOT / "tools" / "provenance.py")
    provenance = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(provenance)
    kept = [{"family": "f", "verdict": "holds", "value": 0.8543609705795240}, {"value": float("nan")}]
    assert provenance.reproduces([{**kept[0], "value": 0.8543609705795205}, kept[1]], kept)
    assert not provenance.reproduces([{**kept[0], "value": 0.8543610}, kept[1]], kept)
    assert not provenance.reproduces([{**kept[0], "verdict": "inconclusive"}, kept[1]], kept)
    assert not provenance.reproduces([kept[0], {"value": 0.0}], kept)
    assert not provenance.reproduces(kept[:1], kept)
