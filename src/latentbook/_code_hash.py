"""Hashes of code that leave out what cannot change what it computes, its docstrings, comments and blank lines, so
that rewording a docstring does not make a calibration record or a cached capture stale.

Usage: ``code_hash([module, function, SomeClass], extra=repr(CONSTANTS))``, ``modules_hash(["latentbook.x", ...])``
or ``code_text(source)``.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import io
import textwrap
import tokenize
from collections.abc import Iterable

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
