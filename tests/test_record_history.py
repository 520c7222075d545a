"""The earlier stages of the planted calibration record (``study.record_history``): the committed history holds
every stage the criteria appendix reads, with the families its readers read and the numbers they glued from the
five files it replaced; unknown stages and a missing file are refused; keeping a stage writes atomically."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from latentbook.errors import InvalidInputError
from latentbook.study import planted_calibration as pc
from latentbook.study import record_history as rh
from latentbook.study.chapters import criteria_flow as cf
from latentbook.study.chapters import criteria_planted as cp

RESULTS = Path(__file__).resolve().parents[1] / "results"
# the families each stage's reader reads (criteria_planted's glues, criteria_flow.contraction_false_holds)
READ = {
    "before position profile": {cp.GROWING},
    "flow before steady": set(cf.NO_CONTRACTION),
    "before twin margin": {cp.CLASS_CODE, cp.CODE_TWIN},
    "before raw beside cleaned": {cp.CODE_TWIN, cp.ROGUE, cp.MASSIVE, cp.GROWING, cp.GROWING_WRITING},
    "before code share": {cp.CLASS_CODE},
}


@pytest.fixture(scope="module")
def stages() -> dict[str, pc.PlantedTable]:
    return {stage: rh.load_stage(RESULTS, stage) for stage in rh.STAGES}


def test_the_history_keeps_every_stage_in_order_with_its_note():
    kept = json.loads((RESULTS / rh.HISTORY_FILE).read_text(encoding="utf-8"))["stages"]
    assert list(kept) == list(rh.STAGES) == list(READ)
    assert {stage: kept[stage]["note"] for stage in kept} == rh.STAGES
    dates = [kept[stage]["provenance"]["date"] for stage in kept]
    assert dates == sorted(dates)  # oldest first


@pytest.mark.parametrize("stage", list(READ))
def test_every_stage_loads_with_the_families_its_reader_reads(stages, stage):
    loaded = stages[stage]
    assert loaded.current is False  # history, whatever its hash
    assert set(loaded.records["family"]) == READ[stage]
    assert set(loaded.table["family"]) == READ[stage] and (loaded.table["n"] >= 74).all()


def test_the_glues_read_the_numbers_the_earlier_files_gave(stages):
    # the values criteria_planted and criteria_flow glued from the five files before they became one
    before = cp.position_profile_glue(stages["before raw beside cleaned"], stages["before position profile"])
    assert (before["e2e_before_holds"], before["e2e_before_both"], before["e2e_before_n"]) == (9, 7, 74)
    assert before["e2e_before_ng_erank"] == pytest.approx(0.12162162162162163, rel=1e-12)
    assert before["e2e_before_ng_pr"] == pytest.approx(0.05405405405405406, rel=1e-12)
    assert before["e2e_before_date"] == "2026-12-04"

    margin = cp.twin_margin_glue(stages["before twin margin"], stages["before twin margin"])
    assert (margin["e2e_margin_cct_erank_holds"], margin["e2e_margin_cct_erank_both"]) == (25, 23)
    assert (margin["e2e_margin_cct_pr_holds"], margin["e2e_margin_cct_pr_both"]) == (13, 13)
    assert margin["e2e_margin_cc_pr"] == pytest.approx(0.7702702702702703, rel=1e-12)

    previous = cp.previous_run_glue(stages["before raw beside cleaned"], stages["before raw beside cleaned"])
    assert (previous["e2e_prev_cct_erank_holds"], previous["e2e_prev_cct_pr_holds"]) == (2, 2)
    assert (previous["e2e_prev_rogue_erank_holds"], previous["e2e_prev_cct_layers"]) == (1, "24")
    assert previous["e2e_prev_massive_raw"] == previous["e2e_prev_rogue_raw"] == 1.0
    assert previous["e2e_prev_growth_raw"] == pytest.approx(0.12162162162162163, rel=1e-12)
    assert previous["e2e_previous_date"] == "2026-12-05 09:33"

    fixed = stages["before code share"]
    # the code share glue also reads a sparse code of the record now: the fixed codes stand in for it
    records = pd.concat([fixed.records, fixed.records.assign(family=cp.SPARSE_CODE)], ignore_index=True)
    now = pc.PlantedTable(pc.confusion(records.to_dict("records")), fixed.provenance, False, records)
    share = cp.code_share_glue(now, fixed)
    assert share["e2e_fixed_pr"] == pytest.approx(0.7702702702702703, rel=1e-12)
    assert share["e2e_fixed_pr_widest"] == pytest.approx(0.4090909090909091, rel=1e-12)
    assert share["e2e_fixed_ratio_widest"] == pytest.approx(0.8769635236693358, rel=1e-12)
    assert share["e2e_fixed_jump"] == pytest.approx(0.9324324324324325, rel=1e-12)
    assert share["e2e_narrowest_records"] == 126 and share["e2e_fixed_date"] == "2026-12-05 12:35"

    fooled, upper = cf.contraction_false_holds(stages["flow before steady"])
    assert (len(fooled), sorted(set(fooled["case"]))) == (4, [54, 62])
    assert float(fooled["value"].median()) == pytest.approx(0.900584618013368, rel=1e-12)
    assert upper == pytest.approx(0.09329292593622623, rel=1e-12)


def test_an_unknown_stage_is_refused_naming_the_stages_kept():
    with pytest.raises(InvalidInputError, match="Unknown stage 'before anything'.*'before code share'"):
        rh.load_stage(RESULTS, "before anything")


def test_a_missing_history_is_refused_naming_the_file_and_how_to_restore_it(tmp_path):
    with pytest.raises(InvalidInputError, match=r"planted_history\.json does not exist.*git checkout"):
        rh.load_stage(tmp_path, "before code share")


def _record(results: Path, families: dict[str, str]) -> None:
    """A small planted record: each family (name: planted) with two records of one row."""
    records = [
        {
            "family": f,
            "claim": "omega_jump",
            "planted": p,
            "case": i,
            "model": f"m{i}",
            "verdict": "holds",
            "value": 1.0,
        }
        for f, p in families.items()
        for i in range(2)
    ]
    path = results / pc.FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps({"provenance": {"date": "2026-01-02T03:04"}, "records": records}), encoding="utf-8"
    )


def test_keeping_a_stage_keeps_only_the_families_named_and_never_rewrites_one(tmp_path):
    _record(tmp_path, {"kept": "present", "dropped": "absent"})
    assert rh.keep_stage(tmp_path, "before code share", ["kept"]) == tmp_path / rh.HISTORY_FILE
    kept = rh.load_stage(tmp_path, "before code share")
    assert set(kept.records["family"]) == {"kept"} and kept.current is False
    assert kept.provenance == {"date": "2026-01-02T03:04"} and kept.table["holds"].tolist() == [1.0]
    rh.keep_stage(tmp_path, "before position profile", ["dropped"])
    history = json.loads((tmp_path / rh.HISTORY_FILE).read_text(encoding="utf-8"))["stages"]
    assert list(history) == ["before code share", "before position profile"]
    assert history["before position profile"]["note"] == rh.STAGES["before position profile"]
    with pytest.raises(InvalidInputError, match="already keeps 'before code share'"):
        rh.keep_stage(tmp_path, "before code share", ["kept"])
    with pytest.raises(InvalidInputError, match="no records of \\['elsewhere'\\]"):
        rh.keep_stage(tmp_path, "before twin margin", ["elsewhere"])
    with pytest.raises(InvalidInputError, match="Unknown stage"):
        rh.keep_stage(tmp_path, "before nothing", ["kept"])
    with pytest.raises(InvalidInputError, match="has no stage 'before twin margin'.*git checkout"):
        rh.load_stage(tmp_path, "before twin margin")


def test_keeping_a_stage_that_fails_half_way_leaves_the_history_as_it_was(tmp_path, monkeypatch):
    _record(tmp_path, {"kept": "present"})
    rh.keep_stage(tmp_path, "before code share", ["kept"])
    history = tmp_path / rh.HISTORY_FILE
    before = history.read_bytes()

    def half_then_full_disk(self: Path, text: str, **kwargs: object) -> int:
        with open(self, "w", encoding="utf-8") as f:
            f.write(text[: len(text) // 2])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", half_then_full_disk)
    with pytest.raises(OSError, match="No space left"):
        rh.keep_stage(tmp_path, "before position profile", ["kept"])
    monkeypatch.undo()
    assert history.read_bytes() == before  # nothing half-written under the history's name
    assert sorted(p.name for p in history.parent.iterdir()) == ["planted_history.json", "planted_models.json"]
