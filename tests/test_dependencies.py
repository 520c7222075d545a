"""Every third-party package the source imports when a module loads is one pyproject.toml declares (or one a
declared package requires), so ``pip install latentbook`` gives a package that imports: a dependency that came only
through another one (threadpoolctl through scikit-learn) breaks the day that one is dropped."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "latentbook"
VIEW_WINGS = ("view", "course", "figure_standard")  # modules that need the ``view`` extra (figures, widgets)


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;(]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _declared(extra: str | None) -> set[str]:
    """The distributions a plain install (``extra=None``) or ``latentbook[extra]`` brings, with what each requires."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = list(project["dependencies"])
    if extra is not None:
        wanted += project["optional-dependencies"][extra]
    names = {_name(r) for r in wanted if not r.startswith("latentbook")}
    for requirement in wanted:  # "latentbook[models,view]": the extras it names
        if requirement.startswith("latentbook["):
            for other in requirement.split("[", 1)[1].rstrip("]").split(","):
                names |= {_name(r) for r in project["optional-dependencies"][other]}
    required = set()
    for name in names:
        try:
            required |= {_name(r) for r in importlib.metadata.requires(name) or () if "extra ==" not in r}
        except importlib.metadata.PackageNotFoundError:
            pass
    return names | required


def _module_level_imports(path: Path) -> set[str]:
    """Top-level names of the absolute imports a module runs when it loads (not inside a function or an
    ``if TYPE_CHECKING:`` block)."""
    found = set()

    def visit(statements):
        for node in statements:
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
            elif isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.unparse(node.test):
                visit(node.body + node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body + node.orelse + node.finalbody)

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    return found


def _third_party(names: set[str]) -> set[str]:
    return {n for n in names if n not in sys.stdlib_module_names and n not in ("latentbook", "__future__")}


@pytest.mark.parametrize("extra", [None, "view"])
def test_every_import_a_module_runs_when_it_loads_is_declared(extra):
    providers = importlib.metadata.packages_distributions()
    declared = _declared(extra)
    missing = {}
    for path in sorted(SRC.rglob("*.py")):
        in_view = path.relative_to(SRC).parts[0] in VIEW_WINGS
        if in_view != (extra == "view"):
            continue
        for module in _third_party(_module_level_imports(path)):
            distributions = {_name(d) for d in providers.get(module, [module])}
            if not distributions & declared:
                missing.setdefault(module, []).append(str(path.relative_to(SRC)))
    assert not missing, f"imported when a module loads but not declared in pyproject.toml: {missing}"


def test_the_check_sees_an_undeclared_import(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(
        "import numpy\nfrom threadpoolctl import threadpool_limits\nif TYPE_CHECKING:\n    import pandas\n"
        "def f():\n    import sklearn\n"
    )
    assert _third_party(_module_level_imports(module)) == {"numpy", "threadpoolctl"}
