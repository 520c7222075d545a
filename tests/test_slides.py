"""tools/make_slides.py: a reveal.js deck per executed chapter, one slide per ## section, cells shown as the book
shows them, every output kept, nothing fetched from the network."""

import base64
import html as html_module
import importlib.util
import re
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tools" / "make_slides.py"
spec = importlib.util.spec_from_file_location("make_slides", SCRIPT)
tool = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tool)

PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000100e221bc330000000049454e44ae426082"
    )
).decode()


def _glue(name: str, value: str) -> dict:
    return nbformat.v4.new_output(
        "display_data",
        data={"text/plain": value},
        metadata={"scrapbook": {"name": name, "mime_prefix": "application/papermill.record/"}},
    )


def _text(html: str) -> str:
    """What the deck says, without its markup (code is highlighted token by token)."""
    return html_module.unescape(re.sub(r"<[^>]+>", "", html))


def _chapter():
    """A small executed chapter: a title, two ## sections (the second with a ### part), every kind of cell."""
    glue = nbformat.v4.new_code_cell(
        "glue('ch_pi', 3.14159, display=False)", metadata={"tags": ["remove-input"]}
    )
    glue.outputs = [_glue("ch_pi", "3.14159")]
    removed = nbformat.v4.new_code_cell("SECRET_PLUMBING = 1", metadata={"tags": ["remove-cell"]})
    figure = nbformat.v4.new_code_cell(
        "FIGURE_CODE = plot()",
        metadata={"tags": ["hide-input"], "mystnb": {"image": {"alt": "A line plot."}}},
    )
    figure.outputs = [
        nbformat.v4.new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>"})
    ]
    shown = nbformat.v4.new_code_cell("x = lb.omega(h)\nx")
    shown.outputs = [
        nbformat.v4.new_output("stream", name="stderr", text="STDERR_NOISE"),
        nbformat.v4.new_output("execute_result", data={"text/plain": "0.2021"}, execution_count=1),
    ]
    return nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell(
                "(chapter-label)=\n# A chapter\n\nPi is {glue:text}`ch_pi:.2f` here."
            ),
            glue,
            nbformat.v4.new_markdown_cell(
                "## First section\n\nSee {doc}`/book/omega` and {cite}`bbp2005`.\n\n"
                "```{note}\nA note in the margin.\n```"
            ),
            removed,
            figure,
            nbformat.v4.new_markdown_cell("## Second section\n\nText.\n\n### A part of it\n\nMore text."),
            shown,
            nbformat.v4.new_markdown_cell(
                "```{exercise}\n:label: ex-one\n\nTime: ~5 min · Difficulty: ★☆☆\n\nCompute it.\n```\n\n"
                "```{solution} ex-one\n:class: dropdown\n\nSOLUTION_TEXT\n```"
            ),
        ]
    )


def test_one_slide_per_section_with_the_cells_the_book_shows():
    html = tool.deck_html(_chapter(), "A chapter")
    assert tool.n_slides(html) == 3  # the title, then one per ## section
    assert html.count("<section") == 3 + 4  # each slide and its sub-slides (the ### part one more)
    for shown in (
        "A chapter",
        "First section",
        "Second section",
        "A part of it",
        "x = lb.omega(h)",
        "0.2021",
    ):
        assert shown in _text(html)
    assert "data:image/png;base64," in html  # the figure's output, inline
    assert 'alt="A line plot."' in html  # the alt text the chapter gives its figure
    for hidden in (
        "SECRET_PLUMBING",
        "FIGURE_CODE",
        "STDERR_NOISE",
        "SOLUTION_TEXT",
        "glue(",
        "chapter-label",
    ):
        assert hidden not in _text(html), hidden


def test_myst_is_made_plain_markdown():
    html = tool.deck_html(_chapter(), "A chapter")
    assert "Pi is 3.14 here" in html  # the glued value, formatted as {glue:text} formats it
    assert "{glue" not in html and "{doc}" not in html and "{cite}" not in html and "```" not in html
    assert "omega" in html and "(bbp2005)" in html
    assert "Exercise" in html and "Time: ~5 min" in html and "A note in the margin." in html


def test_the_deck_loads_nothing_from_the_network():
    html = tool.deck_html(_chapter(), "A chapter")
    assert tool.external_urls(html) == []
    assert 'src="reveal.js/dist/reveal.js' not in html  # require.js loads it, by the relative prefix
    assert '"reveal.js/dist/reveal.js"' in html and 'href="reveal.js/dist/reveal.css"' in html
    assert 'src="mathjax/tex-chtml.js"' in html and 'src="requirejs/require.js"' in html
    assert tool.external_urls('<script src="https://unpkg.com/reveal.js"></script>') == [
        "unpkg.com/reveal.js"
    ]


def test_without_an_executed_book_it_says_to_build_it(tmp_path, capsys):
    assert tool.main(["omega", "--executed", str(tmp_path), "--out", str(tmp_path / "slides")]) == 1
    assert "run `make book` first" in capsys.readouterr().err
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1")]), tmp_path / "omega.ipynb")
    assert tool.main(["omega", "--executed", str(tmp_path), "--cache", str(tmp_path / "none")]) == 1
    assert "run `make book` first" in capsys.readouterr().err
    assert not (tmp_path / "slides").exists()


def test_the_chapters_are_those_of_the_toc():
    names = tool.chapters()
    assert names[0] == "depth_as_time" and "verdict" in names and "intro" not in names
