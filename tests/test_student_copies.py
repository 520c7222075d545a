"""tools/make_student_copies.py: copies without solutions, skeletons shown, and a --verify-only that catches leaks."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tools" / "make_student_copies.py"
spec = importlib.util.spec_from_file_location("make_student_copies", SCRIPT)
tool = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tool)


def _lab():
    cells = [
        nbformat.v4.new_markdown_cell("# A lab"),
        nbformat.v4.new_code_cell("import numpy as np"),
        nbformat.v4.new_markdown_cell(
            "```{exercise} Double it\n:label: ex-double\n\nWrite `double(x)`.\n```"
        ),
        nbformat.v4.new_code_cell(
            "def double(x):\n    # YOUR CODE HERE\n    raise NotImplementedError",
            metadata={"tags": ["skeleton", "remove-cell"]},
        ),
        nbformat.v4.new_markdown_cell("```{solution-start} ex-double\n:class: dropdown\n```"),
        nbformat.v4.new_code_cell(
            'def double(x):\n    """Twice x."""\n    return np.multiply(x, 2)',
            metadata={"tags": ["solution"]},
        ),
        nbformat.v4.new_markdown_cell("```{solution-end}\n```"),
        nbformat.v4.new_code_cell("print(double(2))", metadata={"tags": ["check"]}),
    ]
    notebook = nbformat.v4.new_notebook(cells=cells)
    for i, cell in enumerate(notebook.cells):
        cell["id"] = f"c{i}"
    return notebook


def test_copy_drops_the_solution_shows_the_skeleton_and_plain_exercise():
    notebook = _lab()
    copy = tool.student_copy(notebook)
    sources = [c.source for c in copy.cells]
    assert not any("np.multiply" in s or "solution" in s for s in sources)
    skeleton = next(c for c in copy.cells if "skeleton" in c.metadata.get("tags", []))
    assert skeleton.metadata["tags"] == ["skeleton"] and "NotImplementedError" in skeleton.source
    assert "### Exercise: Double it\n\nWrite `double(x)`." in sources
    assert len(copy.cells) == len(notebook.cells) - 3
    assert tool.problems(notebook, "lab") == [] and tool.leaks(notebook, copy, "lab") == []
    assert "solution" in notebook.cells[5].metadata["tags"]  # the source is left alone


def test_copy_clears_outputs_and_verification_refuses_committed_outputs():
    notebook = _lab()
    notebook.cells[7].outputs = [nbformat.v4.new_output("stream", name="stdout", text="4\n")]
    notebook.cells[7].execution_count = 3
    assert any("has outputs" in p for p in tool.problems(notebook, "lab"))
    copy = tool.student_copy(notebook)
    assert all(
        c.get("outputs") == [] and c.get("execution_count") is None
        for c in copy.cells
        if c.cell_type == "code"
    )


@pytest.mark.parametrize(
    "break_it, complaint",
    [
        (lambda nb: nb.cells.pop(6), "no ```{solution-end}"),
        (lambda nb: nb.cells.pop(3), "must be followed by a skeleton cell"),
        (lambda nb: nb.cells[5].metadata.update(tags=[]), "not tagged 'solution'"),
        (lambda nb: nb.cells[7].metadata.update(tags=[]), "followed by a cell tagged 'check'"),
        (
            lambda nb: setattr(nb.cells[2], "source", "```{exercise} Double it\n\nWrite it.\n```"),
            "no :label:",
        ),
    ],
)
def test_malformed_labs_are_reported(break_it, complaint):
    notebook = _lab()
    break_it(notebook)
    assert any(complaint in p for p in tool.problems(notebook, "lab")), tool.problems(notebook, "lab")


def test_leaked_solution_code_is_caught():
    notebook = _lab()
    copy = tool.student_copy(notebook)
    copy.cells[1].source += "\n\ndef double(x):\n    return np.multiply(x, 2)"
    assert any("contains solution code" in p for p in tool.leaks(notebook, copy, "lab"))


def test_verify_only_passes_on_the_labs_and_fails_on_a_leaky_notebook(tmp_path):
    ok = subprocess.run([sys.executable, str(SCRIPT), "--verify-only"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert "4 student copies would be clean" in ok.stdout
    leaky = _lab()
    leaky.cells.pop(6)  # no solution-end: everything after would vanish, or leak
    path = tmp_path / "lab9_leaky.ipynb"
    nbformat.write(leaky, path)
    bad = subprocess.run(
        [sys.executable, str(SCRIPT), "--verify-only", str(path)], capture_output=True, text=True
    )
    assert bad.returncode == 1 and "solution-end" in bad.stderr


def test_writes_student_copies_of_every_lab(tmp_path):
    assert tool.main(["--out", str(tmp_path)]) == 0
    written = sorted(p.name for p in tmp_path.glob("*.ipynb"))
    assert written == sorted(p.name for p in (ROOT / "notebooks").glob("lab*.ipynb")) and len(written) >= 4
    for path in tmp_path.glob("*.ipynb"):
        copy = nbformat.read(path, as_version=4)
        nbformat.validate(copy)
        assert not any("solution" in c.metadata.get("tags", []) for c in copy.cells)
        assert sum("skeleton" in c.metadata.get("tags", []) for c in copy.cells) >= 4
