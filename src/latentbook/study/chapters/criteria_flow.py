"""The flow families of the end-to-end calibration (``models.planted_flow``: transverse contraction, attention
sharpening and a sink, each with its artefacts) as the criteria appendix quotes them.

Usage: ``glue_frame("vd", flow_glue(record, before_steady))`` with ``record`` the current end-to-end record and
``before_steady`` the stage kept from before the steady-contraction condition
(``record_history.load_stage(results_dir, "flow before steady")``).
Introduced in: chapter 8's appendix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import planted_calibration as pc
from .criteria_planted import cells

if TYPE_CHECKING:
    import pandas as pd

    from ..planted_calibration import PlantedTable

CONTRACTING = "transverse contraction from 0.42"
SHARPENING = "attention sharpens from 0.42"
CODE_ALONE = "a class code, no contraction"
UNIFORM = "every direction shrinks from 0.42"
NOTHING = "nothing planted, flow measured"
SINK = "the sink draws the attention from 0.42"
NO_CONTRACTION = (CODE_ALONE, UNIFORM)
CONTRACTION, COOLING = "transverse_contraction", "attention_cooling"


def contraction_false_holds(record: PlantedTable) -> tuple[pd.DataFrame, float]:
    """The contraction row's "holds" on the families without a contraction (``NO_CONTRACTION``), and their worst
    Wilson upper bound, in one record."""
    r = record.records
    kind = r["family"].isin(NO_CONTRACTION) & (r["claim"] == CONTRACTION)
    upper = cells(record, "holds_ci_high")
    return r[kind & (r["verdict"] == "holds")], max(float(upper[f, CONTRACTION]) for f in NO_CONTRACTION)


def flow_glue(record: PlantedTable, before_steady: PlantedTable) -> dict[str, object]:
    """The planted flows' settings (``flow_k``, ``flow_width``, the gains, sharpenings and sink logits); the rates of
    "holds" of the contraction and cooling rows on each flow family and the median value read back; whether the
    sink family meets its target (``flow_sink_meets``) and its Wilson upper bound; the contraction row's false holds
    now (``flow_fooled``, ``flow_fooled_upper``) and in ``before_steady`` (``flow_before_*``: holds, cases, median q,
    upper bound)."""
    from ...analysis.planted_statistics import PLANTED_Q
    from ...models import planted_flow

    rates = cells(record)

    def median_value(family: str, claim: str) -> float:
        return float(pc.family_records(record.records, family, claim)["value"].median())

    fooled, fooled_upper = contraction_false_holds(record)
    old_fooled, old_upper = contraction_false_holds(before_steady)
    return {
        "flow_k": planted_flow.FlowSpec.k,
        "flow_width": planted_flow.REFERENCE_WIDTH,
        "flow_q_low": PLANTED_Q[0],
        "flow_q_high": PLANTED_Q[1],
        "flow_found": float(rates[CONTRACTING, CONTRACTION]),
        "flow_q_read": median_value(CONTRACTING, CONTRACTION),
        "flow_code": float(rates[CODE_ALONE, CONTRACTION]),
        "flow_uniform": float(rates[UNIFORM, CONTRACTION]),
        "flow_twin": float(rates["the twin contracts too", CONTRACTION]),
        "flow_sharp_low": pc.SHARPENING[0],
        "flow_sharp_high": pc.SHARPENING[1],
        "flow_sharp_found": float(rates[SHARPENING, COOLING]),
        "flow_sharp_read": median_value(SHARPENING, COOLING),
        "flow_sharp_twin": float(rates["the twin sharpens too", COOLING]),
        "flow_contraction_cooling": float(rates[CONTRACTING, COOLING]),
        "flow_none": float(rates[NOTHING, CONTRACTION]),
        "flow_none_cooling": float(rates[NOTHING, COOLING]),
        "flow_sink_low": pc.SINK[0],
        "flow_sink_high": pc.SINK[1],
        "flow_sink": float(rates[SINK, COOLING]),
        "flow_sink_upper": float(cells(record, "holds_ci_high")[SINK, COOLING]),
        "flow_sink_meets": bool(cells(record, "meets")[SINK, COOLING]),
        "flow_fooled": len(fooled),
        "flow_fooled_upper": fooled_upper,
        "flow_before_date": str(before_steady.provenance["date"])[:10],
        "flow_before_fooled": len(old_fooled),
        "flow_before_cases": len(set(old_fooled["case"])),
        "flow_before_q": float(old_fooled["value"].median()),
        "flow_before_upper": old_upper,
    }
