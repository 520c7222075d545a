"""Plain-text tables that fit a terminal: the command line's output (``latentbook models``, ``report``).

``text_table(frame, width=100, wrap="source")``: every column as wide as its longest cell, except ``wrap``,
which is wrapped into the room left (continuation lines start under it), or, when too little room is left,
printed on its own indented lines under each row. Numbers are right-aligned, text left-aligned.
"""

from __future__ import annotations

import textwrap
import unicodedata
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

WIDTH = 100  # the command line's output fits this many columns
MIN_WRAP = 24  # narrowest column a wrapped text may get before it moves to its own line
GAP = "  "


def printable(text: str) -> str:
    """``text`` safe for a terminal: every control or format character (Unicode categories Cc and Cf: escape
    sequences, carriage returns, bidirectional overrides) but the newline and the tab written as a visible escape
    (``\\x1b``, ``\\u202e``), so a string read from a file can neither move the cursor, retitle the window nor
    hide text."""
    return "".join(
        ch
        if ch in "\n\t" or unicodedata.category(ch) not in ("Cc", "Cf")
        else ch.encode("unicode_escape").decode("ascii")
        for ch in text
    )


def wrap(text: str, width: int = WIDTH, indent: int = 0) -> list[str]:
    """``text`` wrapped to ``width`` columns, every line indented by ``indent`` spaces (never empty)."""
    pad = " " * indent
    return textwrap.wrap(text, width, initial_indent=pad, subsequent_indent=pad, break_on_hyphens=False) or [
        pad.rstrip()
    ]


def text_table(
    frame: pd.DataFrame,
    width: int = WIDTH,
    wrap_column: str | None = None,
    indent: int = 4,
    below: bool = False,
) -> str:
    """``frame`` as aligned text, no line longer than ``width`` (when its other columns fit at all);
    ``below``: ``wrap_column`` always on its own lines, indented by ``indent``, under each row."""
    import pandas as pd

    columns = [c for c in frame.columns if c != wrap_column]
    cells = {c: [_cell(v) for v in frame[c]] for c in frame.columns}
    widths = {c: max([len(str(c)), *(len(v) for v in cells[c])]) for c in columns}
    right = {
        c: pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c])
        for c in columns
    }

    def line(values: dict[str, str]) -> str:
        return GAP.join(
            values[c].rjust(widths[c]) if right[c] else values[c].ljust(widths[c]) for c in columns
        )

    fixed = sum(widths.values()) + len(GAP) * len(columns)
    room = width - fixed
    inline = wrap_column is not None and not below and room >= MIN_WRAP
    header = line({c: str(c) for c in columns})
    if inline:
        header += GAP + str(wrap_column)
    out = [header.rstrip()]
    for i in range(len(frame)):
        row = line({c: cells[c][i] for c in columns})
        if wrap_column is None:
            out.append(row.rstrip())
        elif inline:
            first, *rest = textwrap.wrap(cells[wrap_column][i], room, break_on_hyphens=False) or [""]
            out.append((row + GAP + first).rstrip())
            out += [" " * fixed + more for more in rest]
        else:
            out.append(row.rstrip())
            out += wrap(cells[wrap_column][i], width, indent)
    return "\n".join(out)


def _cell(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
