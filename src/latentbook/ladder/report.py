"""The ladder's results: measure every rung and its null, correlate each diagnostic with capability, verdicts.

1. ``measure_ladder(out)`` measures every trained rung (``ladder:<rung>``) and its untrained
   initialisation (``ladder:<rung>:init``) and writes ``results/ladder/measurements.json``;
2. ``load_measurements()`` reads it back; ``ladder_table(m)`` is one row per rung (trained and null side by
   side); ``correlations(m)`` the rank correlation of each diagnostic with capability across the rungs, plain
   and partial given log parameter count (Holm-adjusted across the diagnostics); ``recorrelate()`` recomputes
   them in the file from its own numbers, without running a model;
3. ``tco_judgements(m)`` judges each rung's TCO test against its untrained null (``verdict.judge_tco``);
   ``study.ladder_rows`` turns all of it into rows of the verdict table;
4. ``plateau_table(load_plateau())`` summarises ``benchmarks/ladder_plateau.py`` (which training variants learn
   the easiest lookup: why the first ladder did not bind) and ``names_table(load_names_benchmark())``
   ``benchmarks/ladder_names.py`` (when variable names should get fresh codes).

Introduced in: chapter 7.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np

from .._files import atomic_write
from ..errors import CaptureFileError, InvalidInputError
from .clustered import architecture_of, clustered_partial, clustered_verdict, is_seeded
from .diagnostics import diagnostics_hash, measure_model
from .rank_correlation import partial_spearman_ci, partial_verdict, spearman_ci, verdict
from .store import REPO_LADDER, checkpoint_sha, checkpoints, ladder_dir, trained_rungs, training_log
from .task import TaskSpec

MEASUREMENTS = "measurements.json"
CHECKPOINT_STRIDE = 1000  # the checkpoints measured along training: every this many steps
COMMAND = "latentbook train-ladder --measure"
V2_COMMAND = (  # the book's ladder (chapter 7): 6 rungs x 3 seeds on the balanced task, two rungs checkpointed
    "latentbook train-ladder --out results/ladder-v2 --seeds 0,1,2 --balanced --checkpoint-every 500 "
    "--checkpoint-rungs l4-d64,l8-d64 --jobs 2 --measure"
)
PLATEAU = REPO_LADDER.parent / "bench" / "ladder_plateau.json"
PLATEAU_COMMAND = "python benchmarks/ladder_plateau.py"
NAMES_BENCH = REPO_LADDER.parent / "bench" / "ladder_names.json"
NAMES_COMMAND = "python benchmarks/ladder_names.py"

# name -> (label, expected sign of its rank correlation with capability under the paper's claims, claim)
DIAGNOSTICS: dict[str, tuple[str, int, str]] = {
    "omega_rise": (
        "Omega rise m(1) - m(0)",
        +1,
        "claims 1 and 4: the order parameter jumps in capable models",
    ),
    "bimodality": ("bimodality coefficient of Omega (last depth)", +1, "claim 2: Omega becomes bimodal"),
    "spikes": ("spikes of the query covariance above MP (last depth)", +1, "claim 3, Theorem 6.3"),
    "contraction": ("transverse contraction factor q (query states)", -1, "Theorem 6.1: q < 1 contracts"),
    "stability": (
        "TCO stability: the query's probe at the later hops, two-way (last depth)",
        +1,
        "claim 5: bound objects persist",
    ),
}


def diagnostic_values(entry: dict) -> dict[str, float]:
    """The scalar of each diagnostic for one measured model."""
    return {
        "omega_rise": entry["omega"]["rise"]["value"],
        "bimodality": entry["omega"]["bimodality"]["coefficient"],
        "spikes": float(entry["spikes"]["n_spikes"][-1]),
        "contraction": entry["contraction"]["q"],
        "stability": entry["tco"]["scores"]["stability"]["accuracy"],
    }


# Controls beyond size, per diagnostic: what the diagnostic may share with capability without being the claim.
# TCO stability reads the query's probe at the later hops; a model whose probe decodes the bound value well at the
# query itself (the positive control) also scores high there, and that control tracks capability closely.
EXTRA_CONTROLS: dict[str, tuple[str, Callable[[dict], float]]] = {
    "stability": ("the positive control", lambda entry: entry["tco"]["scores"]["control"]["accuracy"]),
}


def extra_control_value(entry: dict, name: str) -> float:
    """The value of ``EXTRA_CONTROLS[name]`` for one measured model."""
    if name not in EXTRA_CONTROLS:
        raise InvalidInputError(
            f"no extra control for the diagnostic {name!r}; known: {sorted(EXTRA_CONTROLS)}."
        )
    return EXTRA_CONTROLS[name][1](entry)


def measure_ladder(
    out: str | Path | None = None,
    rungs: list[str] | None = None,
    progress: bool = True,
    reuse: bool = True,
    checkpoint_stride: int = CHECKPOINT_STRIDE,
) -> Path:
    """Measure every trained rung and its null; write ``measurements.json`` (atomically) and return its path.

    Each model records ``"measured_by"``, the ``diagnostics.diagnostics_hash()`` of the code that measured it. A
    rung with checkpoints also gets those at every ``checkpoint_stride`` steps measured (``"checkpoints"``: step
    -> ``diagnostics.measure_model``, the checkpoint's sha256 and its hash; the final model stands for the last
    step), for ``along_training``. With ``reuse``, a rung or checkpoint already in the file with the same weights
    (sha256) and measured by the current code is not measured again; the file is rewritten after each rung, so an
    interrupted run loses nothing it already measured.
    """
    if checkpoint_stride < 1:
        raise InvalidInputError(
            f"checkpoint_stride must be a positive number of steps, got {checkpoint_stride}."
        )
    from tqdm.auto import tqdm

    from ..capturing.capture import _versions
    from ..models import load_model

    root = ladder_dir()
    rungs = rungs or trained_rungs(root)
    path = Path(out) if out is not None else root / MEASUREMENTS
    previous = json.loads(path.read_text()) if reuse and path.is_file() else {}
    done = previous.get("models", {})
    code = diagnostics_hash()
    result: dict = {"rungs": rungs, "models": {}, "command": COMMAND}
    for rung in tqdm(rungs, desc="measure", disable=not progress):
        log = training_log(rung)
        spec = TaskSpec(**log["spec"])
        trained = load_model(f"ladder:{rung}", device="cpu")
        result["spec"], result["config"] = log["spec"], log["config"]
        kept = done.get(rung, {})
        if (kept.get("sha256"), kept.get("measured_by")) == (trained.sha, code):
            result["models"][rung] = {k: v for k, v in kept.items() if k != "checkpoints"}
        else:
            null = load_model(f"ladder:{rung}:init", device="cpu")
            result["models"][rung] = {
                "trained": measure_model(trained, spec),
                "null": measure_model(null, spec),
                "sha256": trained.sha,
                "measured_by": code,
                "train_seconds": log["seconds"],
                "train_steps": log["config"]["steps"],
            }
        measured = _measure_checkpoints(
            rung, spec, checkpoint_stride, log["config"]["steps"], kept.get("checkpoints", {}), code
        )
        if measured:
            result["models"][rung]["checkpoints"] = measured
        partial = {**result, "rungs": list(result["models"])}
        atomic_write(path, lambda tmp, data=partial: tmp.write_text(json.dumps(data, indent=1)))
    result["correlations"] = correlations(result)
    result["provenance"] = _provenance(_versions)
    atomic_write(path, lambda tmp: tmp.write_text(json.dumps(result, indent=1)))
    return path


def _measure_checkpoints(
    rung: str, spec: TaskSpec, stride: int, final_step: int, previous: dict, code: str
) -> dict:
    """``{step: measurement}`` of the checkpoints of ``rung`` at multiples of ``stride`` before ``final_step``
    (the final model is measured as the rung), reusing ``previous`` entries with the same sha256 and ``code``
    (``diagnostics.diagnostics_hash()``)."""
    from ..models import load_model

    out = {}
    for step in checkpoints(rung):
        if step % stride or step >= final_step:
            continue
        sha = checkpoint_sha(rung, step)
        old = previous.get(str(step), {})
        if (old.get("sha256"), old.get("measured_by")) == (sha, code):
            out[str(step)] = old
            continue
        loaded = load_model(f"ladder:{rung}@{step}", device="cpu")
        out[str(step)] = measure_model(loaded, spec) | {"sha256": loaded.sha, "measured_by": code}
    return out


def _provenance(versions) -> dict:
    return {"date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), "versions": versions()}


def stale_models(m: dict) -> list[str]:
    """The models of ``measurements.json`` (``rung`` or ``rung@step``) not measured by the current code: their
    ``"measured_by"`` differs from ``diagnostics.diagnostics_hash()`` or is missing (measured before the hash
    was recorded). Empty when every number in the file is the current code's."""
    code = diagnostics_hash()
    stale = []
    for rung in m["rungs"]:
        entry = m["models"][rung]
        if entry.get("measured_by") != code:
            stale.append(rung)
        stale += [
            f"{rung}@{step}"
            for step, c in entry.get("checkpoints", {}).items()
            if c.get("measured_by") != code
        ]
    return stale


def load_measurements(path: str | Path | None = None) -> dict:
    """``measurements.json`` of the ladder (default: the repository's ``results/ladder``)."""
    path = Path(path) if path is not None else ladder_dir() / MEASUREMENTS
    if not path.is_file():
        raise CaptureFileError(f"No ladder measurements at {path}: run `{COMMAND}`.")
    record = read_record(path, COMMAND, models=dict, rungs=list)
    wrong = [name for name in record["rungs"] if not isinstance(record["models"].get(name), dict)]
    if wrong:
        raise CaptureFileError(
            f"{path} lists rungs {wrong[:5]} without their measurements: the record is damaged. Rerun `{COMMAND}`."
        )
    return record


def read_record(path: Path, command: str, **shape: type) -> dict:
    """A JSON record of the ladder: one object holding each key of ``shape`` with its type, or a
    ``CaptureFileError`` naming the file, what is wrong and the command that writes it again."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CaptureFileError(f"{path} is not a readable JSON record ({exc}). Rerun `{command}`.") from exc
    if not isinstance(record, dict):
        raise CaptureFileError(
            f"{path} holds a JSON {type(record).__name__}, not the object its writer makes. Rerun `{command}`."
        )
    wrong = {key: kind.__name__ for key, kind in shape.items() if not isinstance(record.get(key), kind)}
    if wrong:
        raise CaptureFileError(
            f"{path} lacks {', '.join(f'{key!r} (a {kind})' for key, kind in wrong.items())}: it is not this "
            f"kind of record, or it is damaged. Rerun `{command}`."
        )
    return record


def select(m: dict, names: list[str]) -> dict:
    """``m`` restricted to the models ``names`` (in that order): a figure or table of some of them."""
    missing = [name for name in names if name not in m["models"]]
    if missing:
        raise InvalidInputError(f"not in these measurements: {missing}; they hold {m['rungs']}.")
    return {**m, "rungs": list(names), "models": {name: m["models"][name] for name in names}}


def _load_bench(path: str | Path | None, default: Path, command: str) -> dict:
    path = Path(path) if path is not None else default
    if not path.is_file():
        raise CaptureFileError(f"No benchmark report at {path}: run `{command}`.")
    return read_record(path, command)


def load_plateau(path: str | Path | None = None) -> dict:
    """The report of ``benchmarks/ladder_plateau.py`` (default: the repository's ``results/bench``)."""
    return _load_bench(path, PLATEAU, PLATEAU_COMMAND)


def plateau_table(plateau: dict, margin: float = 0.2):
    """(one row per variant, the variants that learn): a variant *learns* when its accuracy with training names
    exceeds the guessing baseline by more than ``margin``. A row says whether the names share a direction (the
    ladder's init) and how the MLPs start."""
    import pandas as pd

    guess = plateau["guessing_baseline"]
    rows = {
        name: {
            "names": v["names"],
            "shared name direction": v["names"] != "trained" and v.get("name_init") != "iid",
            "MLPs": v["mlp"],
            "training loss": v["final_loss"],
            "accuracy, training names": v["train_names_accuracy"],
            "accuracy, held-out names": v["heldout_accuracy"],
        }
        for name, v in plateau["variants"].items()
    }
    table = pd.DataFrame.from_dict(rows, orient="index")
    learns = table.index[table["accuracy, training names"] > guess + margin].tolist()
    return table, learns


def load_names_benchmark(path: str | Path | None = None) -> dict:
    """The report of ``benchmarks/ladder_names.py`` (default: the repository's ``results/bench``)."""
    return _load_bench(path, NAMES_BENCH, NAMES_COMMAND)


def names_table(bench: dict):
    """One row per variant of ``benchmarks/ladder_names.py``: the stage from which names get fresh codes, accuracy
    by hop count with held-out and with training names, and the step at which each curriculum stage opened."""
    import pandas as pd

    rows = {}
    for name, v in bench["variants"].items():
        row = {"fresh codes from stage": v["fresh_names_from"]}
        for split, key in (("held-out", "heldout"), ("training names", "training_names")):
            row |= {f"{split}, {hops} hop": a for hops, a in v[key].items()}
        row["stages opened at step"] = ", ".join(str(s["step"]) for s in v["stages"][1:]) or "-"
        rows[name] = row
    return pd.DataFrame.from_dict(rows, orient="index")


def capability_of(entry: dict) -> float:
    """The capability of one measured model: mean held-out accuracy over hop counts 1..max_hops."""
    return entry["capability"]["mean"]


def ladder_table(m: dict):
    """One row per rung: size, accuracy by hops (trained and null), and every diagnostic (trained and null)."""
    import pandas as pd

    rows = []
    for rung in m["rungs"]:
        entry = m["models"][rung]
        row = {
            "rung": rung,
            "layers": entry["trained"]["n_layers"],
            "d_model": entry["trained"]["d_model"],
            "parameters": entry["trained"]["n_parameters"],
        }
        for kind in ("trained", "null"):
            acc = entry[kind]["capability"]["accuracy"]
            for hops, a in acc.items():
                row[f"{kind} acc {hops}-hop"] = a
            row[f"{kind} capability"] = capability_of(entry[kind])
            for name, value in diagnostic_values(entry[kind]).items():
                row[f"{kind} {name}"] = value
        rows.append(row)
    return pd.DataFrame(rows)


def holm_family(p_values) -> np.ndarray:
    """Holm-adjusted p-values of a family of tests (``analysis.bimodality.holm``); a test without a p-value (NaN: a
    diagnostic constant across the ladder) stays in the family as p = 1, so it still counts against the others."""
    from ..analysis.bimodality import holm

    p = np.asarray(p_values, dtype=float)
    return holm(np.where(np.isfinite(p), p, 1.0))


def correlations(m: dict) -> dict:
    """Spearman's rho of capability with each diagnostic across the trained rungs, with CI and verdict.

    Also ``"shift"``: the same for the trained-minus-null change of the diagnostic, which removes what a
    rung's architecture alone does at initialisation; and ``"partial"`` (from four rungs): the partial Spearman
    rho given log parameter count (``rank_correlation.partial_spearman_ci``), its p-value Holm-adjusted across the
    diagnostics (``p_holm``, ``holm_family``) and its verdict (``rank_correlation.partial_verdict``): capability ranks
    almost like size, so only this one can say that a diagnostic tracks capability rather than size. On a seeded
    ladder of at least four architectures, also ``"clustered"`` (``clustered.clustered_partial``): the partial rho
    given log parameters and the diagnostic's ``EXTRA_CONTROLS``, its interval from a bootstrap over architectures
    and its p from permutations within architectures, Holm-adjusted, with ``clustered.clustered_verdict``: the
    models of one architecture are not independent units, and this is the verdict the ladder's rows carry.
    """
    rungs = m["rungs"]
    if len(rungs) < 3:
        return {}  # a rank correlation needs at least three rungs
    capability = np.array([capability_of(m["models"][r]["trained"]) for r in rungs])
    log_parameters = np.log([m["models"][r]["trained"]["n_parameters"] for r in rungs])
    out = {}
    for name, (label, sign, claim) in DIAGNOSTICS.items():
        trained = np.array([diagnostic_values(m["models"][r]["trained"])[name] for r in rungs])
        null = np.array([diagnostic_values(m["models"][r]["null"])[name] for r in rungs])
        entry = {"label": label, "expected_sign": sign, "claim": claim}
        for key, values in (("level", trained), ("shift", trained - null)):
            r = spearman_ci(capability, values)
            word, reason = verdict(r, sign)
            entry[key] = {
                "rho": r.rho,
                "ci": r.ci,
                "p_value": r.p_value,
                "n": r.n,
                "verdict": word,
                "reason": reason,
            }
        if len(rungs) >= 4:
            entry["partial"] = partial_spearman_ci(capability, trained, log_parameters)
        out[name] = entry
    if all(is_seeded(r) for r in rungs) and len({architecture_of(r)[0] for r in rungs}) >= 4:
        _add_clustered(m, out, capability, log_parameters)
    partial = [name for name, entry in out.items() if "partial" in entry]
    adjusted = holm_family([out[name]["partial"].p_value for name in partial])
    for name, p_holm in zip(partial, adjusted):
        r = out[name]["partial"]
        word, reason = partial_verdict(r, float(p_holm), len(partial), out[name]["expected_sign"])
        out[name]["partial"] = {
            "control": "log parameter count",
            "rho": r.rho,
            "ci": r.ci,
            "p_value": r.p_value,
            "p_holm": float(p_holm),
            "n_tests": len(partial),
            "n": r.n,
            "capability_size_rho": r.rho_xz,
            "diagnostic_size_rho": r.rho_yz,
            "verdict": word,
            "reason": reason,
        }
    return out


def _add_clustered(m: dict, out: dict, capability: np.ndarray, log_parameters: np.ndarray) -> None:
    """``out[name]["clustered"]`` for every diagnostic (see ``correlations``), Holm-adjusted across them."""
    rungs = m["rungs"]
    clusters = [architecture_of(r)[0] for r in rungs]
    tests = {}
    for name in out:
        trained = np.array([diagnostic_values(m["models"][r]["trained"])[name] for r in rungs])
        controls = [log_parameters]
        if name in EXTRA_CONTROLS:
            controls.append([extra_control_value(m["models"][r]["trained"], name) for r in rungs])
        tests[name] = clustered_partial(capability, trained, np.column_stack(controls), clusters)
    adjusted = holm_family([r.p_within for r in tests.values()])
    for (name, r), p_holm in zip(tests.items(), adjusted):
        controls = "log parameters" + (f" and {EXTRA_CONTROLS[name][0]}" if name in EXTRA_CONTROLS else "")
        word, reason = clustered_verdict(r, float(p_holm), len(tests), out[name]["expected_sign"], controls)
        out[name]["clustered"] = {
            "controls": controls,
            "rho": r.rho,
            "ci": r.ci,
            "rho_within": r.rho_within,
            "p_within": r.p_within,
            "p_holm": float(p_holm),
            "n_tests": len(tests),
            "n": r.n,
            "n_clusters": r.n_clusters,
            "n_permutations": r.n_permutations,
            "exact": r.exact,
            "exact_interval": r.exact_interval,
            "verdict": word,
            "reason": reason,
        }


def recorrelate(path: str | Path | None = None) -> Path:
    """Recompute ``correlations`` of a ``measurements.json`` from its own numbers (no model is run) and rewrite
    it atomically; everything else is kept, and ``correlations_provenance`` says when and with what."""
    from ..capturing.capture import _versions

    path = Path(path) if path is not None else ladder_dir() / MEASUREMENTS
    m = load_measurements(path)
    m["correlations"] = correlations(m)
    m["correlations_provenance"] = _provenance(_versions)
    atomic_write(path, lambda tmp: tmp.write_text(json.dumps(m, indent=1)))
    return path


def tco_judgements(m: dict) -> dict[str, dict[str, tuple[str, str]]]:
    """Per rung, ``verdict.judge_tco`` of the trained model against its untrained null (the twin) and of the null
    alone: ``{rung: {"trained": (verdict, reason), "null": (verdict, reason)}}``. Rungs without a TCO block are
    left out."""
    from ..analysis.tco import TCOScores
    from ..analysis.verdict import judge_tco

    out = {}
    for rung in m["rungs"]:
        entry = m["models"][rung]
        if any("tco" not in entry[kind] for kind in ("trained", "null")):
            continue
        trained = TCOScores.from_dict(entry["trained"]["tco"]["scores"])
        null = TCOScores.from_dict(entry["null"]["tco"]["scores"])
        out[rung] = {"trained": judge_tco(trained, null), "null": judge_tco(null)}
    return out
