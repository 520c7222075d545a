"""Mixtures and Transient Class Objects: spikes of a k-class mixture, class separability, class stability.

- Theorem 6.3 (book/paper.md): tokens clustered around ``k`` prototypes with isotropic noise have a covariance
  "low rank + isotropic", so **at most k-1** eigenvalues leave the Marchenko–Pastur bulk.
  ``mixture_spikes`` counts them with ``bulk_fit.mp_fit`` and compares with the bound.
- Separability per depth: the Fisher ratio ``tr(S_between) / tr(S_within)`` and cross-validated
  nearest-centroid accuracy (``separability``), per reasoning step (``separability_profile``).
- Class stability across reasoning steps, the TCO measure (claim 5): centroids fitted on the tokens of one
  step, tested on the tokens of every step, at every depth (``class_stability``). A class object that
  persists gives high accuracy at later steps; one that does not falls to chance.

Arrays of labelled token states come from ``capturing.states.token_states`` (shape ``(n, L+1, d)``) or
``synthetic.class_trajectories``. Cross-validation folds are drawn by *item* (``groups``), so tokens of one
prompt never sit on both sides of a split.
Introduced in: chapter 6.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError
from . import bulk_fit


def _labels(labels, n: int) -> np.ndarray:
    labels = np.asarray(labels)
    if labels.shape != (n,):
        raise InvalidInputError(f"labels must have one entry per token ({n}), got shape {labels.shape}.")
    if len(np.unique(labels)) < 2:
        raise InvalidInputError("Need at least two classes among the labels.")
    return labels


def _tokens(x, min_ndim: int = 2) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim not in (min_ndim, 3) or x.shape[0] < 2:
        raise InvalidInputError(
            f"Token states must be (n, d) or (n, n_depths, d) with n >= 2; got {x.shape}."
        )
    if not np.all(np.isfinite(x)):
        raise InvalidInputError("Token states contain NaN or Inf: drop those tokens first.")
    return x


@dataclass(frozen=True)
class MixtureSpikes:
    """Spikes above the MP bulk of a labelled (or k-class) token cloud, against Theorem 6.3's bound.

    Attributes
    ----------
    n_spikes : int
        Eigenvalues above the MP bulk (``fit.n_spikes``).
    n_classes : int
        ``k``, from the labels or as given.
    bound : int
        Theorem 6.3's bound ``k - 1``.
    within_bound : bool
        Whether ``n_spikes <= k - 1``.
    spikes : numpy.ndarray
        The eigenvalues above the MP threshold, descending.
    fit : bulk_fit.MPFit
        The Marchenko–Pastur fit they were counted with.

    Examples
    --------
    ``mixture_spikes`` returns one; pure noise read as one class has no spike and meets the bound ``k - 1 = 0``:

    >>> from latentbook.analysis import classes, synthetic
    >>> result = classes.mixture_spikes(synthetic.gaussian(1000, 40), n_classes=1)
    >>> result.n_spikes, result.n_classes, result.bound, result.within_bound, len(result.spikes)
    (0, 1, 0, True, 0)
    >>> type(result.fit).__name__
    'MPFit'
    """

    n_spikes: int
    n_classes: int
    bound: int  # k - 1
    within_bound: bool  # n_spikes <= k - 1
    spikes: np.ndarray  # eigenvalues above the MP threshold, descending
    fit: bulk_fit.MPFit


def mixture_spikes(
    x: np.ndarray,
    labels: np.ndarray | None = None,
    n_classes: int | None = None,
    n_samples: float | None = None,
    alpha: float = 0.01,
) -> MixtureSpikes:
    """Count covariance eigenvalues above the MP edge (``bulk_fit.mp_fit``) and compare with ``k - 1``.

    ``x`` is ``(n, d)``; ``k`` comes from ``labels`` or ``n_classes``. ``n_samples`` is the effective sample
    size for the MP law (default ``n``; pass ``spectra.effective_sample_size`` for correlated tokens).
    Theorem 6.3: a k-prototype mixture with isotropic noise has at most ``k - 1`` spikes.
    Introduced in: chapter 6.

    Parameters
    ----------
    x : numpy.ndarray
        The tokens of one depth, shape ``(n, d)``, finite.
    labels : numpy.ndarray, optional
        The class of each token, shape ``(n,)``; gives ``k``.
    n_classes : int, optional
        ``k`` when there are no labels.
    n_samples : float, optional
        The effective sample size of the MP law; None: ``n``.
    alpha : float
        The false-alarm level of the spike cut (``bulk_fit.mp_fit``).

    Returns
    -------
    MixtureSpikes
        The spike count, ``k``, the bound ``k - 1``, whether it holds, the spikes and the fit.

    Raises
    ------
    InvalidInputError
        For tokens that are not ``(n, d)`` and finite, labels not one per token or of a single class, or neither
        labels nor a positive ``n_classes``.

    Examples
    --------
    Four prototypes 8 noise units apart (``synthetic.mixture``) give exactly ``k - 1 = 3`` spikes, near the
    planted population eigenvalue ``sigma2 + r^2 / k = 9``:

    >>> import numpy as np
    >>> from latentbook.analysis import classes, synthetic
    >>> mix = synthetic.mixture(n=1000, d=40, k=4, separation=8.0)
    >>> result = classes.mixture_spikes(mix.x, mix.labels)
    >>> result.n_spikes, result.bound, result.within_bound, round(float(mix.sigma2 + mix.signal_eigenvalue), 3)
    (3, 3, True, 9.0)
    >>> bool(np.all(np.abs(result.spikes - 9.0) < 0.5))
    True
    """
    x = _tokens(x)
    if x.ndim != 2:
        raise InvalidInputError("mixture_spikes takes the tokens of one depth, shape (n, d).")
    if labels is not None:
        n_classes = len(np.unique(_labels(labels, x.shape[0])))
    if not isinstance(n_classes, (int, np.integer)) or n_classes < 1:
        raise InvalidInputError("Give labels, or n_classes (the number of prototypes k >= 1).")
    eigvals = np.linalg.eigvalsh(np.cov(x, rowvar=False, bias=True))[::-1]
    fit = bulk_fit.mp_fit(eigvals, x.shape[0] if n_samples is None else n_samples, alpha=alpha)
    bound = int(n_classes) - 1
    return MixtureSpikes(fit.n_spikes, int(n_classes), bound, fit.n_spikes <= bound, fit.spikes, fit)


def fisher_ratio(x: np.ndarray, labels: np.ndarray) -> float | np.ndarray:
    """``tr(S_b) / tr(S_w)``: between-class over within-class scatter (class weights ``n_c / n``).

    ``S_b = sum_c (n_c/n) (mu_c - mu)(mu_c - mu)^T``, ``S_w = sum_c (n_c/n) Cov_c``; traces only, so no
    ``d x d`` matrix is formed. For ``(n, n_depths, d)`` input, one ratio per depth. A k-prototype mixture at
    pairwise distance ``s`` noise units in ``d`` dimensions gives ``(k-1) s^2 / (2 k d)``.
    Introduced in: chapter 6.

    Parameters
    ----------
    x : numpy.ndarray
        Tokens ``(n, d)``, or ``(n, n_depths, d)`` for one ratio per depth; finite.
    labels : numpy.ndarray
        The class of each token, shape ``(n,)``, with at least two classes.

    Returns
    -------
    float or numpy.ndarray
        ``tr(S_b) / tr(S_w)``, or one per depth, shape ``(n_depths,)``.

    Raises
    ------
    InvalidInputError
        For tokens of another shape or not finite, labels not one per token, or a single class.

    Examples
    --------
    Two classes of two points each: centroids 1 and 11 (5 from the mean 6), spread 1 about them; and a
    two-prototype mixture 4 noise units apart in 10 dimensions, near ``(k-1) s^2 / (2 k d) = 0.4``:

    >>> import numpy as np
    >>> from latentbook.analysis import classes, synthetic
    >>> classes.fisher_ratio(np.array([[0.0], [2.0], [10.0], [12.0]]), np.array([0, 0, 1, 1]))
    25.0
    >>> mix = synthetic.mixture(n=4000, d=10, k=2, separation=4.0)
    >>> bool(abs(classes.fisher_ratio(mix.x, mix.labels) - 0.4) < 0.02)
    True
    """
    x = _tokens(x)
    labels = _labels(labels, x.shape[0])
    mu = x.mean(0)
    between = within = 0.0
    for c in np.unique(labels):
        xc = x[labels == c]
        weight = len(xc) / len(x)  # pragma: no mutate: class weights' scale
        mu_c = xc.mean(0)
        between = between + weight * np.sum((mu_c - mu) ** 2, axis=-1)
        within = within + weight * np.sum((xc - mu_c) ** 2, axis=-1).mean(0)
    ratio = between / within
    return float(ratio) if np.ndim(ratio) == 0 else ratio  # pragma: no mutate: a numpy float is a float


# equivalent mutants here: default seed
def group_folds(groups: np.ndarray, n_folds: int, seed: int = 0) -> np.ndarray:  # pragma: no mutate
    """Fold of each token, drawn by group (item, prompt or program): every token of a group lands in one fold.

    The partition is uniformly random with ``floor(G / n_folds)`` or ``ceil(G / n_folds)`` whole groups per fold,
    as ``sklearn.model_selection.GroupKFold(shuffle=True)`` draws it (its default balances tokens instead, the
    largest group first, and ignores the seed); kept by hand because sklearn is a test-only dependency and
    GroupKFold draws from the legacy ``RandomState`` in contiguous blocks, so its folds differ from these seed
    for seed (``tests/test_classes.py``).

    Parameters
    ----------
    groups : numpy.ndarray
        The group of each token, shape ``(n,)``.
    n_folds : int
        The number of folds, in ``[2, G]`` (``G`` groups).
    seed : int
        Seed of the random partition.

    Returns
    -------
    numpy.ndarray
        The fold of each token, ints in ``0..n_folds-1``, shape ``(n,)``.

    Raises
    ------
    InvalidInputError
        For ``n_folds`` outside ``[2, G]``.

    Examples
    --------
    Four groups of two tokens in two folds: both tokens of a group share a fold, and each fold holds two groups:

    >>> import numpy as np
    >>> from latentbook.analysis import classes
    >>> folds = classes.group_folds(np.repeat([0, 1, 2, 3], 2), n_folds=2)
    >>> bool(np.all(folds[::2] == folds[1::2])), np.bincount(folds).tolist()
    (True, [4, 4])
    """
    groups = np.asarray(groups)
    unique = np.unique(groups)
    if not 2 <= n_folds <= len(unique):
        raise InvalidInputError(
            f"n_folds must be in [2, {len(unique)}] (the number of items, prompts or programs), got {n_folds}."
        )
    order = np.random.default_rng(seed).permutation(len(unique))
    fold_of_group = np.empty(len(unique), dtype=np.int64)
    fold_of_group[order] = np.arange(len(unique)) % n_folds
    return fold_of_group[np.searchsorted(unique, groups)]


def _predict(train: np.ndarray, train_labels: np.ndarray, test: np.ndarray) -> np.ndarray:
    """Nearest centroid per depth: ``train`` ``(m, D, d)``, ``test`` ``(t, D, d)`` -> labels ``(t, D)``."""
    classes = np.unique(train_labels)
    centroids = np.stack([train[train_labels == c].mean(0) for c in classes])  # (k, D, d)
    dist = (
        np.sum(test**2, -1)[:, None, :]  # pragma: no mutate: the test token's own term
        - 2 * np.einsum("tDd,kDd->tkD", test, centroids)
        + np.sum(centroids**2, -1)[None]
    )
    return classes[np.argmin(dist, axis=1)]


def nearest_centroid_accuracy(
    x: np.ndarray, labels: np.ndarray, groups: np.ndarray | None = None, n_folds: int = 5, seed: int = 0
) -> float | np.ndarray:
    """Cross-validated accuracy of the nearest-centroid classifier (Euclidean), folds drawn by ``groups``.

    ``x`` is ``(n, d)`` or ``(n, n_depths, d)`` (then one accuracy per depth). ``groups`` (e.g. the item of
    each token) keeps all tokens of a group in one fold; default: each token its own group.
    Introduced in: chapter 6.

    Parameters
    ----------
    x : numpy.ndarray
        Tokens ``(n, d)``, or ``(n, n_depths, d)`` for one accuracy per depth; finite.
    labels : numpy.ndarray
        The class of each token, shape ``(n,)``, with at least two classes.
    groups : numpy.ndarray, optional
        The group of each token (kept in one fold); None: each token its own group.
    n_folds : int
        The number of folds, in ``[2, G]`` (``G`` groups).
    seed : int
        Seed of the folds (``group_folds``).

    Returns
    -------
    float or numpy.ndarray
        The fraction of tokens classified right, or one per depth, shape ``(n_depths,)``.

    Raises
    ------
    InvalidInputError
        For tokens of another shape or not finite, labels not one per token or of a single class, or
        ``n_folds`` outside ``[2, G]``.

    Examples
    --------
    Three prototypes 8 noise units apart are told apart without error; with no separation the accuracy sits
    near chance (1/3):

    >>> from latentbook.analysis import classes, synthetic
    >>> mix = synthetic.mixture(n=300, d=20, k=3, separation=8.0)
    >>> classes.nearest_centroid_accuracy(mix.x, mix.labels)
    1.0
    >>> noise = synthetic.mixture(n=300, d=20, k=3, separation=0.0)
    >>> bool(abs(classes.nearest_centroid_accuracy(noise.x, noise.labels) - 1 / 3) < 0.1)
    True
    """
    x = _tokens(x)
    labels = _labels(labels, x.shape[0])
    groups = np.arange(len(x)) if groups is None else np.asarray(groups)
    stacked = x if x.ndim == 3 else x[:, None, :]
    folds = group_folds(groups, n_folds, seed)
    correct = np.zeros(stacked.shape[1])
    for fold in range(n_folds):
        test = folds == fold
        predicted = _predict(stacked[~test], labels[~test], stacked[test])
        correct += (predicted == labels[test][:, None]).sum(0)
    accuracy = correct / len(x)
    return float(accuracy[0]) if x.ndim == 2 else accuracy


@dataclass(frozen=True)
class Separability:
    """Class separability at each depth.

    Attributes
    ----------
    fisher : numpy.ndarray
        ``tr(S_b) / tr(S_w)`` at each depth, shape ``(n_depths,)``.
    accuracy : numpy.ndarray
        The cross-validated nearest-centroid accuracy at each depth, shape ``(n_depths,)``.
    chance : float
        The accuracy of always answering the most frequent class.

    Examples
    --------
    ``separability`` returns one; three balanced classes have chance 1/3:

    >>> from latentbook.analysis import classes, synthetic
    >>> labelled = synthetic.class_trajectories(n_items=60, n_steps=1, n_depths=2, d=16, k=3)
    >>> result = classes.separability(labelled.states, labelled.labels)
    >>> result.fisher.shape, result.accuracy.shape, round(result.chance, 3)
    ((2,), (2,), 0.333)
    """

    fisher: np.ndarray  # (n_depths,) tr(S_b) / tr(S_w)
    accuracy: np.ndarray  # (n_depths,) cross-validated nearest-centroid accuracy
    chance: float  # accuracy of always answering the most frequent class


def separability(
    states: np.ndarray, labels: np.ndarray, groups: np.ndarray | None = None, n_folds: int = 5, seed: int = 0
) -> Separability:
    """Fisher ratio and nearest-centroid accuracy per depth of ``states`` ``(n, n_depths, d)``.

    Introduced in: chapter 6.

    Parameters
    ----------
    states : numpy.ndarray
        Token states ``(n, n_depths, d)``, finite.
    labels : numpy.ndarray
        The class of each token, shape ``(n,)``, with at least two classes.
    groups : numpy.ndarray, optional
        The group (item) of each token, kept in one fold; None: each token its own group.
    n_folds : int
        The number of folds, in ``[2, G]`` (``G`` groups).
    seed : int
        Seed of the folds.

    Returns
    -------
    Separability
        The Fisher ratio and the accuracy per depth, and the chance accuracy.

    Raises
    ------
    InvalidInputError
        For states not ``(n, n_depths, d)`` or not finite, labels not one per token or of a single class, or
        ``n_folds`` outside ``[2, G]``.

    Examples
    --------
    Classes planted 0, 2 and 8 noise units apart at three depths (``synthetic.class_trajectories``): both
    measures grow with the separation, the accuracy from about chance to 1:

    >>> import numpy as np
    >>> from latentbook.analysis import classes, synthetic
    >>> labelled = synthetic.class_trajectories(
    ...     n_items=60, n_steps=1, n_depths=3, d=16, k=3, separation=np.array([0.0, 2.0, 8.0])
    ... )
    >>> result = classes.separability(labelled.states, labelled.labels)
    >>> bool(np.all(np.diff(result.fisher) > 0)), bool(np.all(np.diff(result.accuracy) > 0))
    (True, True)
    >>> bool(abs(result.accuracy[0] - result.chance) < 0.15), float(result.accuracy[-1])
    (True, 1.0)
    """
    states = _tokens(states, min_ndim=3)  # pragma: no mutate: stacked states only, refused further on
    labels = _labels(labels, states.shape[0])
    chance = float(np.max(np.unique(labels, return_counts=True)[1]) / len(labels))
    return Separability(
        np.atleast_1d(fisher_ratio(states, labels)),
        np.atleast_1d(nearest_centroid_accuracy(states, labels, groups, n_folds, seed)),
        chance,
    )


@dataclass(frozen=True)
class SeparabilityProfile:
    """Cross-validated nearest-centroid accuracy per reasoning step (rows) and depth (columns).

    Attributes
    ----------
    accuracy : numpy.ndarray
        The accuracy of the tokens of each step at each depth, shape ``(n_steps, n_depths)``.
    chance : numpy.ndarray
        The share of the most frequent class among each step's tokens, shape ``(n_steps,)``.
    step_names : tuple of str
        The name of each step (row).

    Examples
    --------
    ``separability_profile`` returns one; rows are steps, columns depths:

    >>> from latentbook.analysis import classes, synthetic
    >>> labelled = synthetic.class_trajectories(n_items=30, n_steps=2, n_depths=3, d=16, k=3)
    >>> profile = classes.separability_profile(labelled)
    >>> profile.accuracy.shape, profile.chance.round(3).tolist(), profile.step_names
    ((2, 3), [0.333, 0.333], ('step 0', 'step 1'))
    """

    accuracy: np.ndarray  # (n_steps, n_depths)
    chance: np.ndarray  # (n_steps,) most frequent class among the step's tokens
    step_names: tuple[str, ...]


def separability_profile(states, step_names: tuple[str, ...] | None = None) -> SeparabilityProfile:
    """``nearest_centroid_accuracy`` at every depth of the tokens of each reasoning step, folds drawn by item.

    ``states`` is a ``capturing.states.TokenStates`` (states ``(n, L+1, d)``, labels, steps, items); the row of
    step ``s`` is ``separability(...).accuracy`` of the tokens with ``steps == s``. Shown by the explorer's
    separability metric (``view.explorer_panels.separability_panel``).
    Introduced in: chapter 6 (claim 5).

    Parameters
    ----------
    states : TokenStates
        Anything with ``states`` ``(n, n_depths, d)`` and ``labels``, ``steps`` and ``items`` ``(n,)``
        (``capturing.states.TokenStates``, ``synthetic.LabelledStates``); every step needs at least two items.
    step_names : tuple of str, optional
        The name of each step value (indexed by it); None: ``"step s"``.

    Returns
    -------
    SeparabilityProfile
        The accuracy per step and depth, the chance per step and the step names.

    Examples
    --------
    Classes planted 0, 2 and 8 noise units apart at three depths, in two steps: at every step the accuracy
    rises from about chance to 1 with depth:

    >>> import numpy as np
    >>> from latentbook.analysis import classes, synthetic
    >>> labelled = synthetic.class_trajectories(
    ...     n_items=60, n_steps=2, n_depths=3, d=16, k=3, separation=np.array([0.0, 2.0, 8.0])
    ... )
    >>> profile = classes.separability_profile(labelled, step_names=("read", "answer"))
    >>> profile.step_names, profile.accuracy.shape
    (('read', 'answer'), (2, 3))
    >>> bool(np.all(np.diff(profile.accuracy, axis=1) > 0)), profile.accuracy[:, -1].tolist()
    (True, [1.0, 1.0])
    """
    steps = np.unique(states.steps)
    rows, chance = [], []
    for step in steps:
        pick = states.steps == step
        labels = states.labels[pick]
        n_folds = min(5, len(np.unique(states.items[pick])))
        rows.append(nearest_centroid_accuracy(states.states[pick], labels, states.items[pick], n_folds))
        chance.append(np.max(np.unique(labels, return_counts=True)[1]) / len(labels))
    names = tuple(step_names[s] if step_names else f"step {s}" for s in steps)
    return SeparabilityProfile(np.array(rows), np.array(chance), names)


@dataclass(frozen=True)
class Stability:
    """Accuracy of centroids fitted at ``fit_step``, tested at every step and depth (the TCO measure).

    Attributes
    ----------
    accuracy : numpy.ndarray
        The accuracy of the tokens of each step (rows) at each depth (columns), shape ``(n_steps, n_depths)``.
    steps : numpy.ndarray
        The step values, one per row of ``accuracy``.
    fit_step : int
        The step whose tokens fitted the centroids.
    chance : float
        The share of the most frequent class among the tokens.

    Examples
    --------
    ``class_stability`` returns one:

    >>> from latentbook.analysis import classes, synthetic
    >>> labelled = synthetic.class_trajectories(n_items=60, n_steps=3, n_depths=2, d=16, k=3)
    >>> result = classes.class_stability(labelled.states, labelled.labels, labelled.steps, labelled.items)
    >>> result.accuracy.shape, result.steps.tolist(), result.fit_step, round(result.chance, 3)
    ((3, 2), [0, 1, 2], 0, 0.333)
    """

    accuracy: np.ndarray  # (n_steps, n_depths)
    steps: np.ndarray  # the step values, rows of accuracy
    fit_step: int
    chance: float  # most frequent class among the tested tokens


def class_stability(
    states: np.ndarray,
    labels: np.ndarray,
    steps: np.ndarray,
    items: np.ndarray | None = None,
    fit_step: int = 0,
    n_folds: int = 5,
    seed: int = 0,
) -> Stability:
    """Fit class centroids on the tokens of ``fit_step``; classify the tokens of every step, at every depth.

    ``states`` ``(n, n_depths, d)``, with each token's class ``labels``, reasoning ``steps`` and ``items``
    (its prompt). Cross-fitted by item: centroids come from the ``fit_step`` tokens of the other folds'
    items, so a token is never classified by centroids its own prompt helped to fit (the ``fit_step`` row is
    then the ordinary cross-validated accuracy). A Transient Class Object keeps accuracy high along a row
    of later steps; a class that does not persist falls to ``chance``.
    Introduced in: chapter 6 (book/paper.md, claim 5).

    Parameters
    ----------
    states : numpy.ndarray
        Token states ``(n, n_depths, d)``, finite.
    labels : numpy.ndarray
        The class of each token, shape ``(n,)``.
    steps : numpy.ndarray
        The reasoning step of each token, shape ``(n,)``.
    items : numpy.ndarray, optional
        The item (prompt) of each token, kept in one fold; None: each token its own item.
    fit_step : int
        The step whose tokens fit the centroids; it needs at least two classes.
    n_folds : int
        The number of folds, in ``[2, G]`` (``G`` items).
    seed : int
        Seed of the folds (``group_folds``).

    Returns
    -------
    Stability
        The accuracy per step and depth, the step values, ``fit_step`` and the chance accuracy.

    Raises
    ------
    InvalidInputError
        For states not ``(n, n_depths, d)`` or not finite, labels or steps not one per token, a ``fit_step``
        with fewer than two classes, or ``n_folds`` outside ``[2, G]``.

    Examples
    --------
    A class that persists through the steps is read at every step by centroids of step 0; one redrawn at
    random after step 0 falls to chance (1/3) there:

    >>> import numpy as np
    >>> from latentbook.analysis import classes, synthetic
    >>> for persistent in (True, False):
    ...     s = synthetic.class_trajectories(
    ...         n_items=60, n_steps=3, n_depths=2, d=16, k=3, separation=8.0, persistent=persistent
    ...     )
    ...     result = classes.class_stability(s.states, s.labels, s.steps, s.items, fit_step=0)
    ...     later = result.accuracy[1:]
    ...     print(result.accuracy[0].tolist(), bool(np.all(later > 0.9)), bool(np.all(abs(later - 1 / 3) < 0.15)))
    [1.0, 1.0] True False
    [1.0, 1.0] False True
    """
    states = _tokens(states, min_ndim=3)  # pragma: no mutate: stacked states only
    n = states.shape[0]
    labels = np.asarray(labels)
    steps = np.asarray(steps)
    if labels.shape != (n,) or steps.shape != (n,):
        raise InvalidInputError(
            f"labels and steps need one entry per token ({n}); got {labels.shape}, {steps.shape}."
        )
    items = np.arange(n) if items is None else np.asarray(items)
    fit = steps == fit_step
    if len(np.unique(labels[fit])) < 2:
        raise InvalidInputError(f"Step {fit_step} has fewer than two classes: choose another fit_step.")
    folds = group_folds(items, n_folds, seed)
    step_values = np.unique(steps)
    correct = np.zeros((len(step_values), states.shape[1]))
    counts = np.array([np.sum(steps == s) for s in step_values])
    for fold in range(n_folds):
        train, test = fit & (folds != fold), folds == fold
        if not test.any():
            continue  # pragma: no mutate: unreachable fold guard
        predicted = _predict(states[train], labels[train], states[test])
        hits = predicted == labels[test][:, None]
        for row, s in enumerate(step_values):
            correct[row] += hits[steps[test] == s].sum(0)
    chance = float(np.max(np.unique(labels, return_counts=True)[1]) / n)
    return Stability(correct / counts[:, None], step_values, fit_step, chance)
