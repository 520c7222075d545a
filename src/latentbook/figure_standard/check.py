"""The book's standard for a matplotlib figure, checked where it is drawn: no legend or text box over plotted
data, no two labels on top of each other, and no text that renders under ``MIN_TEXT_PX`` in the book's column.

A page shows a figure's PNG (``dpi`` x its tight box) at its natural width, or scaled down to the content
column when wider, so text of ``s`` points renders at ``s * dpi / 72 * min(1, column / width)`` pixels.
Plotted data are the vertices of lines (and points along their segments), scatter offsets, the edges of
filled areas and the boxes of bars, in display coordinates and inside their axes; guides drawn across the
axes (``axhline``, ``axvline``, ``axvspan``) and heatmap cells are not data.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from matplotlib.axes import Axes
from matplotlib.collections import Collection, PathCollection, QuadMesh
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.patches import Rectangle
from matplotlib.text import Text
from matplotlib.transforms import Bbox

CONTENT_WIDTH_PX = 757  # the book's content column (.bd-article's inner width) in a 1366 px wide window
MIN_TEXT_PX = 9.0
STEP_PX = 2.0  # points sampled along a segment of a line, this far apart on the screen
MARGIN_PX = 1.5  # a legend's or text's box shrunk by this much: a point grazing its edge is not under it


def _renderer(fig: Figure):
    """A renderer for ``fig`` (Agg: the book's PNGs), attaching an Agg canvas if the figure has none."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if not hasattr(fig.canvas, "get_renderer"):
        FigureCanvasAgg(fig)
    return fig.canvas.get_renderer()


def drawn_texts(fig: Figure) -> list[Text]:
    """Every non-empty text the figure draws (tick labels in view, titles, legends, annotations), in order."""
    renderer = _renderer(fig)
    seen: list[Text] = []
    draw_text = renderer.draw_text

    def record(gc, x, y, s, prop, angle, ismath=False, mtext=None):
        if mtext is not None and str(s).strip() and mtext not in seen:
            seen.append(mtext)
        return draw_text(gc, x, y, s, prop, angle, ismath=ismath, mtext=mtext)

    renderer.draw_text = record
    try:
        fig.draw(renderer)  # runs the figure's layout engine too, as saving it does
    finally:
        del renderer.draw_text
    return seen


def rendered_scale(fig: Figure, column_px: float = CONTENT_WIDTH_PX) -> float:
    """How much the page shrinks the figure: ``min(1, column / width)``, the PNG's width being its tight box
    (``bbox_inches="tight"``, 0.1 inch padding each side) at the figure's dpi."""
    renderer = _renderer(fig)
    fig.draw_without_rendering()  # the layout engine places the axes first, as saving does
    width_px = (fig.get_tightbbox(renderer).width + 0.2) * fig.dpi
    return min(1.0, column_px / width_px)


def small_text(fig: Figure, column_px: float = CONTENT_WIDTH_PX, min_px: float = MIN_TEXT_PX) -> list[str]:
    """Each drawn text whose rendered size ``points * dpi / 72 * rendered_scale`` is under ``min_px``."""
    texts = drawn_texts(fig)
    scale = rendered_scale(fig, column_px)
    found = []
    for text in texts:
        px = text.get_fontsize() * fig.dpi / 72.0 * scale
        if px < min_px - 1e-9:
            found.append(f"text {text.get_text()!r} renders at {px:.1f} px (under {min_px:g} px)")
    return found


def _is_data(transform, ax: Axes) -> bool:
    """Whether ``transform`` places points by data coordinates on both axes (not a guide across the axes)."""
    return transform.contains_branch(ax.transData)


def _densify(points: np.ndarray) -> np.ndarray:
    """The vertices of a polyline and points along each segment at most ``STEP_PX`` apart (NaN breaks it)."""
    points = points[np.all(np.isfinite(points), axis=1)] if len(points) else points
    if len(points) < 2:
        return points
    parts = [points[:1]]
    for a, b in zip(points[:-1], points[1:]):
        n = int(np.ceil(np.hypot(*(b - a)) / STEP_PX))
        n = min(max(n, 1), 2000)
        t = np.linspace(0.0, 1.0, n + 1)[1:, None]
        parts.append(a + t * (b - a))
    return np.concatenate(parts)


def _collection_points(collection: Collection, ax: Axes) -> np.ndarray:
    if isinstance(collection, QuadMesh):  # a heatmap's cells: its labels belong on them
        return np.empty((0, 2))
    if isinstance(collection, PathCollection) and len(collection.get_offsets()):  # scatter
        if not _is_data(collection.get_offset_transform(), ax):
            return np.empty((0, 2))
        return collection.get_offset_transform().transform(np.asarray(collection.get_offsets()))
    if not _is_data(collection.get_transform(), ax):
        return np.empty((0, 2))
    transform = collection.get_transform()
    parts = [_densify(transform.transform(path.vertices)) for path in collection.get_paths()]
    return np.concatenate(parts) if parts else np.empty((0, 2))


def data_points(ax: Axes) -> np.ndarray:
    """The display coordinates ``(n, 2)`` of the data plotted on ``ax`` that fall inside its box."""
    ax.viewLim  # noqa: B018 (autoscales the view, so that transData places the data where they are drawn)
    parts = [np.empty((0, 2))]
    for line in ax.lines:
        if line.get_visible() and _is_data(line.get_transform(), ax):
            xy = np.asarray(line.get_xydata(), dtype=np.float64)
            parts.append(_densify(line.get_transform().transform(xy)) if len(xy) else xy)
    for collection in ax.collections:
        if collection.get_visible():
            parts.append(_collection_points(collection, ax))
    points = np.concatenate(parts)
    points = points[np.all(np.isfinite(points), axis=1)]
    box = ax.bbox
    inside = (
        (points[:, 0] >= box.x0)
        & (points[:, 0] <= box.x1)
        & (points[:, 1] >= box.y0)
        & (points[:, 1] <= box.y1)
    )
    return points[inside]


def data_boxes(ax: Axes) -> list[Bbox]:
    """The boxes of bars and histogram bins on ``ax`` (rectangles placed in data coordinates)."""
    renderer = _renderer(ax.figure)
    ax.viewLim  # noqa: B018 (autoscales the view)
    boxes = []
    for patch in ax.patches:
        if isinstance(patch, Rectangle) and patch.get_visible() and _is_data(patch.get_transform(), ax):
            box = Bbox.intersection(patch.get_window_extent(renderer), ax.bbox)
            if box is not None and box.width > 0 and box.height > 0:
                boxes.append(box)
    return boxes


def _shrunk(box: Bbox) -> Bbox:
    return Bbox.from_extents(box.x0 + MARGIN_PX, box.y0 + MARGIN_PX, box.x1 - MARGIN_PX, box.y1 - MARGIN_PX)


def _covers(box: Bbox, ax: Axes) -> int:
    """How many of ``ax``'s data points and bar boxes lie under ``box``."""
    box = _shrunk(box)
    if box.width <= 0 or box.height <= 0:
        return 0
    points = data_points(ax)
    under = (
        (points[:, 0] > box.x0) & (points[:, 0] < box.x1) & (points[:, 1] > box.y0) & (points[:, 1] < box.y1)
    )
    return int(under.sum()) + sum(box.overlaps(bar) for bar in data_boxes(ax))


def legends(fig: Figure) -> list[Legend]:
    """The figure's legends: each axes' and the figure's own."""
    found = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    return found + list(fig.legends)


def legend_overlaps(fig: Figure, which: Iterable[Legend] | None = None) -> list[str]:
    """Each legend (``which``, else all) whose box covers data of any axes of the figure."""
    renderer = _renderer(fig)
    found = []
    for legend in legends(fig) if which is None else which:
        if not legend.get_visible():
            continue
        box = legend.get_window_extent(renderer)
        for k, ax in enumerate(fig.axes):
            n = _covers(box, ax)
            if n:
                names = [t.get_text() for t in legend.get_texts()][:3]
                found.append(f"legend {names} covers {n} data points of axes {k} ({ax.get_title()!r})")
    return found


def text_overlaps(fig: Figure) -> list[str]:
    """Each text drawn inside an axes (``ax.text``, annotations) whose box covers that axes' data."""
    renderer = _renderer(fig)
    found = []
    for k, ax in enumerate(fig.axes):
        for text in ax.texts:
            if text.get_visible() and text.get_text().strip():
                n = _covers(text.get_window_extent(renderer), ax)
                if n:
                    found.append(f"text {text.get_text()!r} covers {n} data points of axes {k}")
    return found


def text_collisions(fig: Figure) -> list[str]:
    """Each pair of drawn, unrotated texts whose boxes overlap (labels that run together, "holdsholds")."""
    renderer = _renderer(fig)
    texts = [t for t in drawn_texts(fig) if t.get_rotation() % 90 == 0]
    boxes = [_shrunk(t.get_window_extent(renderer)) for t in texts]
    found = []
    for i in range(len(texts)):
        for j in range(i + 1, len(texts)):
            a, b = boxes[i], boxes[j]
            if a.width > 0 and b.width > 0 and a.overlaps(b):
                found.append(f"texts {texts[i].get_text()!r} and {texts[j].get_text()!r} overlap")
    return found


def problems(fig: Figure, column_px: float = CONTENT_WIDTH_PX) -> list[str]:
    """Everything in ``fig`` that breaks the book's standard; empty when it reads.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure, complete (it is laid out as saving it would).
    column_px : float
        The width of the page's content column, in pixels.

    Returns
    -------
    list of str
        One line per problem: a legend or text over data, two texts on top of each other, text under
        ``MIN_TEXT_PX`` once the page scales the figure.

    Examples
    --------
    Two crossing lines with the legend where they cross, then in a free corner:

    >>> from matplotlib.figure import Figure
    >>> fig = Figure(figsize=(6.5, 3.8))
    >>> ax = fig.subplots()
    >>> rising = ax.plot([0, 1], [0, 1], label="rising")
    >>> falling = ax.plot([0, 1], [1, 0], label="falling")
    >>> from latentbook.figure_standard import problems
    >>> legend = ax.legend(loc="center")
    >>> problems(fig)
    ["legend ['rising', 'falling'] covers ... data points of axes 0 ('')"]
    >>> legend = ax.legend(loc="upper center")
    >>> problems(fig)
    []
    """
    drawn_texts(fig)  # lays the figure out as saving it would, before boxes are measured
    return legend_overlaps(fig) + text_overlaps(fig) + text_collisions(fig) + small_text(fig, column_px)


class FigureStandardError(AssertionError):
    """A figure breaks the book's standard (``problems``).

    An ``AssertionError``, so a test or a notebook cell that draws a figure which does not read fails.

    Parameters
    ----------
    message : str
        What is wrong: ``problems``' lines.

    Examples
    --------
    >>> from latentbook.figure_standard import FigureStandardError
    >>> issubclass(FigureStandardError, AssertionError)
    True
    >>> raise FigureStandardError("the figure does not read")
    Traceback (most recent call last):
    ...
    latentbook.figure_standard.check.FigureStandardError: the figure does not read
    """


def require_readable(fig: Figure, column_px: float = CONTENT_WIDTH_PX) -> Figure:
    """``fig`` unchanged when ``problems(fig)`` is empty; else ``FigureStandardError`` listing them.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure, complete.
    column_px : float
        The width of the page's content column, in pixels.

    Returns
    -------
    matplotlib.figure.Figure
        ``fig`` itself.

    Raises
    ------
    FigureStandardError
        When ``problems(fig)`` finds anything, listing it.

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> fig = Figure(figsize=(6.5, 3.8))
    >>> ax = fig.subplots()
    >>> rising = ax.plot([0, 1], [0, 1], label="rising")
    >>> falling = ax.plot([0, 1], [1, 0], label="falling")
    >>> from latentbook.figure_standard import require_readable
    >>> legend = ax.legend(loc="upper center")
    >>> require_readable(fig) is fig
    True
    >>> legend = ax.legend(loc="center")  # where the lines cross
    >>> require_readable(fig)
    Traceback (most recent call last):
    ...
    latentbook.figure_standard.check.FigureStandardError: the figure does not read:
    legend ['rising', 'falling'] covers ... data points of axes 0 ('')
    """
    found = problems(fig, column_px)
    if found:
        raise FigureStandardError("the figure does not read:\n" + "\n".join(found))
    return fig
