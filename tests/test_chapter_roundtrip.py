"""Opening a chapter and saving it leaves it byte-identical: jupytext (which JupyterLab saves through) reads each
MyST chapter and writes it back, under the repository's jupytext configuration (``[tool.jupytext]`` in
pyproject.toml), exactly as it is, myst-nb's settings included; and each chapter names the kernel JupyterLab
would write on save (ipykernel's own display name), so a save with that kernel changes nothing either."""

from pathlib import Path

import jupytext
import pytest
from ipykernel.kernelspec import get_kernel_dict
from jupytext.config import find_jupytext_configuration_file, load_jupytext_configuration_file

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted(
    path
    for path in [*(ROOT / "book").rglob("*.md"), *(ROOT / "notebooks").glob("*.md")]
    if path.read_text(encoding="utf-8").startswith("---\njupytext:")
)


def test_every_text_notebook_is_found():
    names = {path.name for path in CHAPTERS}
    assert {"omega.md", "verdict.md", "landmarks.md", "explorer.md"} <= names


def saved_by_jupyterlab(path: Path) -> str:
    """The text JupyterLab writes back when ``path`` is opened through jupytext and saved with the running
    ipykernel (the repository's jupytext configuration applied)."""
    config = load_jupytext_configuration_file(find_jupytext_configuration_file(str(path.parent)))
    notebook = jupytext.reads(path.read_text(encoding="utf-8"), fmt="md:myst", config=config)
    # what JupyterLab sets on save from the running ipykernel
    notebook.metadata["kernelspec"] = {
        "display_name": get_kernel_dict()["display_name"],
        "language": "python",
        "name": "python3",
    }
    return jupytext.writes(notebook, fmt="md:myst", config=config)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_chapter_survives_open_and_save_byte_for_byte(path):
    text = path.read_text(encoding="utf-8")
    saved = saved_by_jupyterlab(path)
    assert saved == text
    if "execution_timeout" in text:  # the setting a lost header would drop back to _config.yml's 900 s
        assert "execution_timeout" in saved
