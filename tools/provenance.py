"""What the scripts that keep long runs in ``results/`` record of the code they ran on (imported by them as a
sibling module: ``python tools/<script>.py`` puts ``tools/`` on the path)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def git_commit() -> str | None:
    """The repository's ``HEAD``, or None outside a git checkout."""
    try:
        return subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def fresh_value(code: str) -> str:
    """What ``code`` prints in a new interpreter: a source hash of the files as they are now (the running one holds
    the code it imported; ``inspect`` would read the new files at the old line numbers)."""
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()


def fresh_hashes(module: str, function: str, *args: str) -> dict[str, str]:
    """``module.function(*args)``, a map of module hashes, for the files as they are now: read in a new
    interpreter (``_code_hash.module_hashes`` of a producer, or a calibration module's own ``code_hashes``)."""
    import json

    call = f"{function}(*{list(args)!r})"
    return json.loads(fresh_value(f"import json; from {module} import {function}; print(json.dumps({call}))"))


def run_provenance(code: dict[str, str], n_cases: int, seed: int, seconds: float, **settings) -> dict:
    """What a calibration record keeps of its run: the package version, the code it ran on (``source_hash``, the
    digest of ``code``: the hash of each module its producer imports), the commit, the date, its cases and seed,
    any ``settings``, and how long it took."""
    from datetime import datetime, timezone

    from latentbook._code_hash import digest
    from latentbook._version import __version__

    return {
        "latentbook": __version__,
        "source_hash": digest(code),
        "code": code,
        "git_commit": git_commit(),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "n_cases": n_cases,
        "seed": seed,
        **settings,
        "seconds": round(seconds, 1),
    }


def table_main(
    description: str,
    script: str,
    out: Path,
    default_cases: int,
    producer: str,
    make_table,
    **settings,
) -> None:
    """The command line of a script that keeps one table in ``results/``: ``--n-cases``, ``--seed``, ``--out``;
    ``make_table(n_cases, seed)`` run on the code of the module ``producer`` and what it imports
    (``_code_hash.module_hashes``), refused if that code changed while it ran (read again in a fresh interpreter),
    then the table and its provenance (``run_provenance``, ``settings`` included) written atomically to ``--out``
    and printed."""
    import argparse
    import json
    import time

    from latentbook._files import atomic_write

    parser = argparse.ArgumentParser(description=description.splitlines()[0])
    parser.add_argument(
        "--n-cases",
        type=int,
        default=default_cases,
        help=f"planted cases per cell (default: {default_cases})",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the planted cases (default: 0)")
    parser.add_argument(
        "--out", type=Path, default=out, help=f"where to write (default: {out.relative_to(ROOT)})"
    )
    args = parser.parse_args()
    if args.out.exists() and not (args.out.is_file() and _is_calibration_record(args.out, "table")):
        raise SystemExit(  # before the work: a file that is not this kind of record is never replaced
            f"--out {args.out} is not a table record written by tools/{script}, and it would be lost: choose "
            "another --out."
        )
    start = time.perf_counter()
    from latentbook._code_hash import module_hashes

    ran_on = module_hashes(producer)  # of the code just imported: the code that runs
    table = make_table(args.n_cases, args.seed)
    if fresh_hashes("latentbook._code_hash", "module_hashes", producer) != ran_on:
        raise SystemExit(
            "The code changed while the table ran, so it belongs to no version of it: nothing written to "
            f"{args.out}. Rerun tools/{script} once the code has settled."
        )
    provenance = run_provenance(ran_on, args.n_cases, args.seed, time.perf_counter() - start, **settings)
    text = json.dumps({"provenance": provenance, "table": table.to_dict(orient="records")}, indent=1) + "\n"
    atomic_write(args.out, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    print(table.to_string(index=False))
    print(f"written: {args.out}")


def calibration_main(module, script: str, description: str, **settings) -> None:
    """The command line of a calibration script: run ``module.iter_cases(cases, seed=, jobs=)``, keep each finished
    case in a checkpoint beside the output (``checkpoint_path``; a rerun with the same code, seed and settings
    carries on from it), refuse to write when the code changed while it ran (``module.code_hashes()`` read again
    in a fresh interpreter), and write the records with their provenance (``run_provenance``, ``settings``
    included) to ``results/<module.FILE>`` or ``--out``, atomically; print ``module.confusion(records)``."""
    import argparse
    import json
    import time

    from latentbook._files import atomic_write

    out = ROOT / "results" / module.FILE
    parser = argparse.ArgumentParser(description=description.splitlines()[0])
    parser.add_argument("--n-cases", type=int, default=74, help="cases per family (default: 74)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the planted cases (default: 0)")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (default: 1)")
    parser.add_argument(
        "--out", type=Path, default=out, help=f"where to write (default: {out.relative_to(ROOT)})"
    )
    if hasattr(module, "families"):
        parser.add_argument(
            "--add-families",
            nargs="+",
            metavar="FAMILY",
            help="run these families only and add them to the record at --out, keeping its other families once "
            f"cases {SPOT_CASES} of them reproduce on the current code (verdicts exactly, values to {SPOT_RTOL:g})",
        )
        parser.add_argument(
            "--restamp",
            action="store_true",
            help=f"run nothing new: once cases {SPOT_CASES} of every family of the record at --out reproduce "
            f"on the current code (verdicts exactly, values to {SPOT_RTOL:g}), keep the record for it (for a change that moves no value: a rename, "
            "a module split; any other change needs the whole run)",
        )
    args = parser.parse_args()
    if args.n_cases < 1:
        raise SystemExit(f"--n-cases {args.n_cases}: give a positive number of cases per family.")
    if args.out.exists() and args.out.is_dir():
        raise SystemExit(
            f"--out {args.out} is a folder: give a file name (e.g. {args.out / Path(module.FILE).name})."
        )
    if args.out.exists() and not _is_calibration_record(args.out):
        raise SystemExit(
            f"--out {args.out} is a file that is not a calibration record, and it would be lost: choose another --out."
        )
    start = time.perf_counter()
    code = module.code_hashes()  # of the code just imported: the code that runs
    if getattr(args, "restamp", False):
        if args.add_families:
            raise SystemExit("--restamp keeps every family as it is: run --add-families on its own.")
        restamp(module, args, script, code, settings)
        return
    header = {"source_hash": module.source_hash(), "seed": args.seed, "settings": settings}
    names, kept = None, None
    if getattr(args, "add_families", None):
        names = tuple(args.add_families)
        kept = kept_families(module, args.out, names, args.n_cases, args.seed, args.jobs, script)
        header["families"] = list(names)
    checkpoint = checkpoint_path(args.out)
    done, seconds = read_checkpoint(checkpoint, header, script)
    todo = [case for case in range(args.n_cases) if case not in done]
    if done:
        print(
            f"carrying on from {checkpoint}: {len(set(done) & set(range(args.n_cases)))} cases done, {len(todo)} to run"
        )
    if not checkpoint.exists():
        atomic_write(checkpoint, lambda tmp: tmp.write_text(json.dumps(header) + "\n", encoding="utf-8"))
    elif not checkpoint.read_bytes().endswith(b"\n"):
        with checkpoint.open("a", encoding="utf-8") as log:
            log.write("\n")  # end the line a killed run cut short, so the next case starts a line of its own
    last = time.perf_counter()
    with checkpoint.open("a", encoding="utf-8") as log:
        chosen = {"names": names} if names else {}
        for case, records in module.iter_cases(todo, seed=args.seed, jobs=args.jobs, **chosen):
            now = time.perf_counter()
            log.write(json.dumps({"case": case, "records": records, "seconds": round(now - last, 1)}) + "\n")
            log.flush()
            os.fsync(log.fileno())
            done[case], seconds, last = records, seconds + now - last, now
    if fresh_hashes(module.__name__, "code_hashes") != code:
        raise SystemExit(
            "The code changed while the calibration ran, so the records belong to no version of it: nothing "
            f"written to {args.out}. Delete {checkpoint} and rerun tools/{script} once the code has settled."
        )
    records = [record for case in range(args.n_cases) for record in done[case]]
    seconds += time.perf_counter() - last
    if kept is not None:
        order = {family.name: index for index, family in enumerate(module.families())}
        records = sorted(kept["records"] + records, key=lambda r: (r["case"], order[r["family"]]))
        seconds += kept["provenance"]["seconds"]
        settings = {**settings, "extended": {"families": list(names), "kept_from": kept["provenance"]}}
    provenance = run_provenance(code, args.n_cases, args.seed, seconds, **settings)
    record = {"provenance": provenance, "records": records}
    atomic_write(args.out, lambda tmp: tmp.write_text(json.dumps(record, indent=0) + "\n", encoding="utf-8"))
    checkpoint.unlink()
    print(module.confusion(records).to_string(index=False))
    print(f"written: {args.out} ({time.perf_counter() - start:.0f} s in this run)")


SPOT_CASES = (0, 1)  # the cases of the kept families that must reproduce before a record is extended
# how far a value run again may move and still be the same: the last digits that another machine's BLAS, summing
# in another order, changes (1e-14 of the value, seen between two machines); a change to the code moves far more
SPOT_RTOL = 1e-9


def reproduces(again: list[dict], before: list[dict], rtol: float = SPOT_RTOL) -> bool:
    """Whether the records ``again`` are ``before``: every field equal, but float values, equal to ``rtol`` (a
    NaN only to a NaN)."""
    import math

    if len(again) != len(before):
        return False
    for new, old in zip(again, before):
        if new.keys() != old.keys():
            return False
        for key, value in new.items():
            kept = old[key]
            if isinstance(value, float) and isinstance(kept, float):
                same = (math.isnan(value) and math.isnan(kept)) or math.isclose(value, kept, rel_tol=rtol)
            else:
                same = value == kept
            if not same:
                return False
    return True


def restamp(module, args, script: str, code: dict[str, str], settings: dict) -> None:
    """Keep the record at ``args.out`` for the code whose module hashes are ``code`` once ``SPOT_CASES`` of every family
    reproduce it (``kept_families``: verdicts exactly, values to ``SPOT_RTOL``), writing it atomically with provenance that says so
    (``"restamped"``: the cases checked and the provenance kept); a record of this very code is left alone."""
    import json

    from latentbook._files import atomic_write

    if args.out.is_file() and _is_calibration_record(args.out):
        if json.loads(args.out.read_text(encoding="utf-8"))["provenance"].get("code") == code:
            print(f"{args.out} was written by the current code: nothing to restamp.")
            return
    kept = kept_families(module, args.out, (), args.n_cases, args.seed, args.jobs, script)
    if fresh_hashes(module.__name__, "code_hashes") != code:
        raise SystemExit(f"The code changed while the spot check ran: nothing written to {args.out}.")
    restamped = {"spot_cases": list(SPOT_CASES), "kept_from": kept["provenance"]}
    provenance = run_provenance(
        code, args.n_cases, args.seed, kept["provenance"]["seconds"], **settings, restamped=restamped
    )
    record = {"provenance": provenance, "records": kept["records"]}
    atomic_write(args.out, lambda tmp: tmp.write_text(json.dumps(record, indent=0) + "\n", encoding="utf-8"))
    print(f"restamped: {args.out} (cases {list(SPOT_CASES)} of every family reproduce on the current code)")


def kept_families(
    module, out: Path, names: tuple[str, ...], n_cases: int, seed: int, jobs: int, script: str
) -> dict:
    """The record at ``out`` without the families ``names``, once its other families are shown to be those of the
    current code: ``SPOT_CASES`` of them run again must give the same records (``reproduces``: the verdicts exactly,
    the judges' values to ``SPOT_RTOL``). Refused, naming the fix, when the record is missing, of other cases or seed, a name is not a family
    of ``module.families()``, or the kept families do not reproduce."""
    import json

    families = [family.name for family in module.families()]
    unknown = [name for name in names if name not in families]
    if unknown:
        raise SystemExit(
            f"--add-families: {unknown} are not families of {module.__name__}: choose from {families}."
        )
    if not (out.is_file() and _is_calibration_record(out)):
        raise SystemExit(
            f"--add-families and --restamp keep the record at --out, and {out} holds none: run tools/{script} first."
        )
    record = json.loads(out.read_text(encoding="utf-8"))
    if (record["provenance"].get("n_cases"), record["provenance"].get("seed")) != (n_cases, seed):
        raise SystemExit(
            f"{out} holds {record['provenance'].get('n_cases')} cases of seed {record['provenance'].get('seed')}: "
            f"extend it with the same --n-cases and --seed, or run every family again."
        )
    keep = tuple(name for name in families if name not in names)
    records = [r for r in record["records"] if r["family"] in keep]
    check = [case for case in SPOT_CASES if case < n_cases]
    print(f"checking that cases {check} of the kept families reproduce on the current code")
    again = {case: found for case, found in module.iter_cases(check, seed=seed, jobs=jobs, names=keep)}
    for case in check:
        before = [r for r in records if r["case"] == case]
        if not reproduces(again[case], before):
            raise SystemExit(
                f"Case {case} of the kept families does not reproduce on the current code, so {out} cannot be "
                f"kept: run tools/{script} for every family."
            )
    return {"provenance": record["provenance"], "records": records}


def checkpoint_path(out: Path) -> Path:
    """Where ``calibration_main`` keeps the finished cases of a run that writes ``out``: a sibling file."""
    return out.with_name(out.name + ".partial.jsonl")


def read_checkpoint(path: Path, header: dict, script: str) -> tuple[dict[int, list[dict]], float]:
    """The finished cases in the checkpoint ``path`` (``{case: records}``) and the seconds they took, if its first
    line is ``header`` (the same source hash, seed and settings); nothing if there is no checkpoint. A last line
    cut short by a killed run is ignored (that case runs again); a checkpoint of other code or settings is
    refused, not overwritten: its cases cannot be mixed with this run's."""
    import json

    if not path.exists():
        return {}, 0.0
    lines = path.read_text(encoding="utf-8").splitlines()
    try:
        found = json.loads(lines[0]) if lines else None
    except ValueError:
        found = None
    if found != json.loads(json.dumps(header)):
        raise SystemExit(
            f"{path} holds the finished cases of a run of other code, seed or settings (its first line is not "
            f"{json.dumps(header)[:120]}...): they cannot be mixed with this run. Restore that code to carry on "
            f"with it, or delete the file to start tools/{script} again."
        )
    done, seconds = {}, 0.0
    for line in lines[1:]:
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # cut short when the run was killed: the case runs again
        done[int(entry["case"])] = entry["records"]
        seconds += float(entry["seconds"])
    return done, seconds


def _is_calibration_record(path: Path, body: str = "records") -> bool:
    """Whether ``path`` holds what ``calibration_main`` writes (JSON with ``provenance`` and ``records``), or with
    ``body="table"`` what ``table_main`` writes."""
    import json

    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(record, dict) and {"provenance", body} <= set(record)
