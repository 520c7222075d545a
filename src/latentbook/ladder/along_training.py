"""Capability and the diagnostics along training: the checkpoints of one architecture (ladder v2).

Across the ladder capability ranks almost like size. Along the training of one architecture size is fixed, but
capability and training time rise together, so a diagnostic that only drifts with training time (a growing
weight norm, say) would seem to track capability. The test controls for the step:

1. ``report.measure_ladder`` measures the checkpoints of every checkpointed rung (every ``stride`` steps) beside
   the final models;
2. ``training_table(m)``: one row per checkpoint (architecture, run, step, capability, each diagnostic);
3. ``partial_along_training(x, y, step, run)``: do capability and a diagnostic change together between
   consecutive checkpoints, beyond when in training the change happens? The partial Spearman rho of their
   changes given the step, pooled over the runs (seeds) of one architecture (``rank_correlation.partial_spearman_ci``);
4. ``training_correlations(m)``: that test for each diagnostic and checkpointed architecture, Holm-adjusted
   across all of them, with ``along_training_verdict``'s word, and the plain Spearman rho of each run.

Introduced in: chapter 7.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError
from .clustered import architecture_of
from .rank_correlation import _spearman, partial_spearman_ci, signed_decision
from .report import (
    DIAGNOSTICS,
    EXTRA_CONTROLS,
    capability_of,
    diagnostic_values,
    extra_control_value,
    holm_family,
)


@dataclass(frozen=True)
class TrainingCorrelation:
    """Partial Spearman rho of the changes of capability and of a diagnostic between consecutive checkpoints,
    given the step, pooled over the runs of one architecture (``rank_correlation.partial_spearman_ci`` on the changes)."""

    rho: float
    ci: tuple[float, float]
    p_value: float
    n: int  # changes (consecutive pairs of checkpoints)
    n_runs: int
    per_run: tuple[float, ...]  # plain Spearman rho of capability and the diagnostic (levels) within each run


def _runs(run) -> list[np.ndarray]:
    """Indices of each run's checkpoints, in the order given (which must be the order of the steps)."""
    run = np.asarray(run)
    return [np.flatnonzero(run == label) for label in dict.fromkeys(run.tolist())]


def partial_along_training(
    x, y, step, run, n_boot: int = 4000, seed: int = 0, extra=None
) -> TrainingCorrelation:
    """Do ``y`` (a diagnostic) and ``x`` (capability) change together along training, beyond when it happens?

    ``x``, ``y``, ``step`` and ``run`` have one entry per checkpoint; within each run the entries follow the
    steps. The changes ``dx_t = x_t - x_{t-1}`` and ``dy_t`` between consecutive checkpoints of a run are pooled
    over the runs and ``rank_correlation.partial_spearman_ci(dx, dy, step_t)`` is their partial Spearman rho given the
    step at which each change ends (bootstrap interval, Freedman–Lane p). Levels would not do: checkpoints of
    one run are a smooth series, so two quantities that only grow with training time correlate, and their
    residuals stay autocorrelated (a permutation test on them rejects 9-11% of the time at 0.05 on planted
    drifts); changes are close to independent and the step absorbs when in training they are large.
    Needs at least 3 checkpoints per run and 5 changes in all. ``extra`` (one value per checkpoint, such as a
    positive control that tracks capability itself): its changes are controlled for too, beside the step.
    """
    x, y, step = (np.asarray(v, dtype=float) for v in (x, y, step))
    if extra is not None:
        extra = np.asarray(extra, dtype=float)
        if extra.shape != x.shape or not np.all(np.isfinite(extra)):
            raise InvalidInputError(f"extra needs one finite value per checkpoint, got shape {extra.shape}.")
    run = np.asarray(run)
    if not (x.shape == y.shape == step.shape == run.shape) or x.ndim != 1:
        raise InvalidInputError(
            f"x, y, step and run need one 1-d entry per checkpoint, got {x.shape}, {y.shape}, {step.shape}, "
            f"{run.shape}."
        )
    if not np.all(np.isfinite(np.concatenate([x, y, step]))):
        raise InvalidInputError("x, y and step must be finite: a NaN diagnostic has no rank.")
    blocks = _runs(run)
    if min(len(b) for b in blocks) < 3 or len(x) - len(blocks) < 5:
        raise InvalidInputError(
            f"need >= 3 checkpoints per run and >= 5 changes in all, got runs of {[len(b) for b in blocks]}."
        )
    for indices in blocks:
        if np.any(np.diff(step[indices]) <= 0):
            raise InvalidInputError("within each run the checkpoints must be given in increasing step order.")
    dx = np.concatenate([np.diff(x[b]) for b in blocks])
    dy = np.concatenate([np.diff(y[b]) for b in blocks])
    at = np.concatenate([step[b][1:] for b in blocks])
    if extra is not None:
        at = np.column_stack([at, np.concatenate([np.diff(extra[b]) for b in blocks])])
    r = partial_spearman_ci(dx, dy, at, n_boot=n_boot, seed=seed)
    per_run = tuple(_spearman(x[b], y[b]) for b in blocks)
    return TrainingCorrelation(r.rho, r.ci, r.p_value, r.n, len(blocks), per_run)


def along_training_verdict(
    r: TrainingCorrelation,
    p_holm: float,
    n_tests: int,
    expected_sign: int,
    alpha: float = 0.05,
    controls: str = "the step",
) -> tuple[str, str]:
    """("tracks capability" | "does not" | "inconclusive", reason) along the training of one architecture.

    Tracks: the Holm-adjusted p (``n_tests`` tests) is below ``alpha`` and the interval lies on the expected side
    of 0. Does not: the same on the other side, or the diagnostic has no rank order left once the step is
    removed. Inconclusive: anything else, training time named as the confound.
    """
    if not np.isfinite(r.rho):
        return (
            "does not",
            "once the training step is removed, nothing of the diagnostic (or of capability) is left",
        )
    text = (
        f"changes together: partial Spearman rho given {controls} = {r.rho:+.2f}, 95% CI [{r.ci[0]:+.2f}, {r.ci[1]:+.2f}], "
        f"permutation p = {r.p_value:.3f}, Holm-adjusted over {n_tests} tests p = {p_holm:.3f}, {r.n} changes "
        f"between checkpoints of {r.n_runs} runs (plain rho of the levels within each run: "
        + ", ".join(f"{v:+.2f}" for v in r.per_run)
        + ")"
    )
    side, why = signed_decision(r.ci, p_holm, expected_sign, alpha)
    if side == "expected":
        return "tracks capability", text
    if side == "opposite":
        return "does not", text + " (opposite to the paper's direction, beyond training time)"
    return "inconclusive", text + f" ({why}: what the diagnostic shares with capability may be training time)"


def training_table(m: dict):
    """One row per measured checkpoint of ``measurements.json`` (the final model is the last one): its
    architecture, run (the model's name), seed, step, capability, every diagnostic (``report.diagnostic_values``)
    and every extra control (``report.EXTRA_CONTROLS``, as ``"control: <diagnostic>"``)."""
    import pandas as pd

    rows = []
    for name in m["rungs"]:
        entry = m["models"][name]
        if not entry.get("checkpoints"):
            continue
        architecture, seed = architecture_of(name)
        measured = {int(step): value for step, value in entry["checkpoints"].items()}
        measured.setdefault(int(entry["train_steps"]), entry["trained"])
        for step in sorted(measured):
            rows.append(
                {"architecture": architecture, "run": name, "seed": seed, "step": step}
                | {"capability": capability_of(measured[step])}
                | diagnostic_values(measured[step])
                | {f"control: {key}": extra_control_value(measured[step], key) for key in EXTRA_CONTROLS}
            )
    return pd.DataFrame(rows)


def training_correlations(m: dict, n_boot: int = 4000) -> dict:
    """``{architecture: {diagnostic: {...}}}``: ``partial_along_training`` of capability and each diagnostic of
    ``report.DIAGNOSTICS`` given the step (and the diagnostic's ``report.EXTRA_CONTROLS``: TCO stability given its
    positive control too, as across the ladder), over the runs of each checkpointed architecture, Holm-adjusted across
    every (architecture, diagnostic) test, with ``along_training_verdict``. ``{}`` without checkpoints."""
    table = training_table(m)
    if table.empty:
        return {}
    tests = {}
    for architecture, rows in table.groupby("architecture", sort=True):
        rows = rows.sort_values(["run", "step"])
        for name in DIAGNOSTICS:
            extra = rows[f"control: {name}"] if name in EXTRA_CONTROLS else None
            tests[architecture, name] = partial_along_training(
                rows["capability"], rows[name], rows["step"], rows["run"], n_boot=n_boot, extra=extra
            )
    adjusted = holm_family([r.p_value for r in tests.values()])
    out: dict = {}
    for ((architecture, name), r), p_holm in zip(tests.items(), adjusted):
        controls = "the step" + (f" and {EXTRA_CONTROLS[name][0]}" if name in EXTRA_CONTROLS else "")
        word, reason = along_training_verdict(
            r, float(p_holm), len(tests), DIAGNOSTICS[name][1], controls=controls
        )
        out.setdefault(architecture, {})[name] = {
            "label": DIAGNOSTICS[name][0],
            "control": "training step"
            + (f" and {EXTRA_CONTROLS[name][0]}" if name in EXTRA_CONTROLS else ""),
            "rho": r.rho,
            "ci": r.ci,
            "p_value": r.p_value,
            "p_holm": float(p_holm),
            "n_tests": len(tests),
            "n": r.n,
            "n_runs": r.n_runs,
            "per_run": list(r.per_run),
            "verdict": word,
            "reason": reason,
        }
    return out


def correlation_table(correlations: dict):
    """``training_correlations``'s results as one row per (architecture, diagnostic): the partial rho of the
    changes given the step, its interval, the Holm-adjusted p and the verdict."""
    import pandas as pd

    rows = [
        {
            "architecture": architecture,
            "diagnostic": entry["label"],
            "rho": entry["rho"],
            "95% CI": f"[{entry['ci'][0]:+.2f}, {entry['ci'][1]:+.2f}]",
            "p (Holm)": entry["p_holm"],
            "changes": entry["n"],
            "runs": entry["n_runs"],
            "verdict": entry["verdict"],
        }
        for architecture, by_name in correlations.items()
        for entry in by_name.values()
    ]
    return pd.DataFrame(rows)
