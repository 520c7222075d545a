"""The ``Capture``: per-depth streamed statistics of one model on one prompt set, with provenance.

Saved as one safetensors file whose header carries the JSON provenance, a schema version and a sha256
of every tensor and of the header itself; written atomically, verified on load. Home paths and hub tokens
are scrubbed from the provenance before it is written. The format and its checks: ``capture_file``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .._files import atomic_write
from ..errors import CaptureFileError, InvalidInputError, OutputExistsError
from .accumulators import LayerStats, TokenReservoir
from .capture_file import (
    FORMAT,
    READABLE_SCHEMAS,
    SCHEMA_VERSION,
    capture_header,
    check_header,
    check_tensors,
    digest,
    header_depths,
    scrub,
)
from .merging import check_mergeable, merge_provenance
from .settings import check_flags


@dataclass
class Capture:
    """Streamed statistics at depths ``l = 0..L`` (``gamma = l / L``) plus the final-norm output.

    ``layers[i]`` holds the residual stream at depth ``depths[i]``, *before* the final norm (depth 0 is the
    first layer's input); ``final_norm`` holds the final norm's output (what ``hidden_states[-1]`` of
    transformers shows), if any. ``depths`` is every depth ``0..L`` unless the capture was asked for some
    (``lb.capture(..., depths=...)``): then ``gamma``, the read-outs and the reservoirs cover those depths
    only, and every read-out taking a ``layer`` takes the model's depth ``l`` and refuses one not held
    (``InvalidInputError``, as ``index_of`` does for a depth out of range).

    Attributes
    ----------
    model_name : str
        The model captured (``lb.models()`` name, folder or hub id).
    n_layers : int
        Its layer count ``L``.
    d_model : int
        Its width ``d``.
    layers : list of LayerStats
        The streamed statistics, one per depth held, in the order of ``depths``.
    final_norm : LayerStats or None
        The statistics of the final norm's output; None for a model without one.
    vectors : TokenReservoir
        Sampled token vectors at every depth held, ``(n_depths, k, d)``.
    omega_sample : TokenReservoir
        Sampled per-token Omega at every depth held, ``(n_depths, k, 1)``.
    provenance : dict
        How the capture was made: model, weights' and prompts' sha256, settings, versions.
    attention : AttentionStats or None
        Attention statistics when captured with ``attention=True``.
    depths : numpy.ndarray
        The depths held, ascending (every depth ``0..L`` unless some were asked for).

    Examples
    --------
    ``lb.capture`` makes one; here one is put together from streamed Gaussian vectors (``d = 8``) at depths 0
    and 4 of a 4-layer model, so a read-out at depth 2 is refused:

    >>> import numpy as np
    >>> import torch
    >>> from latentbook.capturing import Capture, LayerStats, TokenReservoir
    >>> layers = [LayerStats(8), LayerStats(8)]
    >>> for stats in layers:
    ...     omega = stats.add(torch.randn(100, 8, generator=torch.Generator().manual_seed(0)))
    >>> cap = Capture("toy", n_layers=4, d_model=8, layers=layers, final_norm=None, vectors=TokenReservoir(16, 2, 8),
    ...               omega_sample=TokenReservoir(16, 2, 1), depths=[0, 4])
    >>> cap.depths, cap.gamma, cap.complete, cap.n_tokens
    (array([0, 4]), array([0., 1.]), False, 100)
    >>> cap.index_of(-1), cap.mean(4).shape, np.round(cap.omega_mean(), 2)
    (1, (8,), array([0.18, 0.18]))
    >>> cap.mean(2)
    Traceback (most recent call last):
    ...
    latentbook.errors.InvalidInputError: Depth 2 is not in this capture of toy: it holds depths [0, 4] of 0..4 ...
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
    depths: np.ndarray | None = None  # the depths held, ascending; None: every depth 0..L

    def __post_init__(self) -> None:
        every = np.arange(self.n_layers + 1)
        depths = every if self.depths is None else np.asarray(self.depths, dtype=np.int64).reshape(-1)
        if (
            len(depths) == 0
            or np.any(np.diff(depths) <= 0)
            or depths[0] < 0
            or depths[-1] > self.n_layers
            or len(depths) != len(self.layers)
        ):
            raise InvalidInputError(
                f"A Capture needs one LayerStats per depth and depths ascending in 0..{self.n_layers}; got "
                f"{len(self.layers)} LayerStats for depths {depths.tolist()}."
            )
        self.depths = depths

    # --- depth ------------------------------------------------------------------------------------------
    @property
    def gamma(self) -> np.ndarray:
        """Depth as time: ``gamma = l / L`` for the depths held (``l = 0..L`` unless some were asked for)."""
        return self.depths / self.n_layers

    @property
    def n_depths(self) -> int:
        """How many depths this capture holds (``L + 1`` unless it was asked for some)."""
        return len(self.depths)

    @property
    def complete(self) -> bool:
        """Whether every depth ``0..L`` is held."""
        return self.n_depths == self.n_layers + 1

    @property
    def n_tokens(self) -> int:
        """How many token positions the statistics were summed over (every captured token, not the sample)."""
        return self.layers[0].n

    def index_of(self, layer: int) -> int:
        """Where depth ``layer`` (``0..L``; negative counts from ``L``) sits in ``layers``, ``gamma`` and the
        reservoirs; a depth this capture does not hold is refused, never replaced by another.

        Parameters
        ----------
        layer : int
            A depth ``l`` in ``0..L`` this capture holds; negative counts from ``L``.

        Returns
        -------
        int
            Its position in ``layers``, ``gamma``, ``depths`` and the reservoirs.

        Raises
        ------
        InvalidInputError
            For a depth out of range or not held by this capture.
        """
        total = self.n_layers + 1
        if isinstance(layer, (bool, np.bool_)):  # True is 1 to Python: cap.mean(True) read depth 1
            raise InvalidInputError(
                f"Layer {layer!r} is a boolean, not a depth: give an integer in 0..{self.n_layers} (or a negative one)."
            )
        # 1.0, "1", 1.5: said as what they are, not "out of range"
        if not isinstance(layer, (int, np.integer)):
            gamma = isinstance(layer, (float, np.floating)) and 0 <= layer <= 1
            hint = (
                f" (gamma = {float(layer):g} is depth {round(float(layer) * self.n_layers)})" if gamma else ""
            )
            raise InvalidInputError(
                f"Layer {layer!r} is a {type(layer).__name__}, not a depth: give an integer in 0..{self.n_layers} "
                f"(or a negative one){hint}."
            )
        if not -total <= layer < total:
            raise InvalidInputError(
                f"Layer {layer!r} is out of range: this capture of {self.model_name} has depths 0..{self.n_layers} "
                f"(gamma = l/{self.n_layers}); negative indices count from the end."
            )
        depth = int(layer) % total
        index = int(np.searchsorted(self.depths, depth))
        if index == len(self.depths) or self.depths[index] != depth:
            raise InvalidInputError(
                f"Depth {depth} is not in this capture of {self.model_name}: it holds depths "
                f"{self.depths.tolist()} of 0..{self.n_layers} (captured with depths=...). Read one of those, "
                f"or capture again with depths including {depth} (or all depths)."
            )
        return index

    def _layer(self, layer: int) -> LayerStats:
        return self.layers[self.index_of(layer)]

    def at_depths(self, depths) -> Capture:
        """A copy holding only ``depths`` (written as ``lb.capture``'s ``depths``; each must be held here): what
        ``lb.capture(..., depths=depths)`` gives. The final norm stays with depth ``L``; the attention
        statistics of the other layers are emptied (such a capture records its depths' layers only).

        Parameters
        ----------
        depths : sequence of int or float, or str
            Depth indices ``[0, 7, 14]``, gamma fractions ``[0.25, 0.5]`` or the same as a string ``"0.25,0.5"``
            (``settings.DEPTHS_RULE``); None asks for every depth ``0..L``.

        Returns
        -------
        Capture
            A new capture with those depths' statistics and samples; its provenance names the depths when they are
            not all of them.

        Raises
        ------
        InvalidInputError
            For depths that are malformed, out of range or not held by this capture.
        """
        from .settings import resolve_depths

        held = resolve_depths(depths, self.n_layers, self.model_name)
        held = np.arange(self.n_layers + 1) if held is None else held
        index = [self.index_of(int(depth)) for depth in held]
        layers = []
        for i in index:
            stats = LayerStats(self.d_model)
            stats.load_state_dict(self.layers[i].state_dict())
            layers.append(stats)
        final_norm = None
        if self.final_norm is not None and held[-1] == self.n_layers:
            final_norm = LayerStats(self.d_model)
            final_norm.load_state_dict(self.final_norm.state_dict())
        reservoirs = []
        for reservoir, width in ((self.vectors, self.d_model), (self.omega_sample, 1)):
            state = reservoir.state_dict()
            state["values"] = state["values"][index]
            copy = TokenReservoir(0, len(index), width)
            copy.load_state_dict(state)
            reservoirs.append(copy)
        attention = None
        if self.attention is not None:
            attention = type(self.attention).from_state_dict(self.attention.state_dict())
            dropped = np.setdiff1d(np.arange(self.n_layers), held[held >= 1] - 1)
            for values in attention.sums.values():
                values[torch.from_numpy(dropped)] = 0.0
        complete = len(held) == self.n_layers + 1
        provenance = json.loads(json.dumps(self.provenance, default=str))
        if not complete:
            provenance["depths"] = held.tolist()
        return Capture(
            self.model_name,
            self.n_layers,
            self.d_model,
            layers,
            final_norm,
            *reservoirs,
            provenance,
            attention,
            None if complete else held,
        )

    # --- read-outs -----------------------------------------------------------------------------------------
    def mean(self, layer: int) -> np.ndarray:
        """Mean residual vector ``mu^(l) = E[h]`` over captured tokens at depth ``layer``, shape ``(d,)``.

        Parameters
        ----------
        layer : int
            A depth ``l`` in ``0..L`` this capture holds; negative counts from ``L``.

        Returns
        -------
        numpy.ndarray
            ``mu``, shape ``(d,)``.
        """
        return self._layer(layer).moments.mean.cpu().numpy()

    def covariance(self, layer: int) -> np.ndarray:
        """Centred covariance ``C^(l) = E[(h - mu)(h - mu)^T]`` over captured tokens (float64).

        Parameters
        ----------
        layer : int
            A depth ``l`` in ``0..L`` this capture holds; negative counts from ``L``.

        Returns
        -------
        numpy.ndarray
            ``C``, shape ``(d, d)``, float64.
        """
        return self._layer(layer).moments.covariance().cpu().numpy()

    def second_moment(self, layer: int) -> np.ndarray:
        """Uncentred second moment ``E[h h^T]`` (float64).

        Parameters
        ----------
        layer : int
            A depth ``l`` in ``0..L`` this capture holds; negative counts from ``L``.

        Returns
        -------
        numpy.ndarray
            ``E[h h^T]``, shape ``(d, d)``, float64.
        """
        return self._layer(layer).moments.second_moment().cpu().numpy()

    def eigvals(self, layer: int, centered: bool = True) -> np.ndarray:
        """Eigenvalues of the covariance (or of ``E[hh^T]`` when ``centered=False``), descending, float64.

        Parameters
        ----------
        layer : int
            A depth ``l`` in ``0..L`` this capture holds; negative counts from ``L``.
        centered : bool
            The covariance (True) or the uncentred second moment.

        Returns
        -------
        numpy.ndarray
            ``d`` eigenvalues, largest first (chapter 4 reads their bulk against Marchenko-Pastur).
        """
        check_flags(centered=centered)  # centered="no" is truthy: it would silently centre
        matrix = self.covariance(layer) if centered else self.second_moment(layer)
        return np.linalg.eigvalsh(matrix)[::-1].copy()

    def all_eigvals(self, centered: bool = True) -> np.ndarray:
        """Eigenvalues of every depth held at once, shape ``(n_depths, d)``, descending (one batched ``eigvalsh``).

        Parameters
        ----------
        centered : bool
            The covariance (True) or the uncentred second moment ``E[h h^T]``.

        Returns
        -------
        numpy.ndarray
            Eigenvalues, shape ``(n_depths, d)``, largest first in each row (one row per depth held).
        """
        check_flags(centered=centered)
        stack = torch.stack(
            [(s.moments.covariance() if centered else s.moments.second_moment()).cpu() for s in self.layers]
        )
        return torch.linalg.eigvalsh(stack).flip(-1).numpy()

    def omega_mean(self) -> np.ndarray:
        """The order parameter ``m(gamma)``: mean Omega over tokens at each depth held (one per ``gamma``).

        Returns
        -------
        numpy.ndarray
            ``m`` at each depth held, shape ``(n_depths,)``, exact over every captured token (not the sample);
            ``omega_profiles.profile`` adds prompt-bootstrap intervals.
        """
        return np.array([s.omega.mean for s in self.layers])

    def omega_std(self) -> np.ndarray:
        """Standard deviation of per-token Omega over captured tokens at each depth held.

        Returns
        -------
        numpy.ndarray
            The standard deviation at each depth held, shape ``(n_depths,)``.
        """
        return np.array([np.sqrt(s.omega.central_moments()[0]) for s in self.layers])

    def omega_histogram(self, layer: int) -> tuple[np.ndarray, np.ndarray]:
        """Bin edges and counts of per-token Omega at ``layer``.

        Parameters
        ----------
        layer : int
            A depth ``l`` in ``0..L`` this capture holds; negative counts from ``L``.

        Returns
        -------
        edges : numpy.ndarray
            The bin edges, shape ``(bins + 1,)``.
        counts : numpy.ndarray
            Tokens in each bin, shape ``(bins,)``, over every captured token.
        """
        stats = self._layer(layer).omega
        return stats.edges(), stats.counts.cpu().numpy()

    def omega_samples(self, layer: int) -> np.ndarray:
        """Per-token Omega of the sampled tokens at ``layer`` (a uniform sample of all captured tokens).

        Parameters
        ----------
        layer : int
            A depth ``l`` in ``0..L`` this capture holds; negative counts from ``L``.

        Returns
        -------
        numpy.ndarray
            Omega of each sampled token, shape ``(k,)``, float64.
        """
        return self.omega_sample.values[self.index_of(layer), :, 0].numpy().astype(np.float64)

    def token_vectors(self, layer: int) -> np.ndarray:
        """Sampled token vectors at ``layer``, shape ``(k, d)``; the same tokens at every depth.

        Parameters
        ----------
        layer : int
            A depth ``l`` in ``0..L`` this capture holds; negative counts from ``L``.

        Returns
        -------
        numpy.ndarray
            The sampled tokens' residual vectors, shape ``(k, d)``, in the dtype they were stored in.
        """
        return self.vectors.values[self.index_of(layer)].numpy()

    def abs_max(self, layer: int) -> np.ndarray:
        """Per-coordinate ``max |h_i|`` over captured tokens (massive activations show up here).

        Parameters
        ----------
        layer : int
            A depth ``l`` in ``0..L`` this capture holds; negative counts from ``L``.

        Returns
        -------
        numpy.ndarray
            ``max |h_i|`` of each coordinate, shape ``(d,)``.
        """
        return self._layer(layer).abs.max.cpu().numpy()

    def abs_mean(self, layer: int) -> np.ndarray:
        """Per-coordinate mean ``|h_i|`` over captured tokens at depth ``layer``.

        Parameters
        ----------
        layer : int
            A depth ``l`` in ``0..L`` this capture holds; negative counts from ``L``.

        Returns
        -------
        numpy.ndarray
            Mean ``|h_i|`` of each coordinate, shape ``(d,)`` (zeros when no token was captured).
        """
        stats = self._layer(layer)
        return (stats.abs.sum / max(stats.n, 1)).cpu().numpy()

    # --- combining --------------------------------------------------------------------------------------------
    def merge(self, other: Capture, *, allow: Iterable[str] = ()) -> None:
        """Add another capture of the same model and settings (exact: sums, Chan updates, bottom-k reservoirs).

        Refused, since the result would be silently wrong: ``other`` is this very capture or holds the same
        prompts (every token would count twice), it holds other depths (never allowed), or it was taken with
        other settings (``merging.MERGE_SETTINGS``: model, prompt set, ``exclude_first``, precision, sample sizes...).
        ``allow`` names the settings that may differ, e.g. ``allow=("precision",)``; ``"prompt_set_sha256"``
        allows the same prompts twice.

        Parameters
        ----------
        other : Capture
            A capture of the same model, depths and settings on other prompts.
        allow : iterable of str, or str
            Settings of ``MERGE_SETTINGS`` (or ``"prompt_set_sha256"``) that may differ; empty by default; one name
            alone may be given as a string. Each one that differs is kept in the provenance as the list of both
            values.

        Returns
        -------
        None
            This capture is updated in place; its provenance adds ``other``'s prompt sets and prompt counts.

        Raises
        ------
        InvalidInputError
            For any of the refusals above, an ``other`` that is not a ``Capture`` (a path: load it first), or an
            ``allow`` that names no merge setting.
        """
        if not isinstance(other, Capture):  # a path or None: say how to get a capture, not an AttributeError
            raise InvalidInputError(
                f"merge takes a Capture, got {type(other).__name__} {other!r:.80}: load a saved one first, "
                "cap.merge(lb.load_capture(path))."
            )
        allow = check_mergeable(self, other, allow)
        for mine, theirs in zip(self.layers, other.layers):
            mine.merge(theirs)
        if self.final_norm is not None and other.final_norm is not None:
            self.final_norm.merge(other.final_norm)
        self.vectors.merge(other.vectors)
        self.omega_sample.merge(other.omega_sample)
        if self.attention is not None and other.attention is not None:
            self.attention.merge(other.attention)
        merge_provenance(self.provenance, other.provenance, allow)

    # --- files ------------------------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, torch.Tensor]:
        """Every accumulator as named CPU tensors (``layers.{l}.*``, ``final_norm.*``, the reservoirs), as saved.

        Returns
        -------
        dict of str to torch.Tensor
            Contiguous CPU tensors, keyed as in the saved file.
        """
        state: dict[str, torch.Tensor] = {}
        for depth, stats in zip(self.depths.tolist(), self.layers):
            state.update({f"layers.{depth}.{k}": v for k, v in stats.state_dict().items()})
        if self.final_norm is not None:
            state.update({f"final_norm.{k}": v for k, v in self.final_norm.state_dict().items()})
        state.update({f"vectors.{k}": v for k, v in self.vectors.state_dict().items()})
        state.update({f"omega_sample.{k}": v for k, v in self.omega_sample.state_dict().items()})
        if self.attention is not None:
            state.update({f"attention.{k}": v for k, v in self.attention.state_dict().items()})
        return {k: v.detach().cpu().contiguous() for k, v in state.items()}

    def save(self, path: str | Path, *, force: bool = False) -> Path:
        """Write atomically: safetensors with the provenance, schema version and tensor checksum in its header.

        Parameters
        ----------
        path : str or Path
            The ``.safetensors`` file to write; a temporary file beside it is renamed onto it when complete, so
            a crash never leaves half a capture. An earlier capture there is replaced; any other file (a user's
            notes, model weights) only with ``force``.
        force : bool
            Replace ``path`` even when it holds a file that is not a capture.

        Returns
        -------
        Path
            The file written; ``lb.load_capture`` reads it back.

        Raises
        ------
        InvalidInputError
            For a ``path`` that is a folder.
        OutputExistsError
            For a ``path`` holding a file that is not a capture, without ``force``.
        """
        from safetensors.torch import save_file

        from .settings import check_path

        check_path(path, "path")
        check_flags(force=force)
        _check_save_path(Path(path), force)
        state = self.state_dict()
        # numpy scalars as JSON values (np.False_ as false: str() would write the string "False", which is truthy)
        provenance = scrub(json.loads(json.dumps(self.provenance, default=_json_value)))
        provenance.pop("depths", None)  # mirrors the header's depths (checked on load) when some were chosen
        if not self.complete:
            provenance["depths"] = self.depths.tolist()
        header = {
            "format": FORMAT,
            "schema": SCHEMA_VERSION,
            "model_name": scrub(self.model_name),
            "n_layers": self.n_layers,
            "d_model": self.d_model,
            "has_final_norm": self.final_norm is not None,
            "has_attention": self.attention is not None,
            "depths": self.depths.tolist(),
            "provenance": provenance,
        }
        header["sha256"] = digest(state, header)
        metadata = {"latentbook": json.dumps(header, sort_keys=True)}
        return atomic_write(path, lambda tmp: save_file(state, str(tmp), metadata=metadata))


def _json_value(value: Any) -> Any:
    """A provenance value JSON cannot write as is: a numpy scalar or array as its Python value, anything else as
    its string."""
    if isinstance(value, (np.generic, np.ndarray)):
        return value.tolist()
    return str(value)


def _check_save_path(path: Path, force: bool) -> None:
    """Refuse a folder, and a file that is not a capture (an empty one excepted) unless ``force``: ``save`` never
    replaces a user's file by mistake."""
    if path.is_dir():
        raise InvalidInputError(
            f"{path} is a folder: give the capture's file path, such as {path / 'capture.safetensors'}."
        )
    if force or not path.is_file() or path.stat().st_size == 0:
        return
    try:
        header = capture_header(path)
    except Exception:  # noqa: BLE001 -- anything safetensors cannot read is not a capture
        header = None
    if not header or header.get("format") != FORMAT:
        raise OutputExistsError(
            f"{path} holds a file that is not a latentbook capture, and saving would replace it. Choose another "
            "path (or pass force=True to replace it)."
        )


def _sub(state: dict[str, torch.Tensor], prefix: str) -> dict[str, torch.Tensor]:
    return {k[len(prefix) :]: v for k, v in state.items() if k.startswith(prefix)}


def load_capture(path: str | Path) -> Capture:
    """Read a capture written by ``Capture.save``; verifies format, schema version and checksum, then that
    the tensors are exactly those the header describes (names, shapes, dtypes) and every statistic is finite.

    Parameters
    ----------
    path : str or Path
        The ``.safetensors`` file that ``lb.capture(...).save(path)`` or ``latentbook capture --out`` wrote (a
        checkpoint ``X.partial`` loads too, as the unfinished capture it is).

    Returns
    -------
    Capture
        Its per-depth statistics, sampled token vectors and provenance.

    Raises
    ------
    CaptureFileError
        Whatever is wrong with the file: missing, a folder, not a capture, another schema, a bad checksum.

    Examples
    --------
    A capture saved and read back holds the same statistics:

    >>> import tempfile
    >>> from pathlib import Path
    >>> import numpy as np
    >>> import latentbook as lb
    >>> cap = lb.capture("random:llama-tiny", lb.prompts.load("general", limit=2), progress=False)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     again = lb.load_capture(cap.save(Path(folder) / "tiny.safetensors"))
    >>> again.gamma
    array([0. , 0.5, 1. ])
    >>> bool(np.array_equal(again.omega_mean(), cap.omega_mean()))
    True
    """
    from safetensors.torch import load_file

    from .settings import check_path

    check_path(path, "path")
    path = Path(path)
    if path.is_dir():
        raise CaptureFileError(
            f"{path} is a folder, not a capture file: give the .safetensors file that lb.capture(...).save(path) "
            "or `latentbook capture --out` wrote (a model folder is captured with `latentbook capture FOLDER`)."
        )
    if not path.is_file():
        raise CaptureFileError(
            f"No capture file at {path}. Create one with lb.capture(...).save(path) or `latentbook capture`."
        )
    try:
        header = capture_header(path)
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
    if header.get("format") != FORMAT or header.get("schema") not in READABLE_SCHEMAS:
        raise CaptureFileError(
            f"{path} has format {header.get('format')!r} schema {header.get('schema')!r}; this latentbook reads "
            f"{FORMAT!r} schemas {', '.join(map(str, READABLE_SCHEMAS))}. Capture again with this version."
        )
    if digest(state, header) != header.get("sha256"):
        raise CaptureFileError(f"{path} failed its checksum: the file was altered or damaged. Capture again.")
    check_header(path, header)
    check_tensors(path, state, header)
    try:
        return _build(state, header)
    except Exception as exc:  # anything the checks above missed is still a damaged file, never a crash
        raise CaptureFileError(f"{path} is inconsistent ({exc!r}). Capture again.") from exc


def _build(state: dict[str, torch.Tensor], header: dict) -> Capture:
    """The ``Capture`` of a verified header and state."""
    n_layers, d, depths = header["n_layers"], header["d_model"], header_depths(header)
    layers = []
    for depth in depths:
        stats = LayerStats(d)
        stats.load_state_dict(_sub(state, f"layers.{depth}."))
        layers.append(stats)
    final_norm = None
    if header["has_final_norm"]:
        final_norm = LayerStats(d)
        final_norm.load_state_dict(_sub(state, "final_norm."))
    vectors, omega_sample = TokenReservoir(0, len(depths), d), TokenReservoir(0, len(depths), 1)
    vectors.load_state_dict(_sub(state, "vectors."))
    omega_sample.load_state_dict(_sub(state, "omega_sample."))
    attention = None
    if header["has_attention"]:
        from .attention import AttentionStats

        attention = AttentionStats.from_state_dict(_sub(state, "attention."))
        if attention.n_layers != n_layers:
            raise ValueError(f"attention statistics of {attention.n_layers} layers, header says {n_layers}")
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
        np.array(depths, dtype=np.int64),
    )
