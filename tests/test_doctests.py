"""The examples in the docstrings of the exported names run, and every exported function and class has one (issue 51).

The names in scope: the functions of the root's ``__all__`` (``lb.capture``, ``lb.omega``, ...), the public functions
and classes of the exported modules of ``DOCUMENTED_MODULES`` (``public_names``: those they define whose names do not
start with ``_``); and for every wing (``WINGS``, each package of latentbook), the functions and
classes its ``__all__`` names, and those named by the ``__all__`` of each module of the wing that its ``__all__``
names (``latentbook.study.chapters``, ``latentbook.capturing.capture``: the module beside the function of that
name). Each one's docstring has a numpydoc ``Examples`` section with at least one ``>>>`` line; the doctests of every
module defining one of them run with the standard library's ``doctest``, one test per module.
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import inspect
import pkgutil
import re
from functools import cache
from types import FunctionType, ModuleType

import pytest

import latentbook as lb

# The modules of the root's ``__all__`` whose ``__all__`` functions are documented with examples.
DOCUMENTED_MODULES = (
    "omega_analysis",
    "omega_profiles",
    "standardisation",
    "bimodality",
    "mp_law",
    "bulk_fit",
    "ranks",
    "spectra",
    "transition",
    "thermo",
    "stream",
    "confounds",
    "flow",
    "classes",
    "synthetic",
)
# The wings: every package of latentbook (``test_scope_is_not_empty`` checks that none is missing).
WINGS = ("analysis", "capturing", "models", "study", "view", "ladder", "prompts", "course", "figure_standard")
OPTIONFLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
EXAMPLES = re.compile(r"^Examples\n-{8,}\n(.*)", re.MULTILINE | re.DOTALL)


def exported_modules(wing: str) -> list[ModuleType]:
    """The wing, then each module of the wing that its ``__all__`` names (imported) and that declares ``__all__``."""
    package = importlib.import_module(f"latentbook.{wing}")
    found = [package]
    for name in package.__all__:
        if importlib.util.find_spec(f"latentbook.{wing}.{name}") is not None:
            module = importlib.import_module(f"latentbook.{wing}.{name}")
            if hasattr(module, "__all__"):
                found.append(module)
    return found


def public_names(module: ModuleType) -> list[str]:
    """The functions and classes ``module`` defines whose names do not start with ``_`` (those of its ``__all__``
    where it declares one): what a user of the module may call."""
    if hasattr(module, "__all__"):
        names = list(module.__all__)
    else:
        names = [name for name in vars(module) if not name.startswith("_")]
    return [
        name
        for name in names
        if (inspect.isfunction(getattr(module, name)) or inspect.isclass(getattr(module, name)))
        and getattr(module, name).__module__ == module.__name__
    ]


@cache
def functions_in_scope() -> dict[str, FunctionType | type]:
    """``"lb.name"``, ``"lb.module.name"`` or ``"latentbook.wing[.module].name"`` -> the function or class, each once
    (by the first name that exports it)."""
    named: dict[str, FunctionType | type] = {}
    for name in lb.__all__:
        value = getattr(lb, name)
        if inspect.isfunction(value):
            named[f"lb.{name}"] = value
    for module_name in DOCUMENTED_MODULES:
        module = getattr(lb, module_name)
        for name in public_names(module):
            named[f"lb.{module_name}.{name}"] = getattr(module, name)
    for wing in WINGS:
        for module in exported_modules(wing):
            for name in module.__all__:
                value = getattr(module, name, None)  # a submodule not imported yet is None: not a function
                if inspect.isfunction(value) or inspect.isclass(value):
                    named[f"{module.__name__}.{name}"] = value
    unique: dict[str, FunctionType | type] = {}
    for label, function in named.items():
        if function not in unique.values():
            unique[label] = function
    return unique


def defining_modules() -> list[str]:
    return sorted({function.__module__ for function in functions_in_scope().values()})


def test_scope_is_not_empty():
    assert {"lb.capture", "lb.load_capture", "lb.load_model", "lb.models", "lb.omega"} <= set(
        functions_in_scope()
    )
    for module_name in DOCUMENTED_MODULES:
        assert isinstance(getattr(lb, module_name), ModuleType), module_name
    packages = {info.name for info in pkgutil.iter_modules(lb.__path__) if info.ispkg}
    assert set(WINGS) == packages, f"WINGS should name every package of latentbook: {sorted(packages)}"
    assert {
        "latentbook.capturing.Capture",
        "latentbook.capturing.capture.check_prompts",
        "latentbook.figure_standard.FigureStandardError",
        "latentbook.study.chapters.glue_frame",
    } <= set(functions_in_scope())


def test_every_function_in_scope_has_an_example():
    missing = []
    for label, function in functions_in_scope().items():
        found = EXAMPLES.search(inspect.getdoc(function) or "")
        if found is None or ">>>" not in found.group(1):
            missing.append(f"{label} ({function.__module__}.{function.__qualname__})")
    assert not missing, (
        "exported functions and classes without an Examples section holding a >>> doctest: "
        + ", ".join(missing)
    )


@pytest.mark.parametrize("module_name", defining_modules())
def test_doctests_pass(module_name):
    module = inspect.getmodule(next(f for f in functions_in_scope().values() if f.__module__ == module_name))
    runner = doctest.DocTestRunner(optionflags=OPTIONFLAGS)
    report: list[str] = []
    tests = [t for t in doctest.DocTestFinder().find(module) if t.examples]
    assert tests, f"{module_name} has no doctest"
    for test in sorted(tests, key=lambda t: t.name):
        runner.run(test, out=report.append)
    assert runner.failures == 0, (
        f"{runner.failures} of {runner.tries} examples failed in {module_name}:\n" + "".join(report)
    )
