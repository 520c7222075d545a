"""How long a cold ``make book`` takes on this machine, page by page, and what a newcomer waits.

Two measurements, each written to ``results/bench/`` (``.json`` and ``.md``; the performance appendix reads them):

- ``--newcomer`` (``book_build_newcomer``): ``make book`` exactly as the README gives it, in a fresh clone of the
  committed ``HEAD`` with an empty ``HOME`` (nothing in it but this machine's own pip configuration, which names the
  package registries a fresh machine of this kind has too) and so with empty pip, npm, Hugging Face and latentbook
  caches: no ``.venv``, no assembled models, no captures. The setup recipe (``make -n setup``) runs line by line so
  that each step is timed, then ``make book``, which finds the setup done and builds.
- by default (``book_build``): the build as CI runs it (``LATENTBOOK_BOOK_FRESH=1 bash tools/build_book.sh --all -W
  --keep-going``) in this checkout: the execution cache and the capture cache start empty, so every page executes and
  every run is captured; the model cache (the GGUF files assembled into Hugging Face folders, under
  ``latentbook._files.cache_dir()``) and the ``.venv`` are kept, or the model cache is emptied with
  ``--empty-model-cache`` (``book_build_empty_cache``).

Per page: the execution seconds jupyter-cache records for it (a run captured by one page is read from the capture
cache by the next, so a page's time includes the captures it was the first to need); the rest of the wall time is
Sphinx (reading, writing, the vendored scripts). The 1-minute load average is sampled through the build: a build
beside other work is slower than the figures of an idle machine, and the table says how busy the machine was.
Usage::

    .venv/bin/python benchmarks/book_build.py                       # model cache kept (10-15 minutes here)
    .venv/bin/python benchmarks/book_build.py --empty-model-cache   # from nothing but the installed packages
    .venv/bin/python benchmarks/book_build.py --newcomer            # a fresh clone, an empty HOME: README's make book
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parents[1]
BUILD = ["bash", "tools/build_book.sh", "--all", "-W", "--keep-going"]
# The cold-build targets: model cache kept, model cache empty, a newcomer's make book (issue 52: setup included)
T = TypeVar("T")
TARGET_MINUTES = {"kept": 10.0, "empty": 12.0, "newcomer": 10.0}
# What a newcomer's machine has in HOME: the pip configuration naming the registries (part of the machine, not a cache)
MACHINE_CONFIG = (".config/pip/pip.conf", ".pip/pip.conf", ".pydistutils.cfg", ".npmrc")
# Variables that point at caches or a build state a newcomer does not have
NEWCOMER_UNSET = (
    "LATENTBOOK_CACHE",
    "LATENTBOOK_CAPTURE_CACHE",
    "LATENTBOOK_BOOK_FRESH",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "PIP_CACHE_DIR",
    "HF_HOME",
    "HF_HUB_CACHE",
    "TRANSFORMERS_CACHE",
    "VIRTUAL_ENV",
    "npm_config_cache",
)


class LoadSampler(threading.Thread):
    """The largest and the mean 1-minute load average, sampled every ``every`` seconds until ``stop()``."""

    def __init__(self, every: float = 15.0):
        super().__init__(daemon=True)
        self.every, self.samples, self._done = every, [], threading.Event()

    def run(self) -> None:
        while not self._done.is_set():
            self.samples.append(os.getloadavg()[0])
            self._done.wait(self.every)

    def stop(self) -> dict:
        self._done.set()
        self.join()
        return {
            "max": max(self.samples),
            "mean": sum(self.samples) / len(self.samples),
            "n": len(self.samples),
        }


def page_seconds(cache_folder: Path, root: Path = ROOT) -> dict[str, float]:
    """Execution seconds of each page, as jupyter-cache recorded them, by path relative to the checkout ``root``."""
    from jupyter_cache import get_cache

    records = get_cache(str(cache_folder)).list_cache_records()
    return {
        str(Path(record.uri).resolve().relative_to(root)): float(record.data.get("execution_seconds", "nan"))
        for record in records
    }


def _measured(run: Callable[[], T]) -> tuple[T, dict]:
    """``run()``, with its wall seconds, its child processes' CPU seconds and the load average sampled through it."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    sampler = LoadSampler()
    sampler.start()
    start = time.perf_counter()
    result = run()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return result, {"wall_s": wall, "cpu_s": cpu, "load_average": sampler.stop()}


def _pages(log: Path, root: Path, env: dict[str, str]) -> dict:
    """What the build log and the execution cache of the checkout ``root`` say of the pages."""
    text = log.read_text(errors="replace")
    done = re.findall(r"execute_pages: done in (\d+) s", text)
    warmed = re.findall(r"warm_book: done in (\d+) s", text)
    cache = root / "_build" / ".jupyter_cache"
    return {
        "pages": page_seconds(cache, root) if cache.is_dir() else {},
        # tools/execute_pages.py: the pages run this many at a time, for this long, before Sphinx renders them
        "page_jobs": int(env.get("LATENTBOOK_BOOK_JOBS", "2")),
        "pages_wall_s": float(done[-1]) if done else None,
        # tools/warm_book.py: the runs' shared captures and measurements, made before the pages, and each model's
        "shared_wall_s": float(warmed[-1]) if warmed else None,
        "shared_models": {m: float(s) for m, s in re.findall(r"^warm_book: (\S+): (\d+) s", text, re.M)},
        # pages Sphinx executed itself: those that ask for it (execution_mode: force), and any whose cache key
        # did not match the pre-executed notebook's (a regression of tools/execute_pages.py: they run twice)
        "pages_run_in_sphinx": sorted(
            str(Path(path).relative_to(root))
            for path in re.findall(r"^(\S+): Executing notebook", text, re.M)
        ),
    }


def build(empty_model_cache: bool, log: Path) -> dict:
    """Run the cold build; its wall and CPU seconds, exit status, load and the pages' execution seconds."""
    env = os.environ | {"LATENTBOOK_BOOK_FRESH": "1"}
    if empty_model_cache:
        env["LATENTBOOK_CACHE"] = tempfile.mkdtemp(prefix="latentbook-cache-")

    def run() -> int:
        with log.open("w") as out:
            return subprocess.run(BUILD, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT).returncode

    status, measured = _measured(run)
    return {"status": status, **measured, **_pages(log, ROOT, env)}


def newcomer_home(home: Path) -> Path:
    """An empty ``home`` holding only this machine's own configuration (``MACHINE_CONFIG``, copied where present)."""
    for name in MACHINE_CONFIG:
        source = Path.home() / name
        if source.is_file():
            (home / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, home / name)
    return home


def newcomer_env(home: Path) -> dict[str, str]:
    """This process's environment with ``HOME`` at ``home`` and every cache variable (``NEWCOMER_UNSET``) removed,
    the virtual environment's ``bin`` taken off ``PATH``."""
    env = {key: value for key, value in os.environ.items() if key not in NEWCOMER_UNSET}
    venv_bin = os.path.dirname(sys.executable)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != venv_bin)
    return env | {"HOME": str(home)}


def setup_steps(clone: Path, env: dict[str, str]) -> list[str]:
    """The command lines of the setup recipe, as ``make`` would run them in ``clone`` (``make -n setup``): a line
    continued with a backslash is one command with the next, as ``make`` gives it to one shell."""
    listed = subprocess.run(
        ["make", "-n", "setup"], cwd=clone, env=env, capture_output=True, text=True, check=True
    )
    commands, lines = [], []
    for line in listed.stdout.splitlines():
        lines.append(line)  # kept with its backslash: the shell joins it to the next line
        if not line.endswith("\\"):
            if "".join(lines).strip():
                commands.append("\n".join(lines))
            lines = []
    return commands


def _timed(command: list[str], cwd: Path, env: dict[str, str], out) -> tuple[int, float]:
    start = time.perf_counter()
    status = subprocess.run(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT).returncode
    return status, time.perf_counter() - start


def newcomer_build(log: Path) -> dict:
    """README's ``make book`` in a fresh clone of ``HEAD`` with an empty ``HOME``: each setup step's seconds, then the
    build's, its CPU seconds, the load, and the pages' execution seconds."""
    work = Path(tempfile.mkdtemp(prefix="latentbook-newcomer-"))
    clone, home = work / "latentbook", newcomer_home(work / "home")
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    env = newcomer_env(home)

    def run() -> tuple[int, list[dict]]:
        steps, status = [], 0
        with log.open("w") as out:
            for line in setup_steps(clone, env):
                out.write(f"$ {line}\n")
                out.flush()
                status, seconds = _timed(["bash", "-o", "pipefail", "-c", line], clone, env, out)
                steps.append({"step": line, "seconds": seconds})
                if status != 0:
                    return status, steps
            out.write("$ make book\n")
            out.flush()
            status, seconds = _timed(["make", "book"], clone, env, out)
            steps.append({"step": "make book (setup found done)", "seconds": seconds})
        return status, steps

    (status, steps), measured = _measured(run)
    record = {"status": status, **measured, "setup_steps": steps, **_pages(log, clone, env)}
    if status == 0:
        shutil.rmtree(work, ignore_errors=True)
    else:
        record["kept"] = str(work)  # a failed build is kept for a look
    return record


def _git_commit() -> str:
    run = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return run.stdout.strip() or "unknown"


TITLES = {
    "kept": "Cold book build (model cache kept)",
    "empty": "Cold book build (empty model cache)",
    "newcomer": "A newcomer's make book (a fresh clone, an empty HOME, setup included)",
}
STEMS = {"kept": "book_build", "empty": "book_build_empty_cache", "newcomer": "book_build_newcomer"}


def _setup_seconds(record: dict) -> float:
    """Seconds of the setup steps a newcomer's record timed (0 for a build in a checkout already set up)."""
    return sum(s["seconds"] for s in record.get("setup_steps", []) if not s["step"].startswith("make book"))


def _page_line(record: dict, executed: float) -> str:
    """Where the wall time went: the setup (a newcomer's), the pages (run ``page_jobs`` at a time when
    ``tools/execute_pages.py`` ran them before Sphinx), then Sphinx."""
    setup = _setup_seconds(record)
    parallel = record.get("pages_wall_s")
    rest = "Sphinx" if setup else "Sphinx and setup"
    before = f"setup {setup / 60:.1f} min; " if setup else ""
    shared = record.get("shared_wall_s")
    if shared is not None:  # made before the pages by tools/warm_book.py, which the pages then read
        models = ", ".join(f"{m} {s:.0f} s" for m, s in record.get("shared_models", {}).items())
        before += f"the runs' shared captures and measurements {shared / 60:.1f} min (`tools/warm_book.py`: {models}); "
        setup += shared
    if parallel is None:  # executed one after the other inside Sphinx
        return (
            f"{before}pages executing {executed / 60:.1f} min, {rest} "
            f"{(record['wall_s'] - setup - executed) / 60:.1f} min."
        )
    return (
        f"{before}pages executing {executed / 60:.1f} min of page time in {parallel / 60:.1f} min of wall, "
        f"{record['page_jobs']} at a time (`tools/execute_pages.py`); {rest} "
        f"{(record['wall_s'] - setup - parallel) / 60:.1f} min."
    )


def _setup_table(record: dict) -> list[str]:
    """The setup steps of a newcomer's record, each with its seconds (none for the other builds)."""
    steps = record.get("setup_steps", [])
    if not steps:
        return []
    # one line a cell: a continued command's lines joined, a pipe escaped (it would end the cell)
    escaped = [
        (" ".join(s["step"].replace("\\\n", " ").split()).replace("|", "\\|"), s["seconds"]) for s in steps
    ]
    rows = [f"| `{step}` | {seconds:.0f} |" for step, seconds in escaped]
    return ["| step | wall s |", "|---|---:|", *rows, ""]


def markdown(record: dict) -> str:
    """The table of ``record``: the build's totals, its target, the setup steps (a newcomer's), then every page by
    execution time."""
    pages = sorted(record["pages"].items(), key=lambda item: -item[1])
    executed = sum(seconds for _, seconds in pages)
    cache = record["model_cache"]
    target = TARGET_MINUTES[cache]
    minutes = record["wall_s"] / 60
    load = record["load_average"]
    lines = [
        f"# {TITLES[cache]}",
        "",
        f"{record['machine']['cpu']}, {record['machine']['cores']} cores; {record['date']}; commit "
        f"{record['git_commit'][:12]}; exit status {record['status']}. 1-minute load average during the build: "
        f"mean {load['mean']:.1f}, max {load['max']:.1f} (the build alone keeps it near 1-2; well above "
        f"{record['machine']['cores']}, other work shared the cores).",
        "",
        f"Wall {minutes:.1f} min against a target of {target:.0f} min ({'met' if minutes <= target else 'missed'}); "
        f"CPU {record['cpu_s'] / 60:.1f} min; {_page_line(record, executed)}",
        "",
        f"Pages Sphinx executed itself: {', '.join(record.get('pages_run_in_sphinx', [])) or 'none'}.",
        "",
        *_setup_table(record),
        "| page | executed s | share of page time |",
        "|---|---:|---:|",
    ]
    lines += [f"| {page} | {seconds:.0f} | {seconds / executed:.0%} |" for page, seconds in pages]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--empty-model-cache", action="store_true", help="assemble the models again too")
    mode.add_argument(
        "--newcomer", action="store_true", help="README's make book in a fresh clone with an empty HOME"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "bench", help="folder of the tables")
    args = parser.parse_args(argv)
    if not args.out.is_dir():
        parser.error(f"--out {args.out} is not a folder")
    log = ROOT / "_build-bench.log"
    mode = "newcomer" if args.newcomer else "empty" if args.empty_model_cache else "kept"
    record = newcomer_build(log) if args.newcomer else build(args.empty_model_cache, log)
    record |= {
        "model_cache": mode,
        "command": "make book" if args.newcomer else "LATENTBOOK_BOOK_FRESH=1 " + " ".join(BUILD),
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "git_commit": _git_commit(),
        "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count()},
        "python": sys.version.split()[0],
    }
    if record["status"] != 0:
        print(f"the build failed (exit {record['status']}); see {log}. Nothing written.", file=sys.stderr)
        return 1
    stem = STEMS[mode]
    for suffix, text in ((".json", json.dumps(record, indent=1) + "\n"), (".md", markdown(record))):
        temporary = args.out / f".{stem}{suffix}.tmp"
        temporary.write_text(text)
        temporary.replace(args.out / f"{stem}{suffix}")
    print(markdown(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
