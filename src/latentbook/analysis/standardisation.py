"""Each coordinate of a token sample centred and scaled over the tokens, so that what every token shares and
every coordinate's scale (massive and rogue coordinates, a shared offset, norm growth) go before Omega or a
spectrum is read.

``standardise``: ``z_ti = (h_ti - mean_i) / sd_i``; ``robust_standardise``: ``z_ti = (h_ti - median_i) /
(1.4826 MAD_i)``, which keeps a code that a class of tokens writes large for those tokens.

Usage: ``omega.omega(robust_standardise(x))`` (``omega_profiles.standardised_profile``), ``standardise(x)`` before
the spectrum of the correlation matrix (``layer_spectra``).

Introduced in: chapter 3.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidInputError


def standardise(x: np.ndarray) -> np.ndarray:
    """``z_ti = (h_ti - mean_i) / sd_i``: each coordinate centred and scaled over the rows (tokens).

    What is shared by every token and every coordinate's scale go (a massive coordinate shared by all tokens,
    rogue high-variance coordinates, a shared offset, norm growth); a coordinate that is large for *some* tokens
    only (a token-specific sparse code) stays heavy-tailed, so ``Omega(z)`` keeps it. A coordinate constant over
    the rows is set to 0. Omega of ``z`` for Gaussian tokens with any diagonal covariance is the Gaussian value.

    Parameters
    ----------
    x : numpy.ndarray
        Token vectors, shape ``(n, d)`` with ``n >= 2``.

    Returns
    -------
    numpy.ndarray
        ``z``, shape ``(n, d)``.

    Raises
    ------
    InvalidInputError
        For a sample that is not of shape ``(n >= 2, d)``.

    Examples
    --------
    Gaussian tokens with an offset of 5 and coordinate scales from 0.1 to 10, and a constant coordinate: ``z`` has
    mean 0 and SD 1 in every varying coordinate, 0 in the constant one, and the Gaussian Omega:

    >>> import numpy as np
    >>> from latentbook.analysis.omega import gaussian_omega, omega
    >>> from latentbook.analysis.standardisation import standardise
    >>> x = np.random.default_rng(0).standard_normal((1000, 65)) * np.linspace(0.1, 10, 65) + 5.0
    >>> x[:, 64] = 3.0
    >>> z = standardise(x)
    >>> bool(np.allclose(z[:, :64].mean(0), 0.0)), bool(np.allclose(z[:, :64].std(0), 1.0)), bool(np.all(z[:, 64] == 0))
    (True, True, True)
    >>> round(float(omega(x[:, :64]).mean()), 3), round(float(omega(z[:, :64]).mean()), 3), round(gaussian_omega(64), 3)
    (0.178, 0.199, 0.199)
    """
    h = np.asarray(x, dtype=np.float64)
    if h.ndim != 2 or len(h) < 2:
        raise InvalidInputError(f"Need token vectors of shape (n >= 2, d), got {h.shape}.")
    centred = h - h.mean(0)
    sd = np.sqrt((centred**2).mean(0))
    # equivalent mutants here: finfo(None) is float64's; > and >= differ only at exactly the floor
    varies = sd > 1e-12 * max(float(sd.max()), np.finfo(np.float64).tiny)  # pragma: no mutate
    return np.divide(centred, sd, out=np.zeros_like(centred), where=varies)


MAD_TO_SD = 1.482602218505602  # 1 / Phi^-1(3/4): the MAD of a Gaussian times this is its SD


def robust_standardise(x: np.ndarray) -> np.ndarray:
    """``z_ti = (h_ti - median_i) / (1.4826 MAD_i)``: each coordinate centred and scaled over the rows (tokens) by
    its median and median absolute deviation, the standard deviation where the MAD is 0, 0 where both are.

    As ``standardise``, what every token shares and every coordinate's scale go (a massive coordinate shared by
    all tokens, rogue Gaussian coordinates, norm growth), and Gaussian tokens of any diagonal covariance keep
    the Gaussian Omega. Unlike it, a coordinate that a *class* of tokens writes (a code shared by a third or an
    eighth of the tokens) stays large for those tokens: the typical token sets the scale, so a two-valued
    coordinate is not squeezed to two values of order 1 as the standard deviation squeezes it.

    Parameters
    ----------
    x : numpy.ndarray
        Token vectors, shape ``(n, d)`` with ``n >= 2``.

    Returns
    -------
    numpy.ndarray
        ``z``, shape ``(n, d)``.

    Raises
    ------
    InvalidInputError
        For a sample that is not of shape ``(n >= 2, d)``.

    Examples
    --------
    A code that an eighth of the tokens write 20 s.d. large in coordinate 3 stays large after the median and MAD
    (about 16), while the standard deviation, inflated by the code itself, squeezes it to under 3; a Gaussian
    coordinate gets median 0 and MAD ``1 / 1.4826``:

    >>> import numpy as np
    >>> from latentbook.analysis.standardisation import robust_standardise, standardise
    >>> x = np.random.default_rng(0).standard_normal((800, 16))
    >>> x[:100, 3] += 20.0
    >>> round(float(robust_standardise(x)[:100, 3].mean()), 1), round(float(standardise(x)[:100, 3].mean()), 1)
    (16.0, 2.6)
    >>> z = robust_standardise(x)[:, 5]
    >>> round(float(np.median(z)), 6), round(float(1.4826 * np.median(np.abs(z))), 3)
    (0.0, 1.0)
    >>> robust_standardise(np.array([[1.0, 2.0], [1.0, 4.0], [1.0, 6.0]])).round(3).tolist()
    [[0.0, -0.674], [0.0, 0.0], [0.0, 0.674]]
    """
    h = np.asarray(x, dtype=np.float64)
    if h.ndim != 2 or len(h) < 2:
        raise InvalidInputError(f"Need token vectors of shape (n >= 2, d), got {h.shape}.")
    centred = h - np.median(h, axis=0)
    scale = MAD_TO_SD * np.median(np.abs(centred), axis=0)
    sd = np.sqrt(((h - h.mean(0)) ** 2).mean(0))
    # equivalent mutants here: finfo(None) is float64's
    floor = 1e-12 * max(float(sd.max()), np.finfo(np.float64).tiny)  # pragma: no mutate
    scale = np.where(scale > floor, scale, sd)  # pragma: no mutate: > and >= differ only at exactly the floor
    # equivalent mutants here: > and >= differ only at exactly the floor
    return np.divide(centred, scale, out=np.zeros_like(centred), where=scale > floor)  # pragma: no mutate
