"""`make lab`: JupyterLab on the students' copies in a scratch folder, with MyST rendered by jupyterlab-myst.

The copy step and the pins run everywhere; the JupyterLab ones need the `lab` extra (`make lab` installs it), and
the browser one Debian's ``/usr/bin/chromium`` driven by the ``playwright`` package (never ``playwright install``):
it opens lab 1 from `make lab` in headless Chromium, checks the Markdown renders, answers an exercise wrongly, runs
it, saves, and checks that the repository is as it was.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
CHROMIUM = Path("/usr/bin/chromium")
STUDENT = ROOT / "notebooks" / "student"
LAB_STAMP = ".venv/.latentbook-lab-installed"  # `make -o` it: the test must not install anything
needs_lab = pytest.mark.skipif(
    not (BIN / "jupyter-lab").is_file(),
    reason="JupyterLab is not installed: `make lab` installs the lab extra",
)


def _constraint(name: str) -> str:
    pins = dict(
        line.split("==", 1) for line in (ROOT / "constraints.txt").read_text().splitlines() if "==" in line
    )
    return pins[name]


def test_the_lab_extra_brings_jupyterlab_myst_pinned_with_a_jupyterlab_it_loads_in():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    lab = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["lab"]
    assert any(d.startswith("jupyterlab-myst") for d in lab) and "jupyterlab>=4.1,<4.6" in lab
    assert _constraint("jupyterlab_myst") and _constraint("jupyterlab").startswith("4.5.")


def _make_lab(
    lab_dir: Path, lab_args: str, state: Path, **kwargs
) -> subprocess.Popen | subprocess.CompletedProcess:
    """`make lab` on ``lab_dir`` (JupyterLab's settings and workspaces in ``state``, not the user's)."""
    command = ["make", "-s", "-o", LAB_STAMP, "lab", f"LAB_DIR={lab_dir}", f"LAB_ARGS={lab_args}"]
    env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=str(state / "settings"))
    env["JUPYTERLAB_WORKSPACES_DIR"] = str(state / "workspaces")
    if kwargs.pop("background", False):
        return subprocess.Popen(command, cwd=ROOT, env=env, start_new_session=True, **kwargs)
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, **kwargs)


@needs_lab
def test_make_lab_copies_the_student_copies_and_never_overwrites_a_students_work(tmp_path):
    lab_dir = tmp_path / "lab"
    lab_dir.mkdir()
    (lab_dir / "lab2_omega.ipynb").write_text("my work")
    made = _make_lab(lab_dir, "--version", tmp_path)  # jupyter lab prints its version and stops
    assert made.returncode == 0, made.stderr
    copies = sorted(p.name for p in STUDENT.glob("*.ipynb"))
    assert sorted(p.name for p in lab_dir.glob("*.ipynb")) == copies and len(copies) >= 4
    assert (lab_dir / "lab2_omega.ipynb").read_text() == "my work"
    assert f"kept {lab_dir}/lab2_omega.ipynb" in made.stdout
    for name in copies:
        if name != "lab2_omega.ipynb":
            assert (lab_dir / name).read_bytes() == (STUDENT / name).read_bytes()
            assert f"copied notebooks/student/{name}" in made.stdout


@needs_lab
def test_jupyterlab_loads_jupyterlab_myst():
    listed = subprocess.run([str(BIN / "jupyter"), "labextension", "list"], capture_output=True, text=True)
    text = re.sub(r"\x1b\[[0-9;]*m", "", listed.stdout + listed.stderr)
    assert re.search(r"jupyterlab-myst v\S+ enabled\s+OK", text), text
    assert "not compatible" not in text, text


def _git_status() -> str:
    return subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT, capture_output=True, text=True
    ).stdout


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_for(url: str, seconds: float) -> None:
    deadline = time.time() + seconds
    while True:
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(1)


@pytest.fixture
def jupyterlab(tmp_path):
    """`make lab` on a scratch folder in tmp_path, serving on a free port: (base URL, token, scratch folder)."""
    # under _build/, as `make lab`'s default _build/lab: git status then also checks that git ignores it
    lab_dir, port, token = ROOT / "_build" / f"lab-test-{os.getpid()}", _free_port(), "latentbook-test"
    log = (tmp_path / "jupyterlab.log").open("w")
    server = _make_lab(
        lab_dir,
        f"--no-browser --ServerApp.ip=127.0.0.1 --port={port} --IdentityProvider.token={token}",
        tmp_path,
        background=True,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        _wait_for(f"http://127.0.0.1:{port}/api/status?token={token}", 180)
        yield f"http://127.0.0.1:{port}", token, lab_dir
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(60)
        shutil.rmtree(lab_dir, ignore_errors=True)


WRONG = "def free_energy(p, energies, beta=1.0):\n    return (p * energies).sum(-1)"


@pytest.mark.browser
@pytest.mark.slow
@needs_lab
@pytest.mark.skipif(
    not CHROMIUM.is_file(), reason="Debian chromium is missing: run `bash tools/ensure_chromium.sh`"
)
def test_lab1_from_make_lab_renders_runs_and_saves_outside_the_repository(jupyterlab, tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    base, token, lab_dir = jupyterlab
    before, notebooks = _git_status(), _notebooks()
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        page = browser.new_page(viewport={"width": 1366, "height": 900})
        try:
            _answer_wrongly_and_save(
                page, f"{base}/lab/tree/lab1_thermodynamics.ipynb?token={token}", lab_dir
            )
            assert _saved(lab_dir / "lab1_thermodynamics.ipynb")  # saved in the scratch folder
            after = _git_status()
            assert after == before, set(after.splitlines()) ^ set(before.splitlines())
            assert _notebooks() == notebooks  # the labs and their copies as they were, tracked or not
            _probe_renders_myst(page, f"{base}/lab/tree/probe.ipynb?token={token}", lab_dir)
        finally:
            page.screenshot(path=str(tmp_path / "lab1.png"))
            browser.close()


def _notebooks() -> dict[str, bytes]:
    return {str(p.relative_to(ROOT)): p.read_bytes() for p in sorted((ROOT / "notebooks").rglob("*.ipynb"))}


def _answer_wrongly_and_save(page, url: str, lab_dir: Path) -> None:
    page.goto(url)
    page.wait_for_selector(".jp-Notebook .jp-MarkdownCell", timeout=120_000, state="attached")
    page.wait_for_selector("text=Python 3 (ipykernel) | Idle", timeout=180_000)
    notebook = page.locator(".jp-NotebookPanel .jp-Notebook")
    notebook.locator(".jp-MarkdownCell .myst").first.wait_for(timeout=60_000)  # rendered by jupyterlab-myst
    markdown = notebook.locator(".jp-MarkdownCell .myst").all_inner_texts()
    assert markdown and not any(re.search(r"\{\w+\}`|:label:|```", text) for text in markdown), markdown
    assert notebook.locator(
        'a[href^="https://latentbook.github.io/latentbook/book/thermodynamics.html"]'
    ).count()
    code = notebook.locator(".jp-CodeCell")
    _run(page, code.nth(0), 1)  # the first cell: latentbook is installed, so it only imports
    code.nth(1).locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(WRONG)
    _run(page, code.nth(1), 2)
    _run(page, code.nth(2), 3)
    output = code.nth(2).locator(".jp-OutputArea").inner_text()
    assert "All tests passed" not in output and "only the energy term" in output, output
    page.keyboard.press("Control+s")
    deadline = time.time() + 60
    while not _saved(lab_dir / "lab1_thermodynamics.ipynb") and time.time() < deadline:
        time.sleep(1)


def _saved(path: Path) -> bool:
    """Whether ``path`` holds the wrong answer and the outputs."""
    notebook = nbformat.read(path, as_version=4)
    code = [c for c in notebook.cells if c.cell_type == "code"]
    return any(WRONG in c.source for c in code) and any(c.get("outputs") for c in code)


PROBE = "```{exercise} A probe\n:label: probe-exercise\n\nDo it.\n```\n\n```{note}\nA note.\n```"


def _probe_renders_myst(page, url: str, lab_dir: Path) -> None:
    """jupyterlab-myst at work: a notebook with MyST directives (the labs' own markup) shows them rendered."""
    probe = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(PROBE)])
    probe.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(probe, lab_dir / "probe.ipynb")
    page.goto(url)
    rendered = page.locator(".jp-MarkdownCell .myst", has_text="A probe")  # the probe's tab, not lab 1's
    rendered.wait_for(timeout=120_000)
    assert (
        rendered.locator(".myst-exercise").count() == 1 and rendered.locator(".myst-admonition").count() == 1
    )
    text = rendered.inner_text()
    assert "Exercise" in text and "A note." in text, text
    assert ":label:" not in text and "```" not in text and "{note}" not in text, text


def _run(page, cell, count: int) -> None:
    """Run ``cell`` (Shift+Enter) and wait for its prompt to show execution ``count``."""
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")
    cell.locator(f".jp-InputPrompt:has-text('[{count}]')").wait_for(timeout=180_000)
