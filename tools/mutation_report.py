"""Mutation testing of the estimator modules through mutmut's command line: ``run [MODULE ...]`` mutates each
module in a scratch copy (``_build/mutation/<module>/``) with only its own test files, ``collect MODULE`` records a
stopped run, ``report`` writes ``results/bench/mutation.md`` from ``results/bench/mutation/<module>.json``.
Equivalent mutants are marked in the source with the reason: ``# pragma: no mutate: <reason>`` ending a line (or a
bare pragma under a comment giving it), or ``# pragma: no mutate start (<reason>)`` ... ``# pragma: no mutate end``.
mutmut leaves them alone; kill rate = killed / mutants (mutants of lines marked after a run count as marked)."""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
from latentbook._code_hash import code_text  # noqa: E402  (the same comment-blind text as the calibrations' hashes)

WORK, RESULTS = ROOT / "_build" / "mutation", ROOT / "results" / "bench" / "mutation"
REPORT = ROOT / "results" / "bench" / "mutation.md"
TARGET = 0.85  # issue #20: at least 85 % killed on every estimator module
NAMES = (  # the estimator modules of the analysis wing
    "thermo omega omega_profiles standardisation bimodality transition mp_law bulk_fit ranks spectra layer_spectra"
    " spectral_contrasts cooling flow classes confounds resampling contraction"
)
# tests other than tests/test_<module>.py: modules split out of another keep its tests
OWN_TESTS = {
    **{m: ("tests/test_spectra.py",) for m in ("mp_law", "bulk_fit", "ranks")},
    **{m: ("tests/test_omega.py",) for m in ("omega_profiles", "standardisation", "bimodality")},
    "spectral_contrasts": ("tests/test_layer_spectra.py",),
    "thermo": ("tests/test_thermo.py", "tests/test_thermo_rows.py"),
}
MODULES = {
    m: (f"src/latentbook/analysis/{m}.py", OWN_TESTS.get(m, (f"tests/test_{m}.py",))) for m in NAMES.split()
}
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}
PRAGMA = "# pragma: no mutate"
CAUGHT = ("killed", "timeout")  # a mutant that made the tests hang is caught too
MESSAGE = re.compile(r'^(raise \w+\()?f?"([^"\\]|\\.)*"\)?,?$')  # a string literal alone: message text


def fingerprint(module: str) -> dict[str, str]:
    """sha256 of the code of the module and its tests, comments and docstrings left out."""
    paths = (MODULES[module][0], *MODULES[module][1])
    return {p: hashlib.sha256(code_text((ROOT / p).read_text()).encode()).hexdigest() for p in paths}


def prepare(module: str) -> Path:
    """A fresh scratch copy: src/, tests/ and pyproject.toml with the module's [tool.mutmut] section."""
    (source, tests), work = MODULES[module], WORK / module
    shutil.rmtree(work, ignore_errors=True)
    for folder in ("src", "tests"):
        shutil.copytree(ROOT / folder, work / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    settings = f"""
[tool.mutmut]
source_paths = ["src"]
only_mutate = {json.dumps([source])}
pytest_add_cli_args_test_selection = {json.dumps(list(tests))}
pytest_add_cli_args = ["-p", "no:cacheprovider", "-q"]
use_git_change_detection = false
"""  # no git change detection: the scratch copy sits inside the repository's _build/
    (work / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text() + settings)
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    local = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", source, *tests], cwd=ROOT).returncode
    commit = (head.stdout.strip() or "unknown") + (" + local changes" if local else "")
    # as copied: an edit during the run leaves it stale
    (work / "run.json").write_text(json.dumps({"fingerprint": fingerprint(module), "commit": commit}))
    return work


def mutmut(work: Path, *args: str, log: Path | None = None) -> str:
    """``mutmut ARGS`` in the scratch copy (its config and results live there): its output, or into ``log``."""
    command = [str(Path(sys.executable).with_name("mutmut")), *args]
    with open(log or os.devnull, "w") as sink:
        done = subprocess.run(command, cwd=work, env=ENV, stdout=sink if log else subprocess.PIPE, text=True)
    if done.returncode != 0:  # what a stopped run finished is kept in the scratch copy
        fix = f"`python tools/mutation_report.py collect {work.name}` records it as a partial run"
        raise SystemExit(f"`mutmut {' '.join(args)}` failed in {work} (see {log or 'its output'}); {fix}")
    return done.stdout or ""


def run(module: str, max_children: int | None) -> Path:
    """Run mutmut over ``module`` in a fresh scratch copy, then ``collect`` its results."""
    work, children = prepare(module), [f"--max-children={max_children}"] if max_children else []
    mutmut(work, "run", *children, log=work / "mutmut.log")
    return collect(module)


def collect(module: str) -> Path:
    """``results/bench/mutation/<module>.json`` from ``mutmut results --all true`` and ``mutmut show`` of each mutant
    not caught; a stopped run's mutants not run yet are "not checked" (partial). Wall time: from the scratch copy's
    making to the log's last write."""
    work = WORK / module
    if not (work / "run.json").is_file():
        raise SystemExit(f"no mutmut run of {module} in {work}: nothing to collect")
    statuses = re.findall(r"^\s+(\S+): (.+)$", mutmut(work, "results", "--all", "true"), re.M)
    mutants = {}
    for key, status in statuses:
        shown = mutmut(work, "show", key).splitlines() if status not in CAUGHT else []
        diff = [line for line in shown if line[:1] in "-+" and line[:3] not in ("---", "+++")]
        mutants[key] = {"status": status, "diff": "\n".join(diff) if status not in CAUGHT else None}
    wall = (work / "mutmut.log").stat().st_mtime - (work / "run.json").stat().st_mtime
    now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    result = json.loads((work / "run.json").read_text()) | {"module": module, "mutants": mutants, "date": now}
    result |= {"source": MODULES[module][0], "tests": list(MODULES[module][1]), "mutmut": version("mutmut")}
    result |= {"wall_seconds": round(wall, 1), "load_average": os.getloadavg()[0]}
    result["partial"] = any(m["status"] == "not checked" for m in mutants.values())
    path = RESULTS / f"{module}.json"
    path.with_suffix(".tmp").write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    path.with_suffix(".tmp").replace(path)  # never a half-written result
    return path


def code_of(line: str) -> str:
    """A line's code, its comment cut (a ``#`` inside a string cuts it too: such a line only reads as unmarked)."""
    return line.partition("#")[0].strip()


def marked_lines(text: str) -> dict[str, set[str]]:
    """Per function of ``text`` (named as ``function_of`` names them), the code of its lines that mutmut leaves
    alone: those ending in the pragma, and those between its ``start`` and ``end`` lines."""
    import ast

    marked, inside = {}, False
    for number, line in enumerate(text.splitlines(), 1):
        comment = line[len(line.partition("#")[0]) :]
        inside = comment.startswith(f"{PRAGMA} start") or (inside and not comment.startswith(f"{PRAGMA} end"))
        if code_of(line) and (inside or PRAGMA in comment):
            marked[number] = code_of(line)
    spans: dict[str, set[str]] = {}

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                span = range(
                    min([child.lineno, *(d.lineno for d in child.decorator_list)]), child.end_lineno + 1
                )
                spans[prefix + child.name] = {marked[n] for n in span if n in marked}
                walk(child, f"{prefix}{child.name}.")

    walk(ast.parse(text), "")
    return spans


def changed_lines(diff: str | None) -> tuple[list[str], list[str]]:
    return tuple([line[1:] for line in (diff or "").splitlines() if line[:1] == sign] for sign in "-+")


def function_of(key: str) -> str:
    """``pkg.module.x_<function>__mutmut_<n>`` or ``pkg.module.xǁClassǁmethod__mutmut_<n>`` -> the name."""
    name = re.sub(r"__mutmut_\d+$", "", key.rsplit(".", 1)[-1])
    return name[2:].replace("ǁ", ".") if name.startswith("xǁ") else name.removeprefix("x_")


def summarise(result: dict) -> dict:
    """A result against today's source: caught, survived (message text apart), marked equivalent since it ran,
    not run; the kill rate caught / (mutants - marked - not run); whether the code changed since (stale)."""
    marked = marked_lines((ROOT / result["source"]).read_text())  # a mutant's own function's lines only
    counts, survivors = dict.fromkeys(("caught", "survived", "message", "marked", "other"), 0), []
    for key, mutant in sorted(result["mutants"].items()):
        removed, _ = changed_lines(mutant["diff"])
        if mutant["status"] in CAUGHT or mutant["status"] == "not checked":
            counts["caught" if mutant["status"] in CAUGHT else "other"] += 1
        elif removed and {code_of(line) for line in removed} <= marked.get(function_of(key), set()):
            counts["marked"] += 1
        else:
            counts["survived"] += 1
            counts["message"] += bool(removed) and all(MESSAGE.match(line.strip()) for line in removed)
            survivors.append((key, mutant))
    scored = len(result["mutants"]) - counts["marked"] - counts["other"]
    current = {p: h for p, h in fingerprint(result["module"]).items() if p in result["fingerprint"]}
    rate, stale = counts["caught"] / scored if scored else float("nan"), result["fingerprint"] != current
    return dict(counts=counts, total=len(result["mutants"]), rate=rate, survivors=survivors, stale=stale)


def one_line(diff: str) -> str:
    squash = (" / ".join(line.strip() for line in lines) for lines in changed_lines(diff))
    cut = (text if len(text) <= 150 else text[:147] + "..." for text in squash)
    return "`{}` -> `{}`".format(*cut).replace("|", "\\|")  # a table cell's bar escaped


def report() -> Path:
    results = {p.stem: json.loads(p.read_text()) for p in sorted(RESULTS.glob("*.json"))}
    lines = [
        "# Mutation testing of the estimator modules",
        "",
        "Each module is mutated by mutmut and only its own test files run against each mutant (*killed*: they",
        "fail). Equivalent mutants are marked in the source (`# pragma: no mutate` with its reason) and not made;",
        f"kill rate = killed / mutants, target {TARGET:.0%} (issue #20). `make mutation MODULES=<module>` reruns one.",
        "*Stale*: the module or its tests changed since the run; *marked since*: mutants of lines marked after it.",
        "",
        "| module | own tests | mutants | killed | survived (message text) | marked since | kill rate | target | run |",
        "|---|---|---:|---:|---:|---:|---:|---|---|",
    ]
    summaries = {m: summarise(results[m]) for m in MODULES if m in results}
    for module, (_, tests) in MODULES.items():
        own = ", ".join(Path(t).name for t in tests)
        if module not in summaries:
            lines.append(f"| {module} | {own} | | | | | | not run yet | `make mutation MODULES={module}` |")
            continue
        result, s = results[module], summaries[module]
        c, met = s["counts"], "met" if s["rate"] >= TARGET else "**not met**"
        met = f"partial: {c['other']} not run" if result.get("partial") else met
        when = f"{result['date'][:10]}, {result['commit']}, {result['wall_seconds'] / 60:.0f} min"
        lines.append(
            f"| {module} | {own} | {s['total']} | {c['caught']} | {c['survived']} ({c['message']}) | {c['marked']} "
            f"| {s['rate']:.1%} | {met} | {when}{', **stale**' if s['stale'] else ''} |"
        )
    for module, s in summaries.items():
        result = results[module]
        lines += ["", f"## {module} (`{result['source']}`)", ""]
        took = f"{result['wall_seconds'] / 60:.1f} min (load {result['load_average']:.1f})"
        lines.append(f"Run {result['date']}, commit {result['commit']}, mutmut {result['mutmut']}, {took}.")
        by_function: dict[str, list[str]] = {}
        for key, mutant in s["survivors"]:
            note = "" if mutant["status"] == "survived" else f" ({mutant['status']})"
            by_function.setdefault(function_of(key), []).append(one_line(mutant["diff"]) + note)
        if by_function:
            lines += ["", f"Survivors ({len(s['survivors'])}), by function:", ""]
            for function, entries in by_function.items():
                lines += [f"- `{function}` ({len(entries)}):", *(f"  - {entry}" for entry in entries)]
    REPORT.write_text("\n".join(lines) + "\n")
    return REPORT


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=("run", "collect", "report"))
    parser.add_argument("modules", nargs="*", help="run: these (default: all); collect: one")
    parser.add_argument("--max-children", type=int, default=None, help="mutmut's parallel workers")
    args = parser.parse_args(argv)
    unknown = [m for m in args.modules if m not in MODULES]
    if unknown or (args.command == "collect" and len(args.modules) != 1):
        parser.error(f"give modules of {', '.join(MODULES)} (collect: exactly one); got {args.modules}")
    for module in (args.modules or list(MODULES)) if args.command != "report" else []:
        done = run(module, args.max_children) if args.command == "run" else collect(module)
        print(f"mutation: {done.relative_to(ROOT)}", flush=True)
    print(f"mutation: {report().relative_to(ROOT)}")


if __name__ == "__main__":
    main()
