"""Self-checks of lab 4, mixtures and Transient Class Objects (``notebooks/lab4_mixtures.ipynb``).

One ``check_<exercise>(your_function)`` per exercise, compared with the reference: the tested functions of
``latentbook.analysis.classes`` and the short reference solutions below. Theorem 6.3 (book/paper.md): ``k``
prototypes plus isotropic noise give a covariance "rank ``k - 1`` + isotropic", so at most ``k - 1`` spikes.
Introduced in: lab 4 (chapter 6 of the book).
"""

from __future__ import annotations

import numpy as np

from ..analysis import classes, synthetic
from .checking import Case, Result, run


def reference_between_class_covariance(x: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """``S_b = sum_c (n_c / n) (mu_c - mu)(mu_c - mu)^T``, ``d x d``."""
    mu = x.mean(0)
    out = np.zeros((x.shape[1], x.shape[1]))
    for c in np.unique(labels):
        diff = x[labels == c].mean(0) - mu
        out += np.mean(labels == c) * np.outer(diff, diff)
    return out


def reference_nearest_centroid(train: np.ndarray, train_labels: np.ndarray, test: np.ndarray) -> np.ndarray:
    """The label of the nearest class centroid (Euclidean) for each row of ``test``."""
    names = np.unique(train_labels)
    centroids = np.stack([train[train_labels == c].mean(0) for c in names])
    distances = ((test[:, None, :] - centroids[None]) ** 2).sum(-1)
    return names[np.argmin(distances, axis=1)]


def reference_step_accuracy(
    states: np.ndarray, labels: np.ndarray, steps: np.ndarray, fit_step: int
) -> np.ndarray:
    """Centroids fitted on the tokens of ``fit_step``; accuracy on the tokens of each step (sorted steps)."""
    fit = steps == fit_step
    return np.array(
        [
            np.mean(
                reference_nearest_centroid(states[fit], labels[fit], states[steps == s]) == labels[steps == s]
            )
            for s in np.unique(steps)
        ]
    )


def _mixture(seed: int, labels_as=None):
    mix = synthetic.mixture(n=300, d=20, k=4, separation=3.0, seed=seed)
    labels = mix.labels if labels_as is None else np.asarray(labels_as)[mix.labels]
    return mix.x, labels


def check_between_class_covariance(between_class_covariance) -> Result:
    """``between_class_covariance(x, labels)``: class-weighted scatter of the class means."""
    x, labels = _mixture(1)
    x, labels = x[:250], labels[:250]  # unequal class sizes
    unweighted = sum(
        np.outer(x[labels == c].mean(0) - x.mean(0), x[labels == c].mean(0) - x.mean(0))
        for c in np.unique(labels)
    )
    return run(
        "between_class_covariance",
        [
            Case(
                "between_class_covariance(x, labels), 4 classes of unequal size in d = 20",
                lambda: between_class_covariance(x, labels),
                reference_between_class_covariance(x, labels),
                mistakes=[(unweighted, "Weight each class's outer product by its share n_c / n.")],
                hint="S_b = sum_c (n_c / n) (mu_c - mu)(mu_c - mu)^T with mu the mean of all tokens.",
            ),
            Case(
                "its rank for k = 4 classes (Theorem 6.3: k - 1)",
                lambda: np.linalg.matrix_rank(between_class_covariance(x, labels), tol=1e-8),
                np.int64(3),
            ),
        ],
    )


def check_fisher_ratio(fisher_ratio) -> Result:
    """``fisher_ratio(x, labels)``: ``tr(S_b) / tr(S_w)``, both class-weighted."""
    x, labels = _mixture(2)
    within_unweighted = sum(np.sum(np.var(x[labels == c], axis=0)) for c in np.unique(labels))
    between = np.trace(reference_between_class_covariance(x, labels))
    return run(
        "fisher_ratio",
        [
            Case(
                "fisher_ratio(x, labels) of a 4-class mixture",
                lambda: fisher_ratio(x, labels),
                np.float64(classes.fisher_ratio(x, labels)),
                mistakes=[(between / within_unweighted, "Weight the within-class scatter by n_c / n too.")],
                hint="tr(S_w) = sum_c (n_c / n) * (mean squared distance of class c's tokens to mu_c).",
            )
        ],
    )


def check_nearest_centroid(nearest_centroid) -> Result:
    """``nearest_centroid(train, train_labels, test)`` -> the predicted label of each test row."""
    x, labels = _mixture(3, labels_as=[3, 7, 9, 11])
    train, test = slice(0, 200), slice(200, 300)
    index = reference_nearest_centroid(x[train], np.searchsorted([3, 7, 9, 11], labels[train]), x[test])
    return run(
        "nearest_centroid",
        [
            Case(
                "nearest_centroid on a 4-class mixture with labels 3, 7, 9, 11",
                lambda: nearest_centroid(x[train], labels[train], x[test]),
                reference_nearest_centroid(x[train], labels[train], x[test]),
                mistakes=[
                    (index, "Return the class labels (np.unique(train_labels)[i]), not their index i.")
                ],
                hint="Centroid = mean of each class's training rows; pick the closest centroid (squared distance).",
            )
        ],
    )


def check_step_accuracy(step_accuracy) -> Result:
    """``step_accuracy(states, labels, steps, fit_step)``: the TCO measure at one depth."""
    cases = []
    for persistent in (True, False):
        data = synthetic.class_trajectories(
            n_items=60, n_steps=3, n_depths=1, d=16, k=3, separation=6.0, persistent=persistent, seed=4
        )
        states = data.states[:, 0]
        pooled = np.array(
            [
                np.mean(
                    reference_nearest_centroid(states, data.labels, states[data.steps == s])
                    == data.labels[data.steps == s]
                )
                for s in range(3)
            ]
        )
        kind = "a persistent class (a TCO)" if persistent else "a class that does not persist"
        cases.append(
            Case(
                f"step_accuracy with fit_step=0 on {kind}",
                lambda states=states, data=data: step_accuracy(states, data.labels, data.steps, 0),
                reference_step_accuracy(states, data.labels, data.steps, 0),
                mistakes=[
                    (pooled, "Fit the centroids on the tokens of fit_step only, then test every step.")
                ],
                hint="fit = steps == fit_step; centroids from states[fit]; one accuracy per step, in sorted order.",
            )
        )
    return run("step_accuracy", cases)
