"""The machinery behind every lab self-check: run cases, compare with the reference, say what went wrong.

A check is a list of ``Case``: what is being tried (in words), a call of the student's function, the
reference answer, and known mistakes (a wrong answer a typical slip produces, with the hint it deserves).
``run(name, cases)`` prints ``All tests passed: <name>`` or the first failing case with a hint, and returns
a ``Result`` that is truthy when every case passed (and shows nothing more in a notebook).
Introduced in: the labs (ARENA-style ``tests.py``: one check per exercise against the reference solution).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Case:
    """One trial of the student's function.

    ``call()`` runs the student's function; ``expected`` is the reference answer; answers match when
    ``np.allclose(got, expected, rtol, atol)`` with equal shapes. ``mistakes`` pairs a wrong answer (what a
    known slip returns) with the hint to print when the student's answer matches it.
    """

    what: str
    call: Callable[[], Any]
    expected: Any
    rtol: float = 1e-6
    atol: float = 1e-9
    mistakes: Sequence[tuple[Any, str]] = field(default_factory=tuple)
    hint: str = ""


@dataclass(frozen=True)
class Result:
    """The outcome of a check: ``passed`` (also its truth value) and the message that was printed.

    Attributes
    ----------
    name : str
        The exercise checked.
    passed : bool
        Whether every case passed; also the result's truth value.
    message : str
        What the check printed: ``All tests passed: <name>.`` or the first failing case with its hint.

    Examples
    --------
    ``checking.run`` prints the message and returns the result:

    >>> import latentbook as lb
    >>> Case, run = lb.course.checking.Case, lb.course.checking.run
    >>> good = run("double", [Case("double(2)", lambda: 2 * 2, 4)])
    All tests passed: double.
    >>> bool(good), good.name, type(good) is lb.course.Result
    (True, 'double', True)
    >>> bad = run("double", [Case("double(2)", lambda: 2 + 3, 4, hint="Multiply by 2.")])
    Not yet. double(2): got 5, expected 4. Multiply by 2.
    >>> bool(bad), bad.message == "Not yet. double(2): got 5, expected 4. Multiply by 2."
    (False, True)
    """

    name: str
    passed: bool
    message: str

    def __bool__(self) -> bool:
        return self.passed

    def _ipython_display_(self) -> None:
        """The message was printed already; a notebook shows nothing more."""


def _as_array(value: Any) -> np.ndarray | None:
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    return array


def _matches(got: Any, expected: Any, rtol: float, atol: float) -> bool:
    a, b = _as_array(got), _as_array(expected)
    if a is None or b is None:
        return got == expected
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=False))


def _show(value: Any) -> str:
    array = _as_array(value)
    if array is None:
        return repr(value)
    if array.ndim == 0:
        return f"{float(array):.6g}"
    with np.printoptions(precision=4, threshold=8, edgeitems=2, suppress=True):
        return f"array of shape {array.shape}: {array}"


def _diagnose(case: Case, got: Any) -> str:
    a, b = _as_array(got), _as_array(case.expected)
    if a is not None and b is not None and a.shape != b.shape:
        return f"The shape is {a.shape}, the reference's is {b.shape}. " + case.hint
    if a is not None and not np.all(np.isfinite(a)) and np.all(np.isfinite(b)):
        return "Your answer has NaN or Inf where the reference has none. " + case.hint
    for wrong, hint in case.mistakes:
        if _matches(got, wrong, case.rtol, case.atol):
            return hint
    return case.hint


def run(name: str, cases: Sequence[Case]) -> Result:
    """Try every case in order; print and return the verdict at the first failure, or that all passed."""
    for case in cases:
        try:
            got = case.call()
        except NotImplementedError:
            return _report(
                name, False, f"{name} is not written yet: replace `raise NotImplementedError` with your code."
            )
        except Exception as exc:  # a student's bug: report it as a hint, not a traceback
            return _report(
                name, False, f"{case.what} raised {type(exc).__name__}: {exc}. {case.hint}".rstrip()
            )
        if not _matches(got, case.expected, case.rtol, case.atol):
            message = (
                f"Not yet. {case.what}: got {_show(got)}, expected {_show(case.expected)}. "
                f"{_diagnose(case, got)}"
            )
            return _report(name, False, message.rstrip())
    return _report(name, True, f"All tests passed: {name}.")


def _report(name: str, passed: bool, message: str) -> Result:
    print(message)
    return Result(name, passed, message)


def seeded(seed: int) -> np.random.Generator:
    """The random generator of a check's cases (fixed, so a check says the same thing every run)."""
    return np.random.default_rng(seed)
