"""The book's standard for a figure, below every wing that draws (``view``, ``ladder``, ``course``).

- ``check``: what breaks the standard (a legend or text over data, labels on top of each other, text under
  9 px in the book's column), and ``require_readable``;
- ``legends``: a legend placed where it covers no data (in a free place of its axes, or under the panels);
- ``on_show``: the check on every figure a notebook shows, so a page that shows one that does not read fails.
"""

from .check import FigureStandardError, problems, require_readable
from .legends import legend, legend_below
from .on_show import check_figures_on_show

__all__ = [
    "FigureStandardError",
    "check_figures_on_show",
    "legend",
    "legend_below",
    "problems",
    "require_readable",
]
