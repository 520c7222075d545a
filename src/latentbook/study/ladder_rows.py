"""The ladder's rows of the verdict table (chapter 7), typed, from the numbers of ``results/ladder-v2/measurements.json``.

``ladder_rows(path)`` gives one ``reasoning_diagnostics`` row per diagnostic (``diagnostic_rows``: its value is the
partial Spearman rho of the diagnostic with capability given log parameter count (and, for TCO stability, the
positive control) across the trained rungs, its interval from a bootstrap over architectures, judged on the
Holm-adjusted p of a permutation within architectures, all as ``ladder.report.correlations`` wrote them; capability
ranks almost like size, so the plain rho alone cannot say which of the two a diagnostic tracks), then one ``tco`` row per trained rung, judged against its
untrained initialisation (``tco_rows``, ``ladder.report.tco_judgements``). Without measurements, one honest
"not yet run" row that says why.
Introduced in: chapter 7 (the ladder), chapter 8 (the verdict).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..analysis.verdict import CLAIMS, Row
from ..errors import CaptureFileError, InvalidInputError
from ..ladder.along_training import training_correlations
from ..ladder.clustered import architecture_of, by_architecture, is_seeded
from ..ladder.report import COMMAND, DIAGNOSTICS, MEASUREMENTS, V2_COMMAND, load_measurements, tco_judgements
from ..ladder.store import REPO_LADDER_V2

# The ladder's own verdict words (``ladder.rank_correlation.verdict``) in this table's words.
LADDER_VERDICTS = {
    "predicts capability": "holds",
    "does not": "does not hold",
    "inconclusive": "inconclusive",
}
LADDER = "ladder of small models trained on variable binding (chapter 7)"


def _number(value) -> float:
    return float(value) if value is not None else math.nan


def _word(ladder_word: str) -> str:
    if ladder_word not in LADDER_VERDICTS:
        raise InvalidInputError(
            f"the ladder's measurements give the verdict {ladder_word!r}; use one of {sorted(LADDER_VERDICTS)}."
        )
    return LADDER_VERDICTS[ladder_word]


def not_yet_run(why: str) -> Row:
    """The one ``reasoning_diagnostics`` row of a ladder that has not been measured: ``why``, and the command."""
    return Row(
        "reasoning_diagnostics",
        LADDER,
        "not run",
        math.nan,
        "",
        math.nan,
        math.nan,
        math.nan,
        CLAIMS["reasoning_diagnostics"].paper,
        "not yet run",
        why + ": capability is not measured, so no diagnostic can be checked against it",
        V2_COMMAND,
    )


NO_PARTIAL = (
    "no partial correlation given size in these measurements (fewer than four rungs, or written before it was "
    "computed: `latentbook.ladder.report.recorrelate()` adds it from the file's own numbers), and capability "
    "ranks almost like parameter count, so the plain rho cannot tell capability from size"
)


def diagnostic_rows(m: dict) -> list[Row]:
    """One row per diagnostic of ``m["correlations"]`` (none before the ladder has three rungs): does it predict
    capability beyond size? On a seeded ladder the verdict is ``ladder.clustered.clustered_verdict`` (``clustered``:
    "holds" only when the within-architecture Holm-adjusted p is below 0.05 and the interval over architectures
    excludes 0 on the paper's side, beyond log parameters and the diagnostic's extra controls); otherwise
    ``ladder.rank_correlation.partial_verdict`` on the partial rank correlation given log parameters (``partial``);
    "inconclusive" where there is neither. The reason ends with the verdicts of the plain correlation (``level``)
    and of the trained-minus-null change (``shift``)."""
    rungs = m["rungs"]
    if rungs and all(is_seeded(name) for name in rungs):
        groups = by_architecture(rungs)
        seeds = {len(names) for names in groups.values()}
        which = (
            f"{len(groups)} architectures x {seeds.pop()} seeds"
            if len(seeds) == 1
            else ", ".join(f"{a} x {len(n)} seeds" for a, n in groups.items())
        )
    else:
        which = ", ".join(rungs)
    model = f"ladder of {len(rungs)} trained Llamas ({which}) and their untrained nulls"
    rows = []
    for c in (m.get("correlations") or {}).values():
        level, partial, clustered = c["level"], c.get("partial"), c.get("clustered")
        sign = "+" if c["expected_sign"] > 0 else "-"
        plain = f"plain Spearman rho = {level['rho']:+.2f} (n = {level['n']}, p = {level['p_value']:.3f})"
        if clustered is not None:
            low, high = clustered["ci"]
            measured = (
                f"{c['label']} predicts capability beyond {clustered['controls']} ({c['claim']}): partial "
                f"Spearman rho = {clustered['rho']:+.2f} over {clustered['n_clusters']} architectures, within "
                f"architectures {clustered['rho_within']:+.2f} (Holm-adjusted p = {clustered['p_holm']:.3f} over "
                f"{clustered['n_tests']} diagnostics); {plain}"
            )
            value, word, why = clustered["rho"], _word(clustered["verdict"]), clustered["reason"]
            if partial is not None:
                why += (
                    f"; treating the {partial['n']} models as independent, the partial rho given log parameters "
                    f"alone would be {partial['rho']:+.2f} (Holm p {partial['p_holm']:.3f}): "
                    f"{_word(partial['verdict'])}"
                )
        elif partial is not None:
            low, high = partial["ci"] if partial.get("ci") is not None else (None, None)
            measured = (
                f"{c['label']} predicts capability beyond size ({c['claim']}): partial Spearman rho given log "
                f"parameters = {partial['rho']:+.2f} (n = {partial['n']}, Holm-adjusted p = "
                f"{partial['p_holm']:.3f} over {partial['n_tests']} diagnostics); {plain}"
            )
            value, word, why = partial["rho"], _word(partial["verdict"]), partial["reason"]
        else:
            low = high = value = None
            measured = f"{c['label']} predicts capability ({c['claim']}): {plain}"
            word, why = "inconclusive", NO_PARTIAL
        rows.append(
            Row(
                claim="reasoning_diagnostics",
                model=model,
                run="ladder",
                parameters=math.nan,
                measured=measured,
                value=_number(value),
                ci_low=_number(low),
                ci_high=_number(high),
                paper=f"rises with reasoning capacity (expected sign {sign})",
                verdict=word,
                reason=(
                    f"{why}; plain correlation: {_word(level['verdict'])}; "
                    f"trained-minus-null: {_word(c['shift']['verdict'])}"
                ),
                command=command_of(m),
            )
        )
    return rows


def tco_rows(m: dict) -> list[Row]:
    """The ``tco`` rows: one per trained rung with a TCO block (``ladder.diagnostics.tco_diagnostics``), or, for a seeded
    ladder (``<rung>-s<seed>`` models), one per architecture (``_pooled_tco_row``). A rung's value is the two-way
    stability at the last depth, judged by ``verdict.judge_tco`` against the rung's untrained null (whose own
    verdict, judged alone, ends the reason)."""
    judged = tco_judgements(m)
    if judged and all(is_seeded(name) for name in judged):
        return [_pooled_tco_row(m, judged, names) for names in by_architecture(judged).values()]
    rows = []
    for rung, words in judged.items():
        word, reason = words["trained"]
        entry = m["models"][rung]["trained"]
        scores = entry["tco"]["scores"]
        stability, control = scores["stability"], scores["control"]
        low, high = stability["ci"]
        rows.append(
            Row(
                claim="tco",
                model=f"ladder:{rung}",
                run="ladder",
                parameters=float(entry["n_parameters"]),
                measured=(
                    f"two-way stability {stability['accuracy']:.3f} at the last depth "
                    f"(within-step control {control['accuracy']:.3f}, chance 0.5)"
                ),
                value=float(stability["accuracy"]),
                ci_low=float(low),
                ci_high=float(high),
                paper=CLAIMS["tco"].paper,
                verdict=word,
                reason=f"{reason}; its untrained null alone: {words['null'][0]}",
                command=command_of(m),
            )
        )
    return rows


def _pooled_tco_row(m: dict, judged: dict, names: list[str]) -> Row:
    """The ``tco`` row of one architecture's seeds: the verdict they all share, else "inconclusive" (the seeds
    disagree); the value is the mean two-way stability over the seeds, the interval the hull of their intervals."""
    words = [judged[name]["trained"][0] for name in names]
    stability = [m["models"][name]["trained"]["tco"]["scores"]["stability"] for name in names]
    control = [m["models"][name]["trained"]["tco"]["scores"]["control"]["accuracy"] for name in names]
    architecture = architecture_of(names[0])[0]
    seeds = ", ".join(f"{name}: {word}" for name, word in zip(names, words))
    word = words[0] if len(set(words)) == 1 else "inconclusive"
    why = (
        f"all {len(names)} seeds agree ({judged[names[0]]['trained'][1]} for {names[0]})"
        if len(set(words)) == 1
        else f"the seeds disagree ({seeds})"
    )
    return Row(
        claim="tco",
        model=f"ladder:{architecture} ({len(names)} seeds)",
        run="ladder",
        parameters=float(m["models"][names[0]]["trained"]["n_parameters"]),
        measured=(
            f"two-way stability {np.mean([s['accuracy'] for s in stability]):.3f} at the last depth, mean of "
            f"{len(names)} seeds (within-step control {np.mean(control):.3f}, chance 0.5)"
        ),
        value=float(np.mean([s["accuracy"] for s in stability])),
        ci_low=float(min(s["ci"][0] for s in stability)),
        ci_high=float(max(s["ci"][1] for s in stability)),
        paper=CLAIMS["tco"].paper,
        verdict=word,
        reason=f"{why}; by seed: {seeds}; the untrained nulls alone: "
        + ", ".join(judged[name]["null"][0] for name in names),
        command=command_of(m),
    )


# The along-training test's words (``ladder.along_training.along_training_verdict``) in this table's words.
TRAINING_VERDICTS = {
    "tracks capability": "holds",
    "does not": "does not hold",
    "inconclusive": "inconclusive",
}


def training_rows(m: dict) -> list[Row]:
    """One ``reasoning_diagnostics`` row per checkpointed architecture and diagnostic
    (``ladder.along_training.training_correlations``): does the diagnostic change with capability along the
    training of one architecture (size fixed), beyond when in training the change happens? Its value is the
    partial Spearman rho of the changes given the step, judged on its Holm-adjusted p; none without checkpoints."""
    rows = []
    for architecture, by_name in training_correlations(m).items():
        for name, c in by_name.items():
            sign = "+" if DIAGNOSTICS[name][1] > 0 else "-"
            rows.append(
                Row(
                    claim="reasoning_diagnostics",
                    model=f"ladder:{architecture}, {c['n_runs']} runs along training",
                    run="ladder, along training",
                    parameters=math.nan,
                    measured=(
                        f"{c['label']} changes with capability along training, size fixed "
                        f"({DIAGNOSTICS[name][2]}): partial Spearman rho of the changes given the step = "
                        f"{c['rho']:+.2f} (n = {c['n']}, Holm-adjusted p = {c['p_holm']:.3f} over "
                        f"{c['n_tests']} tests)"
                    ),
                    value=_number(c["rho"]),
                    ci_low=_number(c["ci"][0]),
                    ci_high=_number(c["ci"][1]),
                    paper=f"rises with reasoning capacity (expected sign {sign})",
                    verdict=TRAINING_VERDICTS[c["verdict"]],
                    reason=c["reason"],
                    command=command_of(m),
                )
            )
    return rows


BOOK_MEASUREMENTS = REPO_LADDER_V2 / MEASUREMENTS  # the book's ladder: chapter 7 and the verdict read it


def ladder_measurements() -> dict | None:
    """The book's ladder measurements (``BOOK_MEASUREMENTS``), or None where they have not been written."""
    return load_measurements(BOOK_MEASUREMENTS) if BOOK_MEASUREMENTS.is_file() else None


def command_of(m: dict) -> str:
    """The command that trains and measures the ladder of ``m``: ladder v2's for seeded models, else v1's."""
    return V2_COMMAND if m["rungs"] and all(is_seeded(name) for name in m["rungs"]) else COMMAND


def ladder_rows(path: str | Path | None = None) -> list[Row]:
    """``diagnostic_rows``, ``training_rows`` and ``tco_rows`` of the ladder's measurements (``ladder.report.load_measurements``,
    default the book's ladder, ``results/ladder-v2/measurements.json``), or one "not yet run" row that says why
    there are none."""
    try:
        m = load_measurements(path if path is not None else BOOK_MEASUREMENTS)
    except CaptureFileError as exc:
        return [not_yet_run(f"the ladder has not been measured ({exc})")]
    rows = diagnostic_rows(m) + training_rows(m) + tco_rows(m)
    return rows or [
        not_yet_run("the ladder's measurements give no rows (fewer than three rungs, no TCO blocks)")
    ]
