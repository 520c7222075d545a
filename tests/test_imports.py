"""The package's import graph: no cycle between modules, and each wing imports only the wings to its left.

The rule is drawn in DESIGN.md ("The one-way flow"): models -> capturing -> analysis -> study -> view, with
prompts and the shared helpers below them, the ladder beside study, and the CLI and the package's ``__init__``
on top; its table is ``ALLOWED`` below (``tests/test_design_doc.py`` keeps the two equal). The graph is read
from the source with ``ast`` (every ``import``, also those inside functions), so a lazy import cannot hide a
cycle: ``_code_hash.import_graph``, the graph the long-run records hash their producers' modules from.
"""

from __future__ import annotations

import pytest

from latentbook._code_hash import import_graph

# What each wing may import (besides itself). Helpers first, then the one-way flow (DESIGN.md's table).
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "_version": set(),
    "_files": {"errors"},
    "_text": set(),  # plain-text tables of the command line's output
    "_code_hash": set(),  # source hashes without docstrings (calibration records, the capture cache)
    "figure_standard": set(),  # the figure checker and the legend placer, below every wing that draws
    "prompts": {"errors", "_files"},
    "models": {"errors", "_files", "prompts"},  # prompts lie below every wing (planted models' vocabulary)
    "capturing": {"_code_hash", "errors", "_files", "_version", "models", "prompts"},
    "analysis": {"_code_hash", "errors", "_files", "capturing", "prompts"},
    "ladder": {
        "_code_hash",
        "errors",
        "_files",
        "_version",
        "models",
        "capturing",
        "analysis",
        "prompts",
        "figure_standard",
    },
    "study": {
        "_code_hash",
        "errors",
        "_files",
        "_text",
        "models",
        "capturing",
        "analysis",
        "prompts",
        "ladder",
    },
    "view": {
        "errors",
        "_files",
        "_text",
        "models",
        "capturing",
        "analysis",
        "prompts",
        "study",
        "ladder",
        "figure_standard",
    },
    "course": {
        "errors",
        "_files",
        "models",
        "capturing",
        "analysis",
        "prompts",
        "study",
        "view",
        "figure_standard",
    },
}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each a cycle of imports."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def wing(module: str) -> str:
    return module.split(".")[1] if module.count(".") else "<root>"


def test_no_module_imports_one_that_imports_it_back():
    assert cycles(import_graph()) == []


def test_each_wing_imports_only_the_wings_to_its_left():
    wrong = sorted(
        f"{a} imports {b}"
        for a, targets in import_graph().items()
        for b in targets
        if wing(a) in ALLOWED and wing(b) != wing(a) and wing(b) not in ALLOWED[wing(a)]
    )
    assert wrong == []


def test_the_walker_sees_cycles_and_lazy_imports():
    """The checker itself: a cycle through a function-level import is found, ``from . import x`` is ``x``."""
    graph = {"p": set(), "p.a": {"p.b"}, "p.b": {"p.a"}, "p.c": set()}
    assert cycles(graph) == [["p.a", "p.b"]]
    real = import_graph()
    assert "latentbook.capturing.distributed" in real["latentbook.capturing.capture"]
    assert "latentbook.capturing" not in real["latentbook.capturing.capture"]
    assert "latentbook.analysis.cooling" in real["latentbook.study.measure"]  # imported inside measure()


@pytest.mark.parametrize("module", ["cli", "__main__", "<root>"])
def test_the_top_is_not_imported_from_below(module):
    below = [
        a for a, targets in import_graph().items() if wing(a) in ALLOWED for b in targets if wing(b) == module
    ]
    assert below == []


MAX_CODE_LINES = 600


def test_no_module_holds_more_than_600_lines_of_code():
    """Small modules with one job (issue 51): at most ``MAX_CODE_LINES`` lines of code each, counted as the record
    hashes count them (``code_text``: docstrings, comments and blank lines aside, so that an example in a docstring
    never pushes a module over)."""
    from latentbook._code_hash import code_text, module_files

    sizes = {
        name: len(code_text(path.read_text(encoding="utf-8")).splitlines())
        for name, path in module_files().items()
    }
    assert {name: n for name, n in sizes.items() if n > MAX_CODE_LINES} == {}
    assert (
        max(sizes.values()) > MAX_CODE_LINES // 2
    )  # the count reads the code: the largest module is not tiny
