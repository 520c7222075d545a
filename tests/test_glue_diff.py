"""tools/glue_diff.py: the check that a refactor keeps every number the book's prose shows."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parent.parent / "tools" / "glue_diff.py"


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("glue_diff", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _build(folder: Path, chapters: dict[str, dict[str, str]]) -> Path:
    for chapter, values in chapters.items():
        path = folder / "book" / f"{chapter}.glue.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        glued = {k: {"output_type": "display_data", "data": {"text/plain": v}} for k, v in values.items()}
        path.write_text(json.dumps(glued), encoding="utf-8")
    return folder


def test_numbers_within_the_tolerance_and_equal_text_are_the_same(tool):
    assert tool.same("0.1", "0.1000000000001", 1e-9)
    assert not tool.same("0.1", "0.1001", 1e-9)
    assert tool.same("nan", "nan", 1e-9) and not tool.same("nan", "0.0", 1e-9)
    assert tool.same("'holds'", "'holds'", 1e-9) and not tool.same("'holds'", "'inconclusive'", 1e-9)
    assert not tool.same("0", "-0.0001", 1e-9)  # no absolute slack around zero


def test_changes_are_found_and_allowed_prefixes_set_apart(tmp_path, tool):
    before = _build(
        tmp_path / "a", {"omega": {"ch3_k": "4", "ch3_m": "0.52", "gone": "1"}, "verdict": {"vd_n": "9"}}
    )
    after = _build(
        tmp_path / "b", {"omega": {"ch3_k": "4", "ch3_m": "0.53", "new": "2"}, "verdict": {"vd_n": "10"}}
    )
    result = tool.compare(tool.glued_values(before), tool.glued_values(after), allow=("vd_",))
    assert result["changed"] == [("omega:ch3_m", "0.52", "0.53")]
    assert result["removed"] == [("omega:gone", "1", "")]
    assert result["added"] == [("omega:new", "", "2")]
    assert result["allowed"] == [("verdict:vd_n", "9", "10")]
    assert tool.main([str(before), str(after), "--allow", "vd_"]) == 1
    assert tool.main([str(before), str(before)]) == 0


def test_a_folder_without_glued_values_is_refused(tmp_path, tool):
    (tmp_path / "empty").mkdir()
    with pytest.raises(SystemExit):
        tool.main([str(tmp_path / "empty"), str(tmp_path / "empty")])
