"""The launch buttons of a lab's page open its student copy (no solutions): tools/sphinx_ext/book_fixes.py.

The theme builds launch URLs from the page's own name; the extension rewrites them for every page with a copy in
``notebooks/student/`` and adds a Colab button there only. Checked on the rewrite itself, on a small book built
with the real theme, and on ``_build/html`` when a build newer than the copies and the extension is there.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools" / "sphinx_ext"))
import book_fixes  # noqa: E402

HTML = Path(os.environ.get("LATENTBOOK_HTML", ROOT / "_build" / "html"))
JUPYTER_BOOK = Path(sys.executable).parent / "jupyter-book"
LABS = sorted(p.stem for p in (ROOT / "notebooks").glob("lab*.ipynb"))
BINDER = "https://mybinder.org/v2/gh/latentbook/latentbook/main?urlpath=lab/tree/./notebooks/lab1_thermodynamics.ipynb"


def _buttons() -> list[dict]:
    return [
        {"type": "link", "text": "Binder", "url": BINDER},
        {"type": "javascript", "text": "Live Code", "javascript": "initThebeSBT()"},
    ]


def test_binder_opens_the_student_copy_and_colab_is_added():
    colab = book_fixes.colab_url(
        "latentbook/latentbook", "main", "./notebooks/student/lab1_thermodynamics.ipynb"
    )
    assert colab == (
        "https://colab.research.google.com/github/latentbook/latentbook/blob/main/"
        "notebooks/student/lab1_thermodynamics.ipynb"
    )
    buttons = book_fixes.student_launch_buttons(
        _buttons(),
        "notebooks/lab1_thermodynamics.ipynb",
        "notebooks/student/lab1_thermodynamics.ipynb",
        colab,
    )
    assert buttons[0]["url"] == (
        "https://mybinder.org/v2/gh/latentbook/latentbook/main?urlpath=lab/tree/./notebooks/student/"
        "lab1_thermodynamics.ipynb"
    )
    assert buttons[1] == _buttons()[1]  # no URL: left alone
    assert [b["text"] for b in buttons] == ["Binder", "Live Code", "Colab"] and buttons[2]["url"] == colab
    again = book_fixes.student_launch_buttons(
        buttons, "notebooks/x.ipynb", "notebooks/student/x.ipynb", colab
    )
    assert [b["text"] for b in again].count("Colab") == 1


def test_only_the_page_itself_is_rewritten():
    other = [
        {
            "type": "link",
            "text": "Binder",
            "url": BINDER.replace("lab1_thermodynamics", "lab10_thermodynamics"),
        }
    ]
    kept = book_fixes.student_launch_buttons(other, "notebooks/lab1_thermodynamics.ipynb", "s.ipynb", None)
    assert kept == other


def test_the_labs_have_student_copies_and_the_chapters_none():
    for lab in LABS:
        assert book_fixes.student_copy(ROOT, f"notebooks/{lab}") == f"notebooks/student/{lab}.ipynb"
    assert len(LABS) >= 4
    assert book_fixes.student_copy(ROOT, "book/omega") is None
    assert book_fixes.student_copy(ROOT, "notebooks/course_guide") is None


def _launch_links(html: str) -> list[str]:
    return re.findall(r'href="(https://(?:mybinder\.org|colab\.research\.google\.com)[^"]*)"', html)


@pytest.mark.skipif(not JUPYTER_BOOK.is_file(), reason="jupyter-book is not installed")
def test_a_book_built_with_the_theme_launches_the_copy_of_a_lab_and_its_own_notebook_elsewhere(tmp_path):
    (tmp_path / "notebooks" / "student").mkdir(parents=True)
    (tmp_path / "_config.yml").write_text(
        "title: mini\nonly_build_toc_files: true\nexecute:\n  execute_notebooks: 'off'\n"
        "repository:\n  url: https://github.com/latentbook/latentbook\n  path_to_book: .\n  branch: main\n"
        "launch_buttons:\n  notebook_interface: jupyterlab\n  binderhub_url: https://mybinder.org\n"
        f"sphinx:\n  local_extensions:\n    book_fixes: {ROOT / 'tools' / 'sphinx_ext'}\n"
    )
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: intro\nchapters:\n  - file: notebooks/lab1\n  - file: notebooks/lab2\n"
    )
    (tmp_path / "intro.md").write_text("# Intro\n")
    for path in ("notebooks/lab1.ipynb", "notebooks/lab2.ipynb", "notebooks/student/lab1.ipynb"):
        notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(f"# {Path(path).stem}")])
        notebook.metadata["kernelspec"] = {
            "name": "python3",
            "display_name": "Python 3",
            "language": "python",
        }
        nbformat.write(notebook, tmp_path / path)
    built = subprocess.run([str(JUPYTER_BOOK), "build", str(tmp_path)], capture_output=True, text=True)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    lab1 = _launch_links((tmp_path / "_build" / "html" / "notebooks" / "lab1.html").read_text())
    lab2 = _launch_links((tmp_path / "_build" / "html" / "notebooks" / "lab2.html").read_text())
    assert lab1 == [
        "https://mybinder.org/v2/gh/latentbook/latentbook/main?urlpath=lab/tree/./notebooks/student/lab1.ipynb",
        "https://colab.research.google.com/github/latentbook/latentbook/blob/main/notebooks/student/lab1.ipynb",
    ]
    assert lab2 == [
        "https://mybinder.org/v2/gh/latentbook/latentbook/main?urlpath=lab/tree/./notebooks/lab2.ipynb"
    ]
    assert not (tmp_path / "_build" / "html" / "notebooks" / "student").exists()  # the copies are no pages


def _built_page(page: str) -> Path:
    path = HTML / f"{page}.html"
    if not path.is_file():
        pytest.skip(f"no built {page}.html in {HTML}: run `make book` first")
    inputs = [
        ROOT / "tools" / "sphinx_ext" / "book_fixes.py",
        *(ROOT / "notebooks" / "student").glob("*.ipynb"),
    ]
    if "LATENTBOOK_HTML" not in os.environ and path.stat().st_mtime < max(p.stat().st_mtime for p in inputs):
        pytest.skip(f"{path} is older than the student copies or the extension: rebuild the book (make book)")
    return path


@pytest.mark.parametrize("lab", LABS)
def test_the_built_lab_pages_launch_their_student_copies(lab):
    links = _launch_links(_built_page(f"notebooks/{lab}").read_text("utf-8"))
    assert links == [
        f"https://mybinder.org/v2/gh/latentbook/latentbook/main?urlpath=lab/tree/./notebooks/student/{lab}.ipynb",
        f"https://colab.research.google.com/github/latentbook/latentbook/blob/main/notebooks/student/{lab}.ipynb",
    ]


def test_the_built_chapters_launch_themselves_on_binder_only():
    links = _launch_links(_built_page("book/omega").read_text("utf-8"))
    assert links == ["https://mybinder.org/v2/gh/latentbook/latentbook/main?urlpath=lab/tree/./book/omega.md"]
