"""Data-parallel capture under ``torchrun``: each rank captures a shard, then the ranks merge exactly.

    torchrun --standalone --nproc_per_node=4 -m latentbook capture MODEL --prompts general --distributed --out X

Rank ``r`` of ``w`` takes prompts ``i`` with ``i % w == r`` (deterministic). Every accumulator is gathered
from all ranks and merged in rank order with the same exact ``merge`` that batches and checkpoints use
(Chan et al. for the moments, sums for histograms, smallest keys for the reservoirs), so the result equals a
single-process capture up to the rounding of the model's own forward. Uses gloo on CPU and nccl on GPU.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch
import torch.distributed as torch_dist

from ..errors import InvalidInputError


def init() -> None:
    """Join the process group that ``torchrun`` describes in the environment (once)."""
    if torch_dist.is_initialized():
        return
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        raise InvalidInputError(
            "distributed=True needs the environment torchrun sets (RANK, WORLD_SIZE, MASTER_ADDR...). Launch with "
            "`torchrun --standalone --nproc_per_node=N -m latentbook capture ... --distributed`."
        )
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
    torch_dist.init_process_group(backend=backend)


def rank_and_world() -> tuple[int, int]:
    init()
    return torch_dist.get_rank(), torch_dist.get_world_size()


def rank_checkpoint(path: Path, rank: int, world: int) -> Path:
    """Each rank checkpoints its own shard beside the others: ``X.partial.rank1-of-4``."""
    return path if world == 1 else path.with_name(f"{path.name}.rank{rank}-of-{world}")


def barrier() -> None:
    if torch_dist.is_initialized():
        torch_dist.barrier()


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
    torch_dist.all_gather_object(gathered, obj)
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
