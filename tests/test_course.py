"""Lab self-checks: each passes on the lab's reference solution and fails, with a hint, on a wrong answer."""

import contextlib
import inspect
import io
import re
from pathlib import Path

import nbformat
import numpy as np
import pytest
from scipy import special

from latentbook import course
from latentbook.analysis import classes, mp_law, ranks, thermo
from latentbook.analysis import omega as om
from latentbook.course import checking, lab1, lab2, lab3, lab4

ROOT = Path(__file__).resolve().parent.parent
LABS = {
    "lab1_thermodynamics.ipynb": lab1,
    "lab2_omega.ipynb": lab2,
    "lab3_spectra.ipynb": lab3,
    "lab4_mixtures.ipynb": lab4,
}
CHECKS = [
    (module, name)
    for module in (lab1, lab2, lab3, lab4)
    for name, fn in inspect.getmembers(module, inspect.isfunction)
    if name.startswith("check_") and fn.__module__ == module.__name__
]


def _run(code: str, namespace: dict) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "<lab cell>", "exec"), namespace)
    return out.getvalue()


def _exercises(notebook) -> list[tuple[str, str, str]]:
    """(skeleton, solution, check) source of every exercise, in order."""
    cells, found = notebook.cells, []
    for i, cell in enumerate(cells):
        if "skeleton" in cell.metadata.get("tags", []):
            j = i + 2
            solution = []
            while "solution" in cells[j].metadata.get("tags", []):
                solution.append(cells[j].source)
                j += 1
            found.append((cell.source, "\n".join(solution), cells[j + 1].source))
    return found


def _setup(notebook) -> dict:
    first = next(c for c in notebook.cells if c.cell_type == "code")
    namespace: dict = {}
    _run("\n".join(line for line in first.source.splitlines() if not line.startswith("%")), namespace)
    return namespace


@pytest.mark.parametrize("name", sorted(LABS))
def test_reference_solutions_in_the_lab_pass_their_checks(name):
    notebook = nbformat.read(ROOT / "notebooks" / name, as_version=4)
    exercises = _exercises(notebook)
    assert len(exercises) >= 4
    namespace = _setup(notebook)
    for _, solution, check in exercises:
        printed = _run(solution + "\n" + check, namespace)
        assert printed.startswith("All tests passed"), (check, printed)


@pytest.mark.parametrize("name", sorted(LABS))
def test_skeletons_in_the_student_copy_fail_their_checks(name):
    notebook = nbformat.read(ROOT / "notebooks" / name, as_version=4)
    namespace = _setup(notebook)
    for skeleton, _, check in _exercises(notebook):
        printed = _run(skeleton + "\n" + check, namespace)
        assert "is not written yet: replace `raise NotImplementedError`" in printed, (check, printed)


@pytest.mark.parametrize("name", sorted(LABS))
def test_each_check_of_the_lab_module_is_used_by_one_exercise(name):
    notebook = nbformat.read(ROOT / "notebooks" / name, as_version=4)
    used = [re.match(r"lab\d\.(check_\w+)\(", check).group(1) for _, _, check in _exercises(notebook)]
    module = LABS[name]
    assert sorted(used) == sorted(n for m, n in CHECKS if m is module)


def _omega_no_minus(x):
    x = np.asarray(x, float)
    return np.abs(x).sum(-1) / (np.sqrt(x.shape[-1]) * np.linalg.norm(x, axis=-1))


def _zeroing(x, k):
    x = np.array(x, float)
    x[:, om.top_dims(x, k)] = 0.0
    return om.omega(x)


def _pooled_accuracy(states, labels, steps, fit_step):
    return np.array(
        [
            np.mean(lab4.reference_nearest_centroid(states, labels, states[steps == s]) == labels[steps == s])
            for s in np.unique(steps)
        ]
    )


# check -> (a reference answer, a wrong answer, words its hint must contain)
CASES = {
    "check_free_energy": (
        thermo.free_energy,
        lambda p, e, beta: (p * e).sum(-1) + beta * special.xlogy(p, p).sum(-1),
        "divided by beta",
    ),
    "check_gibbs": (thermo.gibbs, lambda e, beta: special.softmax(beta * e, -1), "softmax(-beta E)"),
    "check_f_min": (thermo.f_min, lambda e, beta: special.logsumexp(-beta * e, -1), "minus sign"),
    "check_normalized_entropy": (
        lambda s: thermo.cooling(s)["normalized_entropy"].to_numpy(),
        lambda s: s.entropy().mean(1) / s.log_keys().mean(1),
        "head by head",
    ),
    "check_omega": (om.omega, _omega_no_minus, "one MINUS"),
    "check_k_sparse_omega": (lambda k, d: 1 - np.sqrt(k / d), lambda k, d: 1 - k / d, "square root"),
    "check_order_parameter": (
        lambda s: om.omega(s).mean(1),
        lambda s: om.omega(s.mean(1)),
        "not Omega of the average token",
    ),
    "check_omega_without_top_dims": (om.omega_without_top_dims, _zeroing, "np.delete"),
    "check_crossing_depth": (
        lab2.reference_crossing_depth,
        lambda g, m: float(g[np.argmax(m >= (m.min() + m.max()) / 2)]),
        "Interpolate",
    ),
    "check_mp_edges": (mp_law.mp_edges, lambda q, s: (s * (1 - q) ** 2, s * (1 + q) ** 2), "sqrt(q)"),
    "check_mp_density": (
        mp_law.mp_density,
        lambda x, q, s: mp_law.mp_density(x, q, s) * q,
        "q is missing",
    ),
    "check_count_spikes": (
        lambda lam, n, s: int(np.sum(lam > mp_law.mp_edges(len(lam) / n, s)[1])),
        lambda lam, n, s: int(np.sum(lam > (1 + np.sqrt(n / len(lam))) ** 2)),
        "q = d / N",
    ),
    "check_participation_ratio": (
        ranks.participation_ratio,
        lambda lam: float(np.sum(lam**2) / np.sum(lam) ** 2),
        "Upside down",
    ),
    "check_effective_rank": (
        ranks.effective_rank,
        lambda lam: float(np.log(ranks.effective_rank(lam))),
        "exponential",
    ),
    "check_between_class_covariance": (
        lab4.reference_between_class_covariance,
        lambda x, y: sum(
            np.outer(x[y == c].mean(0) - x.mean(0), x[y == c].mean(0) - x.mean(0)) for c in np.unique(y)
        ),
        "n_c / n",
    ),
    "check_fisher_ratio": (
        classes.fisher_ratio,
        lambda x, y: (
            np.trace(lab4.reference_between_class_covariance(x, y))
            / sum(np.sum(np.var(x[y == c], axis=0)) for c in np.unique(y))
        ),
        "n_c / n",
    ),
    "check_nearest_centroid": (
        lab4.reference_nearest_centroid,
        lambda tr, lab, te: np.searchsorted(np.unique(lab), lab4.reference_nearest_centroid(tr, lab, te)),
        "not their index",
    ),
    "check_step_accuracy": (lab4.reference_step_accuracy, _pooled_accuracy, "fit_step only"),
}


def test_every_check_has_a_reference_and_a_wrong_answer():
    assert sorted(CASES) == sorted(name for _, name in CHECKS)
    assert len(CHECKS) >= 4 * 4  # at least four exercises per lab


@pytest.mark.parametrize("module,name", CHECKS, ids=[name for _, name in CHECKS])
def test_check_passes_on_the_reference_and_fails_with_a_hint_on_a_wrong_answer(module, name, capsys):
    reference, wrong, hint = CASES[name]
    check = getattr(module, name)
    passed = check(reference)
    assert passed and capsys.readouterr().out.startswith("All tests passed")
    failed = check(wrong)
    message = capsys.readouterr().out
    assert not failed and message.startswith("Not yet.") and hint in message
    assert failed.message == message.strip()


def test_a_crash_in_a_students_function_is_reported_not_raised(capsys):
    def broken(p, e, beta):
        return p @ e  # wrong shapes for a batch of rows

    result = lab1.check_free_energy(broken)
    assert not result and "raised ValueError" in capsys.readouterr().out


def test_results_are_quiet_in_a_notebook_and_truthy_when_passed(capsys):
    result = checking.run("nothing", [checking.Case("one", lambda: 1.0, 1.0)])
    assert result and result.name == "nothing" and result._ipython_display_() is None
    assert capsys.readouterr().out == "All tests passed: nothing.\n"
    assert course.lab3 is lab3


# --- time and difficulty on every exercise, a solution for every chapter exercise ----------------------------

EXERCISE_CELL = re.compile(
    r"^(`{3,}|:{3,})\{exercise\}[^\n]*\n(?P<options>(?::[^\n]*\n)*)(?P<body>.*?)^\1", re.S | re.M
)
TIME_AND_DIFFICULTY = re.compile(r"^Time: ~\d+ min · Difficulty: (★{1,3}☆{0,2})$")
CHAPTERS = sorted((ROOT / "book").glob("*.md"))


def _exercise_texts() -> list[tuple[str, str]]:
    """(where, text) of every ``{exercise}`` directive in the labs and the chapters."""
    found = []
    for path in sorted((ROOT / "notebooks").glob("lab*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "markdown":
                found += [(path.name, m.group(0)) for m in EXERCISE_CELL.finditer(cell.source)]
    for path in CHAPTERS:
        found += [(path.name, m.group(0)) for m in EXERCISE_CELL.finditer(path.read_text(encoding="utf-8"))]
    return found


def test_every_exercise_says_its_time_and_difficulty_first():
    exercises = _exercise_texts()
    assert len(exercises) >= 18 + 14  # the labs' and the chapters'
    missing = []
    for where, text in exercises:
        body = EXERCISE_CELL.match(text).group("body").strip().splitlines()
        match = TIME_AND_DIFFICULTY.match(body[0] if body else "")
        if match is None or len(match.group(1)) != 3:
            label = re.search(r":label:\s*(\S+)", text)
            missing.append(f"{where}: {label.group(1) if label else text[:40]}")
    assert not missing, (
        "exercises whose body does not open with 'Time: ~N min · Difficulty: ★★☆' (three stars, filled first):\n"
        + "\n".join(missing)
    )


@pytest.mark.parametrize(
    "path", [p for p in CHAPTERS if "\n## Exercise" in p.read_text()], ids=lambda p: p.name
)
def test_every_chapter_exercise_has_a_labelled_exercise_and_a_folded_solution(path):
    section = path.read_text(encoding="utf-8").split("\n## Exercise", 1)[1]
    labels = re.findall(r"^```\{exercise\}[^\n]*\n(?::[^\n]*\n)*?:label:\s*(\S+)", section, re.M)
    numbered_list = re.findall(r"^\d+\. ", section, re.M)
    assert labels and not numbered_list, (
        f"{path.name}: exercises must be {{exercise}} directives with a :label:"
    )
    for label in labels:
        solution = re.search(rf"^```\{{solution\}} {re.escape(label)}\n:class: dropdown\n", section, re.M)
        assert solution, (
            f"{path.name}: exercise {label} has no folded solution (```{{solution}} {label}, dropdown)"
        )
