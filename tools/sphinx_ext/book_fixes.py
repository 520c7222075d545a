"""Fixes to the pages Sphinx 7.4 + sphinx-book-theme write: a clean browser console, labs launched as students'.

1. sphinx-thebe's inline setup script is added to each page twice (``THEBE_JS_URL`` declared twice: a
   SyntaxError in the console): keep each script file once.
2. An empty ``default_mode`` makes the theme log "invalid theme mode" on a reader's first visit: use "auto".
3. A page with a student copy beside it (``notebooks/student/<lab>.ipynb``, written by
   ``tools/make_student_copies.py``: no solutions) launches that copy, not its own notebook: the theme builds
   its launch URLs from the page's name (sphinx_book_theme/header_buttons/launch.py), so the Binder URL is
   rewritten here, and a Colab button is added on those pages only (no ``colab_url`` in ``_config.yml``: the
   theme would put one on every page, and Colab cannot open the MyST chapters).
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path, PurePosixPath

STUDENT = "student"  # the copies' folder, beside the labs
COLAB = "https://colab.research.google.com"


def student_copy(srcdir: str | Path, pagename: str) -> str | None:
    """The student copy of a page, relative to the book's root (``<folder>/student/<page>.ipynb``), if any."""
    page = PurePosixPath(pagename)
    copy = (page.parent / STUDENT / f"{page.name}.ipynb").as_posix()
    return copy if (Path(srcdir) / copy).is_file() else None


def colab_url(github: str, branch: str, path: str) -> str:
    """Colab's URL of a notebook in a GitHub repository (``github``: "org/repo"; ``path`` from its root)."""
    return f"{COLAB}/github/{github}/blob/{branch}/{posixpath.normpath(path)}"


def student_launch_buttons(buttons: list[dict], source: str, copy: str, colab: str | None) -> list[dict]:
    """The launch buttons with every URL that opens ``source`` opening ``copy`` instead (both relative to
    the book's root), and a Colab button opening ``colab`` when given and none is there."""
    page = re.compile(rf"(?<=/){re.escape(source)}(?=$|[?&#])")
    kept = [
        dict(button, url=page.sub(copy, button["url"])) if "url" in button else button for button in buttons
    ]
    if colab and not any(button.get("text") == "Colab" for button in kept):
        kept.append(
            {
                "type": "link",
                "text": "Colab",
                "tooltip": "Launch the student copy on Colab",
                "icon": "_static/images/logo_colab.png",
                "url": colab,
            }
        )
    return kept


def _launch_student_copy(app, pagename: str, context: dict) -> None:
    copy = student_copy(app.srcdir, pagename)
    if copy is None:
        return
    colab = None
    if context.get("github_user") and context.get("github_repo"):
        github = f"{context['github_user']}/{context['github_repo']}"
        root = context.get("doc_path") or "."
        colab = colab_url(github, context.get("github_version") or "main", f"{root}/{copy}")
    for group in context.get("header_buttons", []):
        if group.get("label") == "launch-buttons":
            group["buttons"] = student_launch_buttons(group["buttons"], f"{pagename}.ipynb", copy, colab)


def _page(app, pagename, templatename, context, doctree):
    if not context.get("default_mode"):
        context["default_mode"] = "auto"
    seen, kept = set(), []
    for script in context.get("script_files", []):
        key = (
            getattr(script, "filename", None) or "",
            tuple(sorted(getattr(script, "attributes", {}).items())),
        )
        if key not in seen:
            seen.add(key)
            kept.append(script)
    context["script_files"] = kept
    _launch_student_copy(app, pagename, context)


def setup(app):
    app.connect("html-page-context", _page, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
