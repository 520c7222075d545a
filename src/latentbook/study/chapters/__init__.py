"""The chapters' tables and glued numbers, one tested function per table (a module per chapter), and
``glue_frame``, which glues them.

A chapter cell reads ``table = chapters.omega_tables.reference_table(captures)`` and ``glue_frame("ch3", values)``:
the computation lives here, where ``tests/test_study_chapters_*.py`` check it on synthetic inputs, and the
chapter keeps its prose, figures and calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from ...capturing import Capture

# The helpers below, in the order of the source (the API appendix shows them so), then one module per chapter
# (imported on first use: ``from latentbook.study.chapters import omega_tables``).
__all__ = [
    "nearest_depth",
    "label_key",
    "glue_keys",
    "glue_frame",
    "appendix_tables",
    "controlled_test_tables",
    "criteria_flow",
    "criteria_planted",
    "criteria_tables",
    "depth_as_time_tables",
    "intro_tables",
    "landmarks_tables",
    "learned_basis_tables",
    "mixtures_tables",
    "omega_tables",
    "performance_tables",
    "prototype_tables",
    "rg_flow_tables",
    "spectra_tables",
    "thermodynamics_tables",
    "verdict_reading",
    "verdict_tables",
]


def nearest_depth(cap: Capture, gamma: float) -> int:
    """The captured depth whose depth fraction is nearest ``gamma``, ``argmin_l |gamma_l - gamma|``.

    Parameters
    ----------
    cap : Capture
        The capture; only the depths it holds are candidates.
    gamma : float
        A depth fraction ``l / L``.

    Returns
    -------
    int
        The model's depth ``l`` (the first of two equally near).

    Examples
    --------
    A capture of depths 0, 2 and 4 of a 4-layer model (``gamma = 0, 0.5, 1``; no statistics added):

    >>> from latentbook.capturing import Capture, LayerStats, TokenReservoir
    >>> from latentbook.study.chapters import nearest_depth
    >>> cap = Capture("toy", n_layers=4, d_model=8, layers=[LayerStats(8) for _ in range(3)], final_norm=None,
    ...               vectors=TokenReservoir(4, 3, 8), omega_sample=TokenReservoir(4, 3, 1), depths=[0, 2, 4])
    >>> nearest_depth(cap, 0.3), nearest_depth(cap, 0.9), nearest_depth(cap, 0.25)
    (2, 4, 0)
    """
    import numpy as np

    return int(cap.depths[int(np.argmin(np.abs(np.asarray(cap.gamma, dtype=float) - gamma)))])


def label_key(label: str) -> str:
    """Glue-name stem of a run label: ``smollm2-135m`` is ``smollm2``, ``random:gemma3-270m`` ``random_gemma3``,
    ``smollm2-135m (shuffled)`` ``smollm2_shuffled``.

    Parameters
    ----------
    label : str
        A run label (``runs``).

    Returns
    -------
    str
        The stem: the name before its first ``-``, ``random_`` before it for a random twin, ``_shuffled`` after it
        for a shuffled run.

    Examples
    --------
    >>> from latentbook.study.chapters import label_key
    >>> label_key("smollm2-135m"), label_key("random:gemma3-270m"), label_key("smollm2-135m (shuffled)")
    ('smollm2', 'random_gemma3', 'smollm2_shuffled')
    """
    stem = label.removeprefix("random:").split(" ")[0].split("-")[0]
    return (
        ("random_" if label.startswith("random:") else "")
        + stem
        + ("_shuffled" if "shuffled" in label else "")
    )


def glue_keys(prefix: str, values: Mapping[str, object] | pd.Series | pd.DataFrame) -> dict[str, object]:
    """``{f"{prefix}_{key}": value}`` for a mapping or a Series (its index the keys); for a DataFrame, one key
    ``f"{prefix}_{row}_{column}"`` per cell. Numpy scalars become Python numbers (so the glued text is a plain
    ``0.25``, not ``np.float64(0.25)``); a key that is not a valid name part is refused.

    Parameters
    ----------
    prefix : str
        Letters, digits and underscores (the chapter's, e.g. ``"ch3"``).
    values : mapping, pandas.Series or pandas.DataFrame
        What to glue.

    Returns
    -------
    dict of str to object
        The glue names and their values, in the order of ``values`` (a DataFrame row by row).

    Raises
    ------
    ValueError
        For a bad prefix, or a key giving a name a ``{glue:}`` role cannot use.
    TypeError
        For ``values`` of another type.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from latentbook.study.chapters import glue_keys
    >>> glue_keys("ch3", {"gmax": np.float64(0.5), "n": 3})
    {'ch3_gmax': 0.5, 'ch3_n': 3}
    >>> glue_keys("ch3", pd.DataFrame({"mean": [0.2, 0.3]}, index=["smollm2", "gemma3"]))
    {'ch3_smollm2_mean': 0.2, 'ch3_gemma3_mean': 0.3}
    >>> glue_keys("ch3", {"a b": 1})
    Traceback (most recent call last):
    ...
    ValueError: glue key 'ch3_a b' holds characters a {glue:} role cannot name; rename 'a b'.
    """
    import numpy as np
    import pandas as pd

    if not prefix or not prefix.replace("_", "").isalnum():
        raise ValueError(f"glue prefix must be letters, digits and underscores, got {prefix!r}.")
    if isinstance(values, pd.DataFrame):
        items = {
            f"{row}_{column}": values.loc[row, column] for row in values.index for column in values.columns
        }
    elif isinstance(values, pd.Series):
        items = dict(values.items())
    elif isinstance(values, Mapping):
        items = dict(values)
    else:
        raise TypeError(f"glue_frame takes a mapping, a Series or a DataFrame, got {type(values).__name__}.")
    glued = {}
    for key, value in items.items():
        name = f"{prefix}_{key}"
        if not name.replace("_", "").replace("-", "").isalnum():
            raise ValueError(
                f"glue key {name!r} holds characters a {{glue:}} role cannot name; rename {key!r}."
            )
        if isinstance(value, np.generic):
            value = value.item()
        glued[name] = value
    return glued


def glue_frame(prefix: str, values: Mapping[str, object] | pd.Series | pd.DataFrame) -> dict[str, object]:
    """Glue every value of ``values`` (see ``glue_keys`` for the names) with myst-nb, none displayed in place;
    returns what it glued. A float NaN is glued as ``nan``: the prose shows it, nothing turns it into a number.

    Parameters
    ----------
    prefix : str
        Letters, digits and underscores (the chapter's, e.g. ``"ch3"``).
    values : mapping, pandas.Series or pandas.DataFrame
        What to glue (``glue_keys``).

    Returns
    -------
    dict of str to object
        What was glued, by glue name (``glue_keys(prefix, values)``): end the cell with ``;`` so the page does
        not print it.

    Examples
    --------
    Each value goes to myst-nb's ``glue`` (here replaced by a mock, which records its calls):

    >>> from unittest import mock
    >>> import numpy as np
    >>> from latentbook.study.chapters import glue_frame
    >>> with mock.patch("myst_nb.glue") as glue:
    ...     glued = glue_frame("ch3", {"gmax": np.float64(0.5), "missing": float("nan")})
    >>> glued
    {'ch3_gmax': 0.5, 'ch3_missing': nan}
    >>> glue.call_args_list
    [call('ch3_gmax', 0.5, display=False), call('ch3_missing', nan, display=False)]
    """
    from myst_nb import glue

    glued = glue_keys(prefix, values)
    for name, value in glued.items():
        glue(name, value, display=False)
    return glued
