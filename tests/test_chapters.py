"""The chapters read as an explainer: the calls that compute each result shown, short lines, no plumbing.

Issue #50 (after #17, which hid most code): as in QuantEcon and d2l, a chapter shows the calls that compute its
results, in short cells a student can copy and re-run on another model (the package does the work; a cell is a
call and a plot). Only imports, settings and ``glue`` cells are hidden. What the prose says about glued numbers is
checked by ``tests/test_claims_*.py`` over the executed book, never by asserts in a chapter's cells.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import jupytext
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "book").rglob("*.md"))
HIDDEN = {"remove-input", "hide-input", "remove-cell"}
REMOVED = {"remove-input", "remove-cell"}
MAX_CELL_LINES = 15  # a visible cell a student can read and copy: a call and a plot, not plumbing
# What a hidden cell may call: glue, figure checks and display settings (anything else is shown).
HIDDEN_CALLS = re.compile(
    r"^(glue\w*|check_figures_on_show|filterwarnings|simplefilter|set_theme|set_option|use)$"
)
MAX_COLUMNS = 88  # ruff's default line length, as in src/


def _code_cells(path: Path):
    for index, cell in enumerate(jupytext.read(path).cells):
        if cell.cell_type == "code":
            yield index, cell, set(cell.metadata.get("tags", []))


def _python(source: str) -> ast.Module | None:
    """The cell's source as Python, IPython magics and shell lines blanked; None if it does not parse."""
    lines = ["" if re.match(r"\s*[%!]", line) else line for line in source.splitlines()]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return None


def _glue_calls(tree: ast.Module) -> list[ast.Call]:
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "glue"
    ]


def _hides_display(call: ast.Call) -> bool:
    return any(
        kw.arg == "display" and isinstance(kw.value, ast.Constant) and kw.value.value is False
        for kw in call.keywords
    )


def _call_name(node: ast.AST) -> str | None:
    func = getattr(node, "func", None)
    return getattr(func, "id", getattr(func, "attr", None))


def _setup_only(node: ast.stmt) -> bool:
    """An import, a constant, or a glue / display-setting call (alone or assigned): what a hidden cell may hold."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return True
    value = getattr(node, "value", None)
    if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(value, ast.Constant):
        return True
    return isinstance(node, (ast.Expr, ast.Assign)) and bool(HIDDEN_CALLS.match(_call_name(value) or ""))


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_hidden_cells_hold_only_imports_settings_and_glue(path):
    hiding = []
    for index, cell, tags in _code_cells(path):
        tree = _python(cell.source)
        if tree is None or not tags & HIDDEN:
            continue
        computed = [node for node in tree.body if not _setup_only(node)]
        if computed:
            hiding.append(f"cell {index}, line {computed[0].lineno}: {ast.unparse(computed[0])[:70]}")
    assert not hiding, (
        f"{path.name}: hidden cells that compute (show the call, or move plumbing into a tested function):\n"
        + "\n".join(hiding)
    )


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_visible_cells_are_short(path):
    long = [
        f"cell {index}: {n} lines"
        for index, cell, tags in _code_cells(path)
        if not tags & HIDDEN
        and (n := sum(1 for line in cell.source.splitlines() if line.strip())) > MAX_CELL_LINES
    ]
    assert not long, (
        f"{path.name}: cells over {MAX_CELL_LINES} lines (move plumbing into a tested package function): {long}"
    )


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_chapter_cell_asserts(path):
    """A relation the prose states about glued numbers is a test over the executed book (tests/test_claims_*)."""
    asserting = [
        f"cell {index}, line {node.lineno}"
        for index, cell, _ in _code_cells(path)
        if (tree := _python(cell.source)) is not None
        for node in ast.walk(tree)
        if isinstance(node, ast.Assert)
    ]
    assert not asserting, f"{path.name}: asserts in cells (move them to tests/test_claims_*.py): {asserting}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_code_line_is_longer_than_88_columns(path):
    long = [
        f"cell {index}: {len(line)} columns: {line.strip()[:60]}..."
        for index, cell, _ in _code_cells(path)
        for line in cell.source.splitlines()
        if len(line) > MAX_COLUMNS
    ]
    assert not long, f"{path.name} has code lines over {MAX_COLUMNS} columns:\n" + "\n".join(long)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_glue_and_import_cells_show_no_input(path):
    exposed = []
    for index, cell, tags in _code_cells(path):
        tree = _python(cell.source)
        if tree is None or tags & REMOVED:
            continue
        calls = _glue_calls(tree)
        imports_only = bool(tree.body) and all(
            isinstance(node, (ast.Import, ast.ImportFrom)) for node in tree.body
        )
        if (calls and all(_hides_display(call) for call in calls)) or imports_only:
            exposed.append(f"cell {index}: {cell.source.strip().splitlines()[0][:70]}")
    assert not exposed, (
        f"{path.name}: cells that only glue values or import modules must be tagged remove-input:\n"
        + "\n".join(exposed)
    )


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_code_cell_parses_as_python(path):
    broken = [index for index, cell, _ in _code_cells(path) if _python(cell.source) is None]
    assert not broken, f"{path.name}: code cells that are not valid Python: {broken}"


def _prose(path: Path) -> str:
    """A page's Markdown outside code fences, front matter and code literals (line numbers kept)."""
    if path.suffix == ".ipynb":
        text = "\n\n".join(c.source for c in jupytext.read(path).cells if c.cell_type == "markdown")
    else:
        text = path.read_text()
        text = re.sub(r"\A---\n.*?\n---\n", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"^(`{3,}).*?^\1", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S | re.M)
    return re.sub(r"`[^`]*`", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)


PAGES = CHAPTERS + sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "notebooks").glob("*.md"))


@pytest.mark.parametrize("path", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_headings_carry_no_hand_made_numbers_and_no_latex(path):
    """Numbers come from the TOC (``numbered: true``); maths in a heading shows as raw LaTeX in the sidebars."""
    headings = [line for line in _prose(path).splitlines() if re.match(r"#{1,6} ", line)]
    numbered = [h for h in headings if re.match(r"#{1,6} \d+(\.\d+)*\.? ", h)]
    latex = [h for h in headings if "$" in h or "\\(" in h]
    assert not numbered, f"{path.name}: headings numbered by hand (the TOC numbers them): {numbered}"
    assert not latex, f"{path.name}: headings with LaTeX (write Ω, γ in Unicode): {latex}"


def test_chapters_are_numbered_by_the_toc_and_labs_by_their_titles():
    """Jupyter Book numbers numbered parts on from each other (a numbered Labs part would be 10-13 after nine
    chapters), so the Labs part is not numbered and each lab's title says "Lab k", as the course guide does."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    numbered = {entry["file"] for part in toc["parts"] if part.get("numbered") for entry in part["chapters"]}
    labs = {f"notebooks/{p.stem}" for p in (ROOT / "notebooks").glob("lab*.ipynb")}
    chapters = {f"book/{p.stem}" for p in (ROOT / "book").glob("*.md")} - {"book/intro", "book/explorer"}
    assert not labs & numbered, f"labs inside a numbered part: {sorted(labs & numbered)}"
    assert chapters - {"book/paper"} <= numbered, f"chapters not numbered: {sorted(chapters - numbered)}"
    (labs_part,) = [p for p in toc["parts"] if {e["file"] for e in p["chapters"]} & labs]
    assert [e["file"] for e in labs_part["chapters"]] == sorted(labs), (
        "the Labs part holds the labs, in order"
    )
    for k, lab in enumerate(sorted(labs), 1):
        title = jupytext.read(ROOT / f"{lab}.ipynb").cells[0].source.splitlines()[0]
        assert title.startswith(f"# Lab {k}: "), f"{lab}: its title must say 'Lab {k}: ...', not {title!r}"


@pytest.mark.parametrize("path", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_options_in_prose_are_code_literals(path):
    """Sphinx's smart quotes turn ``--prompts`` outside a code literal into an en dash: ``–prompts``."""
    dashed = [
        f"line {n}: {line.strip()[:80]}"
        for n, line in enumerate(_prose(path).splitlines(), 1)
        if re.search(r"(?<![-|])--(?![-|])", line) and not re.fullmatch(r"[\s|:-]*", line)
    ]
    assert not dashed, f"{path.name}: '--' outside backticks:\n" + "\n".join(dashed)


def test_the_book_build_turns_progress_bars_off():
    """No tqdm widget state in the executed pages: the build sets TQDM_DISABLE, which the capture honours."""
    script = (ROOT / "tools" / "build_book.sh").read_text()
    assert re.search(r"(?m)^export .*\bTQDM_DISABLE=1\b", script)
    assert re.search(r"(?m)^export .*\bHF_HUB_DISABLE_PROGRESS_BARS=1\b", script)
    probe = (
        "from latentbook.capturing.capture import _progress_bar\n"
        "print(_progress_bar(10, True, 'x').disable, _progress_bar(10, False, 'x').disable)"
    )
    env = {**os.environ, "TQDM_DISABLE": "1"}
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=300)
    assert out.stdout.split() == ["True", "True"], out.stderr[-2000:]


def test_docstrings_in_the_api_appendix_write_options_as_literals():
    """The API appendix renders docstrings through Sphinx too: ``--out`` outside a literal becomes ``–out``."""
    import importlib
    import inspect

    names = re.findall(r"automodule:: ([\w.]+)", (ROOT / "book" / "appendix" / "api.md").read_text())
    dashed = []
    for name in names:
        module = importlib.import_module(name)
        objects = [(name, module)]
        for key, value in vars(module).items():
            if getattr(value, "__module__", None) == name and (
                inspect.isclass(value) or inspect.isfunction(value)
            ):
                objects.append((f"{name}.{key}", value))
                if inspect.isclass(value):
                    objects += [
                        (f"{name}.{key}.{k}", v) for k, v in vars(value).items() if inspect.isfunction(v)
                    ]
        for where, value in objects:
            doc = inspect.getdoc(value) or ""
            doc = re.sub(r"::\n\n((?:[ \t]+.*\n?|\n)+)", "::\n", doc)  # literal blocks
            doc = re.sub(r"``.*?``", "", doc, flags=re.S)
            dashed += [
                f"{where}: {line.strip()[:80]}"
                for line in doc.splitlines()
                if "--" in line and not re.fullmatch(r"-+", line.strip())  # numpydoc underlines
            ]
    assert not dashed, "docstrings with '--' outside ``literals`` or a literal block:\n" + "\n".join(dashed)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_cell_prints_the_dictionary_it_glued(path):
    """``glue_frame`` returns what it glued; as a cell's last expression that dict is printed on the page."""
    shown = []
    for index, cell, tags in _code_cells(path):
        tree = _python(cell.source)
        if tree is None or not tree.body or "remove-output" in tags or "remove-cell" in tags:
            continue
        last = tree.body[-1]
        call = last.value if isinstance(last, ast.Expr) else None
        name = getattr(getattr(call, "func", None), "id", None)
        if name == "glue_frame" and not cell.source.rstrip().endswith(";"):
            shown.append(f"cell {index}")
    assert not shown, (
        f"{path.name}: end these glue_frame calls with ';' so the page does not print a dict: {shown}"
    )


NUMBERED_CHAPTERS = [
    ROOT / "book" / f"{name}.md"
    for name in (
        "depth_as_time",
        "thermodynamics",
        "omega",
        "spectra",
        "rg_flow",
        "mixtures",
        "controlled_test",
        "verdict",
        "landmarks",
    )
]


@pytest.mark.parametrize("path", NUMBERED_CHAPTERS, ids=lambda p: p.stem)
def test_every_chapter_opens_with_its_answer(path):
    """Issue #50: the first thing under the title is "The answer": the question, what these models show (with
    glued numbers, never typed) and what it means for the paper; the lesson comes after."""
    after_title = path.read_text().split("\n# ", 1)[1].split("\n", 1)[1].lstrip()
    assert after_title.startswith("```{admonition} The answer"), f"{path.name}: no answer under the title"
    answer = after_title.split("\n```", 1)[0]
    parts = ("What these models show", "What it means for the paper")
    if path.stem != "verdict":  # the verdict's first screen has its own four parts (issue #49)
        assert all(f"**{part}" in answer for part in ("The question.", *parts)), path.name
    glued = re.findall(r"\{glue:text\}`([^`:]+)", answer)
    assert len(glued) >= 2, f"{path.name}: the answer states no computed number"
    # the paper's constants sit in maths ($\\gamma = 0.42$) and its theorems have numbers; results are glued
    typed = re.sub(r"\{glue:text\}`[^`]*`|\$[^$]*\$|Theorem \d+\.\d+", "", answer)
    assert not re.search(r"\d+\.\d+", typed), f"{path.name}: a decimal typed in the answer (glue it)"


GLOSSARY_PAGES = [
    *NUMBERED_CHAPTERS,
    ROOT / "book" / "intro.md",
    ROOT / "book" / "explorer.md",
    *(ROOT / "book" / "appendix" / f"{name}.md" for name in ("verdict_criteria", "gpu", "coverage")),
]


@pytest.mark.parametrize("path", GLOSSARY_PAGES, ids=lambda p: p.stem)
def test_each_glossary_terms_first_use_links_the_glossary(path):
    """Issue #50: planted, cleaned, twin, Wilson, TCO, BIC, Holm, BBP, MAD, Gride, TwoNN, ... link to the glossary
    where a page first uses them in prose (``tools/link_glossary_terms.py`` links them)."""
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        from link_glossary_terms import TERMS, link
    finally:
        sys.path.remove(str(ROOT / "tools"))
    glossary = (ROOT / "book" / "appendix" / "glossary.md").read_text()
    assert all(f"\n{term}\n" in glossary for _, term in TERMS)  # every target exists
    assert link(path, dry=True) == [], f"{path.name}: link these first uses with tools/link_glossary_terms.py"


def test_the_api_appendix_documents_every_public_module():
    """A module added to the package appears on the API page (packages and ``_private`` modules aside)."""
    import pkgutil

    import latentbook

    listed = set(re.findall(r"automodule:: ([\w.]+)", (ROOT / "book" / "appendix" / "api.md").read_text()))
    modules = [m for m in pkgutil.walk_packages(latentbook.__path__, "latentbook.") if not m.ispkg]
    undocumented = {
        "latentbook.cli_options"
    }  # the parser's option tables: the command line's own --help shows them
    missing = [
        m.name
        for m in modules
        if m.name not in listed | undocumented and not any(p.startswith("_") for p in m.name.split("."))
    ]
    assert not missing, f"not on book/appendix/api.md: {missing}"
