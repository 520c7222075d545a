"""Mutation testing of the estimator modules with mutmut: run it, keep the results, write the report.

    python tools/mutation_report.py run [MODULE ...]   # mutmut over each module with its own test files only
    python tools/mutation_report.py report             # results/bench/mutation.md from the results kept so far
    python tools/mutation_report.py list               # the modules and their test files

``make mutation`` runs both (``make mutation MODULES="thermo omega"`` for some modules only). Each module runs in
its own scratch copy of ``src/`` and ``tests/`` under ``_build/mutation/<module>/`` (mutmut writes its
``mutants/`` tree there, never into the working tree), mutating that module only and running that module's own
test files only: a mutant counts as killed when the estimator's *own* tests fail, not when some distant test
happens to notice. Every run leaves ``results/bench/mutation/<module>.json`` (counts, every surviving mutant's
diff, the sha256 of the module and its tests, the commit); ``report`` turns all of them into
``results/bench/mutation.md``, marks results whose source or tests changed since as stale, and lists the modules
not run yet.

Equivalent mutants (no test can tell them from the original: they change no value) are recognised by the rules
in ``EQUIVALENT`` below, each with its reason; the kill rate is ``killed / (mutants - equivalent)``. Survivors
that only change the wording of an error message are listed on their own (a ``match=`` in a test would kill
them), but they count as survivors.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "_build" / "mutation"
RESULTS = ROOT / "results" / "bench" / "mutation"
REPORT = ROOT / "results" / "bench" / "mutation.md"
TARGET = 0.85  # issue #20: at least 85 % killed on every estimator module
COMMAND = "make mutation MODULES={module}"

# module name -> (source file, its own test files). The estimator modules of the analysis wing; judges
# (verdict), the calibration harness and the synthetic generators are not estimators.
MODULES: dict[str, tuple[str, tuple[str, ...]]] = {
    "thermo": ("src/latentbook/analysis/thermo.py", ("tests/test_thermo.py", "tests/test_thermo_rows.py")),
    "omega": ("src/latentbook/analysis/omega.py", ("tests/test_omega.py",)),
    "transition": ("src/latentbook/analysis/transition.py", ("tests/test_transition.py",)),
    "spectra": ("src/latentbook/analysis/spectra.py", ("tests/test_spectra.py",)),
    "layer_spectra": ("src/latentbook/analysis/layer_spectra.py", ("tests/test_layer_spectra.py",)),
    "cooling": ("src/latentbook/analysis/cooling.py", ("tests/test_cooling.py",)),
    "flow": ("src/latentbook/analysis/flow.py", ("tests/test_flow.py",)),
    "classes": ("src/latentbook/analysis/classes.py", ("tests/test_classes.py",)),
    "confounds": ("src/latentbook/analysis/confounds.py", ("tests/test_confounds.py",)),
    "resampling": ("src/latentbook/analysis/resampling.py", ("tests/test_resampling.py",)),
    "contraction": ("src/latentbook/analysis/contraction.py", ("tests/test_contraction.py",)),
}
# modules not to run yet, with why (a module being rewritten): none now
PENDING: dict[str, str] = {}

# (name, pattern on the removed line, pattern on the added line, reason[, function]): a survivor whose every
# changed line pair matches one rule (the change inside the patterns' matches; in that function only, when one
# is named) is equivalent.
EQUIVALENT: list[tuple[str, ...]] = [
    (
        "errstate",
        r"np\.errstate\([^)]*\)",
        r"np\.errstate\([^)]*\)",
        "changes which floating-point warnings numpy silences; no value changes",
    ),
    (
        "nan spelling",
        r"float\(\"nan\"\)",
        r"float\(\"NAN\"\)",
        'float() reads "NAN" as "nan"',
    ),
    (
        "default seed",
        r"\bseed: int = \d+",
        r"\bseed: int = \d+",
        "another default seed draws other numbers from the same law: no statistical test can tell, none should",
    ),
]
# an argument of confounds._cleaned(cap, layer, k, centre, drop_first) in the treatments, by position
_CLEANED_ARGUMENT = (
    r"(?<=_cleaned\(cap, layer, ){value}\b|(?<=_cleaned\(cap, layer, [0k], ){value}\b"
    r"|(?:(?<=_cleaned\(cap, layer, [0k], True, )|(?<=_cleaned\(cap, layer, [0k], False, )){value}\b"
)
# Rules for one module's lines name the line closely: a loose pattern would excuse a real survivor elsewhere.
EQUIVALENT += [
    (
        "negative reshape size",
        r"\.reshape\(-1, ",
        r"\.reshape\(-2, ",
        "numpy reads any negative size in reshape as 'the rest' (-2 is -1)",
    ),
    (
        "row_check's 2-d rows",
        r"(log_z = special\.logsumexp\(log_weights, axis=-1\)|used / used\.sum\(-1, keepdims=True\)"
        r"|fmin_model = -special\.logsumexp\(np\.where\(mask, z, -np\.inf\), axis=-1\))",
        r"(axis=\+1|\.sum\(\+1, )",
        "row_check reshapes its rows to 2-d (rows x keys) first: axis +1 is the key axis -1",
    ),
    (
        "masked keys' fill",
        r"np\.where\(mask, (-z|log_weights - log_z\[:, None\]), 0\.0\)",
        r"np\.where\(mask, (-z|log_weights - log_z\[:, None\]), 1\.0\)",
        "the value at masked keys, where every row it meets has weight 0 (0 x E = 0; the Gibbs row is "
        "exp(log p) x mask)",
    ),
    (
        "explicit default beta",
        r"free_energy\(used, np\.where\(mask, -z, 0\.0\), 1\.0\)",
        r"free_energy\(used, np\.where\(mask, -z, 0\.0\), \)",
        "drops an explicit beta = 1.0 that is free_energy's default",
    ),
    (
        "brentq tolerance",
        r"optimize\.brentq\(excess, lo, hi, xtol=1e-12\)",
        r"optimize\.brentq\(excess, lo, hi, \)",
        "brentq's default xtol is 2e-12 on log beta: beta moves by a relative 1e-12 at most",
    ),
    (
        "random rows' count",
        r"\bn_random: int = \d+",
        r"\bn_random: int = \d+",
        "one more random row per row: the identities must hold on any number of them; no test should pin it",
    ),
    (
        "random rows' law",
        r"draws = rng\.gamma\(0\.5, size=\(n_random, \*z\.shape\)\) \* mask",
        r"draws = rng\.gamma\(1\.5, size=\(n_random, \*z\.shape\)\) \* mask",
        "the Dirichlet concentration of the random rows: the identities must hold on every row of the simplex, "
        "whatever law draws them",
    ),
    (
        "valid as given",
        r"np\.asarray\(valid, dtype=bool\)",
        r"np\.asarray\(valid, (dtype=None)?\)",
        "np.where, any() and * read a 0/1 (or bool) mask the same",
    ),
    (
        "float64 by promotion",
        r"(p, energies = _simplex\(p\), np\.asarray\(energies, dtype=np\.float64\)"
        r"|energies = np\.broadcast_to\(np\.asarray\(energies, dtype=np\.float64\), shape\))",
        r"np\.asarray\(energies, (dtype=None)?\)",
        "every use of the energies meets float64 first (p, or gibbs's own conversion): float32 energies "
        "promote to float64 exactly",
    ),
    (
        "default draws",
        r"\bn_boot: int = \d+",
        r"\bn_boot: int = \d+",
        "one more bootstrap draw by default moves an interval by its Monte Carlo error only: no test can tell",
    ),
    (
        "None for a false flag",
        _CLEANED_ARGUMENT.format(value=r"(?:0|False)"),
        _CLEANED_ARGUMENT.format(value="None"),
        "None where the original passes 0 or False: _cleaned reads k, centre and drop_first with `if`, and None "
        "is as false",
    ),
    (
        "2-d token vectors",
        r"x = np\.delete\(x, massive_dims\(cap, layer, k\), axis=-1\)",
        r"x = np\.delete\(x, massive_dims\(cap, layer, k\), axis=\+1\)",
        "token vectors are 2-d (tokens x d): axis +1 is the coordinate axis -1",
    ),
    (
        "sort kind spelling",
        r'kind="stable"',
        r'kind="STABLE"',
        "numpy reads the sort kind case-insensitively",
    ),
    (
        "float64 read by the callee",
        r"x = cap\.token_vectors\(layer\)\.astype\(np\.float64\)",
        r"x = cap\.token_vectors\(layer\)\.astype\(None\)",
        "treatments passes x only to omega() and rotated(), which read it as float64 themselves",
        "treatments",
    ),
    (
        "unreachable fold guard",
        r"^\s*continue$",
        r"^\s*break$",
        "unreachable: group_folds gives every fold at least one group, so no fold is without test tokens",
        "class_stability",
    ),
    (
        "increasing local fits",
        r"^\s*continue$",
        r"^\s*break$",
        "LOCAL_FITS grows in h: once a side is too short for one fit it is for every later one",
        "local_gaps",
    ),
    (
        "degrees of freedom floor",
        r"max\(dof, 1\)",
        r"max\(dof, 2\)",
        "dof = fitted depths - k >= MIN_FITTED - 6 = 2 on every call, so neither floor binds",
        "_ar1_noise",
    ),
    (
        "the test token's own term",
        r"np\.sum\(test\*\*2, -1\)",
        r"np\.sum\(test(\*\*3| \* 2), -1\)",
        "a term of the test token alone is the same for every centroid: it cannot move the argmin",
        "_predict",
    ),
    (
        "float64 inside scipy and numpy",
        r"np\.asarray\((gamma|values), dtype=np\.float64\)",
        r"np\.asarray\((gamma|values), (dtype=None)?\)",
        "spearmanr ranks and polyfit solves in float64 whatever the input's float type (float32 input tested)",
        "cooling_trend",
    ),
    (
        "the innovation's sign",
        r"e\[:, i\] = rho \* e\[:, i - 1\] \+ np\.sqrt\(1 - rho\*\*2\) \* e\[:, i\]",
        r"e\[:, i\] = rho \* e\[:, i - 1\] - np\.sqrt\(1 - rho\*\*2\) \* e\[:, i\]",
        "the innovation is a standard normal draw, symmetric: minus it has the same law",
        "_ar1_noise",
    ),
    (
        "sorted by mp_fit",
        r"\)\[::-1\]$",
        r"\)\[::\+1\]$",
        "spectra.mp_fit sorts the eigenvalues itself (spectra._as_spectrum)",
        "mixture_spikes",
    ),
    (
        "rowvar read as false",
        r"rowvar=False",
        r"rowvar=None",
        "np.cov tests rowvar with `if not rowvar`: None is as False",
        "mixture_spikes",
    ),
    (
        "class weights' scale",
        r"weight = len\(xc\) / len\(x\)",
        r"weight = len\(xc\) \* len\(x\)",
        "both traces take the same weights, so a factor n^2 on every class cancels in the ratio",
        "fisher_ratio",
    ),
    (
        "the misfit's sign",
        r"fitted\[None, :\] \+ _ar1_noise\(",
        r"fitted\[None, :\] - _ar1_noise\(",
        "the AR(1) misfit is a zero-mean Gaussian series: minus it has the same law",
        "critical_depth",
    ),
    (
        "degrees of freedom floor",
        r"max\(len\(y\) - k, 1\)",
        r"max\(len\(y\) - k, 2\)",
        "len(y) - k >= MIN_FITTED - 6 = 2 on every call, so neither floor binds",
        "critical_depth",
    ),
    (
        "stacked states only",
        r"_tokens\(states, min_ndim=3\)",
        r"_tokens\(states, min_ndim=None\)",
        "_tokens allows ndim in (min_ndim, 3): with None that is 3 alone, as with 3",
    ),
    (
        "refused further on",
        r"_tokens\(states, min_ndim=3\)",
        r"_tokens\(states, min_ndim=4\)",
        "a 4-d array passes this check but fisher_ratio's own _tokens refuses it with the same message first",
        "separability",
    ),
    (
        "a numpy float is a float",
        r"return float\(ratio\) if np\.ndim\(ratio\) == 0 else ratio",
        r"return float\(ratio\) if \(np\.ndim\(ratio\) == 0\) and False else ratio",
        "the ratio of one depth is a numpy float64 already, a subclass of float with the same value",
        "fisher_ratio",
    ),
    (
        "overflow guard",
        r"np\.clip\(z, -500, 500\)",
        r"np\.clip\(z, (-50\d|None), (50\d|None)\)",
        "exp of +-500 or +-501 is finite and 1 / (1 + exp(-z)) is 0 or 1 to 1e-217 either way; without the guard "
        "exp overflows to inf and gives the same 0 (with a warning)",
        "_logistic",
    ),
    (
        "weights' scale",
        r"return 1\.0 / \(se2 \+ tau2\)",
        r"return 2\.0 / \(se2 \+ tau2\)",
        "_Models divides the weights by their mean: their scale cancels",
        "_weights",
    ),
    (
        "unread nodes",
        r"np\.zeros\(\(1, 0\)\)|centres\[:, None\]",
        r"None|np\.zeros\(\(\d, \d\)\)",
        "the nodes of a family fitted for its BIC only (polynomials, splines, the kink) are never read",
        "_Models.__init__",
    ),
    (
        "negative reshape size",
        r"\.reshape\(q\.shape\[1\], -1\)",
        r"\.reshape\(q\.shape\[1\], -2\)",
        "numpy reads any negative size in reshape as 'the rest' (-2 is -1)",
        "_Family.__init__",
    ),
    (
        "a step between depths",
        r"steps = \(g\[None, :\] > gaps\[:, None\]\)\.astype\(np\.float64\)",
        r"steps = \(g\[None, :\] (>=|>) gaps\[:, None\]\)\.astype\((np\.float64|None)\)",
        "a step sits midway between two depths, so no depth is on it (> is >=), and a 0/1 design reads the same "
        "as bool",
        "_Models.__init__",
    ),
    (
        "a step as a zero-width switch",
        r"s = \(self\.g > centre\)\.astype\(float\) if width == 0 else",
        r"s = \(self\.g (>|>=) centre\)\.astype\((float|None)\) if (width == 0|\(width == 0\) and False|width == 1) else",
        "at width 0 the logistic of (g - centre) / 0 is the step to 1e-217 at every depth (no depth is at a step's "
        "centre); a 0/1 step reads the same as bool",
        "_Models.jump_curve",
    ),
    (
        "a tie of two BICs",
        r"better = s_bic < bic",
        r"better = s_bic <= bic",
        "the step's and the switch's BIC are never equal to the last bit on data",
        "_Models.jump",
    ),
    (
        "a switch's gap bounds",
        r"np\.clip\(np\.searchsorted\(self\.g, centre\), 1, len\(self\.g\) - 1\)",
        r"np\.clip\(np\.searchsorted\(self\.g, centre\), (1|2|None), (len\(self\.g\) [-+] \d|None)\)",
        "switch centres lie strictly between g[1] and g[-2], so searchsorted gives 2..n-2: no bound from 1 or 2 "
        "up to n - 2, or none, binds",
        "_Models.jump",
    ),
    (
        "all-layers shortcut",
        r"return frame if recorded\.all\(\) else frame\[recorded\]\.reset_index\(drop=True\)",
        r"return frame if \(recorded\.all\(\)\) and False else frame\[recorded\]\.reset_index\(drop=True\)",
        "a shortcut: with every layer recorded, frame[recorded].reset_index(drop=True) is the same frame",
    ),
]
# flow (analysis/flow.py)
EQUIVALENT += [
    (
        "float64 before arithmetic",
        r"states = np\.asarray\(states, dtype=np\.float64\)",
        r"states = np\.asarray\(states, (dtype=None)?\)",
        "every use of the states meets float64 before any arithmetic: layer_map, principal_basis and class_basis "
        "convert them (_matrix), the variance estimator multiplies them by a float64 basis",
        "_states",
    ),
    (
        "float64 in the concatenation",
        r"basis = np\.asarray\(basis, dtype=np\.float64\)",
        r"basis = np\.asarray\(basis, (dtype=None)?\)",
        "the basis is only read by np.concatenate with np.eye(d), float64: any real input promotes to float64 "
        "before the QR",
        "complement",
    ),
    (
        "a constant along centred layers",
        r"log_v - log_v\.mean\(-1, keepdims=True\)",
        r"log_v (\+|-) log_v\.mean\((-1, |None, )?keepdims=True\)",
        "x = layers - mean(layers) sums to zero, so sum(x * (log_v - c)) is the same for every c constant along "
        "the layers (a row's mean, plus or minus, or the mean of all rows)",
        "q_from_variance_decay",
    ),
    (
        "the whole space at k = 0",
        r"if k else np\.eye\(x\.shape\[1\]\)",
        r"if \(k\) or True else np\.eye\(x\.shape\[1\]\)",
        "at k = 0 the complement of the empty basis is the QR of the identity, the identity up to column signs; "
        "column variances and the singular values of T1^T A T0 do not see signs",
        "_transverse",
    ),
    (
        "centring before a centred product",
        r"y - y\.mean\(0\)$",
        r"y (\+|-) y\.mean\((0|None)\)$",
        "the columns of xc sum to zero, so xc.T @ (y + c) = xc.T @ y for any constant c: how y is shifted "
        "changes the map by rounding only",
        "layer_map",
    ),
    (
        "svd flags read as booleans",
        r"np\.linalg\.svd\(.*(full_matrices|compute_uv)=False",
        r"np\.linalg\.svd\(.*(full_matrices|compute_uv)=None",
        "np.linalg.svd tests both flags with `if`: None is as False",
    ),
    (
        "the full U's first columns",
        r"\.T, full_matrices=False\)",
        r"\.T, (full_matrices=True)?\)",
        "class_basis keeps at most c - 1 of the c columns of U, and the full SVD's first c columns span the same "
        "subspaces as the thin one's (signs aside); the basis is promised as a basis of the span only",
        "class_basis",
    ),
    (
        "the other classes' means",
        r"x\[labels == c\]\.mean\(0\)",
        r"x\[labels != c\]\.mean\(0\)",
        "the mean of the other classes is an affine combination of the class means by an invertible matrix "
        "(D^-1 (J - I) diag(n)), so their differences span the same subspace: class_basis promises an "
        "orthonormal basis of that span, not one particular basis",
        "class_basis",
    ),
    (
        "np.cov's flags read as booleans",
        r"np\.cov\(s, rowvar=False, bias=True\)",
        r"np\.cov\(s, rowvar=(False|None), bias=(True|None)\)",
        "np.cov reads rowvar with `if not rowvar` (None is as False) and bias with `bias == 0` (None is not 0: "
        "ddof 0, as with True)",
        "transverse_variance",
    ),
    (
        "sorted again",
        r"\)\[::-1\] for s in array\]\)",
        r"\)\[::\+1\] for s in array\]\)",
        "transverse_variance sorts every depth's eigenvalues again before it reads them",
        "transverse_variance",
    ),
    (
        "the sort's default axis",
        r"np\.sort\(eig, axis=1\)",
        r"np\.sort\(eig, \)",
        "eig is 2-d (depths x d): np.sort's default axis -1 is axis 1",
        "transverse_variance",
    ),
    (
        "inf spelling",
        r"float\(\"inf\"\)",
        r"float\(\"INF\"\)",
        'float() reads "INF" as "inf"',
    ),
]
# resampling (analysis/resampling.py)
EQUIVALENT += [
    (
        "astype(None) is float64",
        r"\.astype\(np\.float64\)$",
        r"\.astype\(None\)$",
        "numpy reads dtype None as float64 (np.dtype(None) is float64): the multinomial counts become the same "
        "float64 array",
        "cluster_weights",
    ),
]
# cooling (analysis/cooling.py)
EQUIVALENT += [
    (
        "astype(None) is float64",
        r'"(rows|std_rows)": (real|multi)\.sum\(-1\)\.astype\(np\.float64\)',
        r'"(rows|std_rows)": (real|multi)\.sum\(-1\)\.astype\(None\)',
        "numpy reads dtype None as float64 (np.dtype(None) is float64): the same float64 counts",
        "row_sums",
    ),
    (
        "None into a bool mask",
        r"ok\[\.\.\., 0\] = False",
        r"ok\[\.\.\., 0\] = None",
        "ok is a bool array: numpy stores None assigned into it as False",
        "row_sums",
    ),
    (
        "the logits under a zero weight",
        r"entropy = lse - \(q \* np\.where\(ok, z, 0\.0\)\)\.sum\(-1\)",
        r"entropy = lse - \(q \* np\.where\(ok, z, 1\.0\)\)\.sum\(-1\)",
        "the fill sits at keys that are not valid, where q is 0: 0 x 1 = 0 x 0",
        "row_sums",
    ),
    (
        "the weight on a zeroed logit",
        r"q = np\.where\(ok, np\.exp\(masked - lse\[\.\.\., None\]\), 0\.0\)",
        r"q = np\.where\(ok, np\.exp\(masked - lse\[\.\.\., None\]\), 1\.0\)",
        "q is read once, in q * np.where(ok, z, 0.0): at keys that are not valid it multiplies 0, so any fill "
        "gives the same entropy",
        "row_sums",
    ),
    (
        "single-key rows' std unread",
        r"\.sum\(-1\) / np\.maximum\(n, 1\)",
        r"\.sum\(-1\) / np\.maximum\(n, 2\)",
        "the mean and std differ only on rows with one key (n = 1), and those rows' std is never read: "
        "logit_std and std_rows keep rows with n > 1 only",
        "row_sums",
    ),
    (
        "2-d per-query sums",
        r'"(entropy|log_keys|rows|logit_std|std_rows)": .*\.sum\(-1\)',
        r'"(entropy|log_keys|rows|logit_std|std_rows)": .*\.sum\(\+1\)',
        "the key axis is reduced already: these arrays are (heads, queries), 2-d, so axis +1 is axis -1",
        "row_sums",
    ),
    (
        "a log-normal's reciprocal",
        r"e = np\.clip\(heads\[None\] \* shared \* noise, 0\.0, 1\.0\)",
        r"e = np\.clip\(heads\[None\] (\*|/) shared (\*|/) noise, 0\.0, 1\.0\)",
        "shared and noise are log-normal(0, s) draws, and 1 / LN(0, s) is LN(0, s): dividing draws from the "
        "same law as multiplying",
        "planted_sums",
    ),
    (
        "divided by ones",
        r"\* np\.ones\(\(1, n_layers, n_heads\)\)",
        r"/ np\.ones\(\(1, n_layers, n_heads\)\)",
        "x / 1 is x: the broadcast to (groups, layers, heads) is the same",
        "planted_sums",
    ),
    (
        "a uniform draw on the cut",
        r"sink = rng\.random\(\(n_layers, n_heads\)\) < sink_heads",
        r"sink = rng\.random\(\(n_layers, n_heads\)\) <= sink_heads",
        "< and <= differ only on a draw exactly equal to sink_heads, probability 2^-53 per draw: no draw the "
        "seeded tests make",
        "planted_sums",
    ),
    (
        "the bootstrap seeds' range",
        r"seed = int\(rng\.integers\(2\*\*31\)\)",
        r"seed = int\(rng\.integers\((2\*\*32|3\*\*31)\)\)",
        "the pair's bootstrap seed drawn from a larger range of integers: another seed draws other numbers from "
        "the same law (a range of 62 seeds, 2 * 31, is not excused: pairs would share bootstrap streams)",
        "planted_cooling",
    ),
    (
        "the twin's seed",
        r"twin, n_boot=n_boot, seed=seed \+ 1$",
        r"twin, n_boot=n_boot, seed=seed (- 1|\+ 2)$",
        "another integer than the model's seed for the twin's bootstrap: other numbers from the same law (seed "
        "- 1 is negative only when the seed drawn from 2^31 is 0)",
        "planted_cooling",
    ),
    (
        "einsum's labels",
        r'np\.einsum\("bg,glh->blh"',
        r'np\.einsum\("BG,GLH->BLH"',
        "einsum subscripts are names: the same contraction relabelled in capitals",
        "_layer_draws",
    ),
    (
        "take_along_axis's default axis",
        r"size=per_head\.shape\), axis=-1\)",
        r"size=per_head\.shape\), \)",
        "np.take_along_axis's axis defaults to -1 (numpy 2.3+; 2.4 installed)",
        "_layer_draws",
    ),
    (
        "integers(0, n) is integers(n)",
        r"rng\.integers\(0, n_heads, ",
        r"rng\.integers\(n_heads, ",
        "Generator.integers(n) reads n as the high end with low 0: the same call, the same draws",
        "_layer_draws",
    ),
]
# a line that is a string literal alone, possibly raised: `"...",` or `raise E("...")` (message text)
MESSAGE = re.compile(r'^(raise \w+\()?f?"([^"\\]|\\.)*"\)?,?$')


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fingerprint(module: str) -> dict[str, str]:
    source, tests = MODULES[module]
    return {rel: sha256(ROOT / rel) for rel in (source, *tests)}


def git_commit(paths: list[str]) -> str:
    """The short HEAD, with "+ local changes" when any of ``paths`` differs from it (read-only git calls)."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    if head.returncode != 0:
        return "unknown"
    diff = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", *paths], cwd=ROOT, capture_output=True)
    return head.stdout.strip() + (" + local changes" if diff.returncode else "")


def prepare(module: str) -> Path:
    """A fresh scratch copy: src/, tests/ and pyproject.toml with the module's [tool.mutmut] section."""
    source, tests = MODULES[module]
    work = WORK / module
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
    shutil.copytree(ROOT / "src", work / "src", ignore=ignore)
    shutil.copytree(ROOT / "tests", work / "tests", ignore=ignore)
    pyproject = (ROOT / "pyproject.toml").read_text()
    section = "\n".join(
        [
            "",
            "[tool.mutmut]",
            'source_paths = ["src"]',
            f"only_mutate = {json.dumps([source])}",
            f"pytest_add_cli_args_test_selection = {json.dumps(list(tests))}",
            'pytest_add_cli_args = ["-p", "no:cacheprovider", "-q"]',
            "use_git_change_detection = false",  # the scratch copy sits inside the repository's _build/
            "",
        ]
    )
    (work / "pyproject.toml").write_text(pyproject + section)
    return work


# Run inside the scratch copy (mutmut reads its config and results from the working directory).
_DUMP = """
import json, sys
from mutmut.__main__ import SourceFileMutationData, status_by_exit_code, walk_mutatable_files
from mutmut.mutation.diff_apply import get_diff_for_mutant
out = {}
for path in walk_mutatable_files():
    data = SourceFileMutationData(path=path)
    data.load()
    for key, code in data.exit_code_by_key.items():
        status = status_by_exit_code[code]
        diff = None
        if status not in ("killed", "timeout"):  # the changed lines only: what the report lists
            lines = get_diff_for_mutant(key, path=path).splitlines()
            diff = "\\n".join(l for l in lines if l[:1] in "-+" and l[:3] not in ("---", "+++"))
        out[key] = {"status": status, "diff": diff}
json.dump(out, sys.stdout)
"""


ENV = {
    **os.environ,
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
}  # mutmut and its workers: one thread each


def survivors_to_rerun(module: str) -> tuple[Path, list[str], dict]:
    """The scratch copy of the last run, refreshed with today's test files, and the mutants it left alive.

    Tests only ever gain assertions between a run and its rerun, so a mutant they killed stays killed; only the
    survivors (and mutants no test reached) are run again. Refused when the module's source changed since the
    run (its mutants are then other mutants), or the scratch copy is gone or of another version: run in full."""
    source, tests = MODULES[module]
    path, work = RESULTS / f"{module}.json", WORK / module
    if not path.is_file() or not (work / "mutants").is_dir():
        raise SystemExit(f"no earlier run of {module} to rerun the survivors of: run it in full first")
    previous = json.loads(path.read_text())
    copied = work / source  # the scratch copy must be the run the result records, not an older one
    if (
        previous["fingerprint"].get(source) != sha256(ROOT / source)
        or not copied.is_file()
        or (sha256(copied) != sha256(ROOT / source))
    ):
        raise SystemExit(
            f"{source} changed since the last run of {module}: its mutants differ; run it in full"
        )
    for test in tests:
        shutil.copy2(ROOT / test, work / test)
    names = [key for key, m in previous["mutants"].items() if m["status"] not in ("killed", "timeout")]
    return work, names, previous


def run(module: str, max_children: int | None, survivors: bool = False) -> Path:
    """Run mutmut over ``module`` in a fresh scratch copy; with ``survivors``, rerun only the last run's survivors
    against the test files as they are now (``survivors_to_rerun``)."""
    # the sources as copied, before mutmut starts: an edit made while it runs must leave this result stale
    fingerprinted = fingerprint(module)
    commit = git_commit([MODULES[module][0], *MODULES[module][1]])
    previous = None
    if survivors:
        work, names, previous = survivors_to_rerun(module)
    else:
        work, names = prepare(module), []
    started = {"fingerprint": fingerprinted, "commit": commit, "previous": _carried(previous)}
    (work / "run.json").write_text(json.dumps(started))
    mutmut = Path(sys.executable).with_name("mutmut")
    command = [str(mutmut), "run"] + ([f"--max-children={max_children}"] if max_children else []) + names
    started_at = time.monotonic()
    log_path = work / ("mutmut-survivors.log" if survivors else "mutmut.log")
    with open(log_path, "w") as log:
        code = subprocess.run(command, cwd=work, env=ENV, stdout=log, stderr=subprocess.STDOUT).returncode
    if code != 0:
        raise SystemExit(
            f"mutmut failed on {module} (exit {code}); see {log_path}. What it finished is kept: "
            f"`python tools/mutation_report.py collect {module}` records it as a partial run"
        )
    return collect(module, time.monotonic() - started_at)


def _carried(previous: dict | None) -> dict | None:
    """What a survivors rerun carries over from the run it continues: its wall time and its date."""
    if previous is None:
        return None
    return {"wall_seconds": previous["wall_seconds"], "date": previous.get("continues") or previous["date"]}


def collect(module: str, wall: float | None = None) -> Path:
    """Record the scratch copy's results as ``results/bench/mutation/<module>.json``: after ``run``, or after a
    run that was stopped (``wall`` unknown: None), whose mutants not yet run stay "not checked" and make the
    result *partial*; ``run <module> --survivors`` goes on from it."""
    work = WORK / module
    if not (work / "run.json").is_file():
        raise SystemExit(f"no mutmut run of {module} in {work}: nothing to collect")
    started = json.loads((work / "run.json").read_text())
    previous = started.get("previous")
    dumped = subprocess.run([sys.executable, "-c", _DUMP], cwd=work, env=ENV, capture_output=True, text=True)
    if dumped.returncode != 0:
        raise SystemExit(f"could not read mutmut's results for {module}:\n{dumped.stderr}")
    mutants = json.loads(dumped.stdout)
    from importlib.metadata import version

    if wall is None:  # a stopped run: the time from its start to its last result
        logs = [p for p in (work / "mutmut.log", work / "mutmut-survivors.log") if p.is_file()]
        wall = max(p.stat().st_mtime for p in logs) - (work / "run.json").stat().st_mtime
    result = {
        "module": module,
        "source": MODULES[module][0],
        "tests": list(MODULES[module][1]),
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "commit": started["commit"],
        "fingerprint": started["fingerprint"],
        "mutmut": version("mutmut"),
        "wall_seconds": round(wall + (previous["wall_seconds"] if previous else 0.0), 1),
        "load_average": os.getloadavg()[0],
        "mutants": mutants,
        # a rerun of survivors: the full run it continues (its date), whose killed mutants stand
        "continues": previous["date"] if previous else None,
        "partial": any(m["status"] == "not checked" for m in mutants.values()),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{module}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)  # never a half-written result
    return path


# --- the report --------------------------------------------------------------------------------------------


def changed_lines(diff: str) -> tuple[list[str], list[str]]:
    lines = diff.splitlines()
    removed = [line[1:] for line in lines if line.startswith("-") and not line.startswith("---")]
    added = [line[1:] for line in lines if line.startswith("+") and not line.startswith("+++")]
    return removed, added


def _covers(pattern: str, line: str, start: int, stop: int) -> bool:
    """Whether one match of ``pattern`` in ``line`` spans the changed stretch ``line[start:stop]``."""
    return any(m.start() <= start and stop <= m.end() for m in re.finditer(pattern, line))


def _matches(before: str, after: str, removed: str, added: str) -> bool:
    """The mutant changed only what the rule's patterns match: the stretch where the two lines differ (after
    their common start and end) lies inside a match of ``before`` on the removed line and of ``after`` on the
    added one, so another change on the same line (a signature holding ``seed`` and ``k``) is not excused."""
    prefix = 0
    while prefix < min(len(removed), len(added)) and removed[prefix] == added[prefix]:
        prefix += 1
    suffix = 0
    while suffix < min(len(removed), len(added)) - prefix and removed[-1 - suffix] == added[-1 - suffix]:
        suffix += 1
    return _covers(before, removed, prefix, len(removed) - suffix) and _covers(
        after, added, prefix, len(added) - suffix
    )


def equivalence(diff: str, function: str | None = None) -> str | None:
    """The reason a surviving mutant (of ``function``, when known) is equivalent, or None."""
    removed, added = changed_lines(diff)
    if not removed or len(removed) != len(added):
        return None
    for name, before, after, reason, *only in EQUIVALENT:
        if only and only[0] != function:
            continue
        if all(_matches(before, after, r, a) for r, a in zip(removed, added)):
            return f"{name}: {reason}"
    return None


def is_message(diff: str) -> bool:
    """Every line the mutant changed is a string literal standing alone (a message, or a piece of one)."""
    removed, _ = changed_lines(diff)
    return bool(removed) and all(MESSAGE.match(line.strip()) for line in removed)


def function_of(key: str) -> str:
    """``pkg.module.x_<function>__mutmut_<n>`` or ``pkg.module.xǁClassǁmethod__mutmut_<n>`` -> the name."""
    name = re.sub(r"__mutmut_\d+$", "", key.rsplit(".", 1)[-1])
    if name.startswith("xǁ"):
        return name[2:].replace("ǁ", ".")
    return name.removeprefix("x_")


def one_line(diff: str) -> str:
    removed, added = changed_lines(diff)

    def squash(lines: list[str]) -> str:
        text = " / ".join(line.strip() for line in lines) or "(nothing)"
        return text if len(text) <= 150 else text[:147] + "..."

    return f"`{squash(removed)}` -> `{squash(added)}`".replace("|", "\\|")


def summarise(result: dict) -> dict:
    counts = {"killed": 0, "survived": 0, "equivalent": 0, "message": 0, "timeout": 0, "other": 0}
    equivalent, survivors = [], []
    for key, mutant in sorted(result["mutants"].items(), key=lambda kv: _natural(kv[0])):
        status = mutant["status"]
        if status == "killed":
            counts["killed"] += 1
        elif status == "timeout":  # the mutant made the tests hang: caught
            counts["timeout"] += 1
        elif status in ("survived", "no tests"):
            reason = equivalence(mutant["diff"] or "", function_of(key))
            if reason:
                counts["equivalent"] += 1
                equivalent.append((key, mutant, reason))
            else:
                counts["survived"] += 1
                counts["message"] += is_message(mutant["diff"] or "")
                survivors.append((key, mutant))
        elif status == "not checked":  # a stopped run's mutants not yet run: neither caught nor survived
            counts["other"] += 1
        else:  # suspicious, segfault, skipped
            counts["other"] += 1
            survivors.append((key, mutant))
    total = len(result["mutants"])
    scored = total - counts["equivalent"] - counts["other"]
    rate = (counts["killed"] + counts["timeout"]) / scored if scored else float("nan")
    stale = result["fingerprint"] != {
        p: sha256(ROOT / p) for p in result["fingerprint"] if (ROOT / p).exists()
    }
    return {
        "counts": counts,
        "total": total,
        "rate": rate,
        "equivalent": equivalent,
        "survivors": survivors,
        "stale": stale,
        "not_checked": sum(m["status"] == "not checked" for m in result["mutants"].values()),
    }


def _natural(key: str) -> tuple:
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", key))


def report() -> Path:
    results = {p.stem: json.loads(p.read_text()) for p in sorted(RESULTS.glob("*.json"))}
    lines = [
        "# Mutation testing of the estimator modules",
        "",
        "Each estimator module is mutated by [mutmut](https://pypi.org/project/mutmut/) (every operator, number,",
        "comparison, argument and string it can change, one mutant at a time) and only the module's own test files",
        "are run against each mutant: a mutant is *killed* when they fail. *Equivalent* mutants change no value",
        "(listed with the reason); the kill rate is killed / (mutants - equivalent). Target (issue #20): at least",
        f"{TARGET:.0%} killed on every estimator module. Regenerate one module with "
        "`make mutation MODULES=<module>` (all: `make mutation`); only the last run's survivors, against today's",
        "tests, with `python tools/mutation_report.py run <module> --survivors`; the report alone with",
        "`python tools/mutation_report.py report`. Results are kept per module in `results/bench/mutation/`;",
        "a result is *stale* when its module or test files changed since it ran.",
        "",
        "| module | own tests | mutants | killed | survived (message text) | equivalent | kill rate | target | run |",
        "|---|---|---:|---:|---:|---:|---:|---|---|",
    ]
    summaries = {}
    for module, (_, tests) in MODULES.items():
        own = ", ".join(Path(t).name for t in tests)
        if module not in results:
            lines.append(f"| {module} | {own} | | | | | | not run yet | `{COMMAND.format(module=module)}` |")
            continue
        result = results[module]
        s = summaries[module] = summarise(result)
        c = s["counts"]
        met = "met" if s["rate"] >= TARGET else "**not met**"
        if result.get("partial"):
            met = f"partial: {s['not_checked']} of {s['total']} not run yet (`run {module} --survivors` goes on)"
        when = f"{result['date'][:10]}, {result['commit']}, {result['wall_seconds'] / 60:.0f} min"
        when += ", **stale**" if s["stale"] else ""
        lines.append(
            f"| {module} | {own} | {s['total']} | {c['killed'] + c['timeout']} | {c['survived']} ({c['message']}) "
            f"| {c['equivalent']} | {s['rate']:.1%} | {met} | {when} |"
        )
    for module, why in PENDING.items():
        lines.append(f"| {module} | | | | | | | pending | {why} |")
    not_run = [m for m in MODULES if m not in results]
    lines += [
        "",
        f"Run so far: {', '.join(summaries) or 'none'}. Not run yet: {', '.join(not_run) or 'none'}"
        + (f"; pending: {', '.join(PENDING)}." if PENDING else "."),
        "A run takes minutes for a small module with fast tests and hours for a large estimator whose tests run",
        "for a minute or more: each mutant reruns the module's tests that reach the function it changed.",
    ]
    for module, s in summaries.items():
        result = results[module]
        lines += ["", f"## {module} (`{result['source']}`)", ""]
        lines.append(
            f"Run {result['date']} at commit {result['commit']} with mutmut {result['mutmut']}, "
            f"{result['wall_seconds'] / 60:.1f} min wall (load average {result['load_average']:.1f}); "
            f"tests: {', '.join(result['tests'])}."
            + (
                f" The survivors of the full run of {result['continues'][:10]} rerun against these tests (the source"
                " unchanged; tests only gain assertions, so a mutant once killed stays killed)."
                if result.get("continues")
                else ""
            )
        )
        if s["equivalent"]:
            lines += ["", f"Equivalent ({len(s['equivalent'])}):", ""]
            lines += [
                f"- `{function_of(k)}` {one_line(m['diff'])}: {reason}" for k, m, reason in s["equivalent"]
            ]
        tally: dict[str, list[int]] = {}  # function -> [mutants, caught]
        for key, mutant in result["mutants"].items():
            counts = tally.setdefault(function_of(key), [0, 0])
            counts[0] += 1
            counts[1] += mutant["status"] in ("killed", "timeout")
        lines += [
            "",
            "Per function (one whose mutants go uncaught is barely tested by the module's own files, if at all):",
            "",
            "| function | mutants | caught | not caught |",
            "|---|---:|---:|---:|",
        ]
        for function, (n, caught) in sorted(tally.items(), key=lambda kv: (kv[1][1] - kv[1][0], kv[0])):
            lines.append(f"| `{function}` | {n} | {caught} | {n - caught} |")
        by_function: dict[str, list[str]] = {}
        for key, mutant in s["survivors"]:
            note = "" if mutant["status"] == "survived" else f" ({mutant['status']})"
            note += " (message text)" if is_message(mutant["diff"] or "") else ""
            by_function.setdefault(function_of(key), []).append(f"{one_line(mutant['diff'] or '')}{note}")
        if by_function:
            lines += ["", f"Survivors ({len(s['survivors'])}), by function:", ""]
            for function, entries in by_function.items():
                lines.append(f"- `{function}` ({len(entries)}):")
                lines += [f"  - {entry}" for entry in entries]
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text("\n".join(lines) + "\n")
    return REPORT


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run_parser = sub.add_parser("run", help="run mutmut over modules (default: all) and write the report")
    run_parser.add_argument("modules", nargs="*", help=f"of: {', '.join(MODULES)}")
    run_parser.add_argument("--max-children", type=int, default=None, help="mutmut's parallel workers")
    run_parser.add_argument(
        "--survivors",
        action="store_true",
        help="rerun only the last run's survivors against today's tests (the module's source unchanged)",
    )
    collect_parser = sub.add_parser(
        "collect", help="record a stopped run's results so far (a partial result)"
    )
    collect_parser.add_argument("module", choices=list(MODULES))
    sub.add_parser("report", help="write results/bench/mutation.md from the results kept so far")
    sub.add_parser("list", help="the modules and their test files")
    args = parser.parse_args(argv)
    if args.command == "list":
        for module, (source, tests) in MODULES.items():
            print(f"{module}: {source} <- {' '.join(tests)}")
        return
    if args.command == "collect":
        print(f"mutation: {collect(args.module).relative_to(ROOT)}", flush=True)
    if args.command == "run":
        unknown = [m for m in args.modules if m not in MODULES]
        if unknown:
            raise SystemExit(f"unknown modules {unknown}; choose from {', '.join(MODULES)}")
        for module in args.modules or list(MODULES):
            print(f"mutation: {module} ...", flush=True)
            print(f"mutation: {run(module, args.max_children, args.survivors).relative_to(ROOT)}", flush=True)
    print(f"mutation: {report().relative_to(ROOT)}")


if __name__ == "__main__":
    main()
