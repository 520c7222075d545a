"""A page that shows a figure that does not read fails (figure_standard.on_show): in a real kernel, as the book's
build executes pages, each way a chapter shows a figure fails the cell when the figure has a legend over its data
(the figure still shown, so a reader sees what is wrong), and passes when the legend sits in a free corner."""

from __future__ import annotations

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

SETUP = """\
%matplotlib inline
import matplotlib.pyplot as plt
from IPython.display import display
from latentbook.view import plots

plots.check_figures_on_show()
plots.check_figures_on_show()  # a second call changes nothing


def crossing(where):
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    ax.plot([0, 1], [0, 1], label="rising")
    ax.plot([0, 1], [1, 0], label="falling")
    ax.legend(loc=where)
    return fig
"""

SHOWN = {  # each way the chapters show a figure, its {where} the legend's place
    "plt.show()": 'crossing("{where}")\nplt.show()',
    "display(fig)": 'fig = crossing("{where}")\ndisplay(fig)\nplt.close(fig)',
    "the last expression": 'fig = crossing("{where}")\nplt.close(fig)\nfig',
    "the inline backend at the cell's end": 'fig = crossing("{where}")',
    "glue": 'from myst_nb import glue\nfig = crossing("{where}")\nglue("f", fig, display=False)\nplt.close(fig)',
}


@pytest.fixture(scope="module")
def kernel():
    """A kernel that has run ``SETUP``, and a function running one more cell of code in it: the cell, with its
    outputs, and the ``CellExecutionError`` the build would raise (None when it passes)."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(SETUP)])
    client = NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=False)
    with client.setup_kernel():
        client.execute_cell(nb.cells[0], 0)

        def run(code: str):
            cell = nbformat.v4.new_code_cell(code)
            nb.cells.append(cell)
            try:
                client.execute_cell(cell, len(nb.cells) - 1)
            except CellExecutionError as error:
                return cell, error
            return cell, None

        yield run


@pytest.mark.parametrize("way", sorted(SHOWN))
def test_a_figure_with_its_legend_over_the_data_fails_the_cell_that_shows_it(kernel, way):
    cell, failed = kernel(SHOWN[way].format(where="center"))
    assert failed is not None and failed.ename == "FigureStandardError"
    assert "legend ['rising', 'falling'] covers" in str(failed)
    assert _shows_a_figure(cell) == (way != "glue")  # glue(display=False) keeps it for the page, not the cell
    assert [o for o in cell.outputs if o.output_type == "error"]


@pytest.mark.parametrize("way", sorted(SHOWN))
def test_a_figure_that_reads_passes_and_is_shown(kernel, way):
    cell, failed = kernel(SHOWN[way].format(where="upper center"))
    assert failed is None
    assert _shows_a_figure(cell) == (way != "glue")


def test_two_figures_that_do_not_read_fail_one_cell_with_both_listed(kernel):
    _, failed = kernel('one = crossing("center")\ntwo = crossing("center")')
    assert failed is not None and failed.evalue.count("legend ['rising', 'falling'] covers") == 2


def test_other_output_is_left_alone(kernel):
    cell, failed = kernel("import pandas as pd\npd.DataFrame({'a': [1]})")
    assert failed is None and "text/html" in cell.outputs[0]["data"]


def _shows_a_figure(cell) -> bool:
    return any("image/png" in output.get("data", {}) for output in cell.outputs)
