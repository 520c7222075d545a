"""The rows of chapter 8's verdict table that its prose reads one by one, as glued words and numbers.

Usage: ``glue_frame("vd", reading_glue(table, runs, tco))`` for "Reading the verdicts against the paper" (each
model's transition, liquid, spectral and TCO rows, the ladder's TCO rows and the scaling row), and
``glue_frame("vd", ladder_glue(table, ladder_measurements()))`` for the diagnostics of reasoning capacity.
Introduced in: chapter 8.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ...capturing.cache import BOOK_MODELS
from ..verdict_table import transition_words

if TYPE_CHECKING:
    import pandas as pd

    from ...analysis.tco import TCOScores
    from ..measure import Measurements

ROWS = (  # glue name -> the claim whose verdict it is
    ("liquid", "stays_liquid"),
    ("liquid_clean", "stays_liquid_cleaned"),
    ("jump", "omega_jump"),
    ("learned", "learned_basis_jump"),
    ("bimodality", "bimodality"),
    ("critical", "critical_depth"),
    ("massive_step", "massive_step"),
    ("concentration", "spectral_concentration"),
    ("tco", "tco"),
)
REASONS = (  # the reasons the prose quotes: glue name, claim, model
    ("liquid_reason_gemma3", "stays_liquid", "gemma3-270m"),
    ("massive_step_reason_gemma3", "massive_step", "gemma3-270m"),
    ("jump_reason_gemma3", "omega_jump", "gemma3-270m"),
    ("learned_reason_smollm2", "learned_basis_jump", "smollm2-135m"),
    ("learned_reason_gemma3", "learned_basis_jump", "gemma3-270m"),
    ("critical_reason_smollm2", "critical_depth", "smollm2-135m"),
    ("critical_reason_minilm", "critical_depth", "minilm-l6"),
)
LADDER_WORDS = (  # glue name's word -> verdict
    ("holds", "holds"),
    ("inconclusive", "inconclusive"),
    ("not", "does not hold"),
    ("nt", "not testable here"),
)
FINDINGS = (
    "critical_depth",
    "across",
    "along",
    "predicts",
    "tracks",
)  # controlled_test_tables.ladder_findings


def claim_row(table: pd.DataFrame, claim: str, model: str) -> pd.Series:
    """The row of ``claim`` on ``model`` (the first, where several share it)."""
    return table[(table["claim"] == claim) & (table["model"] == model)].iloc[0]


def reading_glue(
    table: pd.DataFrame,
    runs: Mapping[str, Measurements],
    tco: Mapping[str, TCOScores],
    models: Sequence[str] = BOOK_MODELS,
) -> dict[str, object]:
    """Per model (its name's first part: ``smollm2``, ...), the verdicts of ``ROWS`` (``liquid_smollm2``, ...), the
    highest ``m`` of the two liquid rows (``liquid_m_*``, ``liquid_clean_m_*``), raw ``m``'s transition in words
    (``raw_transition_*``) and the TCO control's accuracy (``tco_control_*``); the bag of values' accuracy on the
    first model's pairs (``tco_bag``); the reasons of ``REASONS``; the ladder's TCO rows (``tco_ladder_n``, and the
    architectures with each verdict, ``tco_ladder_holds``, ... or "none"); the scaling row (``scaling``,
    ``scaling_reason``)."""
    glued: dict[str, object] = {}
    for name in models:
        key = name.split("-")[0]
        for word, claim in ROWS:
            glued[f"{word}_{key}"] = claim_row(table, claim, name)["verdict"]
        glued[f"liquid_m_{key}"] = float(claim_row(table, "stays_liquid", name)["value"])
        glued[f"liquid_clean_m_{key}"] = float(claim_row(table, "stays_liquid_cleaned", name)["value"])
        glued[f"raw_transition_{key}"] = transition_words(runs[name].transition)
        glued[f"tco_control_{key}"] = float(tco[name].control.accuracy)
    glued["tco_bag"] = float(tco[models[0]].control_bag.accuracy)
    ladder = table[(table["claim"] == "tco") & (table["run"] == "ladder")]
    glued["tco_ladder_n"] = int(len(ladder))
    for word, verdict_word in LADDER_WORDS:
        chosen = ladder.loc[ladder["verdict"] == verdict_word, "model"]
        glued[f"tco_ladder_{word}"] = ", ".join(chosen) or "none"
    for key, claim, model in REASONS:
        glued[key] = claim_row(table, claim, model)["reason"]
    scaling = table[table["claim"] == "scaling"].iloc[0]
    glued["scaling"] = scaling["verdict"]
    glued["scaling_reason"] = scaling["reason"]
    return glued


def verdict_words(rows: pd.DataFrame) -> str:
    """The verdicts of ``rows`` counted, most common first: "3 inconclusive, 2 holds", or "none"."""
    words = rows["verdict"].value_counts()
    return ", ".join(f"{n} {word}" for word, n in words.items()) or "none"


def ladder_glue(table: pd.DataFrame, measured: dict | None) -> dict[str, object]:
    """The diagnostics of reasoning capacity on chapter 7's ladder: how many rows across the models and along
    training, and their verdicts (``ladder_n``, ``ladder_verdicts``, ``ladder_along_n``, ``ladder_along_verdicts``),
    and the ladder's findings in words (``ladder_across``, ... of ``controlled_test_tables.ladder_findings`` on
    ``measured``, the book's ladder measurements; each "not measured" where there are none)."""
    from .controlled_test_tables import ladder_findings

    diagnostics = table[table["claim"] == "reasoning_diagnostics"]
    across = diagnostics[diagnostics["run"] == "ladder"]
    along = diagnostics[diagnostics["run"] == "ladder, along training"]
    findings = ladder_findings(measured) if measured is not None else dict.fromkeys(FINDINGS, "not measured")
    return {
        "ladder_n": int(len(across)),
        "ladder_verdicts": verdict_words(across),
        "ladder_along_n": int(len(along)),
        "ladder_along_verdicts": verdict_words(along),
    } | {f"ladder_{key}": text for key, text in findings.items()}
