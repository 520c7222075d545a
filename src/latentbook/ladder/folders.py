"""The on-disk folders of the ladder: a trained rung (``save_rung``) or a checkpoint (``save_checkpoint``).

Each is written atomically (a temporary sibling folder, then a rename) with float16 safetensors and a
``SHA256SUMS`` of its files, which ``verify_folder`` checks (``store`` does, on every load).
Introduced in: chapter 7.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from .._files import sha256_file
from ..errors import IntegrityError, ModelUnavailableError
from .task import TaskSpec, task_tokenizer

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

SUMS_FILE = "SHA256SUMS"
LOG_FILE = "training_log.json"
CHECKPOINTS = "checkpoints"  # sub-folder of a rung with its checkpoints, ``step-<k>/`` each
CHECKPOINT_FILE = "checkpoint.json"


def _save_float16(model, folder: Path) -> None:
    """``save_pretrained`` of a float16 copy, without transformers' progress bar (one per checkpoint in logs)."""
    from transformers.utils import logging as hf_logging

    shown = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        copy.deepcopy(model).to(torch.float16).save_pretrained(folder, safe_serialization=True)
    finally:
        if shown:
            hf_logging.enable_progress_bar()


def _write_folder(folder: str | Path, fill: Callable[[Path], None]) -> Path:
    """``fill(tmp)`` a temporary sibling folder, add the ``SHA256SUMS`` of its files, rename it onto ``folder``.

    A killed run never leaves a half-written folder under its final name; an existing ``folder`` is replaced.
    """
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        fill(tmp)
        files = sorted(p for p in tmp.iterdir() if p.is_file() and p.name != SUMS_FILE)
        (tmp / SUMS_FILE).write_text("".join(f"{sha256_file(p)}  {p.name}\n" for p in files))
        if folder.exists():
            old = folder.with_name(f".{folder.name}.{os.getpid()}.old")
            os.rename(folder, old)
            shutil.rmtree(old)
        os.rename(tmp, folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


def save_rung(
    model, log: DataclassInstance, spec: TaskSpec, folder: str | Path, checkpoints: str | Path | None = None
) -> Path:
    """Write the model (float16 safetensors), config, tokenizer, training log (``log``, the run's ``TrainLog``)
    and ``SHA256SUMS``.

    Everything is written into a temporary sibling folder, then renamed into place: a killed run never leaves
    a half-written rung under its final name. ``checkpoints`` (a folder of ``step-<k>/`` checkpoints) is moved
    in as ``checkpoints/``; each checkpoint has its own ``SHA256SUMS`` (the rung's covers its own files only).
    """

    def fill(tmp: Path) -> None:
        _save_float16(model, tmp)
        task_tokenizer(spec).save_pretrained(tmp)
        (tmp / LOG_FILE).write_text(json.dumps(asdict(log), indent=None))
        if checkpoints is not None and Path(checkpoints).is_dir():
            os.rename(checkpoints, tmp / CHECKPOINTS)

    return _write_folder(folder, fill)


def save_checkpoint(model, info: dict, folder: str | Path) -> Path:
    """Write the model's float16 weights and config, ``checkpoint.json`` (``info``: step, curriculum stage...)
    and ``SHA256SUMS`` to ``folder``, atomically (a temporary folder, then a rename). The tokenizer is the rung's.
    """

    def fill(tmp: Path) -> None:
        _save_float16(model, tmp)
        (tmp / CHECKPOINT_FILE).write_text(json.dumps(info))

    return _write_folder(folder, fill)


def read_sums(folder: str | Path) -> dict[str, str]:
    """``{file name: sha256}`` from a rung folder's ``SHA256SUMS``."""
    lines = (Path(folder) / SUMS_FILE).read_text().splitlines()
    return {name: sha for sha, name in (line.split(None, 1) for line in lines if line.strip())}


def weights_sha256(folder: str | Path) -> str:
    """One sha256 over the rung's ``SHA256SUMS`` (so it changes when any file changes)."""
    return hashlib.sha256((Path(folder) / SUMS_FILE).read_bytes()).hexdigest()


def verify_folder(folder: str | Path) -> str:
    """Check every file a rung's (or checkpoint's) ``SHA256SUMS`` lists; return ``weights_sha256(folder)``.

    ``ModelUnavailableError`` without the sums file, ``IntegrityError`` when a file is missing or differs.
    """
    folder = Path(folder)
    if not (folder / SUMS_FILE).is_file():
        raise ModelUnavailableError(
            f"{folder} has no {SUMS_FILE}: train the ladder with `latentbook train-ladder` or restore "
            "results/ladder from the repository."
        )
    for name, expected in read_sums(folder).items():
        path = folder / name
        if not path.is_file() or sha256_file(path) != expected:
            raise IntegrityError(
                f"{path} is missing or does not match its sha256 in {SUMS_FILE}: the file is corrupt or was "
                "changed. Restore it from the repository (git checkout results/ladder) or retrain the ladder."
            )
    return weights_sha256(folder)
