"""End-to-end calibration of the verdict rows: planted models through the book's capture -> measure -> rows.

Each case builds real Llama models (``models.planted``), captures them with ``lb.capture`` at ``CAPTURE``
settings, measures them with ``study.measure.measure`` and judges them with ``study.rows.claim_rows`` against a
random twin of the same shape, exactly as the verdict table judges a model and its twin. A family plants the
paper's phenomenon (the rows in ``present`` must say "holds" in at least ``MIN_FOUND`` of its cases) or an
artefact that must not pass for it (the rows in ``absent`` may say "holds" in at most ``MAX_FALSE_HOLDS``, judged by
the Wilson 95 % upper bound: 0 false holds in 74 cases reach 5 %).

Case ``i`` draws the shape (12, 16 or 24 layers; width 128, 256 or 384) and the nuisances real models have (a
massive coordinate on the first token, a massive coordinate in every token, a residual norm growing with depth)
from ``(seed, i)`` alone, so every family meets the same shapes and one twin per case serves them all.

``calibrate(n_cases)`` returns the confusion table; ``tools/calibrate_planted.py`` keeps it in
``results/calibration/planted_models.json`` with its provenance, which chapter 8 reads (``load_record``).
Introduced in: chapter 8 ("How the verdicts were calibrated", end to end).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .._code_hash import digest, module_hashes
from ..analysis.calibration import MAX_FALSE_HOLDS, MIN_FOUND
from ..analysis.planted_statistics import PLANTED_Q
from ..analysis.verdict import VERDICTS, wilson_interval
from ..errors import InvalidInputError
from ..models import planted, planted_flow
from .cases import in_case_order, run_cases

if TYPE_CHECKING:
    import pandas as pd

    from .measure import Measurements

CAPTURE = dict(n_prompts=64, max_length=64, batch_size=16)  # each planted model's capture
LAYERS = (12, 16, 24)
WIDTHS = (128, 256, 384)
OMEGA_ROWS = ("critical_depth", "omega_jump", "omega_jump_cleaned")
SPECTRAL_ROWS = ("spectral_concentration", "effective_rank")
CLEAN_SPECTRAL_ROWS = ("spectral_concentration_cleaned", "effective_rank_cleaned")
ARTEFACT_ROWS = OMEGA_ROWS + CLEAN_SPECTRAL_ROWS + SPECTRAL_ROWS
LIQUID_ROWS = ("stays_liquid", "stays_liquid_cleaned")
LEARNED_ROW = "learned_basis_jump"  # measured with learned_basis.book_profile (measure(learned=True))
# an atom code's active atoms per word, of planted.PlantSpec.n_atoms (32): few, as 32 sources can find them
ATOM_K = 3
# measured with attention statistics and Jacobian-vector gains
FLOW_ROWS = ("transverse_contraction", "attention_cooling")
SHARPENING = (6.5, 8.0)  # planted_flow "sharpening" strengths: the entropy falls by a third to three quarters
# planted_flow "sink" strengths in nats: the sink draws 70-95 % of each row, as in trained models
SINK = (4.0, 7.0)
# the share of the coordinates each class-code prototype touches (8 at d = 128, as before): chosen after a code of
# 8 coordinates at every width, a smaller share of a wider stream, left the correlation matrix's participation
# ratio at 0.88 of its value on average at d = 384, a fall of 12 % beside the row's bar of 10 % (the statistic-level
# families plant falls of 30-50 %); the only setting tried (chapter 8)
CODE_SHARE = 1 / 16
REDRAWN = "a sparse code redrawn at every token"
ATOM_CODE = "atom code (3 of 32 directions), step in 0.33-0.51"
FILE = Path("calibration") / "planted_models.json"
# the run before the cleaned spectral rows removed each coordinate's position profile (chapter 8 compares them)
BEFORE_POSITION_PROFILE = Path("calibration") / "planted_models_before_position_profile.json"
# the class-code families of the run before judge_concentration asked for a fall beyond the twin's by its factor
BEFORE_TWIN_MARGIN = Path("calibration") / "planted_models_before_twin_margin.json"
# the spectral families of the run before the raw spectral rows held only beside their cleaned rows, the later
# layers stopped reading rogue coordinates and the code twins wrote as much as their models
BEFORE_RAW_BESIDE_CLEANED = Path("calibration") / "planted_models_before_raw_beside_cleaned.json"
# the class-code families of the run before each prototype touched CODE_SHARE of the coordinates (8 at every width)
BEFORE_CODE_SHARE = Path("calibration") / "planted_models_before_code_share.json"


@dataclass(frozen=True)
class Family:
    """Planted models of one kind: ``plant(base, rng)`` makes the model's spec from the case's base spec,
    ``twin(base, rng)`` the twin's (None: the case's shared random twin); ``present`` rows must hold,
    ``absent`` rows must not."""

    name: str
    plant: Callable[[planted.PlantSpec, np.random.Generator], planted.PlantSpec | planted_flow.FlowSpec]
    present: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()
    twin: (
        Callable[[planted.PlantSpec, np.random.Generator], planted.PlantSpec | planted_flow.FlowSpec] | None
    ) = None
    # the random stream the plant draws from (default: the family's name): families sharing one plant the same
    # model, which a case then measures once
    draws: str = ""

    @property
    def flow(self) -> bool:
        """Whether the family judges a flow row (``FLOW_ROWS``): its models are measured with attention and gains."""
        return any(claim in FLOW_ROWS for claim in self.present + self.absent)

    @property
    def learned(self) -> bool:
        """Whether the family judges ``LEARNED_ROW``: its models and the twin are read in a learned basis."""
        return LEARNED_ROW in self.present + self.absent

    @property
    def gains(self) -> bool:
        """Whether the family judges ``transverse_contraction``: its models' Jacobian-vector gains are measured."""
        return "transverse_contraction" in self.present + self.absent


def _code(window: tuple[float, float], plant: str = "sparse_code") -> Callable:
    """A code written at a depth ``l*`` whose step, from depth ``l* - 1`` to ``l*``, lies inside ``window``."""

    def make(base: planted.PlantSpec, rng: np.random.Generator) -> planted.PlantSpec:
        n = base.n_layers
        depths = [k for k in range(1, n + 1) if window[0] <= (k - 1) / n and k / n <= window[1]]
        return replace(
            base, plant=plant, gamma=int(rng.choice(depths)) / n, strength=float(rng.uniform(2.0, 4.0))
        )

    return make


def _artefact(plant: str, strength: tuple[float, float]) -> Callable:
    def make(base: planted.PlantSpec, rng: np.random.Generator) -> planted.PlantSpec:
        return replace(
            base, plant=plant, gamma=float(rng.uniform(0.38, 0.46)), strength=float(rng.uniform(*strength))
        )

    return make


def _atom_code(base: planted.PlantSpec, rng: np.random.Generator) -> planted.PlantSpec:
    """An atom code (``planted`` ``atom_code``: each word writes ``ATOM_K`` of 32 random orthonormal directions of
    the stream, random signs) written at a depth whose step lies in 0.33-0.51, as the sparse-code family writes its
    code: a sparse code off the coordinate axes, as features in superposition lie."""
    return replace(_code((0.33, 0.51), "atom_code")(base, rng), k=ATOM_K)


def _solid_code(base: planted.PlantSpec, rng: np.random.Generator) -> planted.PlantSpec:
    """One coordinate per token (k = 1), written 24-48 times the residual's median norm from 0.38-0.46 on:
    token vectors near one-hot, whose m crosses the solid level (``verdict.solid_threshold``) at every width."""
    return replace(
        base,
        plant="sparse_code",
        k=1,
        gamma=float(rng.uniform(0.38, 0.46)),
        strength=float(rng.uniform(24, 48)),
    )


def _class_code(window: tuple[float, float]) -> Callable:
    """A class code (``planted`` ``class_code``: 3-8 sparse prototypes, each word writing its class's) written at a
    depth whose step lies inside ``window``: the mixture the paper's spectral claims describe. Each prototype
    touches ``CODE_SHARE`` of the coordinates (8 at d = 128, 24 at 384): each of its coordinates carries the same
    multiple of the residual's per-coordinate scale at every width, and the participation ratio falls somewhat
    more at the wider ones (chapter 8 gives the mean ratio per width)."""
    code = _code(window, "class_code")

    def make(base: planted.PlantSpec, rng: np.random.Generator) -> planted.PlantSpec:
        return replace(code(base, rng), n_classes=int(rng.integers(3, 9)), k=int(base.d * CODE_SHARE))

    return make


def _outliers(base: planted.PlantSpec, rng: np.random.Generator) -> planted.PlantSpec:
    """Outlier features (``planted`` ``outlier_features``) from 0.38-0.46 on, each of their coordinates 20-60
    times the residual's per-coordinate scale (median norm / sqrt(d)) where its words stand, as LLM.int8 found."""
    size = float(rng.uniform(20.0, 60.0))
    return replace(
        base,
        plant="outlier_features",
        gamma=float(rng.uniform(0.38, 0.46)),
        strength=size * float(np.sqrt(planted.N_OUTLIERS / base.d)),
    )


def _twin_writing_as_much(spec: planted.PlantSpec, rng: np.random.Generator) -> planted.PlantSpec:
    """The random twin with the model's write sizes (its ``growth`` and its norm growth kept, the nuisances not):
    the null that keeps what norm growth is made of, later layers whose random writes outweigh the rest."""
    return replace(spec, seed=spec.seed + 10_000, sink=False, massive=False)


def _twin_with_code(base: planted.PlantSpec, rng: np.random.Generator) -> planted.PlantSpec:
    """The random twin writing a code of the model's kind (its own: drawn from its seed) where the model writes
    it, as strong and with as many classes, and writing as much as the model after it (its ``growth`` kept: the
    later layers of a model whose norm grows spread a code into every coordinate, which a twin writing less does
    not; that difference is the norm-growth families' to judge, not the same change in the twin)."""
    return replace(
        planted.twin_spec(base),
        plant=base.plant,
        gamma=base.gamma,
        strength=base.strength,
        growth=base.growth,
    )


def _contraction(flow: str) -> Callable:
    """A class code (3-8 prototypes of ``PlantSpec.k`` coordinates at every width, not ``_class_code``'s share: the
    contraction row reads gains, not the code's spectrum) written at 0.38-0.46 and, in every block after it, the
    ``planted_flow`` contraction ``flow`` (``"none"``: the code alone) by ``c = 1 - q``, ``q`` a paper-size block
    gain (``planted_statistics.PLANTED_Q``)."""

    def make(base: planted.PlantSpec, rng: np.random.Generator) -> planted_flow.FlowSpec:
        code = replace(
            base,
            plant="class_code",
            gamma=float(rng.uniform(0.38, 0.46)),
            strength=float(rng.uniform(2.0, 4.0)),
            n_classes=int(rng.integers(3, 9)),
        )
        return planted_flow.FlowSpec(code, flow, 1.0 - float(rng.uniform(*PLANTED_Q)))

    return make


def _sharpening(base: planted.PlantSpec, rng: np.random.Generator) -> planted_flow.FlowSpec:
    """Attention sharpening (``planted_flow`` "sharpening", strength in ``SHARPENING``) from 0.38-0.46 on."""
    start = replace(base, gamma=float(rng.uniform(0.38, 0.46)))
    return planted_flow.FlowSpec(start, "sharpening", float(rng.uniform(*SHARPENING)))


def _sink(base: planted.PlantSpec, rng: np.random.Generator) -> planted_flow.FlowSpec:
    """An attention sink (``planted_flow`` "sink", strength in ``SINK``) drawn from 0.38-0.46 on, in a model whose
    first token carries the sink coordinate (``sink`` switched on whatever the case drew)."""
    start = replace(base, sink=True, gamma=float(rng.uniform(0.38, 0.46)))
    return planted_flow.FlowSpec(start, "sink", float(rng.uniform(*SINK)))


def _twin_with_flow(spec: planted_flow.FlowSpec, rng: np.random.Generator) -> planted_flow.FlowSpec:
    return planted_flow.twin(spec, same_flow=True)


def families() -> list[Family]:
    """The planted families: the phenomenon where the paper puts it and elsewhere (token-specific codes for the
    Omega rows, class codes for the spectral rows too), and its artefacts (norm growth twice: against the random
    twin, and against a twin whose layers write as much); for the small-model claim (``LIQUID_ROWS``: m stays below the solid level), models that stay below it (present) and
    one whose tokens condense far enough to cross it (absent); for the Omega rows, coordinates that turn heavy-tailed
    with no object in them, outlier features and a sparse code with no identity (issue 54)."""
    return [
        Family("sparse code, step in 0.33-0.51", _code((0.33, 0.51)), present=OMEGA_ROWS),
        Family(
            "class code, step in 0.33-0.51",
            _class_code((0.33, 0.51)),
            present=OMEGA_ROWS + CLEAN_SPECTRAL_ROWS + SPECTRAL_ROWS,
        ),
        Family(
            "sparse code, step in 0.66-0.84",
            _code((0.66, 0.84)),
            present=("omega_jump", "omega_jump_cleaned"),
            absent=("critical_depth",),
        ),
        Family(
            "massive coordinate at 0.42",
            _artefact("massive", (4.0, 20.0)),
            present=("stays_liquid_cleaned",),
            absent=ARTEFACT_ROWS,
        ),
        Family("rogue coordinates at 0.42", _artefact("rogue", (2.0, 4.0)), absent=ARTEFACT_ROWS),
        Family(
            "norm growth from 0.42",
            _artefact("norm_growth", (1.0, 1.0)),
            present=LIQUID_ROWS,
            absent=ARTEFACT_ROWS,
        ),
        Family(
            "norm growth, twin writing as much",
            _artefact("norm_growth", (1.0, 1.0)),
            absent=ARTEFACT_ROWS,
            twin=_twin_writing_as_much,
        ),
        Family("a change at the sink only", _artefact("sink_only", (4.0, 20.0)), absent=OMEGA_ROWS),
        Family("sparse code, rotated basis", _code((0.33, 0.51), "rotated_code"), absent=OMEGA_ROWS),
        Family(
            "the twin has the code too",
            _code((0.33, 0.51)),
            absent=OMEGA_ROWS,
            twin=_twin_with_code,
        ),
        Family(
            "the twin has the class code too",
            _class_code((0.33, 0.51)),
            absent=ARTEFACT_ROWS,
            twin=_twin_with_code,
            draws="class code, step in 0.33-0.51",
        ),
        Family("nothing planted", _artefact("none", (1.0, 1.0)), present=LIQUID_ROWS, absent=ARTEFACT_ROWS),
        Family("a one-hot code above the solid level", _solid_code, absent=LIQUID_ROWS),
        Family(
            "transverse contraction from 0.42",
            _contraction("transverse"),
            present=("transverse_contraction",),
            absent=("attention_cooling",),
            draws="contraction",
        ),
        Family(
            "a class code, no contraction",
            _contraction("none"),
            absent=("transverse_contraction",),
            draws="contraction",
        ),
        Family(
            "every direction shrinks from 0.42",
            _contraction("uniform"),
            absent=("transverse_contraction",),
            draws="contraction",
        ),
        Family(
            "the twin contracts too",
            _contraction("transverse"),
            absent=("transverse_contraction",),
            twin=_twin_with_flow,
            draws="contraction",
        ),
        Family(
            "attention sharpens from 0.42",
            _sharpening,
            present=("attention_cooling",),
            draws="sharpening",
        ),
        Family(
            "the twin sharpens too",
            _sharpening,
            absent=("attention_cooling",),
            twin=_twin_with_flow,
            draws="sharpening",
        ),
        Family("the sink draws the attention from 0.42", _sink, absent=("attention_cooling",)),
        Family("nothing planted, flow measured", _artefact("none", (1.0, 1.0)), absent=FLOW_ROWS),
        Family(
            "Laplace coordinates from 0.42",
            _artefact("laplace", (2.0, 4.0)),
            absent=OMEGA_ROWS + (LEARNED_ROW,),
        ),
        Family(
            "Student-t coordinates (3 df) from 0.42",
            _artefact("t3", (2.0, 4.0)),
            absent=OMEGA_ROWS + (LEARNED_ROW,),
        ),
        Family(
            "a gated product (SwiGLU) from 0.42",
            _artefact("gated", (2.0, 4.0)),
            absent=OMEGA_ROWS + (LEARNED_ROW,),
        ),
        Family("outlier features on 25-40 % of tokens", _outliers, absent=OMEGA_ROWS + (LEARNED_ROW,)),
        Family(REDRAWN, _artefact("redrawn_code", (2.0, 4.0)), absent=OMEGA_ROWS + (LEARNED_ROW,)),
        Family(ATOM_CODE, _atom_code, present=(LEARNED_ROW,), absent=OMEGA_ROWS),
        Family(
            "the twin has the atom code too",
            _atom_code,
            absent=(LEARNED_ROW,),
            twin=_twin_with_code,
            draws=ATOM_CODE,
        ),
        Family(
            "nothing planted, learned basis",
            _artefact("none", (1.0, 1.0)),
            absent=(LEARNED_ROW,),
            draws="nothing planted",
        ),
        Family(
            "norm growth from 0.42, learned basis",
            _artefact("norm_growth", (1.0, 1.0)),
            absent=(LEARNED_ROW,),
            draws="norm growth from 0.42",
        ),
        Family(
            "massive coordinate at 0.42, learned basis",
            _artefact("massive", (4.0, 20.0)),
            absent=(LEARNED_ROW,),
            draws="massive coordinate at 0.42",
        ),
    ]


def base_spec(case: int, seed: int = 0) -> planted.PlantSpec:
    """The shape and nuisances of case ``case``: the same for every family."""
    rng = np.random.default_rng([seed, case])
    return planted.PlantSpec(
        plant="none",
        n_layers=int(rng.choice(LAYERS)),
        d=int(rng.choice(WIDTHS)),
        seed=int(1000 * seed + case),
        sink=bool(rng.random() < 0.5),
        massive=bool(rng.random() < 0.5),
        growth=float(rng.choice([1.0, 1.08])),
    )


def measure_spec(
    spec: planted.PlantSpec | planted_flow.FlowSpec,
    spectra: bool = True,
    flow: bool = False,
    gains: bool = True,
    learned: bool = False,
) -> Measurements:
    """Build, capture (``CAPTURE``) and measure one planted model, as the verdict measures a run (the spike
    counts left out: no family here judges them; ``spectra=False``: the Omega rows only; ``flow``: the flow rows
    too, from attention statistics in the capture and, with ``gains``, the Jacobian-vector gains measured as the
    book measures a model's, ``cache.BOOK_GAIN_SETTINGS`` on its ``BOOK_GAIN_PROMPTS`` prompts; ``learned``: Omega
    in a learned basis too, ``learned_basis.book_profile``)."""
    from ..capturing.cache import BOOK_GAIN_PROMPTS, BOOK_GAIN_SETTINGS
    from ..capturing.capture import capture
    from ..capturing.jacobian import transverse_gains
    from ..prompts import load
    from .measure import measure

    model = planted_flow.build(spec) if isinstance(spec, planted_flow.FlowSpec) else planted.build(spec)
    texts = load("general", limit=CAPTURE["n_prompts"])
    options = dict(attention=True) if flow else {}
    cap = capture(
        model,
        texts,
        max_length=CAPTURE["max_length"],
        batch_size=CAPTURE["batch_size"],
        progress=False,
        **options,
    )
    measured_gains = None
    if flow and gains:
        gain_texts = load("general", limit=BOOK_GAIN_PROMPTS)
        measured_gains = transverse_gains(model, gain_texts, **BOOK_GAIN_SETTINGS)
    return measure(cap, spec.name, spectra=spectra, spikes=False, gains=measured_gains, learned=learned)


class MeasuredOnce:
    """``measure(spec, spectra, flow, gains, learned)`` of each model once per case: a measurement with the gains or
    the learned basis serves a request that does not need them, and each is kept under the settings it was made
    with."""

    def __init__(self, measure: Callable[..., Measurements]):
        self.measure, self.measured = measure, {}

    def __call__(self, spec, spectra: bool, flow: bool, gains: bool, learned: bool) -> Measurements:
        for g in dict.fromkeys((True, gains)):
            for w in dict.fromkeys((True, learned)):
                if (spec, spectra, flow, g, w) in self.measured:
                    return self.measured[spec, spectra, flow, g, w]
        made = self.measure(spec, spectra, flow, gains, learned)
        self.measured[spec, spectra, flow, gains, learned] = made
        return made


def run_case(case: int, seed: int = 0, names: tuple[str, ...] | None = None) -> list[dict]:
    """Every family's verdicts on case ``case``: one record per family and judged row."""
    from .rows import claim_rows

    base = base_spec(case, seed)
    once = MeasuredOnce(measure_spec)

    records = []
    for family in families():
        if names is not None and family.name not in names:
            continue
        rng = np.random.default_rng([seed, case, zlib.crc32((family.draws or family.name).encode())])
        spec = family.plant(base, rng)
        spectra = any(
            claim in SPECTRAL_ROWS + CLEAN_SPECTRAL_ROWS for claim in family.present + family.absent
        )
        if family.twin is None:
            # the case's shared random twin (measured with spectra, as the verdict table measures twins)
            twin = once(planted.twin_spec(base), not family.flow, family.flow, family.gains, family.learned)
        else:
            twin = once(family.twin(spec, rng), spectra, family.flow, family.gains, family.learned)
        model = once(spec, spectra, family.flow, family.gains, family.learned)
        rows = {row.claim: row for row in claim_rows(model, twin, run="planted")}
        for claim in family.present + family.absent:
            records.append(
                {
                    "family": family.name,
                    "claim": claim,
                    "planted": "present" if claim in family.present else "absent",
                    "case": case,
                    "model": spec.name,
                    "verdict": rows[claim].verdict,
                    "value": rows[claim].value,
                }
            )
    return records


# The families a row cannot tell from the phenomenon by what it reads (issue 54), with why: their cells are run and
# shown, but they are the row's scope (``analysis.verdict.CLAIMS`` says so), not a target it could meet. The m_z rows
# read how heavy-tailed each token's coordinates are (``verdict.TAIL_BLIND_CLAIMS``, whose "holds" says so in its
# reason); the learned-basis row is the one calibrated to tell a code from heavy tails, and has them as targets.
HEAVY_TAILED = (
    "Laplace coordinates from 0.42",
    "Student-t coordinates (3 df) from 0.42",
    "a gated product (SwiGLU) from 0.42",
    "outlier features on 25-40 % of tokens",
)
UNSEPARABLE: dict[str, dict[str, str]] = {
    REDRAWN: {
        row: "it reads how each token's coordinates are spread, which a code redrawn at every token keeps, "
        "not whether a word keeps its code"
        for row in OMEGA_ROWS
    },
    **{
        family: {
            row: "it reads how heavy-tailed each token's coordinates are, which coordinates turning heavy-tailed "
            "with no object in them raise too"
            for row in OMEGA_ROWS
        }
        for family in HEAVY_TAILED
    },
}


def unseparable(family: str, claim: str) -> str:
    """Why ``claim`` cannot tell ``family`` from the phenomenon (``UNSEPARABLE``), or "" where it should."""
    return UNSEPARABLE.get(family, {}).get(claim, "")


def confusion(records: list[dict]) -> pd.DataFrame:
    """Per family and row: cases, the rate of each verdict, the Wilson 95 % interval of "holds" and the target
    (``limit``: the row cannot tell the family from the phenomenon, ``UNSEPARABLE``; such a cell has no target)."""
    import pandas as pd

    frame = pd.DataFrame(records)
    rows = []
    for (family, claim), group in frame.groupby(["family", "claim"], sort=False):
        n = len(group)
        rates = {word: float((group["verdict"] == word).mean()) for word in VERDICTS}
        low, high = wilson_interval(rates["holds"], n)
        present = group["planted"].iloc[0] == "present"
        limit = bool(unseparable(family, claim))
        rows.append(
            {
                "family": family,
                "claim": claim,
                "planted": "present" if present else "absent",
                "n": n,
                **rates,
                "holds_ci_low": low,
                "holds_ci_high": high,
                "target": "none: the row's scope"
                if limit
                else f">= {MIN_FOUND:.0%} holds"
                if present
                else f"Wilson upper <= {MAX_FALSE_HOLDS:.0%}",
                "meets": bool(rates["holds"] >= MIN_FOUND) if present else bool(high <= MAX_FALSE_HOLDS),
                "limit": limit,
            }
        )
    return pd.DataFrame(rows)


def claims_meeting_targets(table: pd.DataFrame) -> tuple[list[str], dict[str, tuple[str, float]]]:
    """The rows (claims) that meet their target on every family of ``table`` (``confusion``) but those of their
    scope (``limit``), in the verdict's order, and for each other row its worst family and that family's rate of
    "holds"."""
    from ..analysis.verdict import CLAIMS

    met, missed = [], {}
    targets = table[~table["limit"]] if "limit" in table else table
    for claim in [c for c in CLAIMS if c in set(targets["claim"])]:
        cells = targets[targets["claim"] == claim]
        failing = cells[~cells["meets"]]
        if failing.empty:
            met.append(claim)
            continue
        # the worst miss: the absent family that holds most often, else the present one found least often
        absent = failing[failing["planted"] == "absent"]
        worst = (
            absent.loc[absent["holds"].idxmax()]
            if not absent.empty
            else failing.loc[failing["holds"].idxmin()]
        )
        missed[claim] = (str(worst["family"]), float(worst["holds"]))
    return met, missed


def conclusion(table: pd.DataFrame) -> str:
    """One sentence of what the end-to-end table shows, every number read from it."""
    met, missed = claims_meeting_targets(table)
    n = int(table["n"].min())
    text = (
        f"{', '.join(met) or 'no row'} meet both targets on every family ({n} cases or more each: at least "
        f"{MIN_FOUND:.0%} found where planted, a Wilson upper bound of at most {MAX_FALSE_HOLDS:.0%} of false holds)"
    )
    if missed:
        text += "; " + "; ".join(
            f"{claim} does not ({family}: holds in {rate:.0%} of cases)"
            for claim, (family, rate) in missed.items()
        )
    limits = table[table["limit"]] if "limit" in table else table.iloc[:0]
    for family, group in limits.groupby("family", sort=False):
        text += (
            f"; {', '.join(group['claim'])} cannot tell {family} from the phenomenon (its scope, not a target: "
            f"holds in {group['holds'].min():.0%}-{group['holds'].max():.0%} of cases)"
        )
    return text


def calibrate(n_cases: int, seed: int = 0, jobs: int = 1, names: tuple[str, ...] | None = None) -> list[dict]:
    """The records of ``n_cases`` cases of every family (``run_case``), over ``jobs`` processes."""
    if not isinstance(n_cases, (int, np.integer)) or n_cases < 1:
        raise InvalidInputError(f"n_cases must be a positive integer, got {n_cases!r}.")
    return in_case_order(iter_cases(range(n_cases), seed, jobs, names))


def iter_cases(
    cases: Iterable[int], seed: int = 0, jobs: int = 1, names: tuple[str, ...] | None = None
) -> Iterator[tuple[int, list[dict]]]:
    """``(case, run_case(case, seed, names))`` as each case finishes (``cases.run_cases``), one thread per
    worker process."""
    return run_cases(partial(run_case, names=names), cases, seed, jobs, initializer=_one_thread)


def _one_thread() -> None:
    import torch

    torch.set_num_threads(1)


def source_hash() -> str:
    """``_code_hash.digest`` of ``code_hashes()``: a record in ``results/calibration/`` is current while this matches
    the one it keeps."""
    return digest(code_hashes())


def code_hashes() -> dict[str, str]:
    """The hash of each module this module imports, itself included (``_code_hash.module_hashes``): what a record
    of it keeps of the code that made it, so that a change is named module by module."""
    return module_hashes(__name__)


@dataclass(frozen=True)
class PlantedTable:
    """The end-to-end confusion table, its provenance, ``current``: the code is unchanged since, and the records
    the table counts (one per model and row)."""

    table: pd.DataFrame
    provenance: dict
    current: bool
    records: pd.DataFrame | None = None


def load_record(results_dir: str | Path, file: Path = FILE) -> PlantedTable:
    """``results_dir / calibration / planted_models.json`` (written by ``tools/calibrate_planted.py``), or another
    ``file`` of that folder (an earlier run kept beside it, e.g. ``BEFORE_POSITION_PROFILE``)."""
    import pandas as pd

    path = Path(results_dir) / file
    if not path.is_file():
        raise InvalidInputError(f"{path} does not exist: run `python tools/calibrate_planted.py` to make it.")
    record = json.loads(path.read_text(encoding="utf-8"))
    return PlantedTable(
        table=confusion(record["records"]) if record["records"] else pd.DataFrame(),
        provenance=record["provenance"],
        current=record["provenance"].get("source_hash") == source_hash(),
        records=pd.DataFrame(record["records"]),
    )


def holds_carrying(
    records: pd.DataFrame, family: str, claim: str, nuisance: str | tuple[str, ...]
) -> tuple[int, int]:
    """How many models of ``family`` the row ``claim`` holds on, and how many of those carry ``nuisance``
    (``"sink"``, ``"massive"`` or ``"growth"``, as ``planted.PlantSpec.name`` marks it; a tuple: all of them)."""
    wanted = (nuisance,) if isinstance(nuisance, str) else tuple(nuisance)
    if not wanted or any(n not in ("sink", "massive", "growth") for n in wanted):
        raise InvalidInputError(
            f"nuisance must be 'sink', 'massive' or 'growth' (or a tuple of them), got {nuisance!r}."
        )
    held = _held(records, family, claim)
    carrying = np.ones(len(held), dtype=bool)
    for name in wanted:
        carrying &= held["model"].str.contains(f"+{name}", regex=False).to_numpy()
    return len(held), int(carrying.sum())


def held_layers(records: pd.DataFrame, family: str, claim: str) -> list[int]:
    """The depths (numbers of layers, as ``planted.PlantSpec.name`` marks them) of the models of ``family`` that
    the row ``claim`` holds on, sorted, one per model."""
    held = _held(records, family, claim)
    return sorted(int(layers) for layers in held["model"].str.extract(r"-L(\d+)-", expand=False))


def family_records(records: pd.DataFrame, family: str, claim: str | None = None) -> pd.DataFrame:
    """The records (``PlantedTable.records``) of ``family``, of the row ``claim`` only where one is given."""
    chosen = records["family"] == family
    if claim is not None:
        chosen &= records["claim"] == claim
    return records[chosen]


def _held(records: pd.DataFrame, family: str, claim: str) -> pd.DataFrame:
    """The records of ``family`` on which the row ``claim`` holds."""
    chosen = family_records(records, family, claim)
    return chosen[chosen["verdict"] == "holds"]
