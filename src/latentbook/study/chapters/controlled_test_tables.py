"""Chapter 7's tables of the seeded ladder (v2: ``<rung>-s<seed>`` models, ``ladder.report.measure_ladder``'s
``measurements.json``): one row per model, the seeds of each architecture pooled, the TCO test of every model, and
the partial correlations across the models.
Introduced in: chapter 7.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ...ladder.clustered import architecture_of
from ...ladder.report import V2_COMMAND, capability_of, stale_models, tco_judgements


def measured_by(m: dict) -> str:
    """Whether every number of ``m`` was measured by the code of this build (``ladder.report.stale_models``), as a
    clause for the chapter's prose; where some were not, it names how many and the command that measures them
    again."""
    n = sum(1 + len(m["models"][rung].get("checkpoints", {})) for rung in m["rungs"])
    stale = stale_models(m)
    if not stale:
        return f"all {n} models and checkpoints were measured by the code that builds this page"
    which = f"all {n}" if len(stale) == n else f"{len(stale)} of the {n}"
    return (
        f"{which} models and checkpoints were measured by older code than the code that builds this page, so "
        f"their numbers may differ from what it would give: `{V2_COMMAND}` measures them again"
    )


def model_table(m: dict, logs: Mapping[str, dict]) -> pd.DataFrame:
    """One row per trained model of ``m``: its architecture and seed, size, how far its curriculum got (from its
    training log in ``logs``), training minutes, capability (mean held-out accuracy over hop counts) and held-out
    accuracy at each hop count."""
    rows = []
    for name in m["rungs"]:
        entry = m["models"][name]["trained"]
        architecture, seed = architecture_of(name)
        log = logs[name]
        row = {
            "model": name,
            "architecture": architecture,
            "seed": seed,
            "layers": entry["n_layers"],
            "d_model": entry["d_model"],
            "parameters": entry["n_parameters"],
            "longest chain trained on": log["stages"][-1]["hops"],
            "train minutes": log["seconds"] / 60,
            "capability": capability_of(entry),
        }
        row |= {f"{hops}-hop": float(a) for hops, a in entry["capability"]["accuracy"].items()}
        rows.append(row)
    return pd.DataFrame(rows)


def architecture_table(models: pd.DataFrame) -> pd.DataFrame:
    """``model_table`` with the seeds of each architecture pooled (ordered by size): seeds, parameters, the mean,
    lowest and highest capability over the seeds, the mean accuracy at each hop count and the mean training
    minutes."""
    hops = [c for c in models.columns if c.endswith("-hop")]
    grouped = models.groupby("architecture", sort=False)
    table = pd.DataFrame(
        {
            "seeds": grouped["seed"].count(),
            "parameters": grouped["parameters"].first(),
            "capability": grouped["capability"].mean(),
            "lowest": grouped["capability"].min(),
            "highest": grouped["capability"].max(),
        }
    )
    table = table.join(grouped[hops].mean()).join(grouped["train minutes"].mean())
    return table.sort_values("parameters")


def tco_table(m: dict) -> pd.DataFrame:
    """One row per model with a TCO block: capability, the positive control (two-way decoding within the query
    step) and its interval, the bar (the stronger decoder that binds nothing), stability at the hops and its
    interval, the untrained null's control and stability, and ``verdict.judge_tco``'s word for the model (against
    its null) and for the null alone (``ladder.report.tco_judgements``)."""
    from ...analysis.tco import TCOScores

    judged = tco_judgements(m)
    rows = []
    for name, words in judged.items():
        trained, null = (
            TCOScores.from_dict(m["models"][name][k]["tco"]["scores"]) for k in ("trained", "null")
        )
        architecture, seed = architecture_of(name)
        rows.append(
            {
                "model": name,
                "architecture": architecture,
                "seed": seed,
                "capability": capability_of(m["models"][name]["trained"]),
                "control": trained.control.accuracy,
                "control 95% CI": "[{:.2f}, {:.2f}]".format(*trained.control.ci),
                "bar (bag, first value)": trained.control_bar,
                "stability": trained.stability.accuracy,
                "stability 95% CI": "[{:.2f}, {:.2f}]".format(*trained.stability.ci),
                "null control": null.control.accuracy,
                "null stability": null.stability.accuracy,
                "verdict": words["trained"][0],
                "null alone": words["null"][0],
            }
        )
    return pd.DataFrame(rows)


def tco_counts(tco: pd.DataFrame) -> pd.DataFrame:
    """Per architecture (rows, in ``tco``'s order), how many of its seeds get each TCO verdict (columns
    "holds", "does not hold", "inconclusive")."""
    words = ["holds", "does not hold", "inconclusive"]
    counts = pd.crosstab(tco["architecture"], tco["verdict"]).reindex(columns=words, fill_value=0)
    return counts.reindex(list(dict.fromkeys(tco["architecture"])))


def partial_table(correlations: Mapping[str, dict]) -> pd.DataFrame:
    """One row per diagnostic of ``ladder.report.correlations``: the expected sign, the plain Spearman rho and its
    permutation p, the partial rho given log parameters with its interval over models and Holm-adjusted p (models
    treated as independent), and the verdicts (partial, plain, and of the trained-minus-null shift)."""
    rows = []
    for c in correlations.values():
        level, partial = c["level"], c["partial"]
        rows.append(
            {
                "diagnostic": c["label"],
                "expected sign": "+" if c["expected_sign"] > 0 else "-",
                "rho": level["rho"],
                "p": level["p_value"],
                "partial rho | size": partial["rho"],
                "95% CI": f"[{partial['ci'][0]:+.2f}, {partial['ci'][1]:+.2f}]",
                "permutation p": partial["p_value"],
                "Holm p": partial["p_holm"],
                "verdict": partial["verdict"],
                "plain verdict": level["verdict"],
                "shift verdict": c["shift"]["verdict"],
            }
        )
    return pd.DataFrame(rows)


def clustered_table(correlations: Mapping[str, dict]) -> pd.DataFrame:
    """One row per diagnostic with a ``clustered`` entry (``ladder.clustered.clustered_partial``): the controls,
    the partial rho with its interval over architectures, the within-architecture rho, its permutation p and the
    Holm-adjusted p, and the verdict, the one the ladder's verdict rows carry. Empty on a ladder without seeds."""
    rows = [
        {
            "diagnostic": c["label"],
            "given": k["controls"],
            "partial rho": k["rho"],
            "95% CI (architectures)": f"[{k['ci'][0]:+.2f}, {k['ci'][1]:+.2f}]",
            "within rho": k["rho_within"],
            "within p": k["p_within"],
            "Holm p": k["p_holm"],
            "verdict": k["verdict"],
        }
        for c in correlations.values()
        if (k := c.get("clustered")) is not None
    ]
    return pd.DataFrame(rows)


def seed_spread(models: pd.DataFrame) -> float:
    """The widest range of capability over the seeds of one architecture: how much capability varies at a
    fixed size, the variation that lets the partial correlation tell capability from size."""
    spans = models.groupby("architecture")["capability"].agg(lambda c: float(np.ptp(c.to_numpy())))
    return float(spans.max())


def diagnostic_details(m: dict) -> pd.DataFrame:
    """One row per model and kind (trained, null): the depths measured, the rise ``m(1) - m(0)`` and its
    interval, the bimodality verdict and ``gamma_c`` (with its interval, and whether a transition is found, or
    "not testable" below ``verdict.MIN_DEPTHS`` depths), the spike count at the last depth against ``k - 1``, and the contraction
    factor ``q`` with its interval."""
    rows = []
    for name in m["rungs"]:
        for kind in ("trained", "null"):
            entry = m["models"][name][kind]
            o, t = entry["omega"], entry["omega"]["transition"]
            rows.append(
                {
                    "model": name,
                    "kind": kind,
                    "depths": len(o["gamma"]),
                    "rise m(1)-m(0)": o["rise"]["value"],
                    "rise 95% CI": "[{:+.3f}, {:+.3f}]".format(*o["rise"]["ci"]),
                    "bimodality (last depth)": o["bimodality"]["verdict"],
                    "gamma_c": "-"
                    if t["gamma_c"] is None
                    else "{:.2f} [{:.2f}, {:.2f}]".format(t["gamma_c"], *t["ci"]),
                    "transition": "yes"
                    if t["has_transition"]
                    else ("not testable" if t["gamma_c"] is None else "no"),
                    "spikes (last depth)": entry["spikes"]["n_spikes"][-1],
                    "k-1": entry["spikes"]["bound"],
                    "q": entry["contraction"]["q"],
                    "q 95% CI": "[{:.3f}, {:.3f}]".format(*entry["contraction"]["ci"]),
                }
            )
    return pd.DataFrame(rows)


def span_text(values: pd.Series, digits: int = 3) -> str:
    """``"low to high"`` of ``values`` at ``digits`` decimals, or the one value where both print alike."""
    low, high = f"{float(values.min()):.{digits}f}", f"{float(values.max()):.{digits}f}"
    return low if low == high else f"{low} to {high}"


def _estimate(label: str, rho: float, ci, p_holm: float, verdict: str) -> str:
    return f"{label} {rho:+.2f} [{ci[0]:+.2f}, {ci[1]:+.2f}] (Holm p {p_holm:.3f}, {verdict})"


def ladder_findings(m: dict) -> dict[str, str]:
    """The ladder's results in words, for the verdict chapter: ``"across"``, each diagnostic's partial rho given
    size across the models (``report.correlations``: the clustered one where the ladder is seeded) with its
    interval, Holm-adjusted p and verdict; ``"along"``,
    the same for the changes along training of each checkpointed architecture
    (``along_training.training_correlations``); ``"predicts"`` and ``"tracks"``, the diagnostics that do (or
    "none"); ``"critical_depth"``, how many models are deep enough for ``transition.critical_depth``."""
    from ...ladder.along_training import training_correlations
    from ...ladder.figures import SHORT_LABELS

    across = {
        name: c.get("clustered") or c["partial"]
        for name, c in (m.get("correlations") or {}).items()
        if c.get("clustered") or c.get("partial")
    }
    along = {
        (architecture, name): c
        for architecture, by_name in training_correlations(m).items()
        for name, c in by_name.items()
    }
    from ...analysis.verdict import MIN_DEPTHS

    depths = [len(e["trained"]["omega"]["gamma"]) for e in m["models"].values() if "omega" in e["trained"]]
    testable = sum(n >= MIN_DEPTHS for n in depths)
    return {
        "critical_depth": (
            f"{testable} of its {len(depths)} models have the {MIN_DEPTHS} depths a critical-depth fit needs"
            if testable
            else f"none of its models has the {MIN_DEPTHS} depths a critical-depth fit needs (the deepest has "
            f"{max(depths, default=0)})"
        ),
        "across": "; ".join(
            _estimate(SHORT_LABELS[n], p["rho"], p["ci"], p["p_holm"], p["verdict"])
            for n, p in across.items()
        )
        or "none measured",
        "along": "; ".join(
            _estimate(f"{a}: {SHORT_LABELS[n]}", c["rho"], c["ci"], c["p_holm"], c["verdict"])
            for (a, n), c in along.items()
        )
        or "no checkpoints measured",
        "predicts": ", ".join(
            SHORT_LABELS[n] for n, p in across.items() if p["verdict"] == "predicts capability"
        )
        or "none",
        "tracks": ", ".join(
            f"{SHORT_LABELS[n]} ({a})" for (a, n), c in along.items() if c["verdict"] == "tracks capability"
        )
        or "none",
    }
