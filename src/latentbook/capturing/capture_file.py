"""The capture file format: a safetensors file whose header carries ``FORMAT``, the schema version, the
provenance and a sha256 of every tensor and of the header itself (``digest``); how a header and its tensors are
checked when read (``check_header``, ``check_tensors``), and how home paths and hub tokens are scrubbed from the
provenance before it is written (``scrub``). ``results.Capture.save`` writes it, ``results.load_capture`` reads it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

import torch

from ..errors import CaptureFileError
from .accumulators import OMEGA_BINS

SCHEMA_VERSION = 3  # 2: the checksum also covers the header (provenance, shapes); 3: the header lists depths
READABLE_SCHEMAS = (2, 3)  # a schema-2 file holds every depth 0..L
FORMAT = "latentbook.capture"
TOKEN_ENV_VARS = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HUGGINGFACE_HUB_TOKEN", "HF_API_TOKEN")
TOKEN_PATTERN = re.compile(r"hf_[A-Za-z0-9]{20,}")


def scrub(value: Any) -> Any:
    """``value`` with the home folder written as ``~`` and hub tokens as ``<token>``, in every string inside it."""
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    if not isinstance(value, str):
        return value
    for name in TOKEN_ENV_VARS:
        if os.environ.get(name):
            value = value.replace(os.environ[name], "<token>")
    value = TOKEN_PATTERN.sub("<token>", value)
    home = os.path.expanduser("~").rstrip("/")
    return re.sub(re.escape(home) + r"(?![\w.-])", "~", value) if len(home) > 1 else value


def digest(state: dict[str, torch.Tensor], header: dict) -> str:
    """sha256 over the header (without its ``sha256`` entry) and every tensor's name, dtype, shape and bytes."""
    digest = hashlib.sha256()
    fields = {k: v for k, v in header.items() if k != "sha256"}
    digest.update(json.dumps(fields, sort_keys=True).encode())
    for key in sorted(state):
        tensor = state[key]
        digest.update(f"{key}:{tensor.dtype}:{tuple(tensor.shape)}".encode())
        digest.update(
            tensor.reshape(-1).contiguous().view(torch.uint8).numpy().tobytes() if tensor.numel() else b""
        )
    return digest.hexdigest()


def capture_header(path: str | Path) -> dict | None:
    """The ``latentbook`` header of a safetensors file, read and not verified; None when the file has none.
    Raises whatever safetensors raises on a file it cannot read."""
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        metadata = f.metadata() or {}
    header = json.loads(metadata["latentbook"]) if "latentbook" in metadata else None
    return header if isinstance(header, dict) else None


_HEADER_TYPES = {
    "model_name": str,
    "n_layers": int,
    "d_model": int,
    "has_final_norm": bool,
    "has_attention": bool,
    "provenance": dict,
}


# The provenance entries the report, the verdict and merges read, by the type each holds: a forged or damaged entry
# (versions a string, n_prompts "abc", model_family a list) is refused on load, not met as a crash in the report.
# None is accepted (a setting not recorded), and so is a list of accepted values (a merge keeps both values of an
# allowed setting, and every version and date).
_PROVENANCE_TYPES: dict[str, type | tuple[type, ...]] = {
    "model": str,
    "model_sha256": str,
    "model_family": str,
    "prompt_set_sha256": str,
    "prompt_sha256s": str,
    "merged_prompt_sets": str,
    "n_prompts": int,
    "prompts_done": int,
    "n_parameters": int,
    "max_length": int,
    "batch_size": int,
    "n_vectors": int,
    "n_omega_samples": int,
    "stopped_after_depth": int,
    "exclude_first": bool,
    "attention": bool,
    "precision": str,
    "device": str,
    "dtype": str,
    "date": str,
    "versions": dict,
}


def _holds(value: Any, kind: type | tuple[type, ...]) -> bool:
    """Whether ``value`` is None, a ``kind`` (a non-negative int, never a bool, for ``int``; a dict of strings for
    ``dict``) or a list of such values."""
    if value is None:
        return True
    if isinstance(value, list):
        return all(_holds(v, kind) for v in value)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool) and value >= 0
    if kind is dict:
        return isinstance(value, dict) and all(isinstance(v, (str, type(None))) for v in value.values())
    return isinstance(value, kind)


def check_provenance(path: Path, provenance: dict) -> None:
    """Each entry of ``_PROVENANCE_TYPES`` the provenance holds has its type, or the file is refused naming it."""
    for name, kind in _PROVENANCE_TYPES.items():
        if name in provenance and not _holds(provenance[name], kind):
            expected = {int: "a non-negative integer", dict: "a dict of strings"}.get(
                kind, f"a {kind.__name__}"
            )
            raise CaptureFileError(
                f"{path} has provenance field {name}={provenance[name]!r:.80}, expected {expected} (or a list of "
                "them, as a merge keeps): the file was edited or damaged. Capture again."
            )


def check_header(path: Path, header: dict) -> None:
    """Every header field the reader uses has its type (the provenance's too, ``check_provenance``), the sizes are
    positive and the depths (schema 3) ascend within ``0..n_layers``."""
    for name, kind in _HEADER_TYPES.items():
        value = header.get(name)
        wrong_kind = not isinstance(value, kind) or (kind is int and isinstance(value, bool))
        if wrong_kind or (kind is int and value < 1):
            raise CaptureFileError(
                f"{path} has header field {name}={value!r}, expected a {'positive ' if kind is int else ''}"
                f"{kind.__name__}: the file is inconsistent. Capture again."
            )
    check_provenance(path, header["provenance"])
    if header["schema"] >= 3:
        depths = header.get("depths")
        valid = (
            isinstance(depths, list)
            and depths
            and all(isinstance(v, int) and not isinstance(v, bool) for v in depths)
            and all(a < b for a, b in zip(depths, depths[1:]))
            and 0 <= depths[0]
            and depths[-1] <= header["n_layers"]
        )
        if not valid:
            raise CaptureFileError(
                f"{path} has header field depths={depths!r}, expected ascending integers in "
                f"0..{header['n_layers']}: the file is inconsistent. Capture again."
            )
        every = list(range(header["n_layers"] + 1))
        chosen = header["provenance"].get("depths", every)
        if depths != chosen or (header["has_final_norm"] and depths[-1] != header["n_layers"]):
            raise CaptureFileError(
                f"{path} holds depths {depths} of 0..{header['n_layers']}, but its provenance says depths "
                f"{chosen}{' and it has a final norm (kept only with depth L)' if depths == chosen else ''}: "
                "the file is inconsistent. Capture again."
            )


def header_depths(header: dict) -> list[int]:
    """The depths a verified header's file holds (a schema-2 file: all of them)."""
    return header["depths"] if header["schema"] >= 3 else list(range(header["n_layers"] + 1))


def _layer_spec(d: int) -> dict[str, tuple[tuple[int, ...], torch.dtype]]:
    """Shape and dtype of every tensor of one ``LayerStats`` of width ``d`` (as ``state_dict`` writes it)."""
    f64 = torch.float64
    return {
        "moments.n": ((), torch.int64),
        "moments.mean": ((d,), f64),
        "moments.m2": ((d, d), f64),
        "omega.counts": ((OMEGA_BINS,), f64),
        "omega.power_sums": ((5,), f64),
        "abs.max": ((d,), torch.float32),
        "abs.sum": ((d,), f64),
    }


def _reservoir_spec(n_depths: int, k: int, width: int) -> dict[str, tuple[tuple[int, ...], torch.dtype]]:
    return {
        "capacity": ((), torch.int64),
        "keys": ((k,), torch.float64),
        "prompt_ids": ((k,), torch.int64),
        "positions": ((k,), torch.int64),
        "values": ((n_depths, k, width), torch.float32),
    }


def _expected_tensors(state: dict[str, torch.Tensor], header: dict) -> dict:
    """Name -> (shape, dtype) of every tensor a capture with this header holds (attention: names only)."""
    d, depths = header["d_model"], header_depths(header)
    expected = {}
    for depth in depths:
        expected.update({f"layers.{depth}.{k}": v for k, v in _layer_spec(d).items()})
    if header["has_final_norm"]:
        expected.update({f"final_norm.{k}": v for k, v in _layer_spec(d).items()})
    for name, width in (("vectors", d), ("omega_sample", 1)):
        keys = state.get(f"{name}.keys")
        k = int(keys.shape[0]) if keys is not None and keys.dim() == 1 else -1
        expected.update({f"{name}.{key}": v for key, v in _reservoir_spec(len(depths), k, width).items()})
    return expected


def check_tensors(path: Path, state: dict[str, torch.Tensor], header: dict) -> None:
    """The tensors are exactly those the header describes, with its shapes, and every statistic is finite."""
    expected = _expected_tensors(state, header)
    attention = {k for k in state if k.startswith("attention.")} if header["has_attention"] else set()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected) - attention)
    says = f"its header says n_layers={header['n_layers']}, d_model={header['d_model']}"
    if missing or unexpected or (header["has_attention"] and not attention):
        raise CaptureFileError(
            f"{path} does not hold the tensors {says} (missing {missing[:3]}, unexpected {unexpected[:3]}): "
            "the file is inconsistent. Capture again."
        )
    for name, (shape, dtype) in expected.items():
        tensor = state[name]
        if tuple(tensor.shape) != shape or tensor.dtype != dtype:
            raise CaptureFileError(
                f"{path}: {says}, but {name} is {tensor.dtype} {tuple(tensor.shape)} (expected {dtype} {shape}): "
                "the file is inconsistent. Capture again."
            )
    for name, tensor in state.items():
        bad = int((~torch.isfinite(tensor)).sum()) if tensor.is_floating_point() else 0
        if bad:
            raise CaptureFileError(
                f"{path} holds {bad} NaN/Inf values in {name}: its statistics are unusable (an overflow saved "
                "unchecked, or an edited file). Capture again, in float32 or bfloat16."
            )
    counts = {int(state[f"layers.{depth}.moments.n"]) for depth in header_depths(header)}
    if len(counts) != 1 or min(counts) < 0:
        raise CaptureFileError(
            f"{path} counts {sorted(counts)} tokens at its depths; every depth must see the same tokens. "
            "Capture again."
        )
    check_statistics(path, state, header)


STAT_TOLERANCE = 1e-6  # relative slack for float64 sums that were accumulated in another order


def check_statistics(path: Path, state: dict[str, torch.Tensor], header: dict) -> None:
    """Every statistic is one a capture can hold (a forged file with a recomputed checksum passes the checksum):
    at least one token; at each depth a centred scatter that is symmetric, with a non-negative diagonal and every
    entry within Cauchy-Schwarz of its diagonal (``|M2_ij| <= sqrt(M2_ii M2_jj)``); absolute sums and maxima that
    are non-negative, the maxima at most the sums; Omega's power sums (Omega lies in [0, 1]) non-increasing in the
    power and within Cauchy-Schwarz (``s1^2 <= s0 s2``), with as many tokens as its histogram; a token sample that
    is not all zero; prompt ids in ``0 .. n_prompts - 1``. The error names the file, the depth and the check."""
    tol = STAT_TOLERANCE

    def refuse(depth, what: str) -> None:
        raise CaptureFileError(
            f"{path} holds statistics no capture can have ({what}{'' if depth is None else f' at depth {depth}'}): an "
            "edited or forged file. Capture again."
        )

    depths = header_depths(header)
    n = int(state[f"layers.{depths[0]}.moments.n"])
    if n < 1:
        refuse(None, f"{n} tokens")
    for depth in depths:
        prefix = f"layers.{depth}."
        m2 = state[prefix + "moments.m2"]
        scale = float(m2.abs().max()) or 1.0
        if float((m2 - m2.T).abs().max()) > tol * scale:
            refuse(depth, "an asymmetric second moment")
        diagonal = torch.diagonal(m2)
        if float(diagonal.min()) < -tol * scale:
            refuse(depth, "a negative variance")
        bound = torch.sqrt(torch.clamp(diagonal, min=0.0))
        if bool((m2.abs() > torch.outer(bound, bound) * (1 + tol) + tol * scale).any()):
            refuse(depth, "a covariance beyond Cauchy-Schwarz")
        abs_sum, abs_max = state[prefix + "abs.sum"], state[prefix + "abs.max"].to(torch.float64)
        if float(abs_sum.min()) < 0 or float(abs_max.min()) < 0:
            refuse(depth, "a negative absolute value")
        if bool((abs_max > abs_sum * (1 + tol) + tol).any()):
            refuse(depth, "a largest absolute value above the sum of them")
        p = state[prefix + "omega.power_sums"]
        hist = float(state[prefix + "omega.counts"].sum())
        if not (float(p[0]) >= 1 and abs(hist - float(p[0])) <= tol * float(p[0]) + 0.5):
            refuse(depth, f"Omega over {float(p[0]):g} tokens with a histogram of {hist:g}")
        if float(p.min()) < 0 or bool((p[1:] > p[:-1] * (1 + tol) + tol).any()):
            refuse(depth, "Omega's power sums are not those of values in [0, 1]")
        if float(p[1]) ** 2 > float(p[0]) * float(p[2]) * (1 + tol) + tol:
            refuse(depth, "Omega's power sums beyond Cauchy-Schwarz")
    vectors = state["vectors.values"]
    if vectors.numel() and not bool(vectors.abs().gt(0).any()):
        refuse(None, "a token sample of zeros only")
    prompts = header.get("provenance", {}).get("n_prompts")
    for name in ("vectors.prompt_ids", "omega_sample.prompt_ids"):
        ids = state[name]
        if ids.numel() and (int(ids.min()) < 0 or (prompts is not None and int(ids.max()) >= int(prompts))):
            refuse(None, f"{name} outside 0 .. {prompts} - 1")
