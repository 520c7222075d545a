"""``latentbook plan``: parameter counts of the shipped public configs, and predicted accumulator bytes equal to
what a real capture allocates."""

import json
from pathlib import Path

import numpy as np
import pytest
import torch

import latentbook as lb
from latentbook.capturing import plan as planning
from latentbook.cli import main
from latentbook.errors import InvalidInputError, ModelUnavailableError

from .conftest import SHORT_PROMPTS

# Published sizes (model cards): Qwen2.5 1.54B / 7.61B / 32.5B ("32.5B", 32.76B counted), Gemma 2 27.2B,
# Llama 3 70.6B.
PUBLISHED = {
    "Qwen/Qwen2.5-1.5B": 1.54e9,
    "Qwen/Qwen2.5-7B": 7.6e9,
    "Qwen/Qwen2.5-32B": 32.8e9,
    "google/gemma-2-27b": 27.2e9,
    "meta-llama/Meta-Llama-3-70B": 70.6e9,
}


def test_the_five_public_configs_are_shipped_as_package_data():
    assert set(planning.shipped_configs()) == set(PUBLISHED)
    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    section = pyproject.split("[tool.setuptools.package-data]")[1].strip().splitlines()[0]
    assert section.startswith("latentbook = [") and '"capturing/configs/*.json"' in section


@pytest.mark.parametrize("hub_id", sorted(PUBLISHED))
def test_parameter_counts_match_the_published_sizes(hub_id):
    config = planning.read_config(hub_id)
    assert config.n_parameters == pytest.approx(PUBLISHED[hub_id], rel=0.02)
    assert (
        config.n_parameters == sum(config.layer_parameters) + config.first_parameters + config.last_parameters
    )


def test_parameter_count_equals_the_loaded_model(tiny):
    config = planning.read_config("random:llama-tiny")
    assert config.n_parameters == sum(p.numel() for p in tiny.model.parameters())
    assert (config.n_layers, config.d_model) == (tiny.n_layers, tiny.d_model)


def _allocated(cap) -> dict[str, int]:
    """Bytes of every tensor and array the capture's accumulators hold, found by walking their attributes
    (independently of the ``nbytes`` helpers the plan is checked against)."""
    held: dict[str, int] = {}

    def count(value):
        if isinstance(value, torch.Tensor):
            key = "host" if value.device.type == "cpu" else str(value.device)
            held[key] = held.get(key, 0) + value.numel() * value.element_size()
        elif isinstance(value, np.ndarray):
            held["host"] = held.get("host", 0) + value.nbytes
        elif isinstance(value, (list, tuple)):
            for item in value:
                count(item)
        elif isinstance(value, dict):
            for item in value.values():
                count(item)

    stats = [*cap.layers, *([cap.final_norm] if cap.final_norm is not None else [])]
    for part in [p for s in stats for p in (s.moments, s.omega, s.abs)] + [cap.vectors, cap.omega_sample]:
        for value in vars(part).values():
            count(value)
    if cap.attention is not None:
        count(cap.attention.sums)
    return held


@pytest.mark.parametrize(
    "model, settings",
    [
        ("random:llama-tiny", {}),
        ("random:llama-tiny", {"depths": [1]}),  # no final norm, the forward stops after layer 1
        ("random:gemma-tiny", {"depths": "0.0,1.0", "precision": "float64"}),
        ("random:llama-tiny", {"attention": True}),
    ],
    ids=["all depths", "depth 1", "gemma, float64 Grams", "attention"],
)
def test_predicted_accumulator_bytes_equal_a_real_capture(model, settings):
    loaded = lb.load_model(model)
    cap = lb.capture(
        loaded, SHORT_PROMPTS * 4, batch_size=4, n_vectors=16, n_omega_samples=32, progress=False, **settings
    )
    assert cap.n_tokens > 32  # the reservoirs are full, and several batches ran (the last one pending)
    assert all(s.moments._m2 is not None and s.moments._gram is not None for s in cap.layers)
    planned = planning.make_plan(
        model, gpus=0, gpu_mem_gib=4, batch_size=4, n_vectors=16, n_omega_samples=32, **settings
    )
    assert planned.accumulator_bytes() == _allocated(cap)
    by_helpers = {}
    for stats in [*cap.layers, *([cap.final_norm] if cap.final_norm is not None else [])]:
        for device, size in stats.nbytes().items():
            by_helpers[device] = by_helpers.get(device, 0) + size
    by_helpers["host"] += cap.vectors.nbytes() + cap.omega_sample.nbytes()
    if cap.attention is not None:
        by_helpers["host"] += sum(v.numel() * 8 for v in cap.attention.sums.values())
    assert by_helpers == _allocated(cap)


def test_a_gpu_plan_puts_the_float64_sums_on_the_host_and_the_grams_on_the_layers_devices():
    d, layers = 5120, 64
    one = planning.make_plan("Qwen/Qwen2.5-32B", gpus=1, gpu_mem_gib=80)
    acc = one.accumulator_bytes()
    depths = layers + 2  # 0..L and the final norm
    assert acc["host"] >= depths * 8 * d * d and acc["cuda:0"] >= depths * 4 * d * d
    assert acc["cuda:0"] < depths * 4 * d * d + depths * 64 * d  # only the Gram is d x d on the device
    two = planning.make_plan("Qwen/Qwen2.5-32B", gpus=2, gpu_mem_gib=80)
    assert two.accumulator_bytes()["host"] == acc["host"]
    assert sum(v for k, v in two.accumulator_bytes().items() if k != "host") == acc["cuda:0"]
    assert 0 < two.static_bytes("cuda:1") < one.static_bytes("cuda:0")


def test_plan_verdicts_say_why():
    fits = planning.make_plan("Qwen/Qwen2.5-32B", gpus=1, gpu_mem_gib=80)
    assert fits.fits and fits.max_batch_size >= 16 and fits.verdict.startswith("fits:")
    small = planning.make_plan("Qwen/Qwen2.5-32B", gpus=1, gpu_mem_gib=40)
    assert not small.fits and small.max_batch_size == 0
    assert "does not fit, because the weights" in small.verdict and "--gpus 2" in small.verdict
    big_batch = planning.make_plan("Qwen/Qwen2.5-7B", gpus=1, gpu_mem_gib=24, batch_size=4096)
    assert not big_batch.fits and 0 < big_batch.max_batch_size < 4096
    assert f"--batch-size {big_batch.max_batch_size} or less" in big_batch.verdict
    assert planning.make_plan(
        "Qwen/Qwen2.5-7B", gpus=1, gpu_mem_gib=24, batch_size=big_batch.max_batch_size
    ).fits
    fewer = planning.make_plan("Qwen/Qwen2.5-32B", gpus=1, gpu_mem_gib=80, depths="0.25,0.5,0.75")
    assert fewer.depths == (16, 32, 48) and fewer.max_batch_size > fits.max_batch_size
    text = fits.to_text()
    assert "cuda:0" in text and "host" in text and "pending Grams (float32)" in text and fits.verdict in text


def test_plan_reads_a_config_file_or_folder(tmp_path):
    data = json.loads(planning.shipped_configs()["Qwen/Qwen2.5-1.5B"].read_text())
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(data))
    by_folder = planning.read_config(str(folder))
    by_file = planning.read_config(str(folder / "config.json"))
    assert by_folder.n_parameters == by_file.n_parameters == planning.read_config("Qwen2.5-1.5B").n_parameters
    with pytest.raises(ModelUnavailableError, match="No config for"):
        planning.read_config("nobody/nothing-here")
    with pytest.raises(InvalidInputError, match="out of range"):
        planning.make_plan(str(folder), depths=[29])


def test_plan_command(capsys):
    assert main(["plan", "Qwen/Qwen2.5-32B", "--gpus", "1", "--gpu-mem", "80"]) == 0
    out = capsys.readouterr().out
    assert "fits:" in out and "float64 sums" in out
    assert main(["plan", "Qwen/Qwen2.5-32B", "--depths", "0,0.5"]) == 2
    assert "mixes depth indices" in capsys.readouterr().err
