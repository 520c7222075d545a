"""DESIGN.md, the page a newcomer reads first, checked against the repository so that it cannot drift silently.

Every name the page writes as code must exist as it is now: a path (``src/latentbook/...``, ``tools/*.py``,
``benchmarks/*.py``, ``tests/...``, ``book/...``, ``results/...``; globs and ``<placeholders>`` match any file), a
module ``latentbook.x.y`` or a wing's ``x.y`` (with at most a top-level name and a class member after it:
``study.evidence.weigh``), a name a script of ``tools/`` defines (``provenance.table_main``), a bare identifier of
the package or of ``tools/`` (``claim_rows``, ``Measurements``), a file at the repository's root (``_toc.yml``),
a ``make <target>`` of the Makefile and a ``latentbook <command>`` of the command line. Its import table is
``ALLOWED`` of ``tests/test_imports.py``, and README.md or CONTRIBUTING.md links it. Read from the text and the
source with ``re`` and ``ast``: nothing is imported.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

from latentbook._code_hash import module_files as module_names

from .test_imports import ALLOWED

ROOT = Path(__file__).resolve().parents[1]
DESIGN = ROOT / "DESIGN.md"
PATH_ROOTS = (
    "src/latentbook",
    "book",
    "notebooks",
    "tests",
    "tools",
    "benchmarks",
    "results",
    "binder",
    ".ci",
)
PATH = re.compile(
    r"(?<![\w./-])(?:" + "|".join(re.escape(p) for p in PATH_ROOTS) + r"|\.github)(?:/[\w.*<>-]*)+"
)
ROOT_FILE = re.compile(r"(?<![\w./-])[\w-]+\.(?:yml|yaml|toml|txt|md|cff|bib|cfg)(?![\w/])")
DOTTED = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?![\w])")
IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
MAKE = re.compile(r"(?<![\w-])make ([a-z][\w-]*)")
COMMAND = re.compile(r"(?<![\w./-])latentbook ([a-z][\w-]*)")
MAKE_TARGET = re.compile(r"^([A-Za-z0-9_.-]+(?:[ \t]+[A-Za-z0-9_.-]+)*)[ \t]*:(?!=)", re.MULTILINE)
SUBCOMMAND = re.compile(r"add_parser\(\s*\"([\w-]+)\"")


def code_texts(text: str) -> tuple[list[str], list[str]]:
    """The page's fenced code blocks, and its inline code spans (outside those blocks)."""
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)
    rest = re.sub(r"^```[^\n]*\n.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    return blocks, [span.replace("\n", " ") for span in re.findall(r"`([^`]+)`", rest)]


def _defined(body: list[ast.stmt]) -> dict[str, list[ast.stmt]]:
    """Names a module or class body defines (functions, classes, assignments, imports, also inside ``if`` and
    ``try``), each with the body of the class it names (empty for anything else)."""
    names: dict[str, list[ast.stmt]] = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names[node.name] = []
        elif isinstance(node, ast.ClassDef):
            names[node.name] = node.body
        elif isinstance(node, ast.Assign):
            names.update({n.id: [] for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)})
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = []
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update({(a.asname or a.name).split(".")[0]: [] for a in node.names})
        elif isinstance(node, (ast.If, ast.Try)):
            for part in (
                node.body,
                node.orelse,
                getattr(node, "finalbody", []),
                *[h.body for h in getattr(node, "handlers", [])],
            ):
                names.update(_defined(part))
    return names


@cache
def _tree(path: Path) -> list[ast.stmt]:
    return ast.parse(path.read_text(encoding="utf-8")).body


def _resolves(path: Path, rest: list[str]) -> bool:
    """Whether ``rest`` (a top-level name, then a member of that class) is defined in the module at ``path``."""
    body = _tree(path)
    for part in rest:
        names = _defined(body)
        if part not in names:
            return False
        body = names[part]
    return len(rest) <= 2


@cache
def _modules() -> dict[str, Path]:
    return module_names()


@cache
def _wings() -> frozenset[str]:
    return frozenset(name.split(".")[1] for name in _modules() if name.count("."))


@cache
def _tools() -> dict[str, Path]:
    return {path.stem: path for path in (ROOT / "tools").glob("*.py")}


@cache
def _identifiers() -> frozenset[str]:
    """Every module stem, and every name a module of the package or of ``tools/`` defines or a class of it holds."""
    found = {name.rpartition(".")[2] for name in _modules()} | set(_tools())
    for path in [*_modules().values(), *_tools().values()]:
        for name, body in _defined(_tree(path)).items():
            found |= {name, *_defined(body)}
    return frozenset(found)


def _dotted_problem(name: str) -> str | None:
    """Why the dotted ``name`` names nothing (None when it resolves, or is not one of the package's or tools')."""
    parts = name.split(".")
    if parts[0] == "lb":
        parts = ["latentbook", *parts[1:]]
    elif parts[0] in _wings():
        parts = ["latentbook", *parts]
    elif parts[0] in _tools() and parts[0] != "latentbook":
        return (
            None
            if _resolves(_tools()[parts[0]], parts[1:])
            else f"{name}: not defined in tools/{parts[0]}.py"
        )
    elif parts[0] != "latentbook":
        return None
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        if module in _modules():
            if _resolves(_modules()[module], parts[cut:]):
                return None
            return f"{name}: {'.'.join(parts[cut:])} is not defined in {module}"
    return f"{name}: no such module"


def _path_problem(token: str) -> str | None:
    token = token.rstrip(".")
    pattern = re.sub(r"<[^>]*>", "*", token).rstrip("/")
    if any(ch in pattern for ch in "*?["):
        return None if any(ROOT.glob(pattern)) else f"{token}: matches no file"
    return None if (ROOT / pattern).exists() else f"{token}: no such file or folder"


@cache
def _make_targets() -> frozenset[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return frozenset(t for line in MAKE_TARGET.findall(text) for t in line.split() if not t.startswith("."))


@cache
def _subcommands() -> frozenset[str]:
    return frozenset(SUBCOMMAND.findall((ROOT / "src/latentbook/cli_options.py").read_text(encoding="utf-8")))


def problems(text: str) -> list[str]:
    """Every name written as code in ``text`` that the repository lacks, with why."""
    blocks, spans = code_texts(text)
    found: list[str | None] = []
    for code in [*blocks, *spans]:
        found += [_path_problem(p) for p in PATH.findall(code)]
        found += [
            f"{f}: no such file at the repository's root"
            for f in ROOT_FILE.findall(code)
            if not (ROOT / f).is_file()
        ]
        found += [
            f"make {t}: no such target in the Makefile"
            for t in MAKE.findall(code)
            if t not in _make_targets()
        ]
        found += [
            f"latentbook {c}: no such command" for c in COMMAND.findall(code) if c not in _subcommands()
        ]
        without_paths = PATH.sub(" ", code)
        found += [_dotted_problem(d) for d in DOTTED.findall(without_paths)]
    for span in spans:
        name = span.removesuffix("()")
        plain = IDENTIFIER.fullmatch(name) and not name.startswith("__")
        if plain and ("_" in name.strip("_") or re.fullmatch(r"[A-Z]\w*[a-z]\w*", name)):
            found.append(
                None if name in _identifiers() else f"{name}: defined nowhere in the package or tools/"
            )
    return sorted({p for p in found if p})


@pytest.fixture(scope="module")
def design() -> str:
    assert DESIGN.is_file(), "DESIGN.md is missing: tests/test_imports.py and CONTRIBUTING.md cite it"
    return DESIGN.read_text(encoding="utf-8")


def test_everything_the_page_names_exists(design):
    assert problems(design) == []


def test_the_page_names_enough_to_be_checked(design):
    """The checks above see the page's names: a page whose code spans stopped parsing would pass them vacuously."""
    blocks, spans = code_texts(design)
    code = " ".join([*blocks, *spans])
    assert len({m for m in DOTTED.findall(PATH.sub(" ", code)) if m.startswith("latentbook.")}) >= 20
    assert {"tools/calibrate_planted.py", "tools/build_book.sh", "tests/built_book.py"} <= set(
        PATH.findall(code)
    )
    assert {"book", "test", "lint"} <= set(MAKE.findall(code))


def test_the_checker_reports_what_is_missing():
    text = (
        "`latentbook.analysis.no_such_module`, `study.evidence.no_such_rule`, `tools/no_such_tool.py`, "
        "`benchmarks/no_such_bench.py`, `make no-such-target`, `latentbook no-such-command`, `no_such_name`, "
        "`provenance.no_such_main`, `results/no_such_*`, `NoSuchFile.toml`; and what exists: "
        "`latentbook.study.evidence.weigh`, `study.rows.claim_rows`, `src/latentbook/analysis/verdict.py`, "
        "`tools/provenance.py`, `make book`, `latentbook verdict --csv`, `claim_rows`, `results/calibration/*.json`"
    )
    found = problems(text)
    assert len(found) == 10, found
    assert all("no_such" in p or "no-such" in p or "NoSuch" in p for p in found), found


def test_the_import_table_is_the_rule_that_test_imports_enforces(design):
    lines = design.splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(r"\|\s*wing\s*\|\s*may import\s*\|", line))
    table: dict[str, set[str]] = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        wings, allowed = line.strip("|").split("|")
        for wing in re.findall(r"`([^`]+)`", wings):
            assert wing not in table, f"{wing} is listed twice in DESIGN.md's import table"
            table[wing] = set(re.findall(r"`([^`]+)`", allowed))
    assert table == ALLOWED


def test_the_page_stays_one_page(design):
    assert len(design.splitlines()) <= 250, "DESIGN.md is the one page a newcomer reads first: keep it short"


def test_the_readme_or_contributing_links_the_design():
    link = re.compile(r"\]\((?:\./)?DESIGN\.md(?:#[\w-]+)?\)")
    assert any(
        link.search((ROOT / name).read_text(encoding="utf-8")) for name in ("README.md", "CONTRIBUTING.md")
    )


def test_the_import_test_cites_the_design():
    assert "DESIGN.md" in (ROOT / "tests" / "test_imports.py").read_text(encoding="utf-8")
