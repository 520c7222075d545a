"""The trained ladder on disk: ``results/ladder/<rung>/`` and the ``ladder:<rung>`` names of the zoo.

- ``ladder:<rung>`` (e.g. ``ladder:l4-d64``, ladder v1; ``ladder:l4-d64-s1``, ladder v2 at seed 1): the trained
  model, float16 safetensors upcast to ``dtype``;
- ``ladder:<rung>:init``: the same architecture at the seeded initialisation its training started from
  (the untrained null of that rung);
- ``ladder:<rung>@<k>``: its checkpoint after ``k`` training steps (``checkpoints(rung)`` lists the steps;
  ``lb.models()`` lists the final models only).

Every load checks each file of the rung folder (and of the checkpoint) against its ``SHA256SUMS``
(``IntegrityError`` on a mismatch). The folders are searched in ``ladder_roots()``: ``$LATENTBOOK_LADDER_DIR``
(one folder, or several separated by ``os.pathsep``), else ``results/ladder`` (v1) and ``results/ladder-v2``
of the repository; a name is the first root's that has it.
Introduced in: chapter 7.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch

from .._files import inside, repository_root
from ..errors import UnknownModelError
from ..models.anatomy import anatomy_of
from ..models.weights import load_weights_strictly
from ..models.zoo import LoadedModel
from .folders import CHECKPOINT_FILE, CHECKPOINTS, LOG_FILE, SUMS_FILE, verify_folder
from .task import TaskSpec
from .train import Rung, init_model

REPO_LADDER = (
    (repository_root(Path(__file__).parent) or Path.cwd()) / "results" / "ladder"
)  # the source's checkout
REPO_LADDER_V2 = REPO_LADDER.with_name("ladder-v2")
INIT_SUFFIX = ":init"
STEP_MARK = "@"


def ladder_roots() -> list[Path]:
    """The folders searched for rungs: ``$LATENTBOOK_LADDER_DIR`` (``os.pathsep``-separated), else the
    repository's ``results/ladder`` and ``results/ladder-v2``."""
    env = os.environ.get("LATENTBOOK_LADDER_DIR")
    if env:
        return [Path(part) for part in env.split(os.pathsep) if part]
    return [REPO_LADDER, REPO_LADDER_V2]


def ladder_dir() -> Path:
    """Where the rungs are trained and measured: the first of ``ladder_roots()`` (``results/ladder``)."""
    return ladder_roots()[0]


def trained_rungs(root: Path | None = None) -> list[str]:
    """Names of the rungs with a folder (and ``SHA256SUMS``) under ``root`` (default: every root), sorted."""
    roots = ladder_roots() if root is None else [root]
    names = {p.name for r in roots if r.is_dir() for p in r.iterdir() if (p / SUMS_FILE).is_file()}
    return sorted(names)


def verify(folder: Path) -> str:
    """Check every file listed in ``SHA256SUMS``; return the sha256 of the sums file (the rung's id).

    ``ModelUnavailableError`` without the sums file, ``IntegrityError`` when a file is missing or differs."""
    return verify_folder(folder)


def training_log(name: str) -> dict:
    """The training log of a trained rung (loss per step, held-out accuracy during training, settings)."""
    return json.loads((_folder(name) / LOG_FILE).read_text())


def _folder(rung: str) -> Path:
    roots = ladder_roots()
    for root in roots:
        folder = inside(root, rung)
        if (folder / SUMS_FILE).is_file():
            return folder
    have = ", ".join(trained_rungs()) or "none"
    raise UnknownModelError(
        f"No trained ladder rung {rung!r} in {', '.join(map(str, roots))} (trained: {have})."
    )


def checkpoints(rung: str) -> list[int]:
    """The steps of the checkpoints of a trained rung (``ladder:<rung>@<step>``), ascending; ``[]`` if none."""
    folder = _folder(rung) / CHECKPOINTS
    if not folder.is_dir():
        return []
    steps = [
        int(p.name.removeprefix("step-"))
        for p in folder.iterdir()
        if p.name.startswith("step-") and p.name[5:].isdigit() and (p / SUMS_FILE).is_file()
    ]
    return sorted(steps)


def checkpoint_info(rung: str, step: int) -> dict:
    """``checkpoint.json`` of a checkpoint: its step, curriculum stage (``hops``) and running loss."""
    return json.loads((_checkpoint_folder(rung, step) / CHECKPOINT_FILE).read_text())


def checkpoint_sha(rung: str, step: int) -> str:
    """The id of a checkpoint (``verify`` of its folder: the sha256 of its sums file, every file checked)."""
    return verify(_checkpoint_folder(rung, step))


def _checkpoint_folder(rung: str, step: int) -> Path:
    folder = _folder(rung) / CHECKPOINTS / f"step-{step}"
    if not (folder / SUMS_FILE).is_file():
        have = ", ".join(map(str, checkpoints(rung))) or "none"
        raise UnknownModelError(f"Ladder rung {rung!r} has no checkpoint at step {step} (steps: {have}).")
    return folder


def parse_name(name: str) -> tuple[str, int | None, bool]:
    """``ladder:<rung>[@<step>][:init]`` -> ``(rung, step or None, init)``."""
    rung = name.removeprefix("ladder:")
    init = rung.endswith(INIT_SUFFIX)
    rung = rung.removesuffix(INIT_SUFFIX)
    step = None
    if STEP_MARK in rung:
        rung, _, text = rung.partition(STEP_MARK)
        if not text.isdigit():
            raise UnknownModelError(f"{name!r}: a checkpoint is ladder:<rung>@<step>, the step a number.")
        if init:
            raise UnknownModelError(f"{name!r}: a checkpoint has no null of its own; use ladder:{rung}:init.")
        step = int(text)
    return rung, step, init


def load_ladder(name: str, dtype: torch.dtype, device_map, trust_remote_code: bool) -> LoadedModel:
    """Zoo loader of ``ladder:<rung>`` and ``ladder:<rung>:init`` (signature of the zoo's loaders)."""
    from transformers import AutoTokenizer, LlamaForCausalLM

    rung, step, init = parse_name(name)
    folder = _folder(rung)
    sha = verify(folder)
    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    if init:
        log = json.loads((folder / LOG_FILE).read_text())
        model = init_model(Rung(**log["rung"]), TaskSpec(**log["spec"]), log["config"]["seed"]).to(dtype)
    elif step is not None:
        checkpoint = _checkpoint_folder(rung, step)
        sha = verify(checkpoint)
        model = load_weights_strictly(LlamaForCausalLM, checkpoint, dtype, device_map)
    else:
        model = load_weights_strictly(LlamaForCausalLM, folder, dtype, device_map)  # no layer silently random
    tokenizer.padding_side = "right"
    return LoadedModel(model, tokenizer, name, model.config.model_type, "causal", sha, anatomy_of(model))


def model_table_rows() -> list[dict]:
    """Rows of ``lb.models()`` for the trained rungs (their untrained nulls are ``ladder:<rung>:init``, their
    checkpoints ``ladder:<rung>@<step>``, listed by ``checkpoints(rung)``, not here)."""
    rows = []
    for rung in trained_rungs():
        folder = _folder(rung)
        config = json.loads((folder / "config.json").read_text())
        root = folder.parent
        where = f"results/{root.name}" if root.parent == REPO_LADDER.parent else str(root)
        n = len(checkpoints(rung))
        rows.append(
            dict(
                name=f"ladder:{rung}",
                family=config["model_type"],
                layers=config["num_hidden_layers"],
                d_model=config["hidden_size"],
                kind="causal",
                source="trained here on multi-hop variable binding (chapter 7), "
                + where
                + (f", {n} checkpoints" if n else ""),
                available=True,
            )
        )
    return rows
