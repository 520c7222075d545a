"""Small file helpers shared by every wing: hashing, atomic writes, the cache folder."""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from .errors import UnsafePathError


def sha256_file(path: str | Path, block: int = 1 << 20) -> str:
    """Hex sha256 of a file's bytes, read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(block):
            digest.update(chunk)
    return digest.hexdigest()


def cache_dir() -> Path:
    """Root of latentbook's cache: ``$LATENTBOOK_CACHE``, else ``$XDG_CACHE_HOME/latentbook``, else ``~/.cache/latentbook``."""
    root = os.environ.get("LATENTBOOK_CACHE")
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        root = str(Path(xdg) / "latentbook")
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def inside(root: Path, *parts: str) -> Path:
    """``root / parts``, refusing any result that would leave ``root`` (``..``, absolute parts, links)."""
    candidate = root.joinpath(*parts).resolve()
    if not candidate.is_relative_to(root.resolve()):
        raise UnsafePathError(f"{'/'.join(parts)!r} would leave the folder {root}; use a plain name.")
    return candidate


def atomic_write(path: str | Path, write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp)`` on a temporary file beside ``path``, fsync it, then rename it onto ``path``.

    At no moment is a half-written file readable under its final name.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        write(tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)
    return path


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # some platforms cannot open folders
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
