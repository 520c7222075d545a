"""``import latentbook`` and every module of the package work where POSIX-only modules do not exist (Windows: the
course runs on students' laptops).

In a fresh interpreter, ``fcntl``, ``resource``, ``pwd``, ``grp`` and ``termios`` are made unimportable
(``sys.modules[name] = None``: ``import fcntl`` then raises ImportError, as on Windows) before anything else is
imported; then the package, every module of it (read from the source tree, as ``tests/test_imports.py`` does)
and ``python -m latentbook --version`` are run, and the helpers of ``latentbook._files`` that have a POSIX path
(the lock, which falls back to ``filelock``; the home folder, which falls back from ``pwd``) are called.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from latentbook._code_hash import module_files as module_names

BLOCKED = ("fcntl", "resource", "pwd", "grp", "termios")

SCRIPT = textwrap.dedent(
    """
    import sys

    BLOCKED = {blocked!r}
    for name in BLOCKED:
        sys.modules[name] = None  # `import name` now raises ImportError

    import importlib
    import json
    import os
    import runpy
    import tempfile
    import warnings
    from pathlib import Path

    # filelock says so when fcntl is missing on a POSIX system; on Windows it has its own lock.
    warnings.filterwarnings("ignore", message="only soft file lock is available")
    report = {{"blocked": [], "failed": [], "checks": []}}
    for name in BLOCKED:
        try:
            importlib.import_module(name)
        except ImportError:
            report["blocked"].append(name)

    import latentbook

    for name in {modules!r}:
        try:
            importlib.import_module(name)
        except Exception as exc:
            report["failed"].append(f"{{name}}: {{type(exc).__name__}}: {{exc}}")

    sys.argv = ["latentbook", "--version"]
    try:
        runpy.run_module("latentbook", run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (0, None):
            report["failed"].append(f"python -m latentbook --version exits with {{exc.code!r}}")
    except Exception as exc:
        report["failed"].append(f"python -m latentbook --version: {{type(exc).__name__}}: {{exc}}")

    from latentbook import _files
    from latentbook.errors import LockedError

    report["checks"].append(["fcntl left out", _files.fcntl is None])
    folder = Path(tempfile.mkdtemp())
    lock = folder / "run.lock"
    with _files.exclusive_lock(lock, what="the test", fix="wait"):
        try:
            with _files.exclusive_lock(lock, what="the test", fix="wait"):
                held = False
        except LockedError:
            held = True
    report["checks"].append(["a held lock refuses a second holder", held])
    with _files.exclusive_lock(lock, what="the test", fix="wait"):
        report["checks"].append(["a released lock is taken again", True])
    with _files.computing(folder / "entry.bin"):
        report["checks"].append(["computing() locks a cache entry", True])
    os.environ["HOME"] = ""  # no usable $HOME and no password database: the temporary folder
    os.environ.pop("XDG_CACHE_HOME", None)
    os.environ.pop("LATENTBOOK_CACHE", None)
    expected = Path(tempfile.gettempdir()) / ".cache" / "latentbook"
    report["checks"].append(["the cache folder without pwd", _files.cache_dir() == expected])
    print(json.dumps(report))
    """
)


def _run(modules: list[str], folder) -> dict:
    """Run ``SCRIPT`` on ``modules`` in ``folder`` (its working folder and temporary folder); its report."""
    env = {**os.environ, "TMPDIR": str(folder), "MPLBACKEND": "Agg"}
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(blocked=BLOCKED, modules=modules)],
        capture_output=True,
        text=True,
        env=env,
        cwd=folder,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["blocked"] == list(BLOCKED)  # the block itself works
    return report


def test_every_module_imports_without_posix_only_modules(tmp_path):
    modules = sorted(name for name in module_names() if name != "latentbook.__main__")  # run, not imported
    report = _run(modules, tmp_path)
    assert report["failed"] == [], "\n".join(report["failed"])
    assert [name for name, passed in report["checks"] if not passed] == []
    assert len(report["checks"]) == 5


def test_a_module_that_needs_fcntl_fails_the_check(tmp_path):
    """The check itself: a module importing ``fcntl`` at its top (here one beside the script) is reported."""
    (tmp_path / "posix_probe.py").write_text("import fcntl\n", encoding="utf-8")
    report = _run(["posix_probe"], tmp_path)
    [failure] = report["failed"]  # "posix_probe: ModuleNotFoundError: import of fcntl halted; ..."
    assert failure.startswith("posix_probe: ") and "fcntl" in failure
