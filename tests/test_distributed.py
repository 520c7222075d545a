"""Data-parallel capture under torchrun (gloo on this CPU) equals the single-process capture."""

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import latentbook as lb

ARGS = ["random:llama-tiny", "--prompts", "general", "--max-prompts", "32", "--batch-size", "4"]


def _torchrun(n: int, out: Path, *extra: str) -> None:
    torchrun = shutil.which("torchrun") or str(Path(sys.executable).parent / "torchrun")
    cmd = [
        torchrun,
        "--standalone",
        f"--nproc_per_node={n}",
        "-m",
        "latentbook",
        "capture",
        *ARGS,
        "--distributed",
        "--out",
        str(out),
        *extra,
    ]
    proc = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=600,
        env={**__import__("os").environ, "OMP_NUM_THREADS": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"-> {out}" in proc.stdout
    assert not list(out.parent.glob("*.partial*")), (
        "every rank removes its checkpoint once the result is saved"
    )


def _single(out: Path, *extra: str) -> lb.Capture:
    from latentbook.cli import main

    assert main(["capture", *ARGS, "--out", str(out), *extra]) == 0
    return lb.load_capture(out)


def _max_rel(a: lb.Capture, b: lb.Capture) -> float:
    worst = 0.0
    for depth in range(a.n_depths):
        for x, y in ((a.covariance(depth), b.covariance(depth)), (a.mean(depth), b.mean(depth))):
            worst = max(worst, float(np.abs(x - y).max() / np.abs(y).max()))
    return worst


@pytest.mark.parametrize("ranks", [2, 3])
def test_float64_accumulation_matches_single_process(tmp_path, ranks):
    extra = ("--dtype", "float64", "--precision", "float64")
    single = _single(tmp_path / "single.safetensors", *extra)
    _torchrun(ranks, tmp_path / "multi.safetensors", *extra)
    multi = lb.load_capture(tmp_path / "multi.safetensors")
    assert multi.n_tokens == single.n_tokens and multi.provenance["world_size"] == ranks
    assert multi.provenance["prompts_done"] == 32
    assert _max_rel(multi, single) < 1e-9
    # the reservoirs hold exactly the same tokens: keys depend on (prompt, position), not on the rank
    np.testing.assert_array_equal(multi.vectors.keys, single.vectors.keys)
    np.testing.assert_allclose(multi.token_vectors(1), single.token_vectors(1), rtol=1e-10)
    np.testing.assert_array_equal(multi.layers[1].omega.counts.numpy(), single.layers[1].omega.counts.numpy())


def test_float32_grams_match_within_1e_6(tmp_path):
    single = _single(tmp_path / "single.safetensors")
    _torchrun(2, tmp_path / "multi.safetensors")
    assert _max_rel(lb.load_capture(tmp_path / "multi.safetensors"), single) < 1e-6


def test_distributed_without_torchrun_is_a_clear_error(tiny, monkeypatch):
    for var in ("RANK", "WORLD_SIZE"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(lb.InvalidInputError, match="torchrun"):
        lb.capture(tiny, ["a prompt"], distributed=True, progress=False)
