"""The check on every figure a notebook shows: ``check_figures_on_show()`` in a page's first cell makes a figure
that breaks the standard (``check.problems``) an error of the cell that shows it, so that the book's build, which
executes every page with ``raise_on_error``, fails on that page.

Whichever way a figure is shown (``plt.show()``, ``display(fig)``, ``glue``, a figure as a cell's last
expression, or the inline backend showing what a cell drew when the cell ends), it reaches the page through
IPython's display formatter. The check wraps that formatter: the figure is still shown, so a reader (a student in
a lab) sees what is wrong, and the cell fails as it ends with ``FigureStandardError`` listing the problems.
"""

from __future__ import annotations

from matplotlib.figure import Figure

from .check import FigureStandardError, require_readable
from .legends import settle


def check_figures_on_show(shell=None) -> bool:
    """From now on, every figure the IPython ``shell`` (the running one when omitted) shows must pass
    ``check.require_readable``, or the cell that shows it fails once it has shown it. False, and nothing done,
    outside IPython; calling it again changes nothing.

    Parameters
    ----------
    shell : IPython.core.interactiveshell.InteractiveShell, optional
        The shell whose display formatter is wrapped; None: the running one.

    Returns
    -------
    bool
        True when the shell's figures are checked (now or already), False outside IPython.

    Examples
    --------
    In a shell (here a stand-in with the three parts of an IPython shell it uses), a figure with its legend over
    the data is still shown, and the cell that showed it ends in ``FigureStandardError``:

    >>> from types import SimpleNamespace
    >>> from latentbook.figure_standard import check_figures_on_show
    >>> hooks = {}
    >>> shell = SimpleNamespace(
    ...     display_formatter=SimpleNamespace(format=lambda obj, *args, **kwargs: "shown"),
    ...     events=SimpleNamespace(register=hooks.__setitem__),
    ...     showtraceback=lambda exc_info: print(exc_info[0].__name__),
    ... )
    >>> check_figures_on_show(shell), check_figures_on_show(shell)
    (True, True)
    >>> from matplotlib.figure import Figure
    >>> fig = Figure(figsize=(6.5, 3.8))
    >>> ax = fig.subplots()
    >>> rising = ax.plot([0, 1], [0, 1], label="rising")
    >>> falling = ax.plot([0, 1], [1, 0], label="falling")
    >>> legend = ax.legend(loc="center")  # where the lines cross
    >>> hooks["pre_run_cell"]()  # a cell starts, shows the figure and ends
    >>> shell.display_formatter.format(fig)
    'shown'
    >>> cell = SimpleNamespace(success=True, error_in_exec=None)
    >>> hooks["post_run_cell"](cell)
    FigureStandardError
    >>> type(cell.error_in_exec).__name__
    'FigureStandardError'
    """
    if shell is None:
        from IPython import get_ipython

        shell = get_ipython()
    if shell is None:
        return False
    formatter = shell.display_formatter
    if getattr(formatter.format, "checks_figures", False):
        return True
    shown = formatter.format
    failures: list[FigureStandardError] = []

    def checked(obj, *args, **kwargs):
        if isinstance(obj, Figure):
            settle(obj)  # legends placed before the figure was complete, placed again
            try:
                require_readable(obj)
            except FigureStandardError as error:
                failures.append(error)
        return shown(obj, *args, **kwargs)

    def forget(*_) -> None:
        failures.clear()

    def fail_the_cell(result) -> None:
        if not failures or result is None or not result.success:
            return
        error = failures[0] if len(failures) == 1 else FigureStandardError("\n".join(map(str, failures)))
        shell.showtraceback((type(error), error, error.__traceback__))
        result.error_in_exec = error  # what the kernel reports: the cell's status is "error"

    checked.checks_figures = True
    formatter.format = checked
    shell.events.register("pre_run_cell", forget)
    shell.events.register("post_run_cell", fail_the_cell)
    return True
