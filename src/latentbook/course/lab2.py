"""Self-checks of lab 2, object integrity Omega (``notebooks/lab2_omega.ipynb``).

One ``check_<exercise>(your_function)`` per exercise, compared with the reference: the tested functions of
``latentbook.analysis.omega`` and, for the crossing depth, ``reference_crossing_depth`` below.
``Omega(h) = 1 - ||h||_1 / (sqrt(d) ||h||_2)`` (book/paper.md, "Order parameter"); ``m(gamma)`` is its mean over
tokens at depth ``gamma``.
Introduced in: lab 2 (chapter 3 of the book).
"""

from __future__ import annotations

import numpy as np

from ..analysis import omega as om
from ..analysis import synthetic
from .checking import Case, Result, run, seeded


def check_omega(omega) -> Result:
    """``omega(x)``: along the last axis, any batch shape, 0 for the zero vector."""
    x = seeded(1).normal(size=(5, 16))
    l1, l2 = np.abs(x).sum(-1), np.linalg.norm(x, axis=-1)
    hint = "Omega(h) = 1 - ||h||_1 / (sqrt(d) ||h||_2), norms along the last axis (axis=-1)."
    return run(
        "omega",
        [
            Case(
                "omega(x) for 5 Gaussian vectors in d = 16",
                lambda: omega(x),
                om.omega(x),
                mistakes=[
                    (l1 / (4 * l2), "Omega is one MINUS the ratio ||h||_1 / (sqrt(d) ||h||_2)."),
                    (1 - l1 / l2, "Divide by sqrt(d) as well: ||h||_1 <= sqrt(d) ||h||_2."),
                ],
                hint=hint,
            ),
            Case(
                "omega of a one-hot vector in d = 100",
                lambda: omega(np.eye(100)[7]),
                np.float64(0.9),
                hint=hint,
            ),
            Case(
                "omega of (1, -1, 1, -1, ...) in d = 64",
                lambda: omega(np.tile([1.0, -1.0], 32)),
                np.float64(0.0),
            ),
            Case(
                "omega of the zero vector",
                lambda: omega(np.zeros(8)),
                np.float64(0.0),
                hint="Omega(0) = 0 by convention: guard the division where ||h||_2 = 0 (np.where).",
            ),
            Case(
                "omega of a batch of shape (2, 3, 8)",
                lambda: omega(x[:3, :].reshape(2, 3, 8)),
                om.omega(x[:3, :].reshape(2, 3, 8)),
                hint=hint,
            ),
        ],
    )


def check_k_sparse_omega(k_sparse_omega) -> Result:
    """``k_sparse_omega(k, d)``: Omega of a vector with ``k`` equal-magnitude nonzero coordinates."""
    grid = [(1, 64), (4, 64), (16, 64), (64, 64), (10, 640)]
    k, d = np.array(grid).T
    return run(
        "k_sparse_omega",
        [
            Case(
                f"k_sparse_omega(k, d) for (k, d) in {grid}",
                lambda: np.array([k_sparse_omega(int(a), int(b)) for a, b in grid]),
                np.array([om.reference_values(int(b), int(a))["k_sparse"] for a, b in grid]),
                mistakes=[
                    (np.sqrt(k / d), "That is the ratio ||h||_1 / (sqrt(d) ||h||_2); Omega is 1 minus it."),
                    (1 - k / d, "Check ||h||_1 = k a and ||h||_2 = sqrt(k) a: a square root appears."),
                ],
                hint="Write h with k entries equal to a and d - k zeros, and simplify Omega(h).",
            )
        ],
    )


def check_order_parameter(order_parameter) -> Result:
    """``order_parameter(states)``: ``states`` ``(n_depths, n_tokens, d)`` -> mean Omega per depth."""
    rng = seeded(2)
    states = rng.normal(size=(4, 50, 32)) * np.array([1.0, 1.0, 3.0, 9.0])[:, None, None] ** rng.random(
        (4, 50, 32)
    )
    return run(
        "order_parameter",
        [
            Case(
                "order_parameter(states) for 4 depths of 50 tokens in d = 32",
                lambda: order_parameter(states),
                om.omega(states).mean(1),
                mistakes=[
                    (om.omega(states.mean(1)), "Average Omega over tokens, not Omega of the average token."),
                ],
                hint="m(gamma_l) = mean over tokens of Omega(h) at depth l: one number per depth.",
            )
        ],
    )


def check_omega_without_top_dims(omega_without_top_dims) -> Result:
    """``omega_without_top_dims(x, k)``: Omega of each row after deleting the ``k`` coordinates with the
    largest ``max |x_i|`` over the rows (the massive-activation confound)."""
    rng = seeded(3)
    x = rng.normal(size=(40, 32))
    x[:, [3, 17]] *= 80.0  # two massive coordinates
    top = om.top_dims(x, 2)
    zeroed = x.copy()
    zeroed[:, top] = 0.0
    return run(
        "omega_without_top_dims",
        [
            Case(
                "omega_without_top_dims(x, 2) with two massive coordinates",
                lambda: omega_without_top_dims(x, 2),
                om.omega_without_top_dims(x, 2),
                mistakes=[
                    (
                        om.omega(zeroed),
                        "Delete the coordinates (np.delete): zeroing keeps sqrt(d) of the full d.",
                    ),
                    (om.omega(x), "Nothing was removed: find the k columns with the largest max |x| first."),
                ],
                hint="Rank the columns by np.abs(x).max(0), drop the top k, then apply Omega to each row.",
            ),
            Case(
                "omega_without_top_dims(x, 0) removes nothing",
                lambda: omega_without_top_dims(x, 0),
                om.omega(x),
            ),
        ],
    )


def reference_crossing_depth(gamma: np.ndarray, m: np.ndarray) -> float:
    """First depth where ``m`` reaches the midpoint ``(min m + max m) / 2``, linear between the two depths."""
    gamma, m = np.asarray(gamma, dtype=np.float64), np.asarray(m, dtype=np.float64)
    half = 0.5 * (m.min() + m.max())
    i = int(np.argmax(m >= half))
    if i == 0:
        return float(gamma[0])
    return float(gamma[i - 1] + (half - m[i - 1]) * (gamma[i] - gamma[i - 1]) / (m[i] - m[i - 1]))


def check_crossing_depth(crossing_depth) -> Result:
    """``crossing_depth(gamma, m)``: the midpoint-crossing estimate of the critical depth."""
    cases = []
    for gamma_c, noise in ((0.42, 0.0), (0.3, 0.0), (0.66, 0.005)):
        curve = synthetic.order_parameter_curve(gamma_c=gamma_c, noise=noise, n_layers=30, seed=1)
        i = int(np.argmax(curve.m >= 0.5 * (curve.m.min() + curve.m.max())))
        cases.append(
            Case(
                f"crossing_depth on a curve with a planted gamma_c = {gamma_c} (noise {noise})",
                lambda curve=curve: crossing_depth(curve.gamma, curve.m),
                np.float64(reference_crossing_depth(curve.gamma, curve.m)),
                rtol=1e-6,
                atol=1e-6,
                mistakes=[
                    (curve.gamma[i], "Interpolate linearly between the two depths around the crossing.")
                ],
                hint="half = (m.min() + m.max()) / 2; find the first i with m[i] >= half; interpolate on [i-1, i].",
            )
        )
    return run("crossing_depth", cases)
