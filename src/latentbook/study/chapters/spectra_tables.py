"""Chapter 4's tables (real layers halfway through against the fitted MP law, the participation-ratio contrast
after the split), the noise reference and the streamed PR they are read against, and the numbers its prose glues under the prefix ``sp``, keyed by their names without it
(``glue_frame("sp", values)``). A model label names its glue keys as ``smollm2`` or ``random_smollm2``.
Introduced in: chapter 4.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ...analysis import bulk_fit, layer_spectra, ranks
from . import label_key

if TYPE_CHECKING:
    from ...analysis.bulk_fit import MPFit
    from ...analysis.layer_spectra import TokenSample
    from ...analysis.spectral_contrasts import Contrast
    from ...capturing import Capture


def mid_depth(cap: Capture) -> int:
    """The layer halfway through, ``round(L / 2)``."""
    return int(round(0.5 * cap.n_layers))


def depth_spectrum(cap: Capture, layer: int) -> tuple[TokenSample, np.ndarray, MPFit]:
    """The token sample of ``layer`` without position 0, its centred covariance's eigenvalues (descending) and
    the MP law fitted to them with ``N`` the sample's degrees of freedom."""
    sample = layer_spectra.token_sample(cap, layer)
    eigvals = ranks.sample_eigvals(sample.x)
    return sample, eigvals, bulk_fit.mp_fit(eigvals, sample.n_dof)


@functools.cache
def noise_reference(n_tokens: int, dim: int) -> pd.DataFrame:
    """The pure-noise yardstick of a token sample of ``n_tokens`` tokens in ``dim`` dimensions:
    ``layer_spectra.gaussian_reference`` of 3 Gaussian samples of that shape, computed once per shape."""
    return layer_spectra.gaussian_reference(n_tokens, dim, n_rep=3)


def streamed_profile(cap: Capture) -> pd.DataFrame:
    """One row per depth: ``gamma`` and the ``participation_ratio`` of the streamed covariance of all the
    capture's tokens, the sink included (to set against ``layer_spectra.token_sample_spectrum_profile``)."""
    return pd.DataFrame(
        {
            "gamma": cap.gamma,
            "participation_ratio": [ranks.participation_ratio(lam) for lam in cap.all_eigvals()],
        }
    )


def mid_depth_table(
    captures: Mapping[str, Capture], noise_reference: Callable[[int, int], pd.DataFrame]
) -> pd.DataFrame:
    """One row per capture at its ``mid_depth``: the sample's ``n`` and ``d``, the spikes and the KS distance of
    the MP fit (``depth_spectrum``), the largest eigenvalue over the fitted upper edge, and the mean spikes and KS
    of Gaussian samples of the same shape (``noise_reference(n, d)``, a ``layer_spectra.gaussian_reference``)."""
    rows = []
    for label, cap in captures.items():
        layer = mid_depth(cap)
        sample, eigvals, fit = depth_spectrum(cap, layer)
        reference = noise_reference(sample.n, cap.d_model)
        rows.append(
            {
                "model": label,
                "layer": layer,
                "n": sample.n,
                "d": cap.d_model,
                "spikes": fit.n_spikes,
                "KS": fit.ks,
                "top / edge": float(eigvals[0] / fit.edges[1]),
                "noise spikes": float(reference["n_spikes"].mean()),
                "noise KS": float(reference["ks"].mean()),
            }
        )
    return pd.DataFrame(rows)


def mid_depth_glue(table: pd.DataFrame, names: Sequence[str]) -> dict[str, object]:
    """From ``mid_depth_table``: each of ``names``' ``mid_spikes_{label}`` (and its random twin's), ``mid_ks_`` and
    ``mid_top_``; the largest noise KS and noise spike count, and the fewest and most spikes of any row."""
    by_model = table.set_index("model")
    glued: dict[str, object] = {}
    for name in names:
        key = label_key(name)
        glued[f"mid_spikes_{key}"] = int(by_model.loc[name, "spikes"])
        glued[f"mid_spikes_random_{key}"] = int(by_model.loc[f"random:{name}", "spikes"])
        glued[f"mid_ks_{key}"] = float(by_model.loc[name, "KS"])
        glued[f"mid_top_{key}"] = float(by_model.loc[name, "top / edge"])
    glued.update(
        {
            "mid_noise_ks_max": float(table["noise KS"].max()),
            "mid_noise_spikes_max": float(table["noise spikes"].max()),
            "mid_min_spikes": int(table["spikes"].min()),
            "mid_max_spikes": int(table["spikes"].max()),
        }
    )
    return glued


def pr_jump_glue(profiles: Mapping[str, pd.DataFrame], names: Sequence[str]) -> dict[str, float]:
    """For each of ``names``, over the interior depths of its ``token_sample_spectrum_profile``: the largest
    one-layer rise of ``log PR``, as ``jump_gamma_{label}`` (the depth after it), ``jump_factor_`` (``PR_after /
    PR_before``) and the top coordinate's variance ratio before and after (``jump_top_before_``, ``_after_``)."""
    glued = {}
    for name in names:
        key = label_key(name)
        p = profiles[name].iloc[1:-1]
        step = int(np.argmax(np.diff(np.log(p["participation_ratio"].to_numpy()))))
        before, after = p.iloc[step], p.iloc[step + 1]
        glued[f"jump_gamma_{key}"] = float(after["gamma"])
        glued[f"jump_factor_{key}"] = float(after["participation_ratio"] / before["participation_ratio"])
        glued[f"jump_top_before_{key}"] = float(before["top_coordinate"])
        glued[f"jump_top_after_{key}"] = float(after["top_coordinate"])
    return glued


def contrast_table(contrasts: Mapping[str, Contrast]) -> pd.DataFrame:
    """One row per model: the PR contrast ``exp(mean log PR after) / exp(mean log PR before)`` of
    ``spectral_contrasts.pr_contrast``, its jackknife interval and the depths on each side."""
    return pd.DataFrame(
        [
            {
                "model": label,
                "PR after / before": c.ratio,
                "CI low": c.ci[0],
                "CI high": c.ci[1],
                "depths before": c.n_before,
                "depths after": c.n_after,
            }
            for label, c in contrasts.items()
        ]
    )


def pr_direction(c: Contrast) -> str:
    """Where the contrast's interval lies: "falls" (below 1), "rises" (above) or "does not change detectably"."""
    return "falls" if c.ci[1] < 1 else "rises" if c.ci[0] > 1 else "does not change detectably"


def contrast_glue(contrasts: Mapping[str, Contrast], names: Sequence[str]) -> dict[str, object]:
    """``prc_{label}`` with ``_lo``, ``_hi`` and ``_dir`` (``pr_direction``) for each of ``names`` and its twin."""
    glued: dict[str, object] = {}
    for label in [run for name in names for run in (name, f"random:{name}")]:
        key, c = label_key(label), contrasts[label]
        glued[f"prc_{key}"] = float(c.ratio)
        glued[f"prc_{key}_lo"] = float(c.ci[0])
        glued[f"prc_{key}_hi"] = float(c.ci[1])
        glued[f"prc_{key}_dir"] = pr_direction(c)
    return glued


def mean_share_glue(profiles: Mapping[str, pd.DataFrame], names: Sequence[str]) -> dict[str, float]:
    """Per model of ``names`` and its twin, ``mean_share_{label}``: the largest share (in %) of the second moment
    held by the mean, ``||mu||^2 / E||h||^2``, past the embedding; and ``pr_uncentred_min``, the smallest ratio
    of uncentred to centred PR of any profile at any depth."""
    glued = {
        f"mean_share_{label_key(label)}": 100 * float(profiles[label]["mean_share"].iloc[1:].max())
        for name in names
        for label in (name, f"random:{name}")
    }
    glued["pr_uncentred_min"] = float(
        min((p["pr_uncentred"] / p["participation_ratio"]).min() for p in profiles.values())
    )
    return glued
