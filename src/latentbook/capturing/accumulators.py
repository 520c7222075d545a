"""Mergeable streaming statistics of the residual stream, one small class per statistic.

Usage (as in baukit's runningstats):

1. ``stats = LayerStats(d)``: one per depth;
2. ``stats.add(x)`` with ``x`` of shape ``(n_tokens, d)``, batch after batch;
3. ``a.merge(b)``: exact, so batches, checkpoints and distributed ranks all combine the same way;
4. read out: ``stats.moments.covariance()``, ``stats.omega.mean``, ``stats.abs.max`` ...

What exists: ``Moments`` (count, mean and centred scatter, Chan, Golub & LeVeque 1983), ``OmegaStats``
(histogram and power sums of per-token Omega), ``AbsStats`` (per-coordinate max and mean of ``|h|``, for
massive activations), ``LayerStats`` (the three together), and ``TokenReservoir`` (a bottom-k sample of
tokens keyed by a hash of (prompt, position), identical however the tokens are split into batches or ranks).
Memory is fixed by ``d`` and the reservoir sizes, never by the number of tokens: the float64 ``d x d`` sums
and the reservoirs live on the host, the pending float32 Gram and the few ``d``-sized statistics on the device
of the batches (each layer's, under a ``device_map``); ``nbytes()`` says what each holds, as
``capturing/plan.py`` predicts it.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

import numpy as np
import torch

OMEGA_BINS = 200


def omega_of(x: torch.Tensor) -> torch.Tensor:
    """Object integrity along the last axis: ``Omega(h) = 1 - ||h||_1 / (sqrt(d) ||h||_2)``; ``Omega(0) = 0``;
    NaN for a vector with a non-finite coordinate.

    Each vector is divided by its largest magnitude first (Omega does not depend on the scale), so squares that
    overflow float32 (coordinates above ~1.8e19) cannot turn ``||h||_2`` into inf and Omega into 1.

    Introduced in: chapter 3 (book/paper.md, "Order parameter").

    Parameters
    ----------
    x : torch.Tensor
        Real vectors along the last axis, shape ``(..., d)``, any floating dtype and device.

    Returns
    -------
    torch.Tensor
        float32 Omega of each vector, shape ``(...)``, on the device of ``x``.

    Examples
    --------
    A one-hot vector in ``d = 4`` gives ``1 - 1/sqrt(4) = 0.5``, equal magnitudes give 0, and coordinates whose
    squares overflow float32 give the same value as small ones:

    >>> import torch
    >>> from latentbook.capturing import omega_of
    >>> omega_of(torch.tensor([[1.0, 0.0, 0.0, 0.0], [1.0, -1.0, 1.0, -1.0]]))
    tensor([0.5000, 0.0000])
    >>> omega_of(torch.tensor([1e30, 1e30, 0.0, 0.0])), omega_of(torch.tensor([1.0, 1.0, 0.0, 0.0]))
    (tensor(0.2929), tensor(0.2929))
    >>> omega_of(torch.tensor([1.0, float("nan")]))
    tensor(nan)
    """
    x = x.float()
    magnitude = x.abs()
    largest = magnitude.amax(-1, keepdim=True)
    scaled = magnitude / torch.where(largest > 0, largest, torch.ones_like(largest))
    l1 = scaled.sum(-1)
    l2 = torch.linalg.vector_norm(scaled, dim=-1)
    ratio = l1 / (math.sqrt(x.shape[-1]) * l2)
    value = torch.where(l2 > 0, 1.0 - ratio, torch.zeros_like(ratio))
    return torch.where(torch.isfinite(x).all(-1), value, torch.full_like(value, math.nan))


HOST = torch.device("cpu")  # where every float64 sum lives, whatever device the batches come from


class Moments:
    """Count, mean and centred scatter ``M2 = sum (h - mean)(h - mean)^T``, in float64, on the host.

    Each batch is centred on its own mean and its scatter, a Gram in ``precision`` (float32 by default: the
    tensor-core path on a GPU), is summed in place into a pending ``d x d`` block on the batch's device by
    fused products (``addmm_``: no ``d x d`` temporaries, which cost as much as the product itself on a CPU);
    for ``d >= 256`` only its upper block triangle (4 column blocks, 8 from ``d = 1024``: 5/8 or 9/16 of the
    full product), mirrored when folded. A block is folded into the float64 sums on the host every
    ``FLUSH_TOKENS`` tokens, before a new batch once it holds ``batches_per_block`` batches (a capture folds
    every batch), and before any read: its scatter is the sum of the batch scatters plus the exact
    between-batch part ``sum_b n_b (mean_b - mean_p)(mean_b - mean_p)^T`` (from the stored batch means), and
    blocks, merges and checkpoints combine with Chan et al.'s update
    ``M2 = M2_a + M2_b + delta delta^T n_a n_b / n``.
    Covariance ``C = M2 / n``; second moment ``E[h h^T] = C + mean mean^T``. The ``d x d`` buffers are
    allocated when first needed, never zero-filled for nothing; the last block of a capture stays pending, to
    be folded (and its buffer freed) at the first read.

    Off the CPU only the pending block (``d x d`` in ``precision``) and the batch means sit on the device: the
    float64 sums are host memory, so a GPU holds ``4 d^2`` bytes per depth, not ``12 d^2``. From a CUDA device
    a fold copies the block into a pinned host buffer without blocking (``non_blocking=True``) and adds it to
    the sums when the next fold starts (one fold in flight at a time, so one staging buffer) or at a read:
    the copy overlaps the next layer's forward. On the CPU the same fold runs at once, with no copy.

    On a CUDA device, for bfloat16 / float16 activations (whose own rounding is ~4e-3), the float32 Grams run
    on TF32 tensor cores (``TF32_FOR_HALF_INPUTS``; float32 products are several times slower there): the
    centred values are rounded to 11 significant bits, a relative error of the scatter ~1e-5 at most.

    Parameters
    ----------
    d : int
        The width of the token vectors.
    precision : torch.dtype
        The dtype of the batch Grams (``torch.float32`` by default, or ``torch.float64``); the sums are float64.
    batches_per_block : int, optional
        Fold the pending block into the sums before a new batch once it holds this many batches; None folds
        only every ``FLUSH_TOKENS`` tokens and before a read.

    Attributes
    ----------
    n : int
        Tokens added so far.
    mean : torch.Tensor
        float64 mean, shape ``(d,)``, on the host.
    m2 : torch.Tensor
        float64 centred scatter ``M2``, shape ``(d, d)``, on the host.

    Examples
    --------
    Two halves merged give the covariance of the whole, which is numpy's maximum-likelihood covariance:

    >>> import torch
    >>> from latentbook.capturing import Moments
    >>> x = torch.randn(1000, 8, generator=torch.Generator().manual_seed(0))
    >>> whole, first, second = Moments(8), Moments(8), Moments(8)
    >>> whole.add(x)
    >>> first.add(x[:300])
    >>> second.add(x[300:])
    >>> first.merge(second)
    >>> first.n, bool(torch.allclose(first.covariance(), whole.covariance()))
    (1000, True)
    >>> bool(torch.allclose(whole.covariance(), torch.cov(x.T.double(), correction=0)))
    True
    >>> whole.second_moment().shape, whole.mean.dtype
    (torch.Size([8, 8]), torch.float64)
    """

    FLUSH_TOKENS = 8192
    TF32_FOR_HALF_INPUTS = True

    def __init__(self, d: int, precision: torch.dtype = torch.float32, batches_per_block: int | None = None):
        self.d = d
        self.precision = precision
        self.batches_per_block = batches_per_block
        self._n = 0
        with torch.inference_mode(False):  # normal tensors: folded in place inside and outside a capture
            self._mean = torch.zeros(d, dtype=torch.float64, device=HOST)
        self._m2: torch.Tensor | None = None  # None while it is zero
        self._gram: torch.Tensor | None = None  # the pending block's sum of batch scatters (upper blocks)
        self._block = d if d < 256 else -(-d // (4 if d < 1024 else 8))  # column block of the upper triangle
        self._batch_means: list[torch.Tensor] = []
        self._batch_counts: list[int] = []
        self._in_flight: _Fold | None = None  # a folded block still on its way to the host

    @property
    def n(self) -> int:
        in_flight = self._in_flight.n if self._in_flight is not None else 0
        return self._n + in_flight + sum(self._batch_counts)

    @property
    def mean(self) -> torch.Tensor:
        self.flush()
        return self._mean

    @property
    def m2(self) -> torch.Tensor:
        self.flush()
        if self._m2 is None:
            with torch.inference_mode(False):  # normal tensors: updated in place inside and outside a capture
                self._m2 = torch.zeros(self.d, self.d, dtype=torch.float64, device=HOST)
        return self._m2

    def add(self, x: torch.Tensor) -> None:
        if self.batches_per_block is not None and len(self._batch_counts) >= self.batches_per_block:
            self._fold()
        n_b = x.shape[0]
        if n_b == 0:
            return
        mean_b = x.mean(0, dtype=torch.float64)
        centred = x.to(self.precision) - mean_b.to(self.precision)
        if self._gram is None or self._gram.device != x.device:
            self.flush()
            with torch.inference_mode(False):
                self._gram = torch.empty(self.d, self.d, dtype=self.precision, device=x.device)
        beta = 1.0 if self._batch_counts else 0.0  # a block's first batch overwrites (beta=0 ignores the old)
        b = self._block
        tf32 = self.TF32_FOR_HALF_INPUTS and x.is_cuda and x.dtype in (torch.bfloat16, torch.float16)
        with _tf32_matmul(tf32 and self.precision == torch.float32):
            for i in range(0, self.d, b):  # upper block triangle of centred^T centred
                self._gram[i : i + b, i:].addmm_(centred[:, i : i + b].T, centred[:, i:], beta=beta)
        self._batch_means.append(mean_b)
        self._batch_counts.append(n_b)
        if sum(self._batch_counts) >= self.FLUSH_TOKENS:
            self._fold()

    def flush(self) -> None:
        """Fold the pending batches into the float64 sums and free the pending buffer (done before every read)."""
        self._fold()
        self._settle()
        self._gram = None  # a result holds no pending buffer

    def _fold(self) -> None:
        """Send the pending block to the host (mirrored, with its batch means); add it there at once on the CPU,
        else when the next fold of any ``Moments`` starts or at a read. The device buffer is kept for reuse."""
        if not self._batch_counts:
            return
        global _IN_FLIGHT
        self._settle()
        if _IN_FLIGHT is not None:  # one fold in flight at a time: one staging buffer, whatever the depths
            _IN_FLIGHT._settle()
        gram, b = self._gram, self._block
        for i in range(b, self.d, b):  # mirror the upper block triangle into the lower
            gram[i : i + b, :i].copy_(gram[:i, i : i + b].T)
        means = torch.stack(self._batch_means)
        fold = _Fold(list(self._batch_counts), gram, means)
        self._batch_means, self._batch_counts = [], []
        self._in_flight = fold
        _IN_FLIGHT = self
        if fold.event is None:  # already on the host: nothing to wait for
            self._settle()

    def _settle(self) -> None:
        """Add the block in flight (if any) to the float64 sums, once its copy has arrived."""
        global _IN_FLIGHT
        fold = self._in_flight
        if fold is None:
            return
        if _IN_FLIGHT is self:
            _IN_FLIGHT = None
        self._in_flight = None
        if fold.event is not None:
            fold.event.synchronize()
        counts = torch.tensor(fold.counts, dtype=torch.float64, device=HOST)
        n_p = int(sum(fold.counts))
        mean_p = counts @ fold.means / n_p
        spread = fold.means - mean_p
        if self._m2 is None:  # the first block's scatter becomes the running sum: one conversion, no add
            with torch.inference_mode(False):
                self._m2 = fold.gram.to(HOST, torch.float64, copy=True)
        else:
            self._m2.add_(fold.gram)
        if len(counts) > 1:
            self._m2.addmm_(spread.T * counts, spread)  # between-batch scatter, exact in float64
        self._combine(n_p, mean_p, None)

    def merge(self, other: Moments) -> None:
        if other.n:
            self._settle()
            self._combine(other.n, other.mean.to(HOST), other.m2.to(HOST))

    def to_(self, device: torch.device | str) -> None:
        """Nothing moves: the float64 sums stay on the host, and the pending block follows its batches' device."""

    def nbytes(self) -> dict[str, int]:
        """Bytes held now, by device: the sums, the pending block and its batch means (as ``plan`` predicts)."""
        held = [self._mean, self._m2, self._gram, *self._batch_means]
        if self._in_flight is not None:
            held += [self._in_flight.gram, self._in_flight.means]
        return _bytes_by_device(held)

    def _combine(self, n_b: int, mean_b: torch.Tensor, m2_b: torch.Tensor | None) -> None:
        """Chan's update with a block of ``n_b`` tokens (``m2_b=None``: its scatter is already in ``_m2``)."""
        if n_b == 0:
            return
        n = self._n + n_b
        delta = mean_b - self._mean
        if m2_b is not None:
            if self._m2 is None:
                with torch.inference_mode(False):
                    self._m2 = m2_b.to(torch.float64, copy=True)
            else:
                self._m2.add_(m2_b)
        if self._n:
            self._m2.addr_(delta, delta, alpha=self._n * n_b / n)
        self._mean.add_(delta, alpha=n_b / n)
        self._n = n

    def covariance(self) -> torch.Tensor:
        """``C = (1/n) sum (h - mean)(h - mean)^T`` (the maximum-likelihood covariance)."""
        return self.m2 / max(self.n, 1)

    def second_moment(self) -> torch.Tensor:
        """``E[h h^T] = C + mean mean^T`` (uncentred)."""
        return self.covariance() + torch.outer(self.mean, self.mean)

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {"n": torch.tensor(self.n), "mean": self.mean.cpu(), "m2": self.m2.cpu()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        self._settle()
        self._batch_means, self._batch_counts, self._gram = [], [], None
        self._n = int(state["n"])
        self._mean = state["mean"].to(HOST, torch.float64, copy=True)  # updated in place later
        self._m2 = state["m2"].to(HOST, torch.float64, copy=True)


_IN_FLIGHT: Moments | None = None  # the Moments whose folded block is still being copied to the host


def settle_folds() -> None:
    """Finish the fold in flight, if any (a capture calls it at its end: afterwards no copy is pending)."""
    if _IN_FLIGHT is not None:
        _IN_FLIGHT._settle()


class _Fold:
    """A folded block on its way to the host: batch counts, the mirrored Gram and the batch means.

    From a CUDA device both are copied into pinned host buffers with ``non_blocking=True`` and ``event``
    marks their arrival; from the CPU they are the tensors themselves (``event`` is None); from another
    device (MPS) they are copied at once.
    """

    def __init__(self, counts: list[int], gram: torch.Tensor, means: torch.Tensor):
        self.counts = counts
        self.n = int(sum(counts))
        self.event = None
        if gram.device.type == "cpu":
            self.gram, self.means = gram, means
        elif gram.is_cuda:
            with torch.inference_mode(False):
                self.gram = torch.empty(gram.shape, dtype=gram.dtype, pin_memory=True)
                self.means = torch.empty(means.shape, dtype=means.dtype, pin_memory=True)
            self.gram.copy_(gram, non_blocking=True)
            self.means.copy_(means, non_blocking=True)
            self.event = torch.cuda.Event()
            self.event.record(torch.cuda.current_stream(gram.device))
        else:
            self.gram, self.means = gram.to(HOST), means.to(HOST)


def _bytes_by_device(tensors) -> dict[str, int]:
    held: dict[str, int] = {}
    for t in tensors:
        if t is not None:
            key = "host" if t.device.type == "cpu" else str(t.device)
            held[key] = held.get(key, 0) + t.numel() * t.element_size()
    return held


@contextlib.contextmanager
def _tf32_matmul(enabled: bool) -> Iterator[None]:
    """Allow TF32 for CUDA float32 matrix products inside the block only (the global flag is restored)."""
    matmul = torch.backends.cuda.matmul
    try:
        before = matmul.allow_tf32 if enabled else None
    except RuntimeError:  # TF32 flags set inconsistently by the caller: leave them as they are
        before = None
    if before is None or before:
        yield
        return
    matmul.allow_tf32 = True
    try:
        yield
    finally:
        matmul.allow_tf32 = before


class OmegaStats:
    """Per-token Omega: a histogram on [0, 1] and the power sums ``sum Omega^k`` for k = 0..4 (float64).

    Parameters
    ----------
    device : torch.device or str
        Where the histogram and the power sums live (the device of the Omega values added).
    bins : int
        Equal bins of the histogram on [0, 1] (``OMEGA_BINS`` by default).

    Attributes
    ----------
    counts : torch.Tensor
        float64 histogram counts, shape ``(bins,)``; ``edges()`` gives the ``bins + 1`` bin edges.
    power_sums : torch.Tensor
        float64 ``sum Omega^k`` for k = 0..4 (k = 0: the count).
    n : int
        Omega values added so far.
    mean : float
        Their mean.

    Examples
    --------
    >>> import torch
    >>> from latentbook.capturing import OmegaStats
    >>> stats = OmegaStats()
    >>> stats.add_values(torch.tensor([0.1, 0.2, 0.3, 0.4]))
    >>> stats.n, round(stats.mean, 3), int(stats.counts.sum()), len(stats.edges())
    (4, 0.25, 4, 201)
    >>> variance, skewness, kurtosis = stats.central_moments()
    >>> round(variance, 4), round(kurtosis, 2)
    (0.0125, 1.64)
    """

    def __init__(self, device: torch.device | str = "cpu", bins: int = OMEGA_BINS):
        self.bins = bins
        self.counts = torch.zeros(bins, dtype=torch.float64, device=device)
        self.power_sums = torch.zeros(5, dtype=torch.float64, device=device)

    def add_values(self, omega: torch.Tensor) -> None:
        o = omega.to(torch.float64)
        self.counts += torch.histc(o, bins=self.bins, min=0.0, max=1.0)
        self.power_sums += torch.stack([o.pow(k).sum() for k in range(5)])

    def merge(self, other: OmegaStats) -> None:
        self.counts += other.counts.to(self.counts.device)
        self.power_sums += other.power_sums.to(self.power_sums.device)

    def to_(self, device: torch.device | str) -> None:
        self.counts, self.power_sums = self.counts.to(device), self.power_sums.to(device)

    @property
    def n(self) -> int:
        return int(self.power_sums[0].item())

    @property
    def mean(self) -> float:
        return float(self.power_sums[1] / self.power_sums[0])

    def central_moments(self) -> tuple[float, float, float]:
        """Variance, skewness and (non-excess) kurtosis from the power sums."""
        n, s1, s2, s3, s4 = (float(v) for v in self.power_sums)
        m = s1 / n
        var = s2 / n - m**2
        mu3 = s3 / n - 3 * m * s2 / n + 2 * m**3
        mu4 = s4 / n - 4 * m * s3 / n + 6 * m**2 * s2 / n - 3 * m**4
        var = max(var, 1e-300)
        return var, mu3 / var**1.5, mu4 / var**2

    def edges(self) -> np.ndarray:
        return np.linspace(0.0, 1.0, self.bins + 1)

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {"counts": self.counts.cpu(), "power_sums": self.power_sums.cpu()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        self.counts = state["counts"].to(self.counts.device, torch.float64)
        self.power_sums = state["power_sums"].to(self.power_sums.device, torch.float64)
        self.bins = self.counts.numel()


class AbsStats:
    """Per-coordinate ``max |h_i|`` and ``sum |h_i|``: massive activations stand out as max >> typical mean.

    Parameters
    ----------
    d : int
        The width of the token vectors.
    device : torch.device or str
        Where the two statistics live (the device of the batches added).

    Attributes
    ----------
    max : torch.Tensor
        float32 ``max |h_i|`` over the tokens added, shape ``(d,)``.
    sum : torch.Tensor
        float64 ``sum |h_i|`` over the tokens added, shape ``(d,)`` (divide by the token count for the mean).

    Examples
    --------
    >>> import torch
    >>> from latentbook.capturing import AbsStats
    >>> stats = AbsStats(3)
    >>> stats.add(torch.tensor([[1.0, -5.0, 0.0], [2.0, 1.0, 0.0]]))
    >>> stats.max, stats.sum
    (tensor([2., 5., 0.]), tensor([3., 6., 0.], dtype=torch.float64))
    """

    def __init__(self, d: int, device: torch.device | str = "cpu"):
        self.max = torch.zeros(d, dtype=torch.float32, device=device)
        self.sum = torch.zeros(d, dtype=torch.float64, device=device)

    def add(self, x: torch.Tensor) -> None:
        if x.shape[0] == 0:
            return
        a = x.abs()
        self.max = torch.maximum(self.max, a.amax(0).float())
        self.sum += a.sum(0, dtype=torch.float64)

    def to_(self, device: torch.device | str) -> None:
        self.max, self.sum = self.max.to(device), self.sum.to(device)

    def merge(self, other: AbsStats) -> None:
        self.max = torch.maximum(self.max, other.max.to(self.max.device))
        self.sum += other.sum.to(self.sum.device)

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {"max": self.max.cpu(), "sum": self.sum.cpu()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        self.max = state["max"].to(self.max.device, torch.float32)
        self.sum = state["sum"].to(self.sum.device, torch.float64)


class LayerStats:
    """Everything streamed at one depth: ``Moments``, ``OmegaStats`` and ``AbsStats`` of the same tokens.

    ``OmegaStats`` and ``AbsStats`` (a few ``d`` numbers) live on ``device``, the device of the layer whose
    output they see; ``Moments`` keeps its float64 sums on the host (its pending block on the batches' device).

    Parameters
    ----------
    d : int
        The width of the token vectors.
    device : torch.device or str
        Where ``omega`` and ``abs`` live.
    precision : torch.dtype
        The dtype of the batch Grams of ``moments`` (``torch.float32`` by default).
    batches_per_block : int, optional
        Passed to ``Moments``.

    Attributes
    ----------
    moments : Moments
        Count, mean and scatter of the token vectors.
    omega : OmegaStats
        Histogram and power sums of their Omega.
    abs : AbsStats
        Per-coordinate ``max |h_i|`` and ``sum |h_i|``.
    n : int
        Tokens added so far.

    Examples
    --------
    ``add`` returns the batch's Omega values; Gaussian vectors in ``d = 8`` sit near ``gaussian_omega(8) = 0.18``:

    >>> import torch
    >>> from latentbook.capturing import LayerStats
    >>> stats = LayerStats(8)
    >>> omega = stats.add(torch.randn(1000, 8, generator=torch.Generator().manual_seed(0)))
    >>> omega.shape, stats.n, round(stats.omega.mean, 2)
    (torch.Size([1000]), 1000, 0.18)
    >>> stats.moments.covariance().shape, stats.abs.max.shape
    (torch.Size([8, 8]), torch.Size([8]))
    """

    def __init__(
        self,
        d: int,
        device: torch.device | str = "cpu",
        precision: torch.dtype = torch.float32,
        batches_per_block: int | None = None,
    ):
        self.moments = Moments(d, precision, batches_per_block)
        self.omega = OmegaStats(device)
        self.abs = AbsStats(d, device)

    def add(self, x: torch.Tensor) -> torch.Tensor:
        """Add a batch of token vectors; returns their Omega values."""
        omega = omega_of(x)
        self.moments.add(x)
        self.omega.add_values(omega)
        self.abs.add(x)
        return omega

    def to_(self, device: torch.device | str) -> None:
        """Move the per-token statistics to ``device`` (a no-op when they are there already)."""
        if self.omega.counts.device != torch.device(device):
            self.omega.to_(device)
            self.abs.to_(device)

    def merge(self, other: LayerStats) -> None:
        self.moments.merge(other.moments)
        self.omega.merge(other.omega)
        self.abs.merge(other.abs)

    @property
    def n(self) -> int:
        return self.moments.n

    def nbytes(self) -> dict[str, int]:
        """Bytes held now, by device (``"host"`` or e.g. ``"cuda:0"``)."""
        held = self.moments.nbytes()
        small = [self.omega.counts, self.omega.power_sums, self.abs.max, self.abs.sum]
        for device, size in _bytes_by_device(small).items():
            held[device] = held.get(device, 0) + size
        return held

    def state_dict(self) -> dict[str, torch.Tensor]:
        parts = {"moments": self.moments, "omega": self.omega, "abs": self.abs}
        return {f"{p}.{k}": v for p, stat in parts.items() for k, v in stat.state_dict().items()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        for prefix, stat in (("moments", self.moments), ("omega", self.omega), ("abs", self.abs)):
            stat.load_state_dict(
                {k.split(".", 1)[1]: v for k, v in state.items() if k.startswith(prefix + ".")}
            )


def token_keys(prompt_ids: np.ndarray, positions: np.ndarray, seed: int = 0) -> np.ndarray:
    """A pseudo-random key in [0, 1) per token, a pure function of (prompt index, position, seed) (splitmix64)."""
    with np.errstate(over="ignore"):
        z = (prompt_ids.astype(np.uint64) << np.uint64(24)) ^ positions.astype(np.uint64)
        z = z + np.uint64(0x9E3779B97F4A7C15) * np.uint64(seed + 1)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) * 2.0**-53


class TokenReservoir:
    """A uniform sample of at most ``capacity`` tokens, kept at every depth: the tokens of smallest key.

    Keys come from ``token_keys``, so the sample depends only on which tokens were seen, not on batch
    order, checkpoints or ranks, and ``merge`` (keep the smallest keys of the union) is exact.
    ``values`` has shape ``(n_depths, n_kept, width)``, in key order. An offer writes only the accepted
    tokens into free or evicted slots of a buffer that doubles up to the capacity (no copy per batch);
    the slots are put back in key order when the sample is read.

    Parameters
    ----------
    capacity : int
        The most tokens kept.
    n_depths : int
        Depths held per token.
    width : int
        Numbers held per token and depth (``d`` for token vectors, 1 for Omega values).

    Attributes
    ----------
    keys, prompt_ids, positions : numpy.ndarray
        Per kept token, in key order: its key, the index of its prompt and its position in the prompt.
    values : torch.Tensor
        float32 kept values, shape ``(n_depths, n_kept, width)``, on the host.

    Examples
    --------
    Six tokens offered at once, or in two batches, leave the same three:

    >>> import numpy as np
    >>> import torch
    >>> from latentbook.capturing import TokenReservoir
    >>> from latentbook.capturing.accumulators import token_keys
    >>> prompt_ids, positions = np.zeros(6, dtype=np.int64), np.arange(6)
    >>> keys = token_keys(prompt_ids, positions)
    >>> values = torch.arange(48.0).reshape(2, 6, 4)  # 2 depths, 6 tokens, width 4
    >>> once, twice = TokenReservoir(3, n_depths=2, width=4), TokenReservoir(3, n_depths=2, width=4)
    >>> once.offer(keys, prompt_ids, positions, values)
    >>> twice.offer(keys[:2], prompt_ids[:2], positions[:2], values[:, :2])
    >>> twice.offer(keys[2:], prompt_ids[2:], positions[2:], values[:, 2:])
    >>> once.positions, twice.positions, once.values.shape
    (array([3, 5, 4]), array([3, 5, 4]), torch.Size([2, 3, 4]))
    >>> bool(torch.equal(once.values, twice.values))
    True
    """

    def __init__(self, capacity: int, n_depths: int, width: int):
        self.capacity = capacity
        self._keys = np.empty(0, dtype=np.float64)  # per slot
        self._prompt_ids = np.empty(0, dtype=np.int64)
        self._positions = np.empty(0, dtype=np.int64)
        self._buffer = torch.empty(n_depths, 0, width, dtype=torch.float32)  # slots; grows up to capacity
        self._in_order = True

    @property
    def keys(self) -> np.ndarray:
        self._sort()
        return self._keys

    @property
    def prompt_ids(self) -> np.ndarray:
        self._sort()
        return self._prompt_ids

    @property
    def positions(self) -> np.ndarray:
        self._sort()
        return self._positions

    @property
    def values(self) -> torch.Tensor:
        self._sort()
        return self._buffer[:, : len(self._keys)]

    def threshold(self) -> float:
        """Tokens with a key at or above this cannot enter the sample."""
        return float(self._keys.max()) if len(self._keys) >= self.capacity else math.inf

    def offer(
        self, keys: np.ndarray, prompt_ids: np.ndarray, positions: np.ndarray, values: torch.Tensor
    ) -> None:
        """Offer tokens (``values`` of shape ``(n_depths, n, width)``); keep the ``capacity`` smallest keys."""
        n_old = len(self._keys)
        order = np.argsort(np.concatenate([self._keys, keys]), kind="stable")[: self.capacity]
        kept = np.zeros(n_old + len(keys), dtype=bool)
        kept[order] = True
        accepted = np.flatnonzero(kept[n_old:])
        if not len(accepted):
            return
        if len(accepted) < len(keys):
            values = values[:, torch.from_numpy(accepted).to(values.device)]
        evicted = np.flatnonzero(~kept[:n_old])
        n_new = n_old - len(evicted) + len(accepted)
        slots = np.concatenate([evicted, np.arange(n_old, max(n_new, n_old))])[: len(accepted)]
        self._grow(n_new)
        values = values.detach().float().cpu()
        if len(slots) and slots[-1] - slots[0] == len(slots) - 1:  # consecutive free slots: while filling
            self._buffer[:, slots[0] : slots[-1] + 1] = values
        else:
            self._buffer[:, torch.from_numpy(slots)] = values
        for name, new in (("_keys", keys), ("_prompt_ids", prompt_ids), ("_positions", positions)):
            old = getattr(self, name)
            grown = np.concatenate([old, np.zeros(n_new - n_old, dtype=old.dtype)])
            grown[slots] = new[accepted]
            setattr(self, name, grown)
        self._in_order = False

    def _grow(self, size: int) -> None:
        """Room for ``size`` slots, doubling up to the capacity (a huge capacity costs only what is kept)."""
        if size > self._buffer.shape[1]:
            n_depths, old, width = self._buffer.shape
            with torch.inference_mode(False):  # a normal tensor: written in place in and out of a capture
                bigger = torch.empty(n_depths, min(self.capacity, max(size, 2 * old)), width)
                bigger[:, :old] = self._buffer
            self._buffer = bigger

    def _sort(self) -> None:
        if self._in_order:
            return
        order = np.argsort(self._keys, kind="stable")
        self._keys, self._prompt_ids, self._positions = (
            self._keys[order],
            self._prompt_ids[order],
            self._positions[order],
        )
        with torch.inference_mode(False):
            self._buffer = self._buffer[:, torch.from_numpy(order)].contiguous()
        self._in_order = True

    def nbytes(self) -> int:
        """Bytes held now, all on the host: the value slots and the keys, prompt ids and positions."""
        arrays = (self._keys, self._prompt_ids, self._positions)
        return self._buffer.numel() * self._buffer.element_size() + sum(a.nbytes for a in arrays)

    def merge(self, other: TokenReservoir) -> None:
        self.offer(other.keys, other.prompt_ids, other.positions, other.values)

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {
            "capacity": torch.tensor(self.capacity),
            "keys": torch.from_numpy(self.keys.copy()),
            "prompt_ids": torch.from_numpy(self.prompt_ids.copy()),
            "positions": torch.from_numpy(self.positions.copy()),
            "values": self.values.contiguous(),
        }

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        self.capacity = int(state["capacity"])
        self._keys = state["keys"].numpy().astype(np.float64)
        self._prompt_ids = state["prompt_ids"].numpy().astype(np.int64)
        self._positions = state["positions"].numpy().astype(np.int64)
        self._buffer = state["values"].float().clone()  # written in place by later offers
        self._in_order = True
