"""Chapter 7's tables of the seeded ladder (v2: ``<rung>-s<seed>`` models, ``ladder.report.measure_ladder``'s
``measurements.json``): one row per model, the seeds of each architecture pooled, the TCO test of every model, and
the partial correlations across the models; and, per section, the numbers its prose quotes (``*_numbers``, a dict
the chapter glues as it is).
Introduced in: chapter 7.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ...analysis.tco import N_FOLDS, TWO_WAY_CHANCE
from ...analysis.transition import MIN_FITTED, SKIP
from ...analysis.verdict import MIN_DEPTHS, TCO_MARGIN
from ...ladder.clustered import architecture_of, cluster_resamples
from ...ladder.rank_correlation import ALPHA, spearman_ci
from ...ladder.report import (
    DIAGNOSTICS,
    V2_COMMAND,
    capability_of,
    diagnostic_values,
    extra_control_value,
    stale_models,
    tco_judgements,
)
from ...ladder.task import TaskSpec, name_pool

if TYPE_CHECKING:
    from ...ladder.train import TrainConfig


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


def _seed_spans(models: pd.DataFrame) -> pd.Series:
    return models.groupby("architecture")["capability"].agg(lambda c: float(np.ptp(c.to_numpy())))


def seed_spread(models: pd.DataFrame) -> float:
    """The widest range of capability over the seeds of one architecture: how much capability varies at a
    fixed size, the variation that lets the partial correlation tell capability from size."""
    return float(_seed_spans(models).max())


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


# --- the numbers each section of chapter 7 quotes --------------------------------------------------------------


def ladder_numbers(m: dict, architectures: pd.DataFrame) -> dict[str, object]:
    """How many models, architectures and seeds (the fewest of any architecture) the ladder has, and the
    ``measured_by`` clause."""
    return {
        "n_models": len(m["rungs"]),
        "n_architectures": len(architectures),
        "n_seeds": int(architectures["seeds"].min()),
        "measured_by": measured_by(m),
    }


def task_numbers(spec: TaskSpec, m: dict) -> dict[str, object]:
    """The task's sizes (statements, values ``k``, training and held-out names, longest chain) and, per hop count
    ``h``, the two baselines that bind nothing on the evaluated programs: guessing one of the values written
    (``floor_<h>``) and answering the first value written (``first_<h>``)."""
    train_names, heldout_names = name_pool(spec)
    capability = m["models"][m["rungs"][0]]["trained"]["capability"]
    return (
        {
            "n_statements": spec.n_statements,
            "k": spec.n_values,
            "n_train_names": len(train_names),
            "n_heldout_names": len(heldout_names),
            "max_hops": spec.max_hops,
        }
        | {f"floor_{h}": float(f) for h, f in capability["guess_floor"].items()}
        | {f"first_{h}": float(f) for h, f in capability["first_value_floor"].items()}
    )


def training_numbers(
    config: TrainConfig, models: pd.DataFrame, along: pd.DataFrame, checkpoint_steps: list[int]
) -> dict[str, object]:
    """The training recipe (steps, batch, learning rate, curriculum gate), the wall-clock hours of all the
    training runs in ``models`` and of the longest one, the stride of ``checkpoint_steps`` and the checkpointed architectures of
    ``along`` (``along_training.training_table``)."""
    return {
        "steps": config.steps,
        "batch": config.batch_size,
        "lr": config.lr,
        "gate": config.gate,
        "total_hours": float(models["train minutes"].sum() / 60),
        "longest_hours": float(models["train minutes"].max() / 60),
        "checkpoint_every": int(np.diff(checkpoint_steps[:2])[0]),
        "checkpointed": ", ".join(sorted(set(along["architecture"]))),
    }


def beats_baselines(m: dict, name: str) -> dict[str, bool]:
    """Per hop count, whether the whole Wilson interval of the model's held-out accuracy lies above both
    baselines that bind nothing (guessing a written value, answering the first one)."""
    c = m["models"][name]["trained"]["capability"]
    return {
        h: c["ci"][h][0] > max(c["guess_floor"][h], c["first_value_floor"][h]) for h in c["first_value_floor"]
    }


def capability_numbers(m: dict, models: pd.DataFrame, architectures: pd.DataFrame) -> dict[str, object]:
    """The smallest architecture's mean 3-hop accuracy; the most capable model's accuracy at 1 and 3 hops (with
    its interval and its null's); how many models beat both baselines at some hop count (``n_binding``) and how
    many do not at 3 hops (``n_fails3``); the widest seed spread and its architecture; whether the best model
    reached the 90% the experiment was designed for."""
    smallest = architectures.index[0]
    best = models.loc[models["capability"].idxmax(), "model"]
    trained = m["models"][best]["trained"]["capability"]
    lo, hi = trained["ci"]["3"]
    beats = [beats_baselines(m, name) for name in m["rungs"]]
    spans = _seed_spans(models)
    return {
        "smallest": smallest,
        "smallest_acc3": float(architectures.loc[smallest, "3-hop"]),
        "best": best,
        "best_acc3": float(trained["accuracy"]["3"]),
        "best_acc1": float(trained["accuracy"]["1"]),
        "best_acc3_lo": float(lo),
        "best_acc3_hi": float(hi),
        "best_null_acc3": float(m["models"][best]["null"]["capability"]["accuracy"]["3"]),
        "n_per_hop": trained["n_per_hop"],
        "n_binding": sum(any(b.values()) for b in beats),
        "n_fails3": sum(not b["3"] for b in beats),
        "seed_spread": float(spans.max()),
        "seed_spread_architecture": spans.idxmax(),
        "reached90": "reached" if trained["accuracy"]["3"] > 0.9 else "did not reach",
    }


def diagnostic_numbers(details: pd.DataFrame) -> dict[str, object]:
    """Counts over ``diagnostic_details``: profiles with a transition and those deep enough to test one (with
    the depths a fit needs and the most any model has), bimodal last depths, and query states with at most
    ``k - 1`` spikes."""
    return {
        "n_transitions": int((details.transition == "yes").sum()),
        "n_testable": int((details.transition != "not testable").sum()),
        "min_depths": MIN_DEPTHS,
        "max_depths": int(details.depths.max()),
        "n_bimodal": int((details["bimodality (last depth)"] == "bimodal").sum()),
        "n_measured": len(details),
        "n_within_bound": int((details["spikes (last depth)"] <= details["k-1"]).sum()),
    }


def tco_numbers(tco: pd.DataFrame) -> dict[str, object]:
    """The TCO test's settings (two-way chance, margin, folds), the bar's range, how many models get each verdict
    (and which are inconclusive or do not hold), the architectures whose seeds all agree, and the nulls that
    pass the positive control alone."""
    counts = tco_counts(tco)
    by_word = {w: tco.loc[tco.verdict == w, "model"].tolist() for w in counts.columns}
    return {
        "two_way_chance": TWO_WAY_CHANCE,
        "tco_margin": TCO_MARGIN,
        "tco_folds": N_FOLDS,
        "tco_bar": span_text(tco["bar (bag, first value)"]),
        "tco_n_holds": len(by_word["holds"]),
        "tco_n_not": len(by_word["does not hold"]),
        "tco_n_inconclusive": len(by_word["inconclusive"]),
        "tco_inconclusive_list": ", ".join(by_word["inconclusive"]) or "none",
        "tco_not_list": ", ".join(by_word["does not hold"]) or "none",
        "tco_n_agree": sum(bool((row == row.sum()).any()) for _, row in counts.iterrows()),
        # past the control: judged on stability, not stopped by a control below its bar or at chance
        "tco_n_null_pass": int((~tco["null alone"].isin(["inconclusive", "not testable here"])).sum()),
    }


def _listed(names: Iterable[str]) -> str:
    return "; ".join(names) or "none"


def partial_numbers(models: pd.DataFrame, verdicts: pd.DataFrame) -> dict[str, object]:
    """Capability's Spearman rho with log parameter count, and the counts and names of each verdict of
    ``partial_table`` (models counted as independent; the plain correlation's "predicts" listed too)."""
    log_size = np.log(models["parameters"].to_numpy())
    word = verdicts.verdict
    return {
        "alpha": ALPHA,
        "size_rho": float(spearman_ci(models["capability"].to_numpy(), log_size).rho),
        "n_diagnostics": len(verdicts),
        "n_predicts": int((word == "predicts capability").sum()),
        "n_does_not": int((word == "does not").sum()),
        "n_inconclusive": int((word == "inconclusive").sum()),
        "predicts_partial_list": _listed(verdicts.diagnostic[word == "predicts capability"]),
        "predicts_level_list": _listed(
            verdicts.diagnostic[verdicts["plain verdict"] == "predicts capability"]
        ),
    }


def clustered_numbers(m: dict, clustered: pd.DataFrame) -> dict[str, object]:
    """The clustered test's sizes (within-architecture orders, distinct bootstrap resamples and the equally
    likely draws they stand for, intervals not enumerated), the positive control's Spearman rho with
    capability, and the counts, names and smallest Holm p of ``clustered_table``'s verdicts."""
    entries = [c["clustered"] for c in m["correlations"].values() if "clustered" in c]
    n_architectures = int(entries[0]["n_clusters"])
    trained = [m["models"][name]["trained"] for name in m["rungs"]]
    control = [extra_control_value(entry, "stability") for entry in trained]
    control_rho = spearman_ci([capability_of(entry) for entry in trained], control).rho
    return {
        "n_within_orders": int(entries[0]["n_permutations"]),
        "n_resamples": len(cluster_resamples(n_architectures)[0]),
        "n_draws": n_architectures**n_architectures,
        "n_inexact_intervals": sum(not entry["exact_interval"] for entry in entries),
        "control_capability_rho": float(control_rho),
        "n_clustered_predicts": int((clustered.verdict == "predicts capability").sum()),
        "clustered_predicts_list": _listed(clustered.diagnostic[clustered.verdict == "predicts capability"]),
        "n_clustered_inconclusive": int((clustered.verdict == "inconclusive").sum()),
        "min_within_holm": float(clustered["Holm p"].min()),
        "min_within_holm_name": clustered.diagnostic[clustered["Holm p"].idxmin()],
    }


def along_numbers(along: pd.DataFrame, along_table: pd.DataFrame) -> dict[str, object]:
    """The checkpoints of ``along`` (``along_training.training_table``), the changes per test and the counts of
    each verdict of ``along_table`` (``along_training.correlation_table``), with the tests that track."""
    word = along_table.verdict
    tracks = along_table.loc[word == "tracks capability", ["architecture", "diagnostic"]]
    return {
        "n_checkpoints": len(along),
        "n_changes": int(along_table["changes"].iloc[0]),
        "n_tests": len(along_table),
        "n_tracks": int((word == "tracks capability").sum()),
        "n_does_not": int((word == "does not").sum()),
        "n_inconclusive": int((word == "inconclusive").sum()),
        "tracks_list": _listed([f"{a}: {d}" for a, d in tracks.itertuples(index=False)]),
    }


def landmark_numbers(record: dict, rows: pd.DataFrame) -> dict[str, object]:
    """What chapter 9's landmarks find on the ladder (``study.ladder_landmarks.landmark_rows``): the depths the
    models have against those the Omega fit needs, the trained and untrained models with an interior
    intrinsic-dimension peak, the massive-activation onsets, and where the trained models' logit lens converges
    (how often, how often at the last depth, the median gamma in the deepest models)."""
    from ..ladder_landmarks import written_by

    def n_found(selected: pd.DataFrame, landmark: str) -> int:
        return int(selected.loc[selected.landmark == landmark, "found"].sum())

    trained, null = rows[rows.kind == "trained"], rows[rows.kind == "untrained"]
    lens = trained[(trained.landmark == "lens convergence") & trained.found]
    return {
        "date": record["date"][:10],
        "written_by": written_by(record),
        "n": int(trained.rung.nunique()),
        "max_depths": int(rows.depths.max()),
        "fit_depths": MIN_FITTED + sum(SKIP),
        "id_trained": n_found(trained, "ID peak (Gride)"),
        "id_null": n_found(null, "ID peak (Gride)"),
        "onsets": n_found(rows, "massive onset"),
        "lens_found": len(lens),
        "lens_last": int((lens.gamma == 1.0).sum()),
        "lens_deepest": float(lens[lens.depths == rows.depths.max()].gamma.median()),
    }


def diagnostic_spans(m: dict) -> pd.DataFrame:
    """One row per diagnostic of ``report.DIAGNOSTICS``: its lowest and highest value over the trained models
    (``trained_lo``, ``trained_hi``) and over their untrained nulls (``null_lo``, ``null_hi``)."""
    spans = {}
    for name in DIAGNOSTICS:
        row = {}
        for kind in ("trained", "null"):
            values = [diagnostic_values(m["models"][n][kind])[name] for n in m["rungs"]]
            row |= {f"{kind}_lo": float(min(values)), f"{kind}_hi": float(max(values))}
        spans[name] = row
    return pd.DataFrame.from_dict(spans, orient="index")


def spike_bounds(spec: TaskSpec, details: pd.DataFrame) -> dict[str, object]:
    """The spike counts a mixture of the query's classes allows: ``k - 1`` for the values, one less than the
    held-out names for the names; and how many models (nulls included) exceed ``k - 1`` at the last depth."""
    return {
        "name_bound": len(name_pool(spec)[1]) - 1,
        "value_bound": spec.n_values - 1,
        "n_above_values": int((details["spikes (last depth)"] > spec.n_values - 1).sum()),
    }


def plateau_numbers(plateau: dict, runs: pd.DataFrame, learnt: list[str], margin: float) -> dict[str, object]:
    """What ``benchmarks/ladder_plateau.py`` found (``report.plateau_table``'s ``runs`` and ``learnt`` at
    ``margin``): the guessing level, the first ladder's recipe and each single change with training names, the
    variants that learn and how many of them both drop the shared name direction and quiet the MLPs at init,
    and the best of them on held-out names."""
    best = runs.loc[learnt, "accuracy, held-out names"].idxmax() if learnt else "llama"
    both = runs.loc[learnt]
    both = both[~both["shared name direction"] & (both["MLPs"] != "stock")]
    on_training_names = runs["accuracy, training names"]
    return {
        "guess": float(plateau["guessing_baseline"]),
        "margin": float(margin),
        "llama": float(on_training_names["llama"]),
        "names_iid": float(on_training_names["names iid"]),
        "no_MLP": float(on_training_names["no MLP"]),
        "best_train": float(on_training_names[best]),
        "best_heldout": float(runs.loc[best, "accuracy, held-out names"]),
        "steps": int(plateau["settings"]["steps"]),
        "n": len(runs),
        "n_learnt": len(learnt),
        "n_learnt_both_changes": len(both),
        "learnt": "; ".join(f"“{k}”" for k in learnt) or "none",
        "best": best,
    }


NAMES_SETTINGS = {  # glue key -> row of report.names_table
    "ladder": "fixed, then fresh",
    "fresh": "fresh from the start",
    "fixed": "fixed throughout",
}


def names_numbers(bench: dict, names_runs: pd.DataFrame) -> dict[str, object]:
    """What ``benchmarks/ladder_names.py`` found (``report.names_table``'s ``names_runs``): per setting of when
    names get fresh codes, 3-hop accuracy with held-out and with training names and the steps its curriculum
    stages opened at; and the 3-hop level of the stronger baseline on the benchmark's programs (the first
    ladder's task, ``train.LADDER_SPEC``, whose starts are not balanced)."""
    from ...ladder.diagnostics import first_value_floor, guess_floor
    from ...ladder.train import LADDER_SPEC

    values: dict[str, object] = {"steps": int(bench["settings"]["steps"])}
    for key, row in NAMES_SETTINGS.items():
        values |= {
            f"{key}_heldout3": float(names_runs.loc[row, "held-out, 3 hop"]),
            f"{key}_train3": float(names_runs.loc[row, "training names, 3 hop"]),
            f"{key}_stages": names_runs.loc[row, "stages opened at step"],
        }
    values["v1_floor3"] = max(guess_floor(LADDER_SPEC, 3), first_value_floor(LADDER_SPEC, 3))
    return values
