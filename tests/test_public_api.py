"""The public API: every package of latentbook declares ``__all__``, and the book, the labs and the course call only
what some ``__all__`` exports.

A reference ``latentbook.a.b.c`` is exported when each step is: ``a`` is a wing (a package of latentbook) or, from
``import latentbook as lb``, a name of the root's ``__all__`` (``lb.plots``); every later step is in the
``__all__`` of the package or module before it, or, in a module without ``__all__``, a name it defines that does
not start with ``_`` (``from latentbook.analysis.verdict import MIN_POWER``: ``verdict`` is in
``latentbook.analysis.__all__``, ``MIN_POWER`` is defined in ``analysis/verdict.py``). The walk stops at the first
step that is not a module: the attributes of a function or a class are not checked.

Read, with ``ast``, from the code cells of every page of ``book/``, the labs (``notebooks/``, the students' copies
too), the Python blocks of their Markdown (exercise solutions) and of README.md, and every module of
``latentbook.course``: ``from latentbook.x import y``, ``import latentbook.x as y`` and attribute uses of the names
they bind (``lb.prompts.load``, ``omega_tables.reference_table``). A name a file binds again (``report = ...``) is
not followed in its attribute uses.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import textwrap
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType

import jupytext
import pytest

from latentbook._code_hash import module_files as module_names

# the front matter of a MyST chapter, as jupytext writes it
MYST_HEADER = textwrap.dedent(
    """\
    ---
    jupytext:
      text_representation:
        extension: .md
        format_name: myst
    kernelspec:
      display_name: Python 3
      language: python
      name: python3
    ---

    """
)
ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "latentbook"


def user_files() -> list[Path]:
    """What a reader, a student or a teacher runs: the book's pages, the labs, the course modules, the README."""
    return sorted(
        [
            *(ROOT / "book").rglob("*.md"),
            *(ROOT / "notebooks").glob("*.ipynb"),
            *(ROOT / "notebooks" / "student").glob("*.ipynb"),
            *(ROOT / "notebooks").glob("*.md"),
            *(ROOT / "src" / "latentbook" / "course").glob("*.py"),
            ROOT / "README.md",
        ]
    )


# --- what the package exports ------------------------------------------------------------------------------------


@cache
def _modules() -> dict[str, Path]:
    return module_names()


def _is_package(module: str) -> bool:
    return _modules()[module].name == "__init__.py"


@cache
def _tree(module: str) -> ast.Module:
    return ast.parse(_modules()[module].read_text(encoding="utf-8"))


def _bound(body: list[ast.stmt]) -> set[str]:
    """Names a module body binds at its top level (also inside ``if`` and ``try``)."""
    names: set[str] = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.If, ast.Try)):
            parts = [node.body, node.orelse, getattr(node, "finalbody", [])]
            parts += [h.body for h in getattr(node, "handlers", [])]
            for part in parts:
                names |= _bound(part)
    return names


@cache
def _defined(module: str) -> frozenset[str]:
    return frozenset(_bound(_tree(module).body))


@cache
def exports(module: str) -> tuple[str, ...] | None:
    """``__all__`` of ``module`` (None when it declares none): a package's read from the package itself (they are
    light to import), a plain module's from its source, so that no heavy module is imported."""
    if _is_package(module):
        names = getattr(importlib.import_module(module), "__all__", None)
        return None if names is None else tuple(names)
    for node in _tree(module).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return tuple(ast.literal_eval(node.value))
    return None


@cache
def wings() -> frozenset[str]:
    return frozenset(name.split(".")[1] for name in _modules() if name.count(".") == 1 and _is_package(name))


def _next_module(module: str, part: str, attribute: bool) -> str | None:
    """The module ``module.part`` names (None for any other object). Through the root as an attribute (``lb.x``)
    it is what the root binds: ``lb.plots`` is ``latentbook.view.plots``, ``lb.omega`` a function."""
    if module == PACKAGE and attribute:
        root = importlib.import_module(PACKAGE)
        if part in getattr(root, "_LAZY", {}):
            return root._LAZY[part]
        value = vars(root).get(part)
        if value is not None:
            return value.__name__ if isinstance(value, ModuleType) else None
    name = f"{module}.{part}"
    return name if name in _modules() else None


def problem(parts: tuple[str, ...], attribute: bool) -> str | None:
    """Why ``latentbook.<parts>`` is not exported (None when it is). ``attribute``: reached as ``lb.<parts>``, not
    by an import statement (which reaches the wings themselves)."""
    module = PACKAGE
    for part in parts:
        name = f"{module}.{part}"
        listed = exports(module)
        if module == PACKAGE and not attribute and part in wings():
            pass
        elif listed is not None:
            if part not in listed:
                return f"{module} does not export {part} (its __all__)"
        elif _is_package(module):
            return f"{module} declares no __all__"
        elif part.startswith("_"):
            return f"{name} is private"
        elif part not in _defined(module):
            return f"{name} does not exist"
        following = _next_module(module, part, attribute)
        if following is None:
            return None
        module = following
    return None


# --- what a file imports -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Use:
    parts: tuple[str, ...]  # after "latentbook"
    attribute: bool  # reached as an attribute of the root (``lb.x``), not by an import statement
    text: str  # how the file writes it

    def __str__(self) -> str:
        return self.text


FENCE = re.compile(
    r"^(?P<indent>[ \t]*)(?P<ticks>`{3,}|~{3,})[ \t]*(?:\{code-block\}[ \t]*)?(?:python3?|ipython3?|py)[ \t]*\n"
    r"(?P<body>.*?)^(?P=indent)(?P=ticks)[ \t]*$",
    flags=re.MULTILINE | re.DOTALL,
)
INDENTED = re.compile(r"(?:^(?:[ ]{4}|\t).*\n?|^[ \t]*\n)+", flags=re.MULTILINE)
IMPORT_LINE = re.compile(
    r"^[ \t]*((?:from[ \t]+latentbook[\w.]*[ \t]+import[ \t]+.+)|(?:import[ \t]+latentbook.*))$"
)


def _parse(source: str) -> ast.Module | None:
    """Python source with IPython's line magics and shell lines blanked; None for anything else (a %%bash cell)."""
    if source.lstrip().startswith("%%"):
        return None
    lines = ["" if re.match(r"\s*[%!]", line) else line for line in source.splitlines()]
    try:
        return ast.parse(textwrap.dedent("\n".join(lines)))
    except SyntaxError:
        return None


def _markdown_code(text: str) -> list[ast.Module]:
    """The Python a Markdown cell shows: its ```python blocks, the indented code of its directives (an exercise's
    solution) and, where a block does not parse, its import lines one by one."""
    trees = []
    for block in [m.group("body") for m in FENCE.finditer(text)] + INDENTED.findall(text):
        tree = _parse(block)
        if tree is not None:
            trees.append(tree)
    for match in IMPORT_LINE.finditer(text):
        tree = _parse(match.group(1))
        if tree is not None:
            trees.append(tree)
    return trees


def _trees(path: Path) -> list[ast.Module]:
    if path.suffix == ".py":
        return [ast.parse(path.read_text(encoding="utf-8"))]
    if path.name == "README.md":
        return _markdown_code(path.read_text(encoding="utf-8"))
    trees = []
    for cell in jupytext.read(path).cells:
        if cell.cell_type == "code":
            tree = _parse(cell.source)
            trees += [tree] if tree is not None else _markdown_code(cell.source)
        elif cell.cell_type == "markdown":
            trees += _markdown_code(cell.source)
    return trees


def _package_of(path: Path) -> str | None:
    """The package a module of ``src/latentbook`` resolves relative imports against."""
    if path.suffix != ".py":
        return None
    parts = list(path.resolve().relative_to(ROOT / "src").with_suffix("").parts)
    return ".".join(parts[:-1])


def uses(path: Path) -> list[Use]:
    """Every reference to latentbook that ``path`` makes: its imports, and the attributes it reads of them."""
    trees = _trees(path)
    package = _package_of(path)
    aliases: dict[str, tuple[str, ...]] = {}  # a bound name -> what it names, after "latentbook"
    found: list[Use] = []
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1] if package else []
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                if module != PACKAGE and not module.startswith(f"{PACKAGE}."):
                    continue
                prefix = tuple(module.split(".")[1:])
                for alias in node.names:
                    parts = (*prefix, alias.name)
                    found.append(Use(parts, False, f"from {module} import {alias.name}"))
                    aliases[alias.asname or alias.name] = parts
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name != PACKAGE and not alias.name.startswith(f"{PACKAGE}."):
                        continue
                    parts = tuple(alias.name.split(".")[1:])
                    if parts:
                        found.append(Use(parts, False, f"import {alias.name}"))
                    if alias.asname:
                        aliases[alias.asname] = parts
                    else:  # `import latentbook.x` binds `latentbook`
                        aliases[PACKAGE] = ()
    rebound = {
        node.id
        for tree in trees
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del))
    } | {node.arg for tree in trees for node in ast.walk(tree) if isinstance(node, ast.arg)}
    for tree in trees:
        inner = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
        for node in ast.walk(tree):  # whole chains only: lb.a.b, not its lb.a
            if not isinstance(node, ast.Attribute) or id(node) in inner:
                continue
            chain, base = [], node
            while isinstance(base, ast.Attribute):
                chain.append(base.attr)
                base = base.value
            if isinstance(base, ast.Name) and base.id in aliases and base.id not in rebound:
                chain.reverse()
                through_root = aliases[base.id] == ()  # lb.x: what the root binds, not an import path
                found.append(Use((*aliases[base.id], *chain), through_root, ".".join([base.id, *chain])))
    return sorted(set(found), key=lambda use: (use.text, use.parts))


def unexported(path: Path) -> list[str]:
    """``"<file>: <reference>: <why>"`` for each reference of ``path`` that no ``__all__`` exports."""
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    return [
        f"{where}: {use}: {why}"
        for use in uses(path)
        if (why := problem(use.parts, use.attribute)) is not None
    ]


# --- the tests ---------------------------------------------------------------------------------------------------


def test_every_package_declares_all():
    """Each wing (and each package inside one) says in ``__all__`` what a user, a chapter or a lab may call."""
    missing = [name for name in _modules() if _is_package(name) and exports(name) is None]
    assert missing == [], f"packages without __all__: {missing}"


def test_every_name_in_every_all_exists():
    """A name in ``__all__`` is an attribute of its module, or one of its package's modules (``analysis.omega``);
    none is private, none listed twice."""
    wrong = []
    for name in sorted(_modules()):
        listed = exports(name)
        if listed is None:
            continue
        module = importlib.import_module(name)
        wrong += [f"{name}: {n} listed twice" for n in sorted(set(listed)) if listed.count(n) > 1]
        for n in listed:
            if n.startswith("_") and not (n.startswith("__") and n.endswith("__")):
                wrong.append(f"{name}: {n} is private")
            elif not hasattr(module, n) and not (
                _is_package(name) and importlib.util.find_spec(f"{name}.{n}") is not None
            ):
                wrong.append(f"{name}: {n} does not exist")
    assert wrong == []


@pytest.mark.parametrize("path", user_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_book_labs_and_course_call_only_exported_names(path):
    problems = unexported(path)
    assert problems == [], "export these (a wing's __all__) or import an exported name:\n" + "\n".join(
        problems
    )


def test_the_scan_reads_every_file_that_imports_latentbook():
    """A file that imports latentbook yields references (guards against a parser that silently finds nothing)."""
    importing = re.compile(r"from\s+latentbook[\w.]*\s+import\s|import\s+latentbook\.|from \.+\w* import")
    silent = [
        str(path.relative_to(ROOT))
        for path in user_files()
        if importing.search(path.read_text(encoding="utf-8")) and not uses(path)
    ]
    assert silent == []
    course = {use.text for use in uses(ROOT / "src" / "latentbook" / "course" / "__init__.py")}
    assert "from latentbook.course import lab1" in course  # `from . import lab1`, resolved


def test_the_scan_reads_every_kind_of_cell(tmp_path):
    """Imports in one code cell and their attributes used in another, ```python blocks and indented solutions in
    Markdown, a notebook's cells and a plain Markdown file's blocks."""
    chapter = tmp_path / "chapter.md"
    chapter.write_text(
        MYST_HEADER
        + textwrap.dedent(
            """\
            ```{code-cell} ipython3
            import latentbook as lb
            from latentbook.study.chapters import omega_tables as tables
            ```

            Prose, then a block:

            ```python
            lb.widgets.explore()
            ```

            ```{code-cell} ipython3
            references = tables.reference_table(captures)
            ```

            ```{solution} ex
            :class: dropdown

                from latentbook.ladder import diagnostics
                probes = diagnostics.probe_set(spec, 512)
            ```
            """
        )
    )
    assert {use.text for use in uses(chapter)} == {
        "from latentbook.study.chapters import omega_tables",
        "lb.widgets.explore",
        "tables.reference_table",
        "from latentbook.ladder import diagnostics",
        "diagnostics.probe_set",
    }
    lab = tmp_path / "lab.ipynb"
    cells = "# %%\nfrom latentbook.course import lab1\n\n# %%\nlab1.check_gibbs(gibbs)\n"
    jupytext.write(jupytext.reads(cells, fmt="py:percent"), lab)
    assert {use.text for use in uses(lab)} == {"from latentbook.course import lab1", "lab1.check_gibbs"}
    readme = tmp_path / "README.md"
    readme.write_text(
        "# Read me\n\n```bash\nmake book\n```\n\n```python\nimport latentbook.prompts as p\n```\n"
    )
    assert {use.text for use in uses(readme)} == {"import latentbook.prompts"}


def test_the_check_names_the_file_and_the_unexported_name(tmp_path):
    """A chapter (or a lab) that imports what no ``__all__`` exports fails, naming the file and the name."""
    chapter = tmp_path / "chapter.md"
    chapter.write_text(
        MYST_HEADER
        + textwrap.dedent(
            """\
            # A chapter

            ```{code-cell} ipython3
            import latentbook as lb
            from latentbook.analysis import cloud_families, omega
            from latentbook.analysis.omega import no_such_function, _private
            import latentbook.view.report_figure as figure
            from latentbook.errors import InvalidInputError
            from latentbook.study.chapters import omega_tables
            ```

            ```{code-cell} ipython3
            lb.plots.no_such_plot()
            lb.prompts.load("general")
            omega_tables.reference_table(captures)
            omega_tables._private_helper()
            ```

            ```{solution} ex
                from latentbook.ladder import jobs
            ```
            """
        )
    )
    problems = unexported(chapter)
    assert problems == [
        f"{chapter}: from latentbook.analysis import cloud_families: latentbook.analysis does not export "
        "cloud_families (its __all__)",
        f"{chapter}: from latentbook.analysis.omega import _private: latentbook.analysis.omega._private is private",
        f"{chapter}: from latentbook.analysis.omega import no_such_function: "
        "latentbook.analysis.omega.no_such_function does not exist",
        f"{chapter}: from latentbook.errors import InvalidInputError: latentbook does not export errors (its "
        "__all__)",
        f"{chapter}: from latentbook.ladder import jobs: latentbook.ladder does not export jobs (its __all__)",
        f"{chapter}: import latentbook.view.report_figure: latentbook.view does not export report_figure (its "
        "__all__)",
        f"{chapter}: lb.plots.no_such_plot: latentbook.view.plots.no_such_plot does not exist",
        f"{chapter}: omega_tables._private_helper: latentbook.study.chapters.omega_tables._private_helper is "
        "private",
    ]
    lab = tmp_path / "lab.ipynb"
    notebook = jupytext.reads("from latentbook.view import report_figure\n", fmt="py:percent")
    jupytext.write(notebook, lab)
    assert unexported(lab) == [
        f"{lab}: from latentbook.view import report_figure: latentbook.view does not export report_figure (its "
        "__all__)"
    ]
