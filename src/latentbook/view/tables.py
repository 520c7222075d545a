"""Data frames as the book shows them: named columns, no row numbers, booleans as yes/no, missing values as a
dash whose meaning is said under the table, and numbers rounded (with units in the column names).

A number ``x`` is written with ``decimals`` places when ``|x| >= 10**-decimals`` (or 0), else in scientific
notation with two significant digits (``7.5e-08``), so no small value reads as 0.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from pandas.io.formats.style import Styler

MISSING = "—"
YES, NO = "yes", "no"


def number(x: float, decimals: int = 3) -> str:
    """``x`` rounded to ``decimals`` places, or ``7.5e-08`` style when that would round it to 0."""
    if isinstance(x, (bool, np.bool_)):
        return YES if x else NO
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if x == 0 or abs(x) >= 10.0**-decimals:
        return f"{x:.{decimals}f}"
    return f"{x:.1e}"


def cell(value: object, decimals: int = 3, missing: str = MISSING) -> str:
    """One cell as text: missing (None, NaN) as ``missing``, booleans as yes/no, numbers by ``number``."""
    if value is None or (isinstance(value, (float, np.floating)) and np.isnan(value)) or value is pd.NA:
        return missing
    if isinstance(value, (bool, np.bool_, int, np.integer, float, np.floating)):
        return number(value, decimals)
    return str(value)


def present(
    frame: pd.DataFrame,
    *,
    decimals: int | Mapping[str, int] = 3,
    units: Mapping[str, str] | None = None,
    missing: str = MISSING,
    note: str | None = None,
    index: str | None = None,
) -> Styler:
    """``frame`` ready to show: ``index`` (a column) becomes the row labels, a plain 0..n-1 index is hidden,
    each cell goes through ``cell`` (``decimals`` per column where a mapping, 3 elsewhere), a column named in
    ``units`` reads "name (unit)", and ``note`` (what ``missing`` means) is the table's caption."""
    shown = frame.set_index(index) if index is not None else frame.copy()
    per_column = decimals if isinstance(decimals, Mapping) else {}
    default = 3 if isinstance(decimals, Mapping) else decimals
    text = pd.DataFrame(
        {
            column: [cell(v, per_column.get(column, default), missing) for v in shown[column]]
            for column in shown.columns
        },
        index=shown.index,
    )
    text.columns = [_named(column, (units or {}).get(column)) for column in shown.columns]
    styler = text.style
    plain = isinstance(shown.index, pd.RangeIndex) and shown.index.name is None
    if plain:
        styler = styler.hide(axis="index")
    if note is None and any(missing in v for v in text.to_numpy().ravel()):
        note = f"{missing}: no value"
    if note:
        styler = styler.set_caption(note)
    return styler


def _named(column: object, unit: str | None) -> str:
    name = " ".join(map(str, column)) if isinstance(column, tuple) else str(column)
    return f"{name} ({unit})" if unit else name
