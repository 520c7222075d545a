"""Reveal.js slides from the executed chapters, for a lecturer to present offline.

    python tools/make_slides.py                  # every chapter: _build/slides/<chapter>.slides.html
    python tools/make_slides.py omega spectra    # some chapters (names as in book/)
    python tools/make_slides.py --executed DIR --out DIR

The book build leaves each chapter's notebook in ``_build/jupyter_execute/book/<chapter>.ipynb`` and its
outputs in the execution cache ``_build/.jupyter_cache`` (with ``execute_notebooks: cache``, myst-nb writes the
notebook without them; they are merged back from the cache, as myst-nb does when it renders). This tool
turns each into a deck with nbconvert's reveal.js exporter (``jupyter nbconvert --to slides``): the text
before the first ``##`` heading is the title slide, each ``##`` section one slide (its ``###`` parts are
vertical sub-slides). Cells are shown as the book shows them: ``remove-cell`` cells are dropped,
``remove-input`` and ``hide-input`` cells show their outputs only, ``remove-output`` cells their code only,
glued values are written into the prose and stderr is dropped. MyST roles and directives, which nbconvert's
Markdown does not know, become plain Markdown (a directive a blockquote headed by its name; solutions are
left out). Every output is kept, images inline.

No CDN: reveal.js comes from the npm registry (``npm pack``, checked against a pinned sha256, as
``tools/vendor_js.py`` vendors the book's JavaScript) into ``_build/slides/reveal.js``; MathJax and
require.js are the book's own copies in ``_vendor/`` (``tools/vendor_js.py``), copied beside the decks. The
folder ``_build/slides`` can be carried to any machine and opened from disk.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

from vendor_js import VENDOR, _npm_pack  # noqa: E402

EXECUTED = ROOT / "_build" / "jupyter_execute" / "book"
CACHE = ROOT / "_build" / ".jupyter_cache"
OUT = ROOT / "_build" / "slides"
TEMPLATES = ROOT / "tools" / "slides_templates"
REVEAL = ("reveal.js@5.2.1", "359b575dd51bbda32f89b2fd4c7dc46ad7389a805572158916c29252f7a27333")
REVEAL_KEEP = ("dist", "plugin/notes", "LICENSE")  # what a deck loads (and the licence)
DROPPED_DIRECTIVES = {"solution", "solution-start", "solution-end", "toctree", "bibliography", "glue:figure"}
FENCE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{(?P<name>[\w:-]+)\}[ \t]*(?P<args>.*)$")
ROLE = re.compile(r"\{(?P<name>[\w:-]*)\}`(?P<body>[^`]*)`")
GLUE = re.compile(r"^glue(:(text|md|any)?)?$")


def chapters() -> list[str]:
    """The chapters of the book's "Chapters" part, in the order of ``_toc.yml``."""
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    part = next(p for p in toc["parts"] if p.get("caption") == "Chapters")
    return [Path(entry["file"]).name for entry in part["chapters"]]


def glue_values(notebook) -> dict[str, str]:
    """``{name: text}`` of every value the notebook glued (myst-nb keeps them as scrapbook outputs)."""
    values = {}
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            name = output.get("metadata", {}).get("scrapbook", {}).get("name")
            if name is not None and "text/plain" in output.get("data", {}):
                values[name] = output["data"]["text/plain"]
    return values


def _glued(body: str, glue: dict[str, str]) -> str:
    """A glued value as ``{glue:text}`` writes it: ``key`` or ``key:format`` (a Python format spec)."""
    key, _, spec = body.partition(":")
    if key not in glue:
        return f"[{key}: run the chapter]"
    text = glue[key].strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        text = text[1:-1]
    if spec:
        try:
            return format(float(text), spec)
        except ValueError:
            return text
    return text


def _role(match: re.Match, glue: dict[str, str]) -> str:
    name, body = match.group("name"), match.group("body")
    if GLUE.match(name):
        return _glued(body, glue)
    if name == "math":
        return f"${body}$"
    if name == "cite":
        return "(" + ", ".join(key.strip() for key in body.split(",")) + ")"
    explicit = re.match(r"^(?P<text>.*?)\s*<(?P<target>[^>]+)>$", body, re.S)
    if explicit:
        return explicit.group("text")
    if name == "doc":
        return Path(body).name.replace("_", " ")
    return body


def _directive(name: str, args: str, options: dict[str, str], body: str) -> str:
    """A MyST directive as plain Markdown (empty for a solution)."""
    if name in DROPPED_DIRECTIVES:
        return ""
    if name == "math":
        return f"$$\n{body}\n$$"
    if name in {"code", "code-block", "sourcecode"}:
        return f"```{args}\n{body}\n```"
    if name in {"figure", "image"}:
        return body
    title = {"exercise": "Exercise", "admonition": ""}.get(name, name.replace("-", " ").capitalize())
    title = ": ".join(part for part in (title, args.strip()) if part) or "Note"
    lines = [f"**{title}**", "", *body.splitlines()]
    return "\n".join(f"> {line}".rstrip() for line in lines)


def myst_to_markdown(text: str, glue: dict[str, str]) -> str:
    """``text`` with MyST roles and directives made plain Markdown that nbconvert renders."""
    lines, out, i = text.splitlines(), [], 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if match is None:
            if not re.match(r"^\(.+\)=\s*$|^%", lines[i]):  # MyST targets and comments
                out.append(ROLE.sub(lambda m: _role(m, glue), lines[i]))
            i += 1
            continue
        fence, options, body = match.group("fence"), {}, []
        i += 1
        while i < len(lines) and (option := re.match(r"^:([\w-]+):\s*(.*)$", lines[i])):
            options[option.group(1)] = option.group(2)
            i += 1
        while i < len(lines) and lines[i].strip() != fence:
            body.append(lines[i])
            i += 1
        i += 1
        inner = myst_to_markdown("\n".join(body).strip("\n"), glue)
        out.append(
            _directive(
                match.group("name"), ROLE.sub(lambda m: _role(m, glue), match.group("args")), options, inner
            )
        )
    return "\n".join(out)


def _sections(text: str) -> list[str]:
    """``text`` split before every ``##`` and ``###`` heading outside code fences."""
    parts, current, fence = [], [], None
    for line in text.splitlines():
        marker = re.match(r"^(`{3,}|~{3,})", line)
        if marker and fence is None:
            fence = marker.group(1)
        elif fence is not None and line.strip() == fence:
            fence = None
        if fence is None and re.match(r"^#{2,3} ", line) and any(part.strip() for part in current):
            parts.append("\n".join(current))
            current = []
        current.append(line)
    parts.append("\n".join(current))
    return [part.strip("\n") for part in parts if part.strip()]


def _slide_type(source: str, first: bool) -> str:
    if first or source.startswith("## "):
        return "slide"
    return "subslide" if source.startswith("### ") else "-"


def _shown_outputs(cell) -> list:
    """The outputs the book shows (no glued values, which myst-nb hides, no stderr), figures with their alt text."""
    alt = cell.get("metadata", {}).get("mystnb", {}).get("image", {}).get("alt")
    shown = []
    for output in cell.get("outputs", []):
        if "scrapbook" in output.get("metadata", {}):
            continue
        if output.get("output_type") == "stream" and output.get("name") == "stderr":
            continue
        if alt and "image/png" in output.get("data", {}):
            output = nbformat.from_dict({**output, "metadata": {**output.get("metadata", {}), "alt": alt}})
        shown.append(output)
    return shown


def slide_notebook(notebook):
    """A copy of an executed chapter laid out as slides: one per ``##`` section, cells as the book shows them."""
    glue = glue_values(notebook)
    copy = nbformat.v4.new_notebook(metadata=notebook.metadata)
    for cell in notebook.cells:
        tags = set(cell.get("metadata", {}).get("tags", []))
        if "remove-cell" in tags or cell.cell_type == "raw":
            continue
        if cell.cell_type == "markdown":
            for part in _sections(myst_to_markdown(cell.source, glue)):
                md = nbformat.v4.new_markdown_cell(part)
                md.metadata["slideshow"] = {"slide_type": _slide_type(part, not copy.cells)}
                copy.cells.append(md)
            continue
        code = nbformat.v4.new_code_cell(cell.source)
        code.outputs = [] if "remove-output" in tags else _shown_outputs(cell)
        hidden = bool(tags & {"remove-input", "hide-input"})
        if hidden and not code.outputs:
            continue
        if hidden:
            code.metadata["transient"] = {"remove_source": True}
        code.metadata["slideshow"] = {"slide_type": "slide" if not copy.cells else "-"}
        copy.cells.append(code)
    return copy


def deck_html(notebook, title: str) -> str:
    """The reveal.js deck of an executed chapter, loading reveal.js, MathJax and require.js from beside it."""
    from nbconvert import SlidesExporter

    exporter = SlidesExporter(
        extra_template_basedirs=[str(TEMPLATES)],
        template_name="latentbook_reveal",
        reveal_url_prefix="reveal.js",
        reveal_theme="white",
        reveal_number="c/t",
        mathjax_url="mathjax/tex-chtml.js",
        require_js_url="requirejs/require.js",
        exclude_input_prompt=True,
        exclude_output_prompt=True,
    )
    slides = slide_notebook(notebook)
    slides.metadata["title"] = title
    html, _ = exporter.from_notebook_node(slides, resources={"metadata": {"name": title}})
    return html


def external_urls(html: str) -> list[str]:
    """Scripts, style sheets and images the page would fetch from another host (links to read are fine)."""
    found = re.findall(r"<(?:script|img|iframe)\b[^>]*\bsrc=[\"'](https?:)?//([^\"']+)", html)
    found += re.findall(r"<link\b[^>]*\bhref=[\"'](https?:)?//([^\"']+)", html)
    found += re.findall(r"import [^;]*? from [\"'](https?:)?//([^\"']+)", html)
    return [host for _, host in found]


def n_slides(html: str) -> int:
    """Horizontal slides of a deck: the sections directly inside ``div.slides``."""
    depth, count = 0, 0
    body = html.split('<div class="slides">', 1)[-1]
    for tag in re.finditer(r"<(/?)section\b", body):
        if tag.group(1):
            depth -= 1
        else:
            count += depth == 0
            depth += 1
    return count


def vendor_reveal(out: Path) -> None:
    """reveal.js beside the decks (``npm pack``, sha256 checked), once per pinned version."""
    target = out / "reveal.js"
    stamp = target / ".vendored"
    if stamp.is_file() and stamp.read_text() == REVEAL[0]:
        return
    _npm_pack(REVEAL[0], REVEAL[1], "package/", target)
    for path in sorted(target.iterdir()):
        if path.name not in {keep.split("/")[0] for keep in REVEAL_KEEP}:
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    for path in sorted((target / "plugin").iterdir()):
        if f"plugin/{path.name}" not in REVEAL_KEEP:
            shutil.rmtree(path)
    stamp.write_text(REVEAL[0])


def copy_book_js(out: Path) -> list[str]:
    """MathJax and require.js from ``_vendor/`` beside the decks; the folders missing from ``_vendor/``."""
    missing = []
    for folder in ("mathjax", "requirejs"):
        source, target = VENDOR / folder, out / folder
        if not (source / ".vendored").is_file():
            missing.append(str(source.relative_to(ROOT)))
        elif (
            not (target / ".vendored").is_file()
            or (target / ".vendored").read_text() != (source / ".vendored").read_text()
        ):
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(source, target)
    return missing


def executed(path: Path, cache: Path):
    """The executed chapter at ``path`` with its outputs (merged from the execution cache where the file has
    none); None when the cache holds no execution of this version of the chapter."""
    notebook = nbformat.read(path, as_version=4)
    if any(cell.get("outputs") for cell in notebook.cells):
        return notebook
    if not (cache / "global.db").is_file():
        return None
    from jupyter_cache import get_cache

    try:
        _, merged = get_cache(cache).merge_match_into_notebook(notebook)
    except KeyError:  # no cached execution of these cells: the chapter changed since the book was built
        return None
    return merged


def _title(notebook, fallback: str) -> str:
    for cell in notebook.cells:
        for line in cell.source.splitlines() if cell.cell_type == "markdown" else []:
            if line.startswith("# "):
                return line[2:].strip()
    return fallback


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="*", help="chapter names (default: every chapter of _toc.yml)")
    parser.add_argument("--executed", type=Path, default=EXECUTED, help="folder of executed chapters")
    parser.add_argument("--cache", type=Path, default=CACHE, help="the book's execution cache")
    parser.add_argument("--out", type=Path, default=OUT, help="folder for the decks")
    args = parser.parse_args(argv)
    names = args.chapters or chapters()
    paths = [args.executed / f"{name}.ipynb" for name in names]
    absent = [path for path in paths if not path.is_file()]
    if absent:
        print(
            f"make_slides: no executed chapter at {', '.join(str(p) for p in absent)}: "
            "run `make book` first (it executes every chapter into _build/jupyter_execute/book)",
            file=sys.stderr,
        )
        return 1
    notebooks = {path.stem: executed(path, args.cache) for path in paths}
    stale = [name for name, notebook in notebooks.items() if notebook is None]
    if stale:
        print(
            f"make_slides: no executed outputs for {', '.join(stale)} (changed since the last build?): "
            "run `make book` first",
            file=sys.stderr,
        )
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    missing = copy_book_js(args.out)
    if missing:
        print(f"make_slides: {', '.join(missing)} missing: run `make book` first", file=sys.stderr)
        return 1
    vendor_reveal(args.out)
    for name, notebook in notebooks.items():
        html = deck_html(notebook, _title(notebook, name))
        external = external_urls(html)
        if external:
            print(f"make_slides: {name} would load {sorted(set(external))} from the network", file=sys.stderr)
            return 1
        deck = args.out / f"{name}.slides.html"
        deck.write_text(html, encoding="utf-8")
        print(
            f"make_slides: {deck.relative_to(ROOT) if deck.is_relative_to(ROOT) else deck}: {n_slides(html)} slides"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
