"""The ``Capture``: per-depth streamed statistics of one model on one prompt set, with provenance.

Saved as one safetensors file whose header carries the JSON provenance, a schema version and a sha256
of every tensor and of the header itself; written atomically, verified on load. Home paths and hub tokens
are scrubbed from the provenance before it is written.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .._files import atomic_write
from ..errors import CaptureFileError, InvalidInputError
from .accumulators import LayerStats, TokenReservoir

SCHEMA_VERSION = 2  # 2: the checksum also covers the header (provenance, shapes)
FORMAT = "latentbook.capture"
TOKEN_ENV_VARS = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HUGGINGFACE_HUB_TOKEN", "HF_API_TOKEN")
TOKEN_PATTERN = re.compile(r"hf_[A-Za-z0-9]{20,}")


@dataclass
class Capture:
    """Streamed statistics at depths ``l = 0..L`` (``gamma = l / L``) plus the final-norm output.

    ``layers[l]`` holds the residual stream *before* the final norm (depth 0 is the first layer's input);
    ``final_norm`` holds the final norm's output (what ``hidden_states[-1]`` of transformers shows), if any.
    """

    model_name: str
    n_layers: int
    d_model: int
    layers: list[LayerStats]
    final_norm: LayerStats | None
    vectors: TokenReservoir  # sampled token vectors at every depth, (L+1, k, d)
    omega_sample: TokenReservoir  # sampled per-token Omega at every depth, (L+1, k, 1)
    provenance: dict[str, Any] = field(default_factory=dict)
    attention: Any = None  # AttentionStats when captured with attention=True

    # --- depth ------------------------------------------------------------------------------------------
    @property
    def gamma(self) -> np.ndarray:
        """Depth as time: ``gamma = l / L`` for ``l = 0..L``."""
        return np.arange(self.n_layers + 1) / self.n_layers

    @property
    def n_depths(self) -> int:
        return self.n_layers + 1

    @property
    def n_tokens(self) -> int:
        return self.layers[0].n

    def _layer(self, layer: int) -> LayerStats:
        if not isinstance(layer, (int, np.integer)) or not -self.n_depths <= layer < self.n_depths:
            raise InvalidInputError(
                f"Layer {layer!r} is out of range: this capture of {self.model_name} has depths 0..{self.n_layers} "
                f"(gamma = l/{self.n_layers}); negative indices count from the end."
            )
        return self.layers[int(layer)]

    # --- read-outs -----------------------------------------------------------------------------------------
    def mean(self, layer: int) -> np.ndarray:
        return self._layer(layer).moments.mean.cpu().numpy()

    def covariance(self, layer: int) -> np.ndarray:
        """Centred covariance ``C^(l) = E[(h - mu)(h - mu)^T]`` over captured tokens (float64)."""
        return self._layer(layer).moments.covariance().cpu().numpy()

    def second_moment(self, layer: int) -> np.ndarray:
        """Uncentred second moment ``E[h h^T]`` (float64)."""
        return self._layer(layer).moments.second_moment().cpu().numpy()

    def eigvals(self, layer: int, centered: bool = True) -> np.ndarray:
        """Eigenvalues of the covariance (or of ``E[hh^T]`` when ``centered=False``), descending, float64."""
        matrix = self.covariance(layer) if centered else self.second_moment(layer)
        return np.linalg.eigvalsh(matrix)[::-1].copy()

    def all_eigvals(self, centered: bool = True) -> np.ndarray:
        """Eigenvalues of every depth at once, shape ``(L+1, d)``, descending (one batched ``eigvalsh``)."""
        stack = torch.stack(
            [(s.moments.covariance() if centered else s.moments.second_moment()).cpu() for s in self.layers]
        )
        return torch.linalg.eigvalsh(stack).flip(-1).numpy()

    def omega_mean(self) -> np.ndarray:
        """The order parameter ``m(gamma)``: mean Omega over tokens at each depth."""
        return np.array([s.omega.mean for s in self.layers])

    def omega_std(self) -> np.ndarray:
        return np.array([np.sqrt(s.omega.central_moments()[0]) for s in self.layers])

    def omega_histogram(self, layer: int) -> tuple[np.ndarray, np.ndarray]:
        """Bin edges and counts of per-token Omega at ``layer``."""
        stats = self._layer(layer).omega
        return stats.edges(), stats.counts.cpu().numpy()

    def omega_samples(self, layer: int) -> np.ndarray:
        """Per-token Omega of the sampled tokens at ``layer`` (a uniform sample of all captured tokens)."""
        self._layer(layer)
        return self.omega_sample.values[int(layer), :, 0].numpy().astype(np.float64)

    def token_vectors(self, layer: int) -> np.ndarray:
        """Sampled token vectors at ``layer``, shape ``(k, d)``; the same tokens at every depth."""
        self._layer(layer)
        return self.vectors.values[int(layer)].numpy()

    def abs_max(self, layer: int) -> np.ndarray:
        """Per-coordinate ``max |h_i|`` over captured tokens (massive activations show up here)."""
        return self._layer(layer).abs.max.cpu().numpy()

    def abs_mean(self, layer: int) -> np.ndarray:
        stats = self._layer(layer)
        return (stats.abs.sum / max(stats.n, 1)).cpu().numpy()

    # --- combining --------------------------------------------------------------------------------------------
    def merge(self, other: Capture) -> None:
        """Add another capture of the same model (exact: sums, Chan updates and bottom-k reservoirs)."""
        if (other.model_name, other.n_layers, other.d_model) != (
            self.model_name,
            self.n_layers,
            self.d_model,
        ):
            raise InvalidInputError(
                f"Cannot merge a capture of {other.model_name} into one of {self.model_name}."
            )
        for mine, theirs in zip(self.layers, other.layers):
            mine.merge(theirs)
        if self.final_norm is not None and other.final_norm is not None:
            self.final_norm.merge(other.final_norm)
        self.vectors.merge(other.vectors)
        self.omega_sample.merge(other.omega_sample)
        if self.attention is not None and other.attention is not None:
            self.attention.merge(other.attention)

    # --- files ------------------------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, torch.Tensor]:
        state: dict[str, torch.Tensor] = {}
        for depth, stats in enumerate(self.layers):
            state.update({f"layers.{depth}.{k}": v for k, v in stats.state_dict().items()})
        if self.final_norm is not None:
            state.update({f"final_norm.{k}": v for k, v in self.final_norm.state_dict().items()})
        state.update({f"vectors.{k}": v for k, v in self.vectors.state_dict().items()})
        state.update({f"omega_sample.{k}": v for k, v in self.omega_sample.state_dict().items()})
        if self.attention is not None:
            state.update({f"attention.{k}": v for k, v in self.attention.state_dict().items()})
        return {k: v.detach().cpu().contiguous() for k, v in state.items()}

    def save(self, path: str | Path) -> Path:
        """Write atomically: safetensors with the provenance, schema version and tensor checksum in its header."""
        from safetensors.torch import save_file

        state = self.state_dict()
        header = {
            "format": FORMAT,
            "schema": SCHEMA_VERSION,
            "model_name": scrub(self.model_name),
            "n_layers": self.n_layers,
            "d_model": self.d_model,
            "has_final_norm": self.final_norm is not None,
            "has_attention": self.attention is not None,
            "provenance": scrub(json.loads(json.dumps(self.provenance, default=str))),
        }
        header["sha256"] = _digest(state, header)
        metadata = {"latentbook": json.dumps(header, sort_keys=True)}
        return atomic_write(path, lambda tmp: save_file(state, str(tmp), metadata=metadata))


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


def _digest(state: dict[str, torch.Tensor], header: dict) -> str:
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


def _sub(state: dict[str, torch.Tensor], prefix: str) -> dict[str, torch.Tensor]:
    return {k[len(prefix) :]: v for k, v in state.items() if k.startswith(prefix)}


def load_capture(path: str | Path) -> Capture:
    """Read a capture written by ``Capture.save``; verifies format, schema version and checksum."""
    from safetensors import safe_open
    from safetensors.torch import load_file

    path = Path(path)
    if not path.is_file():
        raise CaptureFileError(
            f"No capture file at {path}. Create one with lb.capture(...).save(path) or `latentbook capture`."
        )
    try:
        with safe_open(str(path), framework="pt") as f:
            metadata = f.metadata() or {}
        header = json.loads(metadata["latentbook"]) if "latentbook" in metadata else None
        state = load_file(str(path))
    except Exception as exc:
        raise CaptureFileError(
            f"{path} is not a readable latentbook capture (truncated or corrupt: {exc}). Delete it and capture again."
        ) from exc
    if not isinstance(header, dict):
        raise CaptureFileError(
            f"{path} is a safetensors file but not a latentbook capture (no latentbook header). "
            "Pass a file written by Capture.save or `latentbook capture`."
        )
    if header.get("format") != FORMAT or header.get("schema") != SCHEMA_VERSION:
        raise CaptureFileError(
            f"{path} has format {header.get('format')!r} schema {header.get('schema')!r}; this latentbook reads "
            f"{FORMAT!r} schema {SCHEMA_VERSION}. Capture again with this version."
        )
    if _digest(state, header) != header.get("sha256"):
        raise CaptureFileError(f"{path} failed its checksum: the file was altered or damaged. Capture again.")
    n_layers, d = int(header["n_layers"]), int(header["d_model"])
    layers = []
    for depth in range(n_layers + 1):
        stats = LayerStats(d)
        stats.load_state_dict(_sub(state, f"layers.{depth}."))
        layers.append(stats)
    final_norm = None
    if header["has_final_norm"]:
        final_norm = LayerStats(d)
        final_norm.load_state_dict(_sub(state, "final_norm."))
    vectors, omega_sample = TokenReservoir(0, n_layers + 1, d), TokenReservoir(0, n_layers + 1, 1)
    vectors.load_state_dict(_sub(state, "vectors."))
    omega_sample.load_state_dict(_sub(state, "omega_sample."))
    attention = None
    if header["has_attention"]:
        from .attention import AttentionStats

        attention = AttentionStats.from_state_dict(_sub(state, "attention."))
    return Capture(
        header["model_name"],
        n_layers,
        d,
        layers,
        final_norm,
        vectors,
        omega_sample,
        header["provenance"],
        attention,
    )
