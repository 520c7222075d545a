"""The examples in the docstrings of the exported functions run, and every exported function has one (issue 51).

The functions in scope: those of the root's ``__all__`` (``lb.capture``, ``lb.omega``, ...) and, for the exported
modules of ``DOCUMENTED_MODULES`` that declare ``__all__``, the functions it names (a module without ``__all__`` is
left out until it declares one). Each function's docstring has a numpydoc ``Examples`` section with at least one
``>>>`` line; the doctests of every module defining one of them run with the standard library's ``doctest``, one test
per module.
"""

from __future__ import annotations

import doctest
import inspect
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
OPTIONFLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
EXAMPLES = re.compile(r"^Examples\n-{8,}\n(.*)", re.MULTILINE | re.DOTALL)


@cache
def functions_in_scope() -> dict[str, FunctionType]:
    """``"lb.name"`` or ``"lb.module.name"`` -> the function, each function once (by the first name that exports it)."""
    named: dict[str, FunctionType] = {}
    for name in lb.__all__:
        value = getattr(lb, name)
        if inspect.isfunction(value):
            named[f"lb.{name}"] = value
    for module_name in DOCUMENTED_MODULES:
        module = getattr(lb, module_name)
        for name in getattr(module, "__all__", ()):
            value = getattr(module, name)
            if inspect.isfunction(value):
                named[f"lb.{module_name}.{name}"] = value
    unique: dict[str, FunctionType] = {}
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


def test_every_function_in_scope_has_an_example():
    missing = []
    for label, function in functions_in_scope().items():
        found = EXAMPLES.search(inspect.getdoc(function) or "")
        if found is None or ">>>" not in found.group(1):
            missing.append(f"{label} ({function.__module__}.{function.__qualname__})")
    assert not missing, "exported functions without an Examples section holding a >>> doctest: " + ", ".join(
        missing
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
