"""A legend placed where it covers no data: the first free place inside the axes, else to their right
(``legend``), or one legend for a figure of several panels, under them (``legend_below``)."""

from __future__ import annotations

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.legend import Legend

from . import check

PLACES = (
    "upper left",
    "upper right",
    "lower right",
    "lower left",
    "upper center",
    "lower center",
    "center left",
    "center right",
)


def legend(ax: Axes, *, inside: int = 4, **options) -> Legend:
    """The legend in the first place of ``PLACES`` (corners first) where its box covers no data of the figure
    (``check.legend_overlaps``); to the right of the axes when no place is free or it has more than ``inside``
    entries. ``options`` go to ``Axes.legend`` (``handles``, ``labels``, ``title``, ``ncol``...).

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The axes, with its data drawn.
    inside : int
        The most entries a legend inside the axes may have.
    **options
        Passed to ``Axes.legend``; ``frameon=False`` and ``fontsize="small"`` unless given.

    Returns
    -------
    matplotlib.legend.Legend
        The legend drawn.

    Examples
    --------
    Two crossing lines cover the four corners, so the legend goes to a free place between them:

    >>> from matplotlib.figure import Figure
    >>> fig = Figure(figsize=(6.5, 3.8))
    >>> ax = fig.subplots()
    >>> rising = ax.plot([0, 1], [0, 1], label="rising")
    >>> falling = ax.plot([0, 1], [1, 0], label="falling")
    >>> from latentbook.figure_standard import legend, problems
    >>> drawn = legend(ax)
    >>> [text.get_text() for text in drawn.get_texts()], problems(fig)
    (['rising', 'falling'], [])
    """
    options = {"frameon": False, "fontsize": "small"} | options
    n_entries = len(options["labels"]) if "labels" in options else len(ax.get_legend_handles_labels()[1])
    drawn = None
    if n_entries <= inside:
        for place in PLACES:
            drawn = ax.legend(loc=place, **options)
            if not check.legend_overlaps(ax.figure, [drawn]):
                break
        else:
            drawn = None
    if drawn is None:
        drawn = ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), **options)
    setattr(drawn, PLACED_BY, (inside, options))  # ``settle`` places it again once the layout is final
    return drawn


PLACED_BY = "_latentbook_legend"


def settle(fig: Figure) -> Figure:
    """Place every legend ``legend`` drew on ``fig`` again, now that the figure is complete: a legend placed while
    a panel was still being drawn, or before ``tight_layout`` and shared axes moved the data, may cover data that
    came later. ``check_figures_on_show`` calls it before checking and showing a figure."""
    for ax in fig.axes:
        drawn = ax.get_legend()
        if drawn is not None and hasattr(drawn, PLACED_BY):
            inside, options = getattr(drawn, PLACED_BY)
            legend(ax, inside=inside, **options)
    return fig


def legend_below(
    fig: Figure, handles: list | None = None, labels: list[str] | None = None, **options
) -> Legend:
    """One legend for the whole figure, under its axes, where it covers no data: its entries are those of every
    axes (each label once) unless ``handles`` and ``labels`` are given, in ``ncol`` columns (at most 3 unless
    given). Call it after the figure's layout (``tight_layout``), which it does not move.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure, laid out.
    handles, labels : list, optional
        The entries; None takes every axes' entries, each label once.
    **options
        Passed to ``Figure.legend``; ``frameon=False``, ``fontsize="small"`` and ``ncol`` unless given.

    Returns
    -------
    matplotlib.legend.Legend
        The figure's legend.

    Examples
    --------
    Two panels with the same two lines get one legend of two entries, under them:

    >>> from matplotlib.figure import Figure
    >>> from latentbook.figure_standard import legend_below, problems
    >>> fig = Figure(figsize=(7, 3))
    >>> for ax in fig.subplots(1, 2):
    ...     rising = ax.plot([0, 1], [0, 1], label="rising")
    ...     falling = ax.plot([0, 1], [1, 0], label="falling")
    >>> fig.tight_layout()
    >>> drawn = legend_below(fig)
    >>> [text.get_text() for text in drawn.get_texts()], problems(fig)
    (['rising', 'falling'], [])
    """
    if handles is None:
        entries: dict[str, object] = {}
        for ax in fig.axes:
            for handle, label in zip(*ax.get_legend_handles_labels()):
                entries.setdefault(label, handle)
        handles, labels = list(entries.values()), list(entries)
    options = {"frameon": False, "fontsize": "small", "ncol": min(len(handles), 3)} | options
    return fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), **options)
