"""tools/make_student_copies.py: copies without solutions, skeletons shown, MyST made plain, committed up to date,
and a --check (--verify-only) that catches leaks and stale copies."""

import importlib.util
import re
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
    assert "4 student copies are clean and up to date" in ok.stdout
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


SITE = tool.Site("https://example.org/book/", "org/repo", "main")


def _copy_text(lab: Path) -> str:
    return tool.serialise(tool.student_copy(nbformat.read(lab, as_version=4), "notebooks"))


def test_the_committed_copies_are_what_the_script_writes():
    """CI: a lab changed without `python tools/make_student_copies.py` leaves its copy stale, and fails here."""
    labs = sorted((ROOT / "notebooks").glob("lab*.ipynb"))
    copies = sorted((ROOT / "notebooks" / "student").glob("*.ipynb"))
    assert [p.name for p in copies] == [p.name for p in labs] and len(labs) >= 4
    for lab in labs:
        committed = (ROOT / "notebooks" / "student" / lab.name).read_text()
        assert committed == _copy_text(lab), (
            f"notebooks/student/{lab.name} is stale: run tools/make_student_copies.py"
        )
    checked = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr


def test_check_fails_on_a_stale_missing_or_orphan_copy(tmp_path):
    lab, out = tmp_path / "lab9_double.ipynb", tmp_path / "student"
    nbformat.write(_lab(), lab)
    assert tool.main(["--out", str(out), str(lab)]) == 0
    assert tool.main(["--check", "--out", str(out), str(lab)]) == 0
    changed = _lab()
    changed.cells[0].source = "# A lab, reworded"
    nbformat.write(changed, lab)
    stale = subprocess.run(
        [sys.executable, str(SCRIPT), "--check", "--out", str(out), str(lab)], capture_output=True, text=True
    )
    assert stale.returncode == 1 and "differs from the student copy of its lab" in stale.stderr
    assert "make_student_copies.py" in stale.stderr
    (out / "lab9_double.ipynb").unlink()
    assert any("is missing" in p for p in tool.stale({"lab9_double.ipynb": "{}"}, out, every_lab=True))
    (out / "lab8_gone.ipynb").write_text("{}")
    found = tool.stale({}, out, every_lab=True)
    assert any("lab8_gone.ipynb is the copy of no lab" in p for p in found)
    assert tool.stale({}, out, every_lab=False) == []


def test_the_copies_keep_every_lab_cell_but_the_solutions_and_the_first_cell_as_it_is():
    for lab in sorted((ROOT / "notebooks").glob("lab*.ipynb")):
        source = nbformat.read(lab, as_version=4)
        copy = nbformat.read(ROOT / "notebooks" / "student" / lab.name, as_version=4)
        first = next(c for c in copy.cells if c.cell_type == "code")
        assert first.source == next(c for c in source.cells if c.cell_type == "code").source
        code = [c.source for c in copy.cells if c.cell_type == "code"]
        kept = [
            c.source
            for c in source.cells
            if c.cell_type == "code" and "solution" not in c.metadata.get("tags", [])
        ]
        assert code == kept, lab.name


def test_doc_and_ref_roles_become_links_to_the_published_book():
    index = tool.book_index()
    spectra, lab2 = index["/book/spectra"], index["/notebooks/lab2_omega"]
    text = tool.plain_markdown(
        "Read {doc}`/book/spectra`, then {doc}`lab2_omega`, {doc}`the Ω chapter </book/omega>` and "
        "{ref}`lab1-free-energy`, or {ref}`this exercise <lab1-gibbs>`.",
        "notebooks",
        SITE,
    )
    assert f"[{spectra.title}](https://example.org/book/book/spectra.html)" in text
    assert f"[{lab2.title}](https://example.org/book/notebooks/lab2_omega.html)" in text
    assert "[the Ω chapter](https://example.org/book/book/omega.html)" in text
    assert (
        "[The free energy](https://example.org/book/notebooks/lab1_thermodynamics.html#lab1-free-energy)"
        in text
    )
    assert "[this exercise](https://example.org/book/notebooks/lab1_thermodynamics.html#lab1-gibbs)" in text
    assert tool.raw_myst(text) == []


@pytest.mark.parametrize(
    "reference", ["{doc}`/book/no_such_page`", "{doc}`no_such_lab`", "{ref}`no-such-label`"]
)
def test_a_reference_to_nothing_is_an_error_not_a_dead_link(reference, tmp_path):
    with pytest.raises(ValueError, match="names no"):
        tool.plain_markdown(f"See {reference}.", "notebooks", SITE)
    lab = _lab()
    lab.cells[0].source += f"\n\nSee {reference}."
    nbformat.write(lab, tmp_path / "lab9_dead.ipynb")
    assert tool.main(["--check", str(tmp_path / "lab9_dead.ipynb")]) == 1


def test_directives_and_other_roles_become_plain_markdown():
    text = tool.plain_markdown(
        "(lab-top)=\n# Top\n\n"
        "```{note}\nMind the {math}`\\beta`.\n```\n\n"
        ":::{admonition} Why it matters\n:class: tip\n\nBecause.\n\n```{math}\n:label: eq-f\nF = E - TS\n```\n:::\n\n"
        "````{dropdown} A hint\n:open:\n```python\nx = 1\n```\n````\n\n"
        "A {term}`twin <null model>` and {cite}`roy2007`, and {abbr}`MP (Marchenko-Pastur)`.",
        "notebooks",
        SITE,
    )
    assert tool.raw_myst(text) == [], text
    assert "> **Note**\n>\n> Mind the $\\beta$." in text
    assert "> **Why it matters**\n>\n> Because.\n>\n> $$\n> F = E - TS\n> $$" in text
    assert "> **A hint**\n>\n> ```python\n> x = 1\n> ```" in text
    assert "[twin](https://example.org/book/book/appendix/glossary.html)" in text
    assert "(lab-top)=" not in text and text.startswith("# Top")


@pytest.mark.parametrize(
    "raw",
    [
        "See {doc}`/book/omega`.",
        "```{note}\nhi\n```",
        "> ```{tip}\nhi",
        ":label: lab1-free-energy",
        "(lab-top)=",
    ],
)
def test_raw_myst_in_a_copy_is_reported(raw):
    notebook = _lab()
    copy = tool.student_copy(notebook, where=SITE)
    assert tool.leaks(notebook, copy, "lab") == []
    copy.cells[0].source += "\n\n" + raw
    assert any("raw MyST" in p for p in tool.leaks(notebook, copy, "lab")), raw


def test_a_solution_directive_is_never_turned_into_a_quote():
    notebook = _lab()
    notebook.cells[0].source += "\n\n```{solution} ex-double\nUse `np.multiply(x, 2)`.\n```"
    copy = tool.student_copy(notebook, where=SITE)
    assert "```{solution} ex-double" in copy.cells[0].source
    assert any("still holds a solution block" in p for p in tool.leaks(notebook, copy, "lab"))


def test_every_committed_copy_is_plain_markdown_linking_to_existing_pages():
    book = tool.site().book
    assert book == "https://latentbook.github.io/latentbook/"  # GitHub Pages of repository.url in _config.yml
    for copy in sorted((ROOT / "notebooks" / "student").glob("*.ipynb")):
        notebook = nbformat.read(copy, as_version=4)
        markdown = "\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")
        assert tool.raw_myst(markdown) == [] and "{solution" not in markdown, copy.name
        links = re.findall(rf"\]\({re.escape(book)}([^)#]+)\.html", markdown)
        assert links, f"{copy.name} links no page of the book"
        for page in links:
            assert (ROOT / f"{page}.md").is_file() or (ROOT / f"{page}.ipynb").is_file(), page
        assert not any(c.get("outputs") for c in notebook.cells if c.cell_type == "code")


def test_site_is_the_github_pages_of_the_configured_repository(tmp_path):
    config = tmp_path / "_config.yml"
    config.write_text("repository:\n  url: https://github.com/someone/somebook\n  branch: trunk\n")
    assert tool.site(config) == tool.Site("https://someone.github.io/somebook/", "someone/somebook", "trunk")
