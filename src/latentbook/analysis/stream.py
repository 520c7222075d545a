"""The residual stream's size against depth, and what the final norm does to the last depth.

- ``rms_norm(cap)``: the root-mean-square coordinate ``sqrt(E ||h||^2 / d)`` at every depth, read from the
  streamed moments (``E ||h||^2 = tr C + ||mu||^2``), so it covers every captured token, not a sample;
- ``final_norm_effect(cap)``: the last depth before the final norm (``gamma = 1``) against its output, which is
  what ``output_hidden_states[-1]`` of transformers returns in place of the last layer's residual stream.

Introduced in: chapter 1.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..errors import InvalidInputError

if TYPE_CHECKING:
    from ..capturing.accumulators import LayerStats
    from ..capturing.results import Capture


def _rms(stats: LayerStats) -> float:
    moments = stats.moments
    mean_square = float(moments.covariance().trace() + moments.mean.square().sum()) / moments.d
    return float(np.sqrt(mean_square))


def rms_norm(cap: Capture) -> np.ndarray:
    """``sqrt(E ||h^(l)||^2 / d)`` at each depth ``l = 0..L`` (one value per ``cap.gamma``).

    Introduced in: chapter 1.

    Parameters
    ----------
    cap : Capture
        The capture whose exact moments (over every captured token) are read.

    Returns
    -------
    numpy.ndarray
        The RMS coordinate at each depth held, shape ``(n_depths,)``.

    Examples
    --------
    Gaussian tokens of scale ``2^l`` at depth ``l``: the RMS coordinate is the direct root mean square of every
    coordinate of every token, about 1, 2 and 4:

    >>> import numpy as np
    >>> from latentbook.analysis import synthetic
    >>> from latentbook.analysis.stream import rms_norm
    >>> rng = np.random.default_rng(0)
    >>> states = np.stack([2.0**depth * rng.standard_normal((500, 16)) for depth in range(3)])
    >>> rms = rms_norm(synthetic.as_capture(states))
    >>> bool(np.allclose(rms, np.sqrt((states**2).mean(axis=(1, 2))), rtol=1e-5)), rms.round(1).tolist()
    (True, [1.0, 2.0, 4.0])
    >>> rms_norm(synthetic.as_capture(np.full((2, 10, 4), 3.0))).tolist()  # every coordinate 3
    [3.0, 3.0]
    """
    return np.array([_rms(stats) for stats in cap.layers])


def final_norm_effect(cap: Capture) -> dict[str, float]:
    """The last layer's residual stream (``before``) against the final norm's output (``after``), as floats.

    Keys: ``rms_before`` / ``rms_after`` (root-mean-square coordinate), ``omega_before`` / ``omega_after``
    (mean Omega over tokens), ``max_abs_before`` / ``max_abs_after`` (largest ``|h_i|`` of any token and
    coordinate), and ``rms_ratio = rms_before / rms_after``. Raises for models without a final norm
    (post-norm encoders such as BERT, whose layers end in their own LayerNorm). Introduced in: chapter 1.

    Parameters
    ----------
    cap : Capture
        A capture that holds depth ``L`` and the final norm's output.

    Returns
    -------
    dict of str to float
        The seven keys above.

    Raises
    ------
    InvalidInputError
        For a capture without a final norm.

    Examples
    --------
    A final norm planted by hand: an RMSNorm without gain sets every token's RMS to 1, so the ratio is the last
    depth's RMS, and leaves Omega (scale-free) unchanged:

    >>> import numpy as np
    >>> import torch
    >>> from latentbook.analysis import synthetic
    >>> from latentbook.analysis.stream import final_norm_effect
    >>> from latentbook.capturing import LayerStats
    >>> rng = np.random.default_rng(0)
    >>> states = np.stack([2.0**depth * rng.standard_normal((500, 16)) for depth in range(3)])
    >>> cap = synthetic.as_capture(states)
    >>> normed = states[-1] / np.sqrt((states[-1] ** 2).mean(1, keepdims=True))
    >>> cap.final_norm = LayerStats(16)
    >>> omega = cap.final_norm.add(torch.from_numpy(normed.astype(np.float32)))
    >>> effect = final_norm_effect(cap)
    >>> round(effect["rms_after"], 4), round(effect["rms_ratio"], 1)
    (1.0, 4.0)
    >>> bool(abs(effect["omega_after"] - effect["omega_before"]) < 1e-6), len(effect)
    (True, 7)
    >>> cap.final_norm = None
    >>> final_norm_effect(cap)
    Traceback (most recent call last):
    ...
    latentbook.errors.InvalidInputError: synthetic has no final norm in this capture ...
    """
    if cap.final_norm is None:
        raise InvalidInputError(
            f"{cap.model_name} has no final norm in this capture (e.g. a post-norm BERT encoder): its last "
            "depth is already what output_hidden_states[-1] returns."
        )
    before, after = cap.layers[-1], cap.final_norm
    result = {
        "rms_before": _rms(before),
        "rms_after": _rms(after),
        "omega_before": float(before.omega.mean),
        "omega_after": float(after.omega.mean),
        "max_abs_before": float(before.abs.max.max()),
        "max_abs_after": float(after.abs.max.max()),
    }
    result["rms_ratio"] = result["rms_before"] / result["rms_after"]
    return result
