"""Where the experiment's files live: the ``results/`` folder of captures from elsewhere (``find_results_dir``) in
the repository (``_files.repository_root``, also how the ladder finds ``results/ladder``).

The captures the book makes itself are cached by ``capturing.cache`` (``$LATENTBOOK_CAPTURE_CACHE``, else
``_files.cache_dir() / "captures"``); the trained ladder lives in ``results/ladder`` (``ladder.store.ladder_dir``).
Introduced in: chapter 8.
"""

from __future__ import annotations

import os
from pathlib import Path

from .._files import repository_root


def find_results_dir(start: str | Path | None = None) -> Path | None:
    """``$LATENTBOOK_RESULTS`` if set, else the ``results/`` folder of the book's repository above ``start`` (the
    working directory by default: chapters run inside ``book/``), or None when there is none. Only a book's root
    (a ``_toc.yml`` beside ``results/``) counts: another project's ``results/`` is not a folder of captures."""
    if os.environ.get("LATENTBOOK_RESULTS"):
        return Path(os.environ["LATENTBOOK_RESULTS"])
    root = repository_root(start)
    if root is None or not (root / "_toc.yml").is_file():
        return None
    return root / "results" if (root / "results").is_dir() else None
