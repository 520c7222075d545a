"""Hashes of code that leave out what cannot change what it computes, its docstrings, comments and blank lines, so
that rewording a docstring does not make a calibration record or a cached capture stale.

Usage: ``code_hash([module, function, SomeClass], extra=repr(CONSTANTS))``, ``modules_hash(["latentbook.x", ...])``
or ``code_text(source)``. A long-run record keeps ``module_hashes(producer)``: one hash per module that its producer
imports, read from the import graph (``imported_modules``), so that ``stale_because`` can name the module that
changed.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import io
import json
import textwrap
import tokenize
from collections.abc import Iterable, Mapping
from pathlib import Path

_DEFINITIONS = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _docstring_starts(tree: ast.AST) -> set[tuple[int, int]]:
    """Where each docstring (a string statement opening a module, class or function body) starts."""
    starts = set()
    for node in ast.walk(tree):
        if isinstance(node, _DEFINITIONS) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                if isinstance(first.value.value, str):
                    starts.add((first.lineno, first.col_offset))
    return starts


def code_text(source: str) -> str:
    """``source`` without its docstrings, comments, blank lines and trailing spaces: equal for two sources that
    differ only in those. Made from the text itself (not from its tokens or syntax tree, whose form changes
    between Python versions), so the same file gives the same text on any Python."""
    source = textwrap.dedent(source)
    docstrings = _docstring_starts(ast.parse(source))
    line_starts = [0]
    for line in source.splitlines(keepends=True):
        line_starts.append(line_starts[-1] + len(line))
    cuts = [
        (line_starts[token.start[0] - 1] + token.start[1], line_starts[token.end[0] - 1] + token.end[1])
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT or (token.type == tokenize.STRING and token.start in docstrings)
    ]
    for start, end in reversed(cuts):
        source = source[:start] + source[end:]
    return "\n".join(line.rstrip() for line in source.splitlines() if line.strip())


def code_hash(parts: Iterable[object], extra: str = "") -> str:
    """sha256 of ``code_text`` of each part's source (modules, classes, functions; ``inspect.getsource``), in order,
    and ``extra`` (the constants the code reads, as text)."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(code_text(inspect.getsource(part)).encode() + b"\0")
    digest.update(extra.encode())
    return digest.hexdigest()


def modules_hash(names: Iterable[str]) -> str:
    """``code_hash`` of the modules named (``"latentbook.analysis.omega"``, ...), each imported, in the order given."""
    import importlib

    return code_hash(importlib.import_module(name) for name in names)


# --- the import graph: which modules a record's producer runs -------------------------------------------------

_PACKAGE_ROOT = Path(__file__).resolve().parent


def module_files() -> dict[str, Path]:
    """Every module of latentbook by name (``"latentbook.analysis.omega"``; a package by its own name) -> its file."""
    names = {}
    for path in sorted(_PACKAGE_ROOT.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = list(path.relative_to(_PACKAGE_ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def imports_of(name: str, path: Path, names: Iterable[str]) -> set[str]:
    """The latentbook modules that the module ``name`` (file ``path``) imports, read with ``ast`` from every
    ``import`` statement, those inside functions too: ``from . import x`` is the module ``x``, and ``from .x import
    f`` the module ``x``; a name that is no module (``from ..analysis import verdict_table_of``) is its package."""
    known = set(names)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            parts = package.split(".")
            base = parts[: len(parts) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            submodules = [f"{module}.{alias.name}" for alias in node.names]
            targets = [m for m in submodules if m in known]
            if len(targets) < len(submodules):
                targets.append(module)
        else:
            continue
        found |= {target for target in targets if target in known and target != name}
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the latentbook modules it imports (``imports_of``), for every module of the package."""
    files = module_files()
    return {name: imports_of(name, path, files) for name, path in files.items()}


def imported_modules(root: str) -> tuple[str, ...]:
    """``root`` and every latentbook module it imports, directly or through others (the import graph's closure),
    sorted: the code a producer such as ``latentbook.study.planted_calibration`` can run."""
    graph = import_graph()
    if root not in graph:
        raise KeyError(f"{root!r} is not a module of latentbook")
    seen: set[str] = set()
    stack = [root]
    while stack:
        module = stack.pop()
        if module not in seen:
            seen.add(module)
            stack.extend(graph[module])
    return tuple(sorted(seen))


def module_hashes(root: str) -> dict[str, str]:
    """sha256 of ``code_text`` of each module of ``imported_modules(root)``, by name: what a long-run record keeps
    of the code that made it, so that a change can be named module by module (``changed_modules``)."""
    files = module_files()
    return {
        name: hashlib.sha256(code_text(files[name].read_text(encoding="utf-8")).encode()).hexdigest()
        for name in imported_modules(root)
    }


def digest(hashes: Mapping[str, str]) -> str:
    """One sha256 of ``module_hashes``' map (its names and hashes, sorted): equal exactly when the maps are."""
    return hashlib.sha256(json.dumps(dict(sorted(hashes.items()))).encode()).hexdigest()


def changed_modules(recorded: Mapping[str, str], now: Mapping[str, str]) -> list[str]:
    """The modules whose code differs between two ``module_hashes`` maps: changed, added or no longer imported."""
    return sorted(name for name in set(recorded) | set(now) if recorded.get(name) != now.get(name))


def stale_because(recorded: Mapping[str, str] | None, now: Mapping[str, str]) -> str | None:
    """None when ``recorded`` is ``now``; else why not, naming the modules: "stale: latentbook.analysis.omega
    changed" (with "and N more" past three), or that the record keeps no map of its modules."""
    if recorded is None:
        return "stale: recorded without the hashes of its modules"
    changed = changed_modules(recorded, now)
    if not changed:
        return None
    named = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
    return f"stale: {named} changed"
