"""What a run's verdict rows are evidence of: each row weighed against the random twin's row, the judge's power and
the kind of model it was measured on (``weigh``), after ``study.rows.claim_rows`` has judged it.

Five rules of ``analysis.verdict`` and ``analysis.bimodality_power``, applied to every run's rows by ``study.verdict_table.runs_table`` and
``latentbook report``:

1. the power of the jump rows (``critical_depth``, ``omega_jump``, ``omega_jump_cleaned``): a "does not hold" that
   only failed to find the jump stands where the judge's power for the paper's jump at the run's own noise
   reaches ``MIN_POWER`` and its own interval excludes even the judge's bar, else it is "inconclusive" (``verdict.jump_power``,
   ``verdict.largest_jump``, ``verdict.judge_power``);
2. the power of the bimodality row: a "does not hold" that found no bimodal depth stands where the judge would have
   seen the paper's two bands at the run's own sample size and spread, else it is "inconclusive"
   (``bimodality_power.run_power``, ``bimodality_power.judge_power``);
3. a trained model's "holds" that its random twin holds too is "uninformative" (``verdict.uninformative``);
4. the scope of an encoder's sized claims is ``OTHER_KIND`` (the paper analysed decoders);
5. a "holds" of an m_z row (``verdict.TAIL_BLIND_CLAIMS``) says in its reason what it is evidence of: heavier tails,
   which heavy-tailed coordinates with no object in them make too (``verdict.TAIL_NOTE``).

The planted calibration (``study.planted_calibration``) counts the judges' "holds" before these rules; the rules
never turn another verdict into "holds", so what it measures still bounds the table's false holds.
Introduced in: chapter 8.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from ..analysis import bimodality_power
from ..analysis.verdict import (
    MIN_TRANSITION,
    OTHER_KIND,
    TAIL_BLIND_CLAIMS,
    TAIL_NOTE,
    Row,
    min_jump,
    paper_jump,
    scope_of,
    uninformative,
    weigh_jump,
)
from .measure import Measurements

# model types (a capture's ``model_family``) that encode a whole text at once: no causal mask, no next token
ENCODER_FAMILIES = frozenset({"bert", "roberta", "xlm-roberta", "distilbert", "electra", "mpnet", "albert"})
JUMP_CLAIMS = ("critical_depth", "omega_jump", "omega_jump_cleaned")


def is_encoder(model_name: str, family: str | None = None) -> bool:
    """Whether ``model_name`` (a zoo name, its ``random:`` twin, or a capture whose ``family`` is known) is an
    encoder."""
    from ..models.zoo import EMBEDDED

    entry = EMBEDDED.get(model_name.removeprefix("random:"))
    if entry is not None:
        return entry.kind == "encoder"
    return (family or "").lower() in ENCODER_FAMILIES


def _fits(m: Measurements, claim: str):
    return m.standardised_clean if claim == "omega_jump_cleaned" else m.standardised


def with_power(row: Row, m: Measurements, twin: Measurements | None) -> Row:
    """``row`` (a jump row of ``m``) with ``verdict.judge_power`` applied: its power for the paper's jump at width
    ``m.d_model``, against ``judge_jump``'s bar (``MIN_TRANSITION`` for the critical depth, ``min_jump(d)`` else)
    and the twin's jump interval."""
    if row.claim not in JUMP_CLAIMS:
        return row
    bar = MIN_TRANSITION if row.claim == "critical_depth" else min_jump(m.d_model)
    effect = paper_jump(m.d_model)
    twin_fit = _fits(twin, row.claim) if twin is not None else None
    verdict, reason = weigh_jump((row.verdict, row.reason), _fits(m, row.claim), twin_fit, effect, bar)
    return replace(row, verdict=verdict, reason=reason)


def with_bimodality_power(row: Row, m: Measurements, spreads: Sequence[float] | None) -> Row:
    """``row`` (the bimodality row of ``m``) with ``bimodality_power.judge_power`` applied at the run's
    ``spreads`` (``bimodality_power.band_spreads`` of its capture; None: unknown, so "does not hold" cannot
    stand)."""
    if row.claim != "bimodality":
        return row
    power = bimodality_power.run_power(m.bimodal, spreads, m.d_model) if spreads is not None else float("nan")
    verdict, reason = bimodality_power.judge_power((row.verdict, row.reason), power)
    return replace(row, verdict=verdict, reason=reason)


def weigh(
    rows: Iterable[Row],
    m: Measurements,
    twin: Measurements | None = None,
    twin_rows: Iterable[Row] | None = None,
    encoder: bool = False,
    spreads: Sequence[float] | None = None,
) -> list[Row]:
    """``rows`` of the run ``m`` (``claim_rows``) with the five rules of this module: the jump rows' power (against
    ``twin``'s jump), the bimodality row's power (at the run's ``spreads``, ``bimodality_power.band_spreads``),
    "uninformative" where ``twin_rows`` (the twin's rows, judged the same way) hold the same claim (only for a
    trained run: a null has no twin), the encoder's scope and what an m_z row's "holds" is evidence of."""
    verdict_of: Mapping[str, str] = {r.claim: r.verdict for r in twin_rows or ()}
    weighed = []
    for row in rows:
        row = with_bimodality_power(with_power(row, m, twin), m, spreads)
        if not row.run.startswith("null"):
            verdict, reason = uninformative((row.verdict, row.reason), verdict_of.get(row.claim))
            row = replace(row, verdict=verdict, reason=reason)
        if encoder and scope_of(row.claim, row.parameters, encoder=True) == OTHER_KIND:
            row = replace(row, scope=OTHER_KIND)
        if row.claim in TAIL_BLIND_CLAIMS and row.verdict == "holds":
            row = replace(row, reason=f"{row.reason}; {TAIL_NOTE}")
        weighed.append(row)
    return weighed
