"""Token clouds with a known answer for the learned-basis Omega and the prototype test (issue 54): codes that lie
off the coordinate axes, and noise that is heavy-tailed but holds no code, all with tokens correlated within a
prompt.

Every generator returns a ``Cloud`` of ``n_prompts * per_prompt`` tokens in ``R^d``; the prompt nuisance is
``x = sqrt(1 - rho) x0 + sqrt(rho) b_prompt`` with ``b_prompt ~ N(0, I_d)`` shared by the tokens of a prompt.
``strength`` is the norm of what a code writes over the noise's median norm (``sqrt(d)``), as in
``models/planted.py``.

- ``noise(kind)``: i.i.d. coordinates, unit variance: ``"gaussian"``, ``"laplace"``, ``"t3"`` (Student-t, 3 degrees
  of freedom), ``"gated"`` (a Gaussian times the SiLU of another, as SwiGLU writes), or ``"outliers"`` (Gaussian
  plus 6 coordinates at 60 s.d. on 30 % of the tokens, the outlier features of LLM.int8);
- ``rotated_code``: ``k`` of ``n_atoms`` random orthonormal directions active per token, random signs;
- ``rotated_prototypes``: one of ``n_classes`` random orthonormal prototypes per token (Theorem 6.3's mixture);
- ``t_cloud``: one multivariate Student-t cloud with ``df`` degrees of freedom and an anisotropic scale.

Introduced in: chapter 3 and chapter 6 (issue 54).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError
from .synthetic import random_orthonormal

N_PROMPTS, PER_PROMPT, WIDTH = (
    128,
    4,
    576,
)  # the book's token sample: 512 tokens of 128 prompts, SmolLM2's width
NOISE_KINDS = ("gaussian", "laplace", "t3", "gated", "outliers")


@dataclass(frozen=True)
class Cloud:
    """Tokens ``x`` (``(n, d)``), the prompt of each, and the planted class of each (-1: none planted)."""

    x: np.ndarray
    prompt_ids: np.ndarray
    labels: np.ndarray


def _with_prompts(rng: np.random.Generator, x0: np.ndarray, per_prompt: int, rho: float) -> np.ndarray:
    if not 0 <= rho < 1:
        raise InvalidInputError(f"rho must lie in [0, 1), got {rho!r}.")
    shared = np.repeat(rng.standard_normal((len(x0) // per_prompt, x0.shape[1])), per_prompt, axis=0)
    return np.sqrt(1 - rho) * x0 + np.sqrt(rho) * shared


def _cloud(
    rng: np.random.Generator, x0: np.ndarray, per_prompt: int, rho: float, labels: np.ndarray | None = None
) -> Cloud:
    """``x0`` with the prompt nuisance (``_with_prompts``), its prompt ids, and ``labels`` (-1: none)."""
    n = len(x0)
    ids = np.repeat(np.arange(n // per_prompt), per_prompt)
    return Cloud(_with_prompts(rng, x0, per_prompt, rho), ids, np.full(n, -1) if labels is None else labels)


def _iid(rng: np.random.Generator, kind: str, shape: tuple[int, int]) -> np.ndarray:
    if kind == "gaussian":
        return rng.standard_normal(shape)
    if kind == "laplace":
        return rng.laplace(size=shape) / np.sqrt(2)
    if kind == "t3":
        return rng.standard_t(3, size=shape) / np.sqrt(3)
    if kind == "gated":
        gate = rng.standard_normal(shape)
        x = rng.standard_normal(shape) * gate / (1 + np.exp(-gate))
        return x / x.std()
    if kind == "outliers":
        x = rng.standard_normal(shape)
        dims = rng.choice(shape[1], 6, replace=False)
        on = rng.random(shape[0]) < 0.3
        x[np.ix_(on, dims)] += 60.0
        return x
    raise InvalidInputError(f"kind must be one of {NOISE_KINDS}, got {kind!r}.")


def noise(
    kind: str = "gaussian",
    n_prompts: int = N_PROMPTS,
    per_prompt: int = PER_PROMPT,
    d: int = WIDTH,
    rho: float = 0.3,
    seed: int = 0,
) -> Cloud:
    """I.i.d. coordinates of one ``kind`` (``NOISE_KINDS``) with the prompt nuisance: no code, no prototypes."""
    rng = np.random.default_rng(seed)
    x0 = _iid(rng, kind, (n_prompts * per_prompt, d))
    return _cloud(rng, x0, per_prompt, rho)


def rotated_code(
    strength: float = 1.0,
    n_atoms: int = 32,
    k: int = 3,
    n_prompts: int = N_PROMPTS,
    per_prompt: int = PER_PROMPT,
    d: int = WIDTH,
    rho: float = 0.3,
    seed: int = 0,
) -> Cloud:
    """``x0 = sum_{j in S_t} +-a u_j + e``: ``k`` of ``n_atoms`` random orthonormal ``u_j`` per token, ``a = strength
    sqrt(d / k)`` (the code's norm is ``strength`` times the noise's), ``e ~ N(0, I_d)``."""
    rng = np.random.default_rng(seed)
    n = n_prompts * per_prompt
    atoms = random_orthonormal(d, n_atoms, rng).T
    codes = np.zeros((n, n_atoms))
    for row in codes:
        row[rng.choice(n_atoms, k, replace=False)] = rng.choice([-1.0, 1.0], k)
    x0 = strength * np.sqrt(d / k) * codes @ atoms + rng.standard_normal((n, d))
    return _cloud(rng, x0, per_prompt, rho)


def rotated_prototypes(
    strength: float = 0.5,
    n_classes: int = 8,
    n_prompts: int = N_PROMPTS,
    per_prompt: int = PER_PROMPT,
    d: int = WIDTH,
    rho: float = 0.3,
    seed: int = 0,
) -> Cloud:
    """``x0 = p_c + e``: one of ``n_classes`` prototypes ``p_c = strength sqrt(d) u_c`` (random orthonormal ``u_c``)
    per token, classes balanced and shuffled, ``e ~ N(0, I_d)``; prototypes ``strength sqrt(2 d)`` apart."""
    rng = np.random.default_rng(seed)
    n = n_prompts * per_prompt
    prototypes = strength * np.sqrt(d) * random_orthonormal(d, n_classes, rng).T
    labels = rng.permutation(np.arange(n) % n_classes)
    x0 = prototypes[labels] + rng.standard_normal((n, d))
    return _cloud(rng, x0, per_prompt, rho, labels)


def t_cloud(
    df: float = 3.0,
    n_prompts: int = N_PROMPTS,
    per_prompt: int = PER_PROMPT,
    d: int = WIDTH,
    rho: float = 0.3,
    seed: int = 0,
) -> Cloud:
    """One multivariate Student-t cloud: ``x0 = A g / sqrt(w / df)``, ``g ~ N(0, I_d)``, ``w ~ chi2(df)`` per token,
    ``A`` a random rotation with log-uniform scales over a decade: heavy-tailed and anisotropic, one centre."""
    rng = np.random.default_rng(seed)
    n = n_prompts * per_prompt
    scale = np.exp(rng.uniform(0, np.log(10), d)) / np.sqrt(10)
    a = random_orthonormal(d, d, rng) * scale
    g = rng.standard_normal((n, d)) @ a.T
    x0 = g / np.sqrt(rng.chisquare(df, n) / df)[:, None]
    return _cloud(rng, x0, per_prompt, rho)
