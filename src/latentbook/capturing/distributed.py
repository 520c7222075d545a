"""Data-parallel capture under ``torchrun``: each rank captures a shard, then the ranks merge exactly::

    torchrun --standalone --nproc_per_node=4 -m latentbook capture MODEL --prompts general --distributed --out X

Rank ``r`` of ``w`` takes prompts ``i`` with ``i % w == r`` (deterministic). Every accumulator is gathered
from all ranks and merged in rank order with the same exact ``merge`` that batches and checkpoints use
(Chan et al. for the moments, sums for histograms, smallest keys for the reservoirs), so the result equals a
single-process capture up to the rounding of the model's own forward. Uses gloo on CPU and nccl on GPU.
"""

from __future__ import annotations

import datetime as _dt
import glob
import os
import re
from pathlib import Path

import torch
import torch.distributed as torch_dist

from ..errors import CheckpointMismatchError, InvalidInputError, RendezvousError

LAUNCH = "`torchrun --standalone --nproc_per_node=N -m latentbook capture ... --distributed`"
RENDEZVOUS_TIMEOUT_S = 300  # how long a rank waits for the others to join; LATENTBOOK_RENDEZVOUS_TIMEOUT
MAX_RENDEZVOUS_TIMEOUT_S = 365 * 24 * 3600  # the longest wait LATENTBOOK_RENDEZVOUS_TIMEOUT may ask
COLLECTIVE_TIMEOUT = _dt.timedelta(minutes=30)  # how long a finished rank waits for the slowest one
_collectives = None  # the group the merge runs in (its own timeout, not the rendezvous one)


def init() -> None:
    """Join the process group that ``torchrun`` describes in the environment (once).

    The ranks must all arrive within the rendezvous timeout; a rank alone (``RANK`` / ``WORLD_SIZE`` set by
    hand) gets a ``RendezvousError`` then, not a silent wait.
    """
    global _collectives
    if torch_dist.is_initialized():
        return
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        raise InvalidInputError(
            f"distributed=True needs the environment torchrun sets (RANK, WORLD_SIZE, MASTER_ADDR...). Launch "
            f"with {LAUNCH}."
        )
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
    timeout = _rendezvous_timeout()
    try:
        torch_dist.init_process_group(backend=backend, timeout=timeout)
    except ValueError as exc:  # MASTER_ADDR / MASTER_PORT missing or malformed
        raise InvalidInputError(f"distributed=True could not start ({exc}). Launch with {LAUNCH}.") from exc
    except RuntimeError as exc:  # DistStoreError / DistNetworkError: the other ranks never came
        raise RendezvousError(
            f"Rank {os.environ['RANK']} of WORLD_SIZE={os.environ['WORLD_SIZE']} waited "
            f"{timeout.total_seconds():.0f} s and the other ranks never joined ({exc}). Launch every rank with "
            f"{LAUNCH}, or unset RANK and WORLD_SIZE for a single-process capture "
            "(LATENTBOOK_RENDEZVOUS_TIMEOUT sets the wait in seconds)."
        ) from exc
    _collectives = torch_dist.new_group(timeout=COLLECTIVE_TIMEOUT)


def _rendezvous_timeout() -> _dt.timedelta:
    text = os.environ.get("LATENTBOOK_RENDEZVOUS_TIMEOUT", str(RENDEZVOUS_TIMEOUT_S))
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    # inf or 1e20 would overflow the timedelta (an OverflowError, not this message)
    if not 0 < seconds <= MAX_RENDEZVOUS_TIMEOUT_S:
        raise InvalidInputError(
            f"LATENTBOOK_RENDEZVOUS_TIMEOUT must be a positive number of seconds, at most "
            f"{MAX_RENDEZVOUS_TIMEOUT_S} (a year), got {text!r}."
        )
    return _dt.timedelta(seconds=seconds)


def rank_and_world() -> tuple[int, int]:
    init()
    return torch_dist.get_rank(), torch_dist.get_world_size()


def rank_checkpoint(path: Path, rank: int, world: int) -> Path:
    """Each rank checkpoints its own shard beside the others: ``X.partial.rank1-of-4``."""
    return path if world == 1 else path.with_name(f"{path.name}.rank{rank}-of-{world}")


def other_world_partials(path: Path, world: int) -> list[Path]:
    """Checkpoints of ``path`` left by a run of another number of processes (``path`` itself is of 1)."""
    found = [path] if world != 1 and path.exists() else []
    rank_file = re.compile(re.escape(path.name) + r"\.rank(\d+)-of-(\d+)")
    for candidate in path.parent.glob(glob.escape(path.name) + ".rank*-of-*"):
        match = rank_file.fullmatch(candidate.name)
        if match and int(match[2]) != world:
            found.append(candidate)
    return sorted(found)


def refuse_other_world_partials(path: Path, world: int) -> None:
    """Stop before any work when checkpoints of another world size exist: their shards are not this run's."""
    others = other_world_partials(path, world)
    if not others:
        return
    worlds = sorted({int(m[1]) if (m := re.search(r"-of-(\d+)$", p.name)) else 1 for p in others})
    names = ", ".join(p.name for p in others)
    relaunch = " or ".join(
        "without --distributed (1 process)" if w == 1 else f"with torchrun --nproc_per_node={w}"
        for w in worlds
    )
    raise CheckpointMismatchError(
        f"{names} in {path.parent} were written by a run of {' / '.join(map(str, worlds))} process(es), and this "
        f"run has {world}: each process's shard of the prompts depends on the number of processes. Resume "
        f"{relaunch}, or delete those files to start over."
    )


def barrier() -> None:
    if torch_dist.is_initialized():
        torch_dist.barrier(group=_collectives)


def first_error(error: BaseException | None) -> BaseException | None:
    """The error of the lowest rank that has one, on every rank (so all ranks stop together), or None."""
    if not torch_dist.is_initialized() or torch_dist.get_world_size() == 1:
        return error
    errors = _gather(error, torch_dist.get_world_size())
    return next((e for e in errors if e is not None), None)


def is_main_process() -> bool:
    return not torch_dist.is_initialized() or torch_dist.get_rank() == 0


def merge_across_ranks(capture) -> None:
    """Replace every rank's accumulators in ``capture`` by the exact merge of all ranks' (in rank order).

    Layer by layer, so peak memory is ``world`` copies of one layer's statistics, not of the whole capture.
    """
    world = torch_dist.get_world_size()
    if world == 1:
        return
    parts = [*capture.layers, *([capture.final_norm] if capture.final_norm is not None else [])]
    for stats in parts:
        stats.load_state_dict(
            _merged(stats.state_dict(), world, lambda stats=stats: type(stats)(capture.d_model))
        )
    for reservoir in (capture.vectors, capture.omega_sample):
        reservoir.load_state_dict(
            _merged(reservoir.state_dict(), world, lambda reservoir=reservoir: type(reservoir)(0, 0, 0))
        )
    if capture.attention is not None:
        stats_type = type(capture.attention)
        gathered = _gather(capture.attention.state_dict(), world)
        merged = stats_type.from_state_dict(gathered[0])
        for state in gathered[1:]:
            merged.merge(stats_type.from_state_dict(state))
        capture.attention = merged
    capture.provenance["prompts_done"] = int(sum(_gather(capture.provenance.get("prompts_done", 0), world)))
    capture.provenance["world_size"] = world


def _gather(obj, world: int) -> list:
    gathered = [None] * world
    torch_dist.all_gather_object(gathered, obj, group=_collectives)
    return gathered


def _merged(state: dict, world: int, empty) -> dict:
    """Gather one accumulator's state from every rank and merge them in rank order."""
    gathered = _gather(state, world)
    merged = empty()
    merged.load_state_dict(gathered[0])
    for other_state in gathered[1:]:
        other = empty()
        other.load_state_dict(other_state)
        merged.merge(other)
    return merged.state_dict()
