"""The trained ladder on disk: ``results/ladder/<rung>/`` and the ``ladder:<rung>`` names of the zoo.

- ``ladder:<rung>`` (e.g. ``ladder:l4-d64``): the trained model, float16 safetensors upcast to ``dtype``;
- ``ladder:<rung>:init``: the same architecture at the seeded initialisation its training started from
  (the untrained null of that rung).

Every load checks each file of the rung folder against its ``SHA256SUMS`` (``IntegrityError`` on a
mismatch). The folder is ``$LATENTBOOK_LADDER_DIR``, else ``results/ladder`` of the repository.
Introduced in: chapter 7.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch

from .._files import inside, sha256_file
from ..errors import IntegrityError, ModelUnavailableError, UnknownModelError
from ..models.anatomy import anatomy_of
from ..models.zoo import LoadedModel, load_weights_strictly
from .task import TaskSpec
from .train import LOG_FILE, SUMS_FILE, Rung, init_model, read_sums, weights_sha256

REPO_LADDER = Path(__file__).resolve().parents[3] / "results" / "ladder"
INIT_SUFFIX = ":init"


def ladder_dir() -> Path:
    """Where the trained rungs live: ``$LATENTBOOK_LADDER_DIR`` or ``results/ladder`` in the repository."""
    return Path(os.environ.get("LATENTBOOK_LADDER_DIR") or REPO_LADDER)


def trained_rungs(root: Path | None = None) -> list[str]:
    """Names of the rungs with a folder (and ``SHA256SUMS``) under ``root``, sorted."""
    root = ladder_dir() if root is None else root
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / SUMS_FILE).is_file())


def verify(folder: Path) -> str:
    """Check every file listed in ``SHA256SUMS``; return the sha256 of the sums file (the rung's id)."""
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


def training_log(name: str) -> dict:
    """The training log of a trained rung (loss per step, held-out accuracy during training, settings)."""
    return json.loads((_folder(name) / LOG_FILE).read_text())


def _folder(rung: str) -> Path:
    root = ladder_dir()
    folder = inside(root, rung)
    if not (folder / SUMS_FILE).is_file():
        have = ", ".join(trained_rungs(root)) or "none"
        raise UnknownModelError(f"No trained ladder rung {rung!r} in {root} (trained: {have}).")
    return folder


def load_ladder(name: str, dtype: torch.dtype, device_map, trust_remote_code: bool) -> LoadedModel:
    """Zoo loader of ``ladder:<rung>`` and ``ladder:<rung>:init`` (signature of the zoo's loaders)."""
    from transformers import AutoTokenizer, LlamaForCausalLM

    rung = name.removeprefix("ladder:")
    init = rung.endswith(INIT_SUFFIX)
    rung = rung.removesuffix(INIT_SUFFIX)
    folder = _folder(rung)
    sha = verify(folder)
    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    if init:
        log = json.loads((folder / LOG_FILE).read_text())
        model = init_model(Rung(**log["rung"]), TaskSpec(**log["spec"]), log["config"]["seed"]).to(dtype)
    else:
        model = load_weights_strictly(LlamaForCausalLM, folder, dtype, device_map)  # no layer silently random
    tokenizer.padding_side = "right"
    return LoadedModel(model, tokenizer, name, model.config.model_type, "causal", sha, anatomy_of(model))


def ladder_rows() -> list[dict]:
    """Rows of ``lb.models()`` for the trained rungs (their untrained nulls are ``ladder:<rung>:init``)."""
    rows = []
    for rung in trained_rungs():
        config = json.loads((ladder_dir() / rung / "config.json").read_text())
        rows.append(
            dict(
                name=f"ladder:{rung}",
                family=config["model_type"],
                layers=config["num_hidden_layers"],
                d_model=config["hidden_size"],
                kind="causal",
                source="trained here on multi-hop variable binding (chapter 7), results/ladder",
                available=True,
            )
        )
    return rows
