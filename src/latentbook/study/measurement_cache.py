"""Measurements of a capture computed once and kept on disk beside the captures, keyed on all they depend on.

Chapter 8, chapter 9 and ``latentbook verdict`` ask for the same measurements of the same cached captures (``measure``
of each run, its depth landmarks, the spreads of its Omega bands). ``cached(kind, compute, name=..., files=...,
modules=..., settings=...)`` runs ``compute`` once and keeps its result in the captures' folder
(``capturing.cache.capture_cache_dir``), under a key made of

- the sha256 of every input file (``files``: the capture, its attention capture, its Jacobian-vector gains),
- the code that computes it: the ``analysis`` and ``capturing`` wings and the helpers they call
  (``capturing.cache.package_source_hash`` of ``CODE_PARTS``), the ``modules`` named (``latentbook.study.measure``,
  ...) and this module, all without docstrings and comments, and the versions of ``PACKAGES``,
- the ``settings``: every other argument of the call; ``call_settings`` reads them off the function's signature with
  its defaults, so a keyword added to ``measure`` enters the key with no change here;

so a changed capture file, a change of that code or another argument computes it again. The entry is written
atomically, and a second process asking for an entry being computed waits for it (``_files.computing``), then reads
it. An entry is a pickle read back only through ``SafeUnpickler`` (latentbook's dataclasses, numpy arrays, plain
Python values); one that cannot be read (cut short, or of a class that has changed) is computed again and
replaced. Each is computed on one BLAS thread (``THREADS``), whoever asks for it.

Run by run: ``measurements_of(run)`` (what ``measure`` gives ``study.verdict_table.measured_runs``),
``landmarks_of(run)`` (``run_landmarks.book_landmarks``) and ``spreads_of(run, split)``
(``bimodality_power.band_spreads``), each None where the run's capture is not cached and may not be made; for a
capture file of ``results/``, ``results_file_measurements`` (all three, as ``verdict_table.runs_table`` reads them).
Introduced in: chapter 8.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import inspect
import io
import json
import pickle
import re
import time
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from threadpoolctl import threadpool_limits

from .._code_hash import modules_hash
from .._files import atomic_write, computing, inside, sha256_file
from ..capturing.cache import capture_cache_dir, package_source_hash
from ..errors import InvalidInputError

if TYPE_CHECKING:
    import pandas as pd

    from ..capturing.results import Capture
    from .measure import Measurements
    from .run_landmarks import DepthLandmarks
    from .runs import Run

T = TypeVar("T")

# The wings and helpers every cached measurement reads: the estimators and the Capture and gains readers.
CODE_PARTS = ("analysis", "capturing", "errors.py", "_files.py")
# Their versions enter the key: another numpy, scipy or torch (another BLAS or LAPACK) moves last digits.
PACKAGES = ("numpy", "scipy", "torch")
SUFFIX = ".pickle"
# BLAS and OpenMP threads while an entry is computed: the book's pages run on one thread each, and on two shared
# cores ``latentbook verdict`` with its default threads measured 7 to 20 times slower (threads waiting on each
# other); one thread also makes an entry's last digits the same whichever process computes it.
THREADS = 1
# A file modified within this many seconds of being hashed is hashed again at every call (as git treats a "racily
# clean" file): a file system's clock is coarse, so a rewrite of the same size soon after may keep its stat.
RACY_SECONDS = 2.0

_KIND = re.compile(r"[a-z][a-z0-9_]*")


# --- the key ---------------------------------------------------------------------------------------------------


_hashed: dict[str, tuple[tuple[int, int, int, int], str]] = {}


def file_digest(path: str | Path) -> str:
    """sha256 of the file's bytes, remembered for this process while its size, inode and times stay the same (a
    file modified within ``RACY_SECONDS`` of its hashing is hashed again at every call)."""
    path = Path(path).resolve()
    before = path.stat()
    signature = (before.st_size, before.st_ino, before.st_mtime_ns, before.st_ctime_ns)
    known = _hashed.get(str(path))
    if known is not None and known[0] == signature:
        return known[1]
    started = time.time_ns()
    digest = sha256_file(path)
    after = path.stat()
    settled = started - after.st_mtime_ns > RACY_SECONDS * 1e9  # a later write would move its mtime
    if settled and (after.st_size, after.st_ino, after.st_mtime_ns, after.st_ctime_ns) == signature:
        _hashed[str(path)] = (signature, digest)
    return digest


@cache
def code_digest(modules: tuple[str, ...] = ()) -> str:
    """sha256 of the code a cached measurement runs: ``CODE_PARTS`` of the package, the ``modules`` named and this
    module (``_code_hash``: docstrings and comments left out), and the installed versions of ``PACKAGES``."""
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    text = json.dumps(
        {
            "parts": package_source_hash(CODE_PARTS),
            "modules": modules_hash((*modules, __name__)),
            "versions": versions,
        },
        sort_keys=True,
    )
    return hashlib.sha256(text.encode()).hexdigest()


def call_settings(function: Callable, skip: Iterable[str] = (), /, **arguments: Any) -> dict[str, Any]:
    """Every parameter of ``function`` as a call with ``arguments`` sets it (the defaults for the rest), those
    named in ``skip`` left out (the inputs given as files): what a cache key needs of the call's other arguments."""
    bound = inspect.signature(function).bind_partial(**arguments)
    bound.apply_defaults()
    return {name: value for name, value in bound.arguments.items() if name not in set(skip)}


def _plain(value: Any) -> Any:
    """``value`` as JSON can write it, for the key; an object whose text would not say what it holds is refused."""
    if isinstance(value, (np.bool_, np.integer, np.floating)):
        return value.item()
    if isinstance(value, np.ndarray):
        return {"dtype": str(value.dtype), "shape": list(value.shape), "values": value.tolist()}
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    raise InvalidInputError(
        f"A {type(value).__name__} cannot be part of a cache key: give it as a file (files=...), or as numbers "
        "and text in settings."
    )


def entry_key(
    kind: str,
    files: Mapping[str, str | Path | None],
    modules: Iterable[str] = (),
    settings: Mapping[str, Any] | None = None,
) -> str:
    """The key of a cached ``kind`` of measurement (module docstring): its input ``files`` (None: absent) by content,
    the code that computes it, and its ``settings``."""
    payload = {
        "kind": kind,
        "files": {role: None if path is None else file_digest(path) for role, path in files.items()},
        "code": code_digest(tuple(modules)),
        "settings": dict(settings or {}),
    }
    text = json.dumps(payload, sort_keys=True, default=_plain, allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def entry_path(name: str, kind: str, key: str) -> Path:
    """Where the entry of ``key`` lives: ``<name>-<kind>-<key>.pickle`` in the captures' folder, ``name`` made a
    plain file name (``[A-Za-z0-9_.-]``, at most 80 characters)."""
    if not _KIND.fullmatch(kind):
        raise InvalidInputError(f"A measurement kind is a plain lower-case word, got {kind!r}.")
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._")[:80] or "run"
    return inside(capture_cache_dir(), f"{stem}-{kind}-{key}{SUFFIX}")


# --- the entries -----------------------------------------------------------------------------------------------


class SafeUnpickler(pickle.Unpickler):
    """Reads back what ``cached`` wrote: latentbook's dataclasses (never its functions or other classes), numpy's
    arrays, scalars and dtypes, and plain Python values; any other global (a function a crafted file would call) is
    refused."""

    NUMPY = {
        ("numpy", "dtype"),
        ("numpy", "ndarray"),
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.multiarray", "scalar"),
        ("numpy._core.multiarray", "scalar"),
        ("numpy.core.numeric", "_frombuffer"),
        ("numpy._core.numeric", "_frombuffer"),
    }
    BUILTINS = {
        "bool",
        "bytearray",
        "complex",
        "dict",
        "float",
        "frozenset",
        "int",
        "list",
        "set",
        "slice",
        "tuple",
    }

    def find_class(self, module: str, name: str) -> Any:
        allowed = (
            (module, name) in self.NUMPY
            or (module == "numpy.dtypes" and name.endswith("DType"))
            or (module == "builtins" and name in self.BUILTINS)
        )
        if allowed:
            return super().find_class(module, name)
        if module == "latentbook" or module.startswith("latentbook."):
            found = super().find_class(module, name)
            if isinstance(found, type) and dataclasses.is_dataclass(found):
                return found
        raise pickle.UnpicklingError(f"{module}.{name} is not something a cached measurement holds")


_MISSING = object()


def _read(path: Path, key: str) -> Any:
    """The value of the entry at ``path`` if it is a readable entry of ``key``, else ``_MISSING``."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return _MISSING
    try:
        entry = SafeUnpickler(io.BytesIO(data)).load()
    except Exception:  # cut short, or made by code whose classes have changed: computed again
        return _MISSING
    if not isinstance(entry, dict) or entry.get("key") != key or "value" not in entry:
        return _MISSING
    return entry["value"]


def cached(
    kind: str,
    compute: Callable[[], T],
    *,
    name: str,
    files: Mapping[str, str | Path | None],
    modules: Iterable[str] = (),
    settings: Mapping[str, Any] | None = None,
) -> T:
    """``compute()``, read from the captures' folder when it was done before on the same ``files`` (each by its
    content; None: an input that is absent), by the same code (``CODE_PARTS``, ``modules``, this module) with the
    same ``settings``; otherwise computed and written there atomically. ``name`` (the run's label) starts the
    entry's file name; ``kind`` says what is measured (a plain word: "measure", "landmarks"). ``compute`` runs on
    ``THREADS`` BLAS and OpenMP threads."""
    key = entry_key(kind, files, modules, settings)
    path = entry_path(name, kind, key)
    found = _read(path, key)
    if found is not _MISSING:
        return found
    with computing(path):  # another process computing the same entry: wait for it, then read its file
        found = _read(path, key)
        if found is not _MISSING:
            return found
        with threadpool_limits(limits=THREADS):
            value = compute()
        data = pickle.dumps({"key": key, "kind": kind, "value": value}, protocol=pickle.HIGHEST_PROTOCOL)
        atomic_write(path, lambda tmp: tmp.write_bytes(data))
    return value


def cached_frame(
    kind: str,
    compute: Callable[[], pd.DataFrame],
    *,
    modules: Iterable[str] = (),
    settings: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """``compute()``, a table that reads no file (a calibration on planted data, a power grid), kept as ``cached``
    keeps a measurement: computed again when the code (``CODE_PARTS``, ``modules``) or the ``settings`` change. The
    entry holds the table's cells, index and column types as plain values (``SafeUnpickler`` reads no pandas), and
    the table read back equals the one computed, dtypes included."""
    import pandas as pd

    def plain() -> dict[str, Any]:
        table = compute()
        return {
            "split": table.to_dict(orient="split"),
            "dtypes": {str(column): str(dtype) for column, dtype in table.dtypes.items()},
            "index_name": table.index.name,
        }

    entry = cached(kind, plain, name="table", files={}, modules=modules, settings=settings)
    split = entry["split"]
    table = pd.DataFrame(split["data"], index=split["index"], columns=split["columns"])
    table.index.name = entry["index_name"]
    return table.astype({column: entry["dtypes"][str(column)] for column in table.columns})


# --- the book's runs -------------------------------------------------------------------------------------------


def _ensure_capture(run: Run, make: bool) -> Path | None:
    """The run's capture file, captured first with ``make``; None where it is not cached and ``make`` is false."""
    path = run.capture_path()
    if not path.is_file():
        if not make:
            return None
        run.capture()
    return path


def _attention_path(run: Run, capture: Path) -> Path | None:
    """The file ``Run.attention_capture`` reads beside the capture (``capture`` itself for a model whose book capture
    carries attention statistics); None for a shuffled-words run or where it is not cached."""
    if run.kind == "shuffled words":
        return None
    path = run.capture_path(attention=True)
    return path if path == capture or path.is_file() else None


def measurements_of(run: Run, capture_missing: bool = False) -> Measurements | None:
    """``study.measure.measure`` of the run's book capture, with its cached attention statistics and Jacobian-vector
    gains, Omega in a learned basis (``measure(learned=True)``), and without spectra or the learned basis for a
    shuffled-words run (a null for bimodality), kept on disk (``cached``); None where
    the capture is not cached, unless ``capture_missing`` (then the capture and the gains are made first)."""
    from ..capturing.cache import book_gains_path
    from .measure import measure

    path = _ensure_capture(run, capture_missing)
    if path is None:
        return None
    shuffled = run.kind == "shuffled words"
    gains_path = None if shuffled else book_gains_path(run.capture_name)
    if gains_path is not None and not gains_path.is_file():
        gains_path = gains_path if capture_missing and run.gains() is not None else None

    def compute() -> Measurements:
        cap = run.capture()
        attention = run.attention_capture(cap, cached_only=True)
        gains = run.gains(cached_only=True) if gains_path is not None else None
        return measure(
            cap, run.label, attention=attention, spectra=not shuffled, gains=gains, learned=not shuffled
        )

    files = {"capture": path, "attention": _attention_path(run, path), "gains": gains_path}
    settings = call_settings(
        measure, ("cap", "attention", "gains"), label=run.label, spectra=not shuffled, learned=not shuffled
    )
    return cached(
        "measure",
        compute,
        name=run.label,
        files=files,
        modules=("latentbook.study.measure",),
        settings=settings,
    )


def landmarks_of(run: Run, cached_only: bool = False) -> DepthLandmarks | None:
    """``run_landmarks.book_landmarks(run)``, kept on disk (``cached``; its logit lens, cached beside the capture,
    enters the key by its values); None with ``cached_only`` where the capture is not cached (else it is made)."""
    from .run_landmarks import book_landmarks, book_lens

    path = _ensure_capture(run, not cached_only)
    if path is None:
        return None
    lens = book_lens(run)  # made with the model the first time, then read from its file
    digest = None
    if lens is not None:
        hashed = hashlib.sha256()
        for values in (lens.kl, lens.prompt_ids):
            hashed.update(f"{values.dtype}{values.shape}".encode() + np.ascontiguousarray(values).tobytes())
        digest = hashed.hexdigest()
    settings = call_settings(book_landmarks, ("run",)) | {"label": run.label, "lens": digest}
    return cached(
        "landmarks",
        lambda: book_landmarks(run),
        name=run.label,
        files={"capture": path},
        modules=("latentbook.study.run_landmarks",),
        settings=settings,
    )


def spreads_of(run: Run, split: float) -> list[float] | None:
    """``bimodality_power.band_spreads`` of the run's cached capture at ``split``, kept on disk; None where the
    capture is not cached."""
    from ..analysis.bimodality_power import band_spreads

    path = run.capture_path()
    if not path.is_file():
        return None
    return cached(
        "spreads",
        lambda: band_spreads(run.capture(), split),
        name=run.label,
        files={"capture": path},
        settings=call_settings(band_spreads, ("cap",), split=split),
    )


def results_file_measurements(
    cap: Capture, path: str | Path, label: str, n_boot: int = 200
) -> tuple[Measurements, str, DepthLandmarks, list[float]]:
    """What ``study.verdict_table.runs_table`` measures of a capture file of ``results/`` (``cap``, read from
    ``path``; its attention left out, ``attention=None``, where the cooling claim cannot read it), each kept on
    disk: ``capture_report.measure_what_it_can`` (the measurements, and why the spectra are missing, or ""), its
    landmarks (``run_landmarks.depth_landmarks``, without the logit lens) and its bands' spreads."""
    from ..analysis.bimodality_power import band_spreads
    from .capture_report import measure_what_it_can
    from .run_landmarks import depth_landmarks

    files = {"capture": path}
    measured, missing = cached(
        "results_measure",
        lambda: measure_what_it_can(cap, label, n_boot=n_boot),
        name=label,
        files=files,
        modules=("latentbook.study.measure", "latentbook.study.capture_report"),
        settings=call_settings(measure_what_it_can, ("cap",), label=label, n_boot=n_boot)
        | {"attention": cap.attention is not None},
    )
    landmarks = cached(
        "results_landmarks",
        lambda: depth_landmarks(cap, label),
        name=label,
        files=files,
        modules=("latentbook.study.run_landmarks",),
        settings=call_settings(depth_landmarks, ("cap",), label=label),
    )
    spreads = cached(
        "spreads",
        lambda: band_spreads(cap, measured.split),
        name=label,
        files=files,
        settings=call_settings(band_spreads, ("cap",), split=measured.split),
    )
    return measured, missing, landmarks, spreads
