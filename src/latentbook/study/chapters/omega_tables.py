"""Chapter 3's tables (object integrity Omega and the claimed transition) and the numbers its prose glues.

Each ``*_table`` returns the DataFrame the chapter shows; each ``*_glue`` the values the chapter glues under
the prefix ``ch3``, keyed by their names without it (``glue_frame("ch3", values)``). A capture's label names
its glue keys through ``label_key``: ``smollm2-135m`` is ``smollm2``, ``random:smollm2-135m`` is
``random_smollm2`` and ``smollm2-135m (shuffled)`` is ``smollm2_shuffled``.
Introduced in: chapter 3.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ...analysis import bimodality, confounds, omega, omega_profiles, synthetic, transition
from . import label_key

if TYPE_CHECKING:
    from ...analysis.omega_profiles import Profile
    from ...analysis.transition import Transition
    from ...capturing import Capture

TREATMENT_COLUMNS = {  # confounds.treatments' columns -> glue-name suffix; "top dims" is added with k
    "as captured": "asis",
    "first position dropped": "nofirst",
    "centred": "centred",
    "rotated": "rotated",
    "all removed": "clean",
}


def max_m_depth(cap: Capture) -> int:
    """The depth of largest mean Omega, ``argmax_l m(l)``."""
    return int(np.argmax(cap.omega_mean()))


def reference_table(widths: Mapping[str, int], k: int = 8) -> pd.DataFrame:
    """Per model (index) of width ``d``: the reference values of Omega (one-hot ``1 - 1/sqrt(d)``, ``k``-sparse
    ``1 - sqrt(k/d)``, the exact Gaussian expectation at ``d`` and its limit ``1 - sqrt(2/pi)``), each beside
    Omega measured on such vectors (the Gaussian one a mean over 4096 ``synthetic.gaussian`` vectors)."""
    rows = []
    for name, d in widths.items():
        ref = omega.reference_values(d, k=k)
        gaussian = synthetic.gaussian(4096, d, seed=0)
        sparse = np.zeros((1, d))
        sparse[0, :k] = [1, -1] * (k // 2)
        rows.append(
            {
                "model": name,
                "d": d,
                "one-hot 1-1/sqrt(d)": ref["one_hot"],
                "measured one-hot": float(omega.omega(np.eye(d)[:1])[0]),
                f"{k}-sparse 1-sqrt(k/d)": ref["k_sparse"],
                f"measured {k}-sparse": float(omega.omega(sparse)[0]),
                "Gaussian (exact, this d)": ref["gaussian"],
                "measured Gaussian (mean of 4096)": float(omega.omega(gaussian).mean()),
                "Gaussian limit 1-sqrt(2/pi)": ref["gaussian_limit"],
            }
        )
    return pd.DataFrame(rows).set_index("model")


def reference_glue(references: pd.DataFrame, model: str = "smollm2-135m") -> dict[str, float]:
    """The Gaussian limit, and ``model``'s exact Gaussian, measured Gaussian and one-hot Omega, from
    ``reference_table``."""
    key = label_key(model)
    return {
        "gauss_limit": float(references["Gaussian limit 1-sqrt(2/pi)"].iloc[0]),
        f"gauss_{key}": float(references.loc[model, "Gaussian (exact, this d)"]),
        f"gauss_measured_{key}": float(references.loc[model, "measured Gaussian (mean of 4096)"]),
        f"onehot_{key}": float(references.loc[model, "one-hot 1-1/sqrt(d)"]),
    }


def boosted_omega(base: np.ndarray, j: int, c: float) -> float:
    """Mean Omega of the vectors ``base`` with their first ``j`` coordinates set to ``c``."""
    return float(omega.omega(np.where(np.arange(base.shape[-1]) < j, c, base)).mean())


def boosted_curves(
    base: np.ndarray, sizes: Iterable[float], counts: Iterable[int] = (1, 2, 4)
) -> pd.DataFrame:
    """``boosted_omega`` of ``base`` for every size ``c`` of ``sizes`` (index) and number ``j`` of massive
    coordinates of ``counts`` (columns): how a few huge coordinates lift the mean Omega of noise."""
    sizes, counts = list(sizes), list(counts)
    return pd.DataFrame(
        {j: [boosted_omega(base, j, c) for c in sizes] for j in counts},
        index=pd.Index(sizes, name="c"),
    )


def width_table(widths: Iterable[int] = (384, 576, 640, 2048, 5120)) -> pd.DataFrame:
    """Per width ``d`` (index): Omega of one coordinate at 100 s.d. (``omega.massive_omega``), and the paper's
    levels 0.69 and 0.90 carried from its width to ``d`` at equal Hoyer sparseness and at an equal massive
    coordinate (``omega.level_at_width``)."""
    rows = [
        {
            "d": width,
            "one coordinate at 100 s.d.": omega.massive_omega(width, 100.0),
            "0.69, same Hoyer sparseness": omega.level_at_width(0.69, width),
            "0.90, same Hoyer sparseness": omega.level_at_width(0.90, width),
            "0.69, same massive coordinate": omega.level_at_width(0.69, width, structure="massive"),
            "0.90, same massive coordinate": omega.level_at_width(0.90, width, structure="massive"),
        }
        for width in widths
    ]
    return pd.DataFrame(rows).set_index("d")


def width_glue(table: pd.DataFrame, model_widths: Iterable[int], at: int = 576) -> dict[str, object]:
    """The paper's width, the narrowest and widest model, and ``width_table``'s values at width ``at`` (the
    massive coordinate also at the paper's width)."""
    widths = list(model_widths)
    return {
        "paper_width": omega.PAPER_WIDTH,
        "min_width": min(widths),
        "max_width_d": max(widths),
        f"massive100_{at}": float(table.loc[at, "one coordinate at 100 s.d."]),
        f"massive100_{omega.PAPER_WIDTH}": float(table.loc[omega.PAPER_WIDTH, "one coordinate at 100 s.d."]),
        f"liquid_hoyer_{at}": float(table.loc[at, "0.69, same Hoyer sparseness"]),
        f"solid_hoyer_{at}": float(table.loc[at, "0.90, same Hoyer sparseness"]),
        f"liquid_massive_{at}": float(table.loc[at, "0.69, same massive coordinate"]),
        f"solid_massive_{at}": float(table.loc[at, "0.90, same massive coordinate"]),
    }


SUMMARY_COLUMNS = {
    "m at gamma=0": "m0",
    "max m": "mmax",
    "gamma of max": "gmax",
    "m at gamma=1": "m1",
    "mean CI width": "ciw",
}


def m_summary_table(profiles: Mapping[str, Profile]) -> pd.DataFrame:
    """Per capture (index): ``m`` at ``gamma = 0``, its maximum and where, ``m`` at ``gamma = 1``, the mean width
    of the bootstrap interval ``high - low`` and the number of prompts resampled."""
    rows = [
        {
            "capture": label,
            "m at gamma=0": p.m[0],
            "max m": p.m.max(),
            "gamma of max": p.gamma[p.m.argmax()],
            "m at gamma=1": p.m[-1],
            "mean CI width": float((p.high - p.low).mean()),
            "prompts resampled": p.n_prompts,
        }
        for label, p in profiles.items()
    ]
    return pd.DataFrame(rows).set_index("capture")


def m_summary_glue(table: pd.DataFrame) -> dict[str, float]:
    """``{label}_m0``, ``_mmax``, ``_gmax``, ``_m1`` and ``_ciw`` of every capture of ``m_summary_table``."""
    return {
        f"{label_key(label)}_{short}": float(table.loc[label, column])
        for label in table.index
        for column, short in SUMMARY_COLUMNS.items()
    }


def permutation_share_table(null_tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Per capture (index), over the depths the transition fit uses (``omega_profiles.null_profiles`` rows 2 to
    L-1): the median share of the excess over the Gaussian value that the coordinate permutation reproduces, the
    largest ``|m - m_perm|`` and the mean ``m - m_gauss``."""
    rows = []
    for label, table in null_tables.items():
        inner = table.iloc[2:-1]
        rows.append(
            {
                "capture": label,
                "median share explained by the permutation": float(inner["share_permutation"].median()),
                "largest |m - m_perm|": float((inner["sample"] - inner["permutation"]).abs().max()),
                "mean m - m_gauss": float((inner["sample"] - inner["gaussian"]).mean()),
            }
        )
    return pd.DataFrame(rows).set_index("capture")


def permutation_share_glue(shares: pd.DataFrame) -> dict[str, float]:
    """``{label}_perm_share`` and ``{label}_perm_gap`` of every capture of ``permutation_share_table``."""
    glued = {}
    for label in shares.index:
        glued[f"{label_key(label)}_perm_share"] = float(
            shares.loc[label, "median share explained by the permutation"]
        )
        glued[f"{label_key(label)}_perm_gap"] = float(shares.loc[label, "largest |m - m_perm|"])
    return glued


DECOMPOSITION = ("scale", "sparsity", "structure")  # omega_profiles.null_profiles' parts of m - g


def null_tables(captures: Mapping[str, Capture]) -> dict[str, pd.DataFrame]:
    """``omega_profiles.null_profiles`` of every capture, with a column ``m_z``: the profile the verdict judges
    (``omega_profiles.standardised_profile``: each coordinate centred on its median and scaled by its MAD),
    beside the decomposition's ``standardised`` (centred on the mean and scaled by the SD, where the parts add up)."""
    return {
        label: omega_profiles.null_profiles(cap).assign(
            m_z=omega_profiles.standardised_profile(cap, n_boot=200).m
        )
        for label, cap in captures.items()
    }


def decomposition_table(null_tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Per capture (index), the mean over the interior depths (``omega_profiles.null_profiles`` rows 2 to L-1) of
    Omega's excess over the Gaussian value, ``m - g``, and of its three parts: coordinate ``scale`` (``m - m_s``),
    ``sparsity`` within coordinates (``m_s,perm - g``) and ``structure`` within tokens (``m_s - m_s,perm``),
    ``m_s`` Omega of the SD-standardised vectors; with the largest step between neighbouring interior depths
    (where a planted code appears) of ``m_s`` and of the verdict's ``m_z`` (``null_tables``)."""
    rows = []
    for label, table in null_tables.items():
        inner = table.iloc[2:-1]
        rows.append(
            {
                "capture": label,
                "m - g": float(inner[list(DECOMPOSITION)].sum(axis=1).mean()),  # the parts add up to m - g
                **{part: float(inner[part].mean()) for part in DECOMPOSITION},
                "largest step of m_s": _largest_step(inner["standardised"]),
                "largest step of m_z": _largest_step(inner["m_z"]),
            }
        )
    return pd.DataFrame(rows).set_index("capture")


def _largest_step(values: pd.Series) -> float:
    return float(np.abs(np.diff(values.to_numpy())).max())


def decomposition_glue(table: pd.DataFrame) -> dict[str, object]:
    """``{label}_scale``, ``{label}_sparsity``, ``{label}_structure``, ``{label}_sstep`` (``m_s``), ``{label}_zstep``
    (``m_z``) and ``{label}_largest_part`` (the part of largest size, in words) of every capture."""
    glued: dict[str, object] = {}
    for label in table.index:
        key = label_key(label)
        for part in DECOMPOSITION:
            glued[f"{key}_{part}"] = float(table.loc[label, part])
        glued[f"{key}_sstep"] = float(table.loc[label, "largest step of m_s"])
        glued[f"{key}_zstep"] = float(table.loc[label, "largest step of m_z"])
        sizes = table.loc[label, list(DECOMPOSITION)].abs()
        glued[f"{key}_largest_part"] = str(sizes.idxmax())
    return glued


# Three planted models shown beside the real ones: the same 12-layer Llama shape, with token-specific sparse codes,
# class codes (4 prototypes, each written by a class of words) or a massive coordinate shared by every token,
# written at depth 5 (gamma 0.42).
PLANTED_SHOWN = {
    "sparse_code (planted)": dict(plant="sparse_code", strength=3.0),
    "class_code (planted)": dict(plant="class_code", strength=3.0, n_classes=4),
    "massive (planted)": dict(plant="massive", strength=10.0),
}


def planted_null_tables(n_layers: int = 12, d: int = 256, seed: int = 7) -> dict[str, pd.DataFrame]:
    """``null_tables`` of the ``PLANTED_SHOWN`` models (``models.planted``, change at depth 5 of 12), each
    captured as the end-to-end calibration captures its cases (``study.planted_calibration.CAPTURE``)."""
    from ...capturing.capture import capture
    from ...models import planted
    from ...prompts import load
    from ..planted_calibration import CAPTURE

    texts = load("general", limit=CAPTURE["n_prompts"])
    captures = {
        label: capture(
            planted.build(planted.PlantSpec(gamma=5 / 12, n_layers=n_layers, d=d, seed=seed, **plant)),
            texts,
            max_length=CAPTURE["max_length"],
            batch_size=CAPTURE["batch_size"],
            progress=False,
        )
        for label, plant in PLANTED_SHOWN.items()
    }
    return null_tables(captures)


def planted_glue(planted_tables: Mapping[str, pd.DataFrame]) -> dict[str, float]:
    """``{label}_mstep`` (the largest step of raw ``m`` between neighbouring depths) and ``{label}_permgap`` (the
    largest ``|m - m_perm|``) of each planted model's ``omega_profiles.null_profiles``."""
    glued = {}
    for label, table in planted_tables.items():
        key = label_key(label)
        glued[f"{key}_mstep"] = float(np.abs(np.diff(table["sample"].to_numpy())).max())
        glued[f"{key}_permgap"] = float((table["sample"] - table["permutation"]).abs().max())
    return glued


def omega_at_depths(
    cap: Capture, gammas: Iterable[float] = (0, 0.25, 0.5, 0.75, 1.0)
) -> dict[float, np.ndarray]:
    """The per-token Omega sample (``cap.omega_samples``) at the depths nearest to ``gammas`` (each once), keyed
    by their ``gamma``: the violins of a model's distributions."""
    layers = sorted({int(round(g * cap.n_layers)) for g in gammas})
    return {cap.gamma[layer]: cap.omega_samples(layer) for layer in layers}


def bimodality_verdicts(captures: Mapping[str, Capture], k: int) -> pd.DataFrame:
    """One row per capture and depth ``l``: ``bimodality.bimodality`` of the Omega sample (dip p-values
    Holm-adjusted across the capture's depths), the design effect ``n / n_effective``, and for a trained
    capture's depth that is not unimodal, the verdict with the first position and the ``k`` largest coordinates removed."""
    rows = []
    for label, cap in captures.items():
        per_depth = [
            bimodality.bimodality(cap.omega_samples(layer), prompt_ids=cap.omega_sample.prompt_ids)
            for layer in range(cap.n_depths)
        ]
        for layer, result in enumerate(bimodality.holm_adjusted(per_depth)):
            row = {
                "capture": label,
                "l": layer,
                "gamma": cap.gamma[layer],
                "verdict": result.verdict,
                "coefficient": result.coefficient,
                "dip p": result.dip_p,
                "delta BIC": result.delta_bic,
                "Ashman D": result.ashman_d,
                "design effect": len(cap.omega_samples(layer)) / result.n_effective,
                "distinct values": result.n_distinct,
            }
            if not label.startswith("random:") and result.verdict != "unimodal":
                values, ids = omega.samples(cap, layer, drop_top_dims=k, drop_first=True)
                row["verdict, confounds removed"] = bimodality.bimodality(values, prompt_ids=ids).verdict
            rows.append(row)
    return pd.DataFrame(rows)


def bimodality_counts(verdicts: pd.DataFrame, labels: Sequence[str]) -> pd.DataFrame:
    """Per capture of ``labels`` (index, in that order): the number of depths of each verdict of
    ``bimodality_verdicts``, and of depths still bimodal with the confounds removed."""
    counts = verdicts.groupby("capture")["verdict"].value_counts().unstack(fill_value=0).reindex(list(labels))
    counts = counts.reindex(columns=["bimodal", "inconclusive", "unimodal"], fill_value=0)
    counts["bimodal, confounds removed"] = [
        int((verdicts.loc[verdicts["capture"] == label, "verdict, confounds removed"] == "bimodal").sum())
        for label in counts.index
    ]
    return counts


def bimodality_glue(counts: pd.DataFrame) -> dict[str, int]:
    """Per capture of ``bimodality_counts``: ``{label}_n_bimodal``, ``_n_bimodal_clean`` (confounds removed) and
    ``_n_depths``; and ``nulls_n_bimodal``, the bimodal depths of all random twins together."""
    glued = {}
    for label in counts.index:
        key = label_key(label)
        glued[f"{key}_n_bimodal"] = int(counts.loc[label, "bimodal"])
        glued[f"{key}_n_bimodal_clean"] = int(counts.loc[label, "bimodal, confounds removed"])
        glued[f"{key}_n_depths"] = int(counts.loc[label, ["bimodal", "inconclusive", "unimodal"]].sum())
    nulls = [label for label in counts.index if label.startswith("random:")]
    glued["nulls_n_bimodal"] = int(counts.loc[nulls, "bimodal"].sum())
    return glued


def not_unimodal_table(verdicts: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``bimodality_verdicts`` whose verdict is not unimodal, indexed by capture and depth."""
    return (
        verdicts[verdicts["verdict"] != "unimodal"]
        .drop(columns=["distinct values"])
        .set_index(["capture", "l"])
    )


def edge_glue(m: np.ndarray, key: str = "smollm2") -> dict[str, float]:
    """``m`` at depths 0, 1 and 2, the largest step between neighbouring fitted depths (2 to L-1) and the last
    step ``|m_L - m_{L-1}|``, under the stem ``key``."""
    return {
        f"{key}_edge0": float(m[0]),
        f"{key}_edge1": float(m[1]),
        f"{key}_edge2": float(m[2]),
        f"{key}_interior_step": float(np.abs(np.diff(m[2:-1])).max()),
        f"{key}_last_step": float(abs(m[-1] - m[-2])),
    }


def transition_settings_glue() -> dict[str, object]:
    """The transition test's settings: the depths it needs, the widest switch and the BIC margin."""
    return {
        "min_depths": transition.MIN_FITTED + sum(transition.SKIP),
        "max_switch": transition.MAX_WIDTH,
        "bic_margin": int(transition.BIC_MARGIN),
    }


def transition_fits(captures: Mapping[str, Capture], n_boot: int = 200) -> dict[str, Transition]:
    """``transition.critical_depth`` of every capture with enough depths to be tested."""
    return {
        label: transition.critical_depth(cap, n_boot=n_boot)
        for label, cap in captures.items()
        if transition.is_testable(cap.n_depths)
    }


def fit_table(captures: Mapping[str, Capture], fits: Mapping[str, Transition]) -> pd.DataFrame:
    """Per capture (index): whether ``m(gamma)`` has a transition, ``gamma_c`` with its interval, the jump ``b``,
    the switch width ``w``, the smooth null that came closest and its ``delta BIC = BIC(null) - BIC(jump)``, and
    the reason; "not testable" for a capture missing from ``fits``."""
    rows = []
    for label, cap in captures.items():
        if label not in fits:
            rows.append(
                {
                    "capture": label,
                    "transition": "not testable",
                    "reason": f"{cap.n_depths} depths: too few after the edges",
                }
            )
            continue
        t = fits[label]
        nearest = min(t.delta_bic, key=t.delta_bic.get)
        rows.append(
            {
                "capture": label,
                "transition": "yes" if t.has_transition else "no",
                "gamma_c": t.gamma_c,
                "CI low": t.ci[0],
                "CI high": t.ci[1],
                "jump b": t.amplitude,
                "width w": t.width,
                "closest null": nearest,
                "delta BIC": t.delta_bic[nearest],
                "reason": t.reason or "a jump beyond every null",
            }
        )
    return pd.DataFrame(rows).set_index("capture")


def fit_glue(table: pd.DataFrame, fits: Mapping[str, Transition]) -> dict[str, object]:
    """The number of transitions and of tested profiles in ``fit_table``, the list of transitions as text, and
    every fit's ``{label}_gamma_c`` and ``{label}_jump``."""
    with_transition = table.index[table["transition"] == "yes"]
    glued: dict[str, object] = {
        "n_transitions": int(len(with_transition)),
        "n_fitted": int((table["transition"] != "not testable").sum()),
        "transition_list": ", ".join(
            f"{label} (gamma_c = {fits[label].gamma_c:.2f}, jump {fits[label].amplitude:+.3f})"
            for label in with_transition
        )
        or "none",
    }
    for label, t in fits.items():
        glued[f"{label_key(label)}_gamma_c"] = float(t.gamma_c)
        glued[f"{label_key(label)}_jump"] = float(t.amplitude)
    return glued


def sink_table(
    captures: Mapping[str, Capture],
    names: Sequence[str],
    ratios: Mapping[str, np.ndarray],
    peak: Mapping[str, int],
) -> pd.DataFrame:
    """Per model of ``names`` (index), at its peak depth of massive activations ``peak[name]``: the ratio
    ``max_i A_i / median_i A_i`` (``confounds.massive_ratio``), the top coordinate's mean ``|h_i|`` over the median
    coordinate's, and mean Omega of the sampled tokens at position 0 and at the other positions."""
    rows = []
    for name in names:
        cap, layer = captures[name], peak[name]
        first = cap.omega_sample.positions == 0
        values = cap.omega_samples(layer)
        top = confounds.massive_dims(cap, layer, 1)[0]
        rows.append(
            {
                "model": name,
                "peak depth l": layer,
                "gamma": cap.gamma[layer],
                "ratio": ratios[name][layer],
                "top coordinate: mean |h| / median": float(
                    cap.abs_mean(layer)[top] / np.median(cap.abs_mean(layer))
                ),
                "mean Omega, position 0": float(values[first].mean()),
                "mean Omega, other positions": float(values[~first].mean()),
                "position-0 tokens in sample": int(first.sum()),
            }
        )
    return pd.DataFrame(rows).set_index("model")


def sink_glue(table: pd.DataFrame, ratios: Mapping[str, np.ndarray]) -> dict[str, float]:
    """Per model of ``sink_table``: ``{label}_top_mean_ratio``, ``_peak_ratio``, ``_peak_gamma``, ``_omega_pos0``
    and ``_omega_rest``; and ``random_max_ratio``, the largest ratio of any random twin in ``ratios`` anywhere."""
    glued = {}
    for name in table.index:
        key = label_key(name)
        glued[f"{key}_top_mean_ratio"] = float(table.loc[name, "top coordinate: mean |h| / median"])
        glued[f"{key}_peak_ratio"] = float(table.loc[name, "ratio"])
        glued[f"{key}_peak_gamma"] = float(table.loc[name, "gamma"])
        glued[f"{key}_omega_pos0"] = float(table.loc[name, "mean Omega, position 0"])
        glued[f"{key}_omega_rest"] = float(table.loc[name, "mean Omega, other positions"])
    glued["random_max_ratio"] = float(
        max(r.max() for label, r in ratios.items() if label.startswith("random:"))
    )
    return glued


def treatment_table(
    captures: Mapping[str, Capture], names: Sequence[str], peak: Mapping[str, int], k: int
) -> pd.DataFrame:
    """Per model of ``names`` and depth ``l`` (index), at the depth of largest ``m``, the peak of massive
    activations ``peak[name]`` and the last depth: mean Omega as captured and under each of
    ``confounds.treatments`` (``k`` massive coordinates)."""
    rows = []
    for name in names:
        cap = captures[name]
        for layer in sorted({max_m_depth(cap), peak[name], cap.n_layers}):
            rows.append(
                {
                    "model": name,
                    "depth l": layer,
                    "gamma": cap.gamma[layer],
                    **confounds.treatments(cap, layer, k=k),
                }
            )
    return pd.DataFrame(rows).set_index(["model", "depth l"])


def treatment_glue(
    treated: pd.DataFrame,
    captures: Mapping[str, Capture],
    peak: Mapping[str, int],
    gaussian: float,
    k: int,
    at_peak_of: str = "smollm2-135m",
) -> dict[str, float]:
    """From ``treatment_table``: the largest ``|rotated - gaussian|``; mean Omega as captured, centred and with
    all removed at ``at_peak_of``'s peak of massive activations; and each model's ``{label}_treat_gamma`` and
    ``_treat_<treatment>`` at its depth of largest ``m``."""
    row = treated.loc[(at_peak_of, peak[at_peak_of])]
    key = label_key(at_peak_of)
    glued = {
        "rotated_max_dev": float((treated["rotated"] - gaussian).abs().max()),
        f"{key}_peak_asis": float(row["as captured"]),
        f"{key}_peak_centred": float(row["centred"]),
        f"{key}_peak_clean": float(row["all removed"]),
    }
    columns = {**TREATMENT_COLUMNS, f"top-{k} dims dropped": "notop"}
    for name in treated.index.unique("model"):
        row = treated.loc[(name, max_m_depth(captures[name]))]
        key = label_key(name)
        glued[f"{key}_treat_gamma"] = float(row["gamma"])
        for column, short in columns.items():
            glued[f"{key}_treat_{short}"] = float(row[column])
    return glued


def cleaned_table(cleaned: Mapping[str, Profile], n_boot: int = 200) -> pd.DataFrame:
    """Per capture (index): the largest and the last ``m`` of its profile with the confounds removed
    (``confounds.cleaned_profile``), and ``transition.critical_depth`` of that profile where it is testable."""
    rows = []
    for label, p in cleaned.items():
        row = {"capture": label, "max m (cleaned)": p.m.max(), "m at gamma=1 (cleaned)": p.m[-1]}
        if transition.is_testable(len(p.gamma)):
            t = transition.critical_depth(p.gamma, p.m, draws=p.draws, n_boot=n_boot)
            row.update(
                {
                    "transition": "yes" if t.has_transition else "no",
                    "gamma_c": t.gamma_c,
                    "jump b": t.amplitude,
                    "reason": t.reason or "a jump beyond every null",
                }
            )
        else:
            row.update(
                {"transition": "not testable", "reason": f"{len(p.gamma)} depths: too few after the edges"}
            )
        rows.append(row)
    return pd.DataFrame(rows).set_index("capture")


def cleaned_glue(table: pd.DataFrame, cleaned: Mapping[str, Profile]) -> dict[str, object]:
    """Each cleaned profile's ``{label}_clean_mmax``, ``_clean_gmax`` (where it peaks) and ``_clean_m1``, and
    ``n_clean_transitions``, the transitions of ``cleaned_table``."""
    glued: dict[str, object] = {}
    for label, p in cleaned.items():
        key = label_key(label)
        glued[f"{key}_clean_mmax"] = float(p.m.max())
        glued[f"{key}_clean_gmax"] = float(p.gamma[p.m.argmax()])
        glued[f"{key}_clean_m1"] = float(p.m[-1])
    glued["n_clean_transitions"] = int((table["transition"] == "yes").sum())
    return glued


def size_glue(captures: Mapping[str, Capture], names: Iterable[str]) -> dict[str, float]:
    """``smallest_m`` and ``largest_m``: the smallest and the largest model of ``names``, in millions of
    parameters (``n_parameters`` of its capture's provenance)."""
    sizes = [captures[name].provenance["n_parameters"] / 1e6 for name in names]
    return {"smallest_m": min(sizes), "largest_m": max(sizes)}
