"""Train the whole ladder (``latentbook train-ladder``): every rung at every seed, each into its own folder.

``ladder_jobs`` names the folders and the order, ``train_job`` trains and saves one rung-seed (or skips a
complete folder), ``train_ladder`` runs them one at a time or in a pool of processes.
Introduced in: chapter 7.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from .._files import exclusive_lock, remove_stale_temporaries
from ..errors import InvalidInputError, LatentbookError, LockedError
from .folders import CHECKPOINTS, LOG_FILE, SUMS_FILE, save_rung, verify_folder
from .task import TaskSpec
from .train import LADDER, LADDER_CONFIG, LADDER_SPEC, Rung, TrainConfig, train


def rung_cost(rung: Rung) -> tuple[int, int]:
    """A sort key that orders the rungs like their training time (l4-d128 > l8-d64 > l4-d64 > l2-d64 > l4-d32
    > l1-d64 at 10,000 steps on one thread: 2592, 1919, 821, 704, 534 and 265 s)."""
    return rung.n_layers * rung.d_model**2, rung.n_layers


@dataclass(frozen=True)
class LadderJob:
    """One rung (at one seed) of ``train_ladder``: what to train, and the folder it goes to."""

    rung: Rung
    spec: TaskSpec
    config: TrainConfig
    folder: Path
    checkpoint_every: int = 0
    force: bool = False
    progress: bool = False

    @property
    def name(self) -> str:
        return self.folder.name


def ladder_jobs(
    out: str | Path,
    rungs: tuple[Rung, ...] = LADDER,
    spec: TaskSpec = LADDER_SPEC,
    config: TrainConfig = LADDER_CONFIG,
    *,
    seeds: tuple[int, ...] | None = None,
    checkpoint_every: int = 0,
    checkpoint_rungs: tuple[str, ...] | None = None,
    force: bool = False,
    progress: bool = False,
) -> list[LadderJob]:
    """The jobs of ``train_ladder``, in the order they start: seed by seed, the slowest rung of a seed first.

    Without ``seeds`` each rung goes to ``out/<rung>/`` at ``config.seed`` (ladder v1's names); with them, to
    ``out/<rung>-s<seed>/`` at each seed. ``checkpoint_rungs`` (rung names; default all) get checkpoints every
    ``checkpoint_every`` steps. Started in this order, a seed's rungs are all done before the next seed's end.
    """
    names = [r.name for r in rungs]
    if len(set(names)) != len(names) or (seeds is not None and len(set(seeds)) != len(seeds)):
        raise InvalidInputError(f"rungs and seeds must not repeat; got {names} and {seeds}.")
    if seeds is not None and (not seeds or any(not isinstance(s, int) or s < 0 for s in seeds)):
        raise InvalidInputError(f"seeds must be integers >= 0; got {seeds}.")
    if checkpoint_every < 0:
        raise InvalidInputError(f"checkpoint_every must be 0 (none) or positive; got {checkpoint_every}.")
    with_checkpoints = set(names if checkpoint_rungs is None else checkpoint_rungs)
    if not with_checkpoints <= set(names):
        raise InvalidInputError(
            f"checkpoint rungs {sorted(with_checkpoints - set(names))} are not among the rungs trained {names}."
        )
    ordered = sorted(rungs, key=rung_cost, reverse=True)
    jobs = []
    for seed in [None] if seeds is None else seeds:
        for rung in ordered:
            jobs.append(
                LadderJob(
                    rung,
                    spec,
                    config if seed is None else dataclasses.replace(config, seed=seed),
                    Path(out) / (rung.name if seed is None else f"{rung.name}-s{seed}"),
                    checkpoint_every if rung.name in with_checkpoints else 0,
                    force,
                    progress,
                )
            )
    return jobs


def _echo(line: str) -> None:
    print(line, file=sys.stdout, flush=True)


def _skip_message(job: LadderJob) -> str:
    log = json.loads((job.folder / LOG_FILE).read_text())
    asked = {"rung": asdict(job.rung), "spec": job.spec.to_dict(), "config": asdict(job.config)}
    differ = [
        f"{part}.{key} {log[part].get(key)!r} (asked {value!r})"
        for part, values in asked.items()
        for key, value in values.items()
        if log.get(part, {}).get(key) != value
    ]
    message = f"{job.name}: complete (its {SUMS_FILE} verify), skipped; --force retrains it"
    if differ:
        message += "; NOTE it was trained with other settings: " + ", ".join(differ)
    if job.checkpoint_every and not (job.folder / CHECKPOINTS).is_dir():
        message += "; NOTE it has no checkpoints"
    return message


def train_job(job: LadderJob, echo: Callable[[str], None] | None = _echo) -> dict:
    """Train and save one rung-seed, unless its folder is complete; returns ``{"name", "folder", "status",
    "message", ...}`` with status ``trained``, ``skipped`` (complete), ``refused`` (the folder exists but does
    not verify: it is left alone unless ``job.force``) or ``busy`` (another process holds its lock).

    The lock (``out/.<name>.lock``) keeps two runs off one rung; checkpoints are staged in
    ``out/.<name>.checkpoints/`` and moved into the rung by ``save_rung``, so the folder appears complete or not
    at all. A killed run goes on from its last evaluation (``out/.<name>.resume.pt``, ``train``'s
    ``resume_file``), to the weights and checkpoints of an uninterrupted run; ``job.force`` starts at step 0.
    """
    import re

    folder, out = job.folder, job.folder.parent
    out.mkdir(parents=True, exist_ok=True)
    summary = {"name": job.name, "folder": str(folder)}
    try:
        with exclusive_lock(
            out / f".{job.name}.lock",
            what=f"ladder rung {folder}",
            fix="wait for that run to finish, or train into another --out",
        ):
            if folder.exists() and not job.force:
                try:
                    verify_folder(folder)
                except LatentbookError as exc:
                    message = f"{job.name}: {folder} exists but does not verify, left alone ({exc}); --force retrains it"
                    return {**summary, "status": "refused", "message": message}
                return {**summary, "status": "skipped", "message": _skip_message(job)}
            staging = out / f".{job.name}.checkpoints"
            resume = out / f".{job.name}.resume.pt"
            if job.force:
                resume.unlink(missing_ok=True)
            stale = re.compile(rf"\.{re.escape(job.name)}\.\d+\.tmp")
            for path in out.glob(f".{job.name}.*.tmp"):
                if stale.fullmatch(path.name):
                    shutil.rmtree(path, ignore_errors=True)
            remove_stale_temporaries(out, re.escape(resume.name))
            model, log = train(
                job.rung,
                job.spec,
                job.config,
                progress=job.progress,
                threads=1,
                checkpoint_every=job.checkpoint_every,
                checkpoint_dir=staging,
                echo=echo,
                label=job.name,
                resume_file=resume,
            )
            save_rung(model, log, job.spec, folder, staging if job.checkpoint_every else None)
            shutil.rmtree(staging, ignore_errors=True)
            resume.unlink(missing_ok=True)
    except LockedError as exc:
        return {**summary, "status": "busy", "message": f"{job.name}: not trained here: {exc}"}
    accuracy = " ".join(f"{a:.2f}" for a in log.evals[-1]["accuracy"].values())
    n_checkpoints = len(list((folder / CHECKPOINTS).glob("step-*")))
    message = (
        f"{job.name}: trained in {log.seconds:.0f} s, held-out accuracy by hops {accuracy}, "
        f"{n_checkpoints} checkpoints -> {folder}"
    )
    return {**summary, "status": "trained", "message": message, "seconds": log.seconds}


def train_ladder(
    out: str | Path,
    rungs: tuple[Rung, ...] = LADDER,
    spec: TaskSpec = LADDER_SPEC,
    config: TrainConfig = LADDER_CONFIG,
    *,
    seeds: tuple[int, ...] | None = None,
    checkpoint_every: int = 0,
    checkpoint_rungs: tuple[str, ...] | None = None,
    jobs: int = 1,
    force: bool = False,
    progress: bool = True,
    echo: Callable[[str], None] | None = _echo,
) -> list[Path]:
    """Train every rung (at every seed) into ``out`` (``ladder_jobs`` names the folders and the order); returns
        the complete folders, trained now or skipped because they already were.

        ``jobs=K`` trains K rung-seeds at once, each in its own process (spawned) on one thread: the weights are
        those of ``jobs=1``. ``echo`` gets a line at each evaluation and one per finished rung (with ``jobs > 1``
    the processes print their evaluation lines to stdout themselves, whenever ``echo`` is not ``None``). A rung that fails,
        is locked by another run or exists without verifying does not stop the others; ``LatentbookError`` names
        them at the end.
    """
    if jobs < 1:
        raise InvalidInputError(f"jobs must be at least 1, got {jobs}.")
    todo = ladder_jobs(
        out,
        rungs,
        spec,
        config,
        seeds=seeds,
        checkpoint_every=checkpoint_every,
        checkpoint_rungs=checkpoint_rungs,
        force=force,
        progress=progress and jobs == 1,
    )
    say = echo or (lambda line: None)
    results: dict[str, dict] = {}

    def done(job: LadderJob, result: dict) -> None:
        results[job.name] = result
        say(f"[{len(results)}/{len(todo)}] {result['message']}")

    def failed(job: LadderJob, exc: Exception) -> dict:
        return {"name": job.name, "status": "failed", "message": f"{job.name}: failed: {exc!r}"}

    if jobs == 1:
        for job in todo:
            try:
                done(job, train_job(job, echo))
            except Exception as exc:  # noqa: BLE001 - one rung's failure must not stop the others
                done(job, failed(job, exc))
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=min(jobs, len(todo)), mp_context=context) as pool:
            child_echo = _echo if echo is not None else None  # a process prints its own lines
            futures = {pool.submit(train_job, job, child_echo): job for job in todo}
            for future in as_completed(futures):
                job = futures[future]
                try:
                    done(job, future.result())
                except Exception as exc:  # noqa: BLE001 - one rung's failure must not stop the others
                    done(job, failed(job, exc))
    bad = [r for r in results.values() if r["status"] not in ("trained", "skipped")]
    if bad:
        raise LatentbookError(
            f"{len(bad)} of {len(todo)} rungs are not complete: " + "; ".join(r["message"] for r in bad)
        )
    return [job.folder for job in todo]
