"""Student copies of the labs: solutions removed, skeletons shown, outputs cleared, MyST made plain.

    python tools/make_student_copies.py                 # writes notebooks/student/<lab>.ipynb (committed)
    python tools/make_student_copies.py --check         # CI: exit 1 if a copy would leak, a lab is malformed
                                                        # or a committed copy differs from what it would write
    python tools/make_student_copies.py --out DIR LAB.ipynb ...

A lab notebook marks each exercise as consecutive cells (see notebooks/course_guide.md):
``{exercise}`` markdown with a ``:label:``; a code cell tagged ``skeleton`` (hidden in the book by
``remove-cell``); ``{solution-start} <label>`` markdown; the solution's code cells, tagged ``solution``;
``{solution-end}`` markdown; a code cell tagged ``check``. The copy drops everything from ``solution-start``
to ``solution-end``, shows the skeleton (its ``remove-cell`` tag removed), turns the ``{exercise}`` directive
into a plain heading and clears every output. Jupyter and Colab render no MyST, so every role and directive
of the copy's Markdown becomes plain Markdown: ``{doc}`` and ``{ref}`` become links to the published book
(GitHub Pages of the repository in ``_config.yml``, where .github/workflows publishes ``_build/html``),
admonitions and dropdowns quotes, ``{math}`` dollars, and ``(label)=`` targets vanish.
``--check`` (``--verify-only``) builds the copies in memory and checks that the sources are committed without
outputs, every exercise has one skeleton, one solution block and one check, no copy contains a solution
directive, a ``solution`` cell, any solution code or raw MyST, and each copy in ``--out`` is the one it would write.
"""

from __future__ import annotations

import argparse
import posixpath
import re
import sys
from functools import cache
from pathlib import Path
from typing import NamedTuple

import nbformat
import yaml

ROOT = Path(__file__).resolve().parent.parent
LABS = sorted((ROOT / "notebooks").glob("lab*.ipynb"))
STUDENT = ROOT / "notebooks" / "student"  # the committed copies; the book's launch buttons open them
EXERCISE = re.compile(
    r"^```\{exercise\}\s*(?P<title>.*?)\n(?P<options>(?::[^\n]*\n)*)\n?(?P<body>.*?)\n?```\s*$", re.S
)
LABEL = re.compile(r"^:label:\s*(\S+)", re.M)
SOLUTION_START = re.compile(r"^```\{solution-start\}\s*(\S+)")
SOLUTION_END = re.compile(r"^```\{solution-end\}")
ROLE = re.compile(r"\{(?P<role>[A-Za-z][\w:+-]*)\}`(?P<content>[^`]*)`")
EXPLICIT = re.compile(r"^(?P<text>.*?)\s*<(?P<target>[^<>]+)>$", re.S)
DIRECTIVE = re.compile(
    r"^(?P<fence>`{3,}|:{3,})\{(?P<name>[\w:-]+)\}[ \t]*(?P<arg>[^\n]*)\n"
    r"(?P<options>(?:[ \t]*:[\w-]+:[^\n]*\n)*)(?P<body>.*?)^(?P=fence)[ \t]*$",
    re.M | re.S,
)
TARGET_LINE = re.compile(r"^\((?P<label>[^)\s]+)\)=[ \t]*$", re.M)
RAW_MYST = {
    "a role": ROLE,
    "a directive": re.compile(r"^[ \t>]*(`{3,}|:{3,})\{", re.M),
    "a directive option": re.compile(r"^[ \t>]*:(label|class|name|caption|alt|width|align):", re.M),
    "a (label)= target": TARGET_LINE,
}
ADMONITION_TITLES = {"seealso": "See also", "admonition": "Note", "dropdown": "Details"}


def _tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def _exercise_label(cell) -> str | None:
    if cell.cell_type != "markdown":
        return None
    match = EXERCISE.match(cell.source.strip())
    if match is None:
        return None
    label = LABEL.search(match.group("options"))
    return label.group(1) if label else ""


def problems(notebook, name: str) -> list[str]:
    """What is wrong with a lab's structure (empty when every exercise is well formed)."""
    found: list[str] = []
    cells = notebook.cells
    labels = [label for cell in cells if (label := _exercise_label(cell)) is not None]
    if not labels:
        found.append(f"{name}: no {{exercise}} cells")
    for i, cell in enumerate(cells):
        label = _exercise_label(cell)
        if label is None:
            continue
        if not label:
            found.append(f"{name}: the exercise in cell {i} has no :label:")
            continue
        window = cells[i + 1 : i + 3]
        kinds = [
            "skeleton" if "skeleton" in _tags(c) else "start" if SOLUTION_START.match(c.source) else "other"
            for c in window
        ]
        if kinds != ["skeleton", "start"] or SOLUTION_START.match(window[1].source).group(1) != label:
            found.append(
                f"{name}: exercise {label} must be followed by a skeleton cell and "
                f"```{{solution-start}} {label}"
            )
            continue
        j = i + 3
        while j < len(cells) and not SOLUTION_END.match(cells[j].source):
            if cells[j].cell_type == "code" and "solution" not in _tags(cells[j]):
                found.append(f"{name}: code cell {j} inside the solution of {label} is not tagged 'solution'")
            j += 1
        if j == len(cells):
            found.append(f"{name}: the solution of {label} has no ```{{solution-end}}")
        elif j + 1 >= len(cells) or "check" not in _tags(cells[j + 1]):
            found.append(f"{name}: the solution of {label} must be followed by a cell tagged 'check'")
    starts = [c for c in cells if SOLUTION_START.match(c.source)]
    if len(starts) != len(labels):
        found.append(f"{name}: {len(starts)} solution blocks for {len(labels)} exercises")
    for i, cell in enumerate(cells):
        if cell.cell_type == "code" and (cell.get("outputs") or cell.get("execution_count") is not None):
            found.append(
                f"{name}: code cell {i} has outputs; commit labs without outputs (the book runs them)"
            )
    return found


def _plain_exercise(cell) -> None:
    match = EXERCISE.match(cell.source.strip())
    cell.source = f"### Exercise: {match.group('title').strip()}\n\n{match.group('body').strip()}"


class Site(NamedTuple):
    """Where the book is published and where its sources live."""

    book: str  # the built book's root URL, ending in "/"
    github: str  # "org/repo"
    branch: str


class Target(NamedTuple):
    """A page of the book, or an anchor in it, that a role can point at."""

    doc: str  # docname, e.g. "book/spectra"
    anchor: str  # "" for the page itself
    title: str


def site(config: Path = ROOT / "_config.yml") -> Site:
    """The book's GitHub Pages URL, derived from ``repository`` in ``_config.yml`` (the Pages workflow publishes it)."""
    repository = yaml.safe_load(config.read_text())["repository"]
    org, repo = repository["url"].rstrip("/").split("github.com/")[1].split("/")[:2]
    return Site(f"https://{org}.github.io/{repo}/", f"{org}/{repo}", repository.get("branch", "main"))


def _markdown(path: Path) -> str:
    """The Markdown of a page: a MyST file's text, or a notebook's markdown cells."""
    if path.suffix == ".ipynb":
        notebook = nbformat.read(path, as_version=4)
        return "\n\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")
    return path.read_text()


def _title(text: str, fallback: str) -> str:
    """The first level-one heading of a page (front matter skipped)."""
    if text.startswith("---\n"):
        text = text[text.find("\n---", 4) + 4 :]
    heading = re.search(r"^# +(.+?)\s*$", text, re.M)
    return heading.group(1) if heading else fallback


def _anchors(doc: str, text: str) -> dict[str, Target]:
    """The labels a page defines: ``(label)=`` before a heading, ``:label:`` in a directive."""
    found = {}
    for match in TARGET_LINE.finditer(text):
        heading = re.match(r"\s*#+ +(.+?)\s*$", text[match.end() :].lstrip("\n").split("\n", 1)[0])
        found[match.group("label")] = Target(doc, match.group("label"), heading.group(1) if heading else "")
    for match in DIRECTIVE.finditer(text):
        label = LABEL.search(match.group("options"))
        if label:
            title = match.group("arg").strip() or match.group("name").capitalize()
            found[label.group(1)] = Target(doc, label.group(1), title)
    return found


@cache
def book_index(root: Path = ROOT) -> dict[str, Target]:
    """Every page (by docname) and label (by name) of the book's sources under ``root``."""
    pages = sorted(root.glob("book/**/*.md")) + sorted(root.glob("notebooks/*.md"))
    pages += sorted(root.glob("notebooks/*.ipynb"))
    index: dict[str, Target] = {}
    for path in pages:
        doc = path.relative_to(root).with_suffix("").as_posix()
        text = _markdown(path)
        index.update(_anchors(doc, text))
        index["/" + doc] = Target(doc, "", _title(text, doc))
    return index


def _link(text: str, target: Target, where: Site) -> str:
    anchor = f"#{target.anchor}" if target.anchor else ""
    return f"[{text or target.title}]({where.book}{target.doc}.html{anchor})"


def _resolve_doc(reference: str, folder: str, index: dict[str, Target]) -> Target:
    doc = reference if reference.startswith("/") else "/" + posixpath.normpath(f"{folder}/{reference}")
    doc = re.sub(r"\.(md|ipynb)$", "", doc)
    if doc not in index:
        raise ValueError(f"{{doc}}`{reference}` names no page of the book")
    return index[doc]


def _plain_role(match: re.Match, folder: str, index: dict[str, Target], where: Site) -> str:
    """One MyST role as plain Markdown: a link to the book for doc and ref, the math or the text otherwise."""
    role, content = match.group("role"), match.group("content")
    explicit = EXPLICIT.match(content)
    text, reference = (explicit.group("text"), explicit.group("target")) if explicit else ("", content)
    if role == "doc":
        return _link(text, _resolve_doc(reference, folder, index), where)
    if role in ("ref", "numref"):
        if reference not in index or "/" in reference:
            raise ValueError(f"{{{role}}}`{content}` names no label of the book")
        return _link(text.replace("{number}", "").strip(), index[reference], where)
    if role == "math":
        return f"${content}$"
    if role == "eq":
        return f"({reference})"
    pages = {"term": "/book/appendix/glossary", "cite": "/book/appendix/bibliography"}
    page = pages.get(role.split(":")[0])
    if page in index:
        return _link(text or reference, index[page], where)
    return text or reference


def _quote(title: str, body: str) -> str:
    lines = [f"**{title}**", ""] + body.strip("\n").splitlines()
    return "\n".join(f"> {line}".rstrip() for line in lines)


def _plain_directive(match: re.Match, folder: str, where: Site) -> str:
    """One MyST directive as plain Markdown (its body converted first, so nested ones go too)."""
    name, arg = match.group("name"), match.group("arg").strip()
    body = _plain_directives(match.group("body"), folder, where)
    body = re.sub(r"\A---\n.*?\n---\n", "", body, flags=re.S).strip("\n")  # YAML options
    if name.startswith("solution"):
        return match.group(0)  # never shown as a quote: leaks() must find it
    if name == "math":
        return f"$$\n{body}\n$$"
    if name in ("code", "code-block", "sourcecode", "code-cell"):
        return f"```{arg}\n{body}\n```"
    if name in ("figure", "image"):
        path = posixpath.normpath(f"{folder}/{arg}") if "://" not in arg else arg
        url = (
            arg if "://" in arg else f"https://raw.githubusercontent.com/{where.github}/{where.branch}/{path}"
        )
        return f"![{body.splitlines()[0] if body else ''}]({url})" + (f"\n\n{body}" if body else "")
    if name == "exercise":
        return f"### Exercise: {arg}\n\n{body}"
    title = arg or ADMONITION_TITLES.get(name, name.replace("-", " ").capitalize())
    return _quote(title, body)


def _plain_directives(text: str, folder: str, where: Site) -> str:
    return DIRECTIVE.sub(lambda m: _plain_directive(m, folder, where), text)


def plain_markdown(text: str, folder: str = "notebooks", where: Site | None = None) -> str:
    """MyST Markdown as Markdown that Jupyter and Colab render: no role, directive or target left.

    ``folder`` is where the page lives in the repository (relative ``{doc}`` references resolve from it);
    ``{doc}`` and ``{ref}`` become links to the published book. Raises ValueError on a reference to
    nothing.
    """
    where = where or site()
    index = book_index()
    text = TARGET_LINE.sub("", _plain_directives(text, folder, where))
    text = ROLE.sub(lambda m: _plain_role(m, folder, index, where), text)
    return re.sub(r"\n{3,}", "\n\n", text).strip("\n")


def raw_myst(text: str) -> list[str]:
    """What MyST markup Jupyter would show raw in ``text`` (empty when there is none)."""
    return [
        f"{what} ({m.group(0).strip()[:40]!r})" for what, rx in RAW_MYST.items() if (m := rx.search(text))
    ]


def student_copy(notebook, folder: str = "notebooks", where: Site | None = None):
    """A copy of ``notebook`` with the solution blocks removed, skeletons shown, outputs cleared and its
    Markdown plain (``folder``: where the lab lives, for its relative references; ``where``: the book's site).
    """
    copy = nbformat.reads(nbformat.writes(notebook), as_version=4)
    where = where or site()
    kept = []
    inside = False
    for cell in copy.cells:
        if SOLUTION_START.match(cell.source):
            inside = True
        if not inside:
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
                tags = [t for t in _tags(cell) if t != "remove-cell"]
                if tags:
                    cell.metadata["tags"] = tags
                else:
                    cell.metadata.pop("tags", None)
            elif cell.cell_type == "markdown":
                if _exercise_label(cell) is not None:
                    _plain_exercise(cell)
                cell.source = plain_markdown(cell.source, folder, where)
            kept.append(cell)
        elif SOLUTION_END.match(cell.source):
            inside = False
    copy.cells = kept
    return copy


def leaks(original, copy, name: str) -> list[str]:
    """Ways the student copy of ``original`` still shows a solution."""
    found: list[str] = []
    solutions = [c.source.strip() for c in original.cells if "solution" in _tags(c)]
    for i, cell in enumerate(copy.cells):
        text = cell.source
        if "{solution" in text or "solution" in _tags(cell):
            found.append(f"{name}: cell {i} of the copy still holds a solution block")
        for solution in solutions:
            body = [
                line
                for line in solution.splitlines()[1:]
                if line.strip() and not line.strip().startswith('"""')
            ]
            if body and all(line in text for line in body):
                found.append(f"{name}: cell {i} of the copy contains solution code")
        if cell.cell_type == "code" and cell.get("outputs"):
            found.append(f"{name}: cell {i} of the copy has outputs")
        if cell.cell_type == "markdown":
            found += [f"{name}: cell {i} of the copy shows raw MyST: {what}" for what in raw_myst(text)]
    skeletons = sum("skeleton" in _tags(c) for c in copy.cells)
    exercises = sum(c.cell_type == "markdown" and c.source.startswith("### Exercise:") for c in copy.cells)
    if skeletons != exercises:
        found.append(f"{name}: {exercises} exercises but {skeletons} skeleton cells in the copy")
    return found


def _folder(path: Path) -> str:
    """Where a lab lives in the repository (``notebooks`` for one outside it)."""
    try:
        return path.resolve().parent.relative_to(ROOT).as_posix()
    except ValueError:
        return "notebooks"


def serialise(copy) -> str:
    """The text of a copy as it is written (and committed)."""
    text = nbformat.writes(copy)
    return text if text.endswith("\n") else text + "\n"


def _shown(path: Path) -> str:
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


def orphans(texts: dict[str, str], out: Path) -> list[Path]:
    """Copies in ``out`` whose lab is gone."""
    return [path for path in sorted(out.glob("lab*.ipynb")) if path.name not in texts]


def stale(texts: dict[str, str], out: Path, every_lab: bool) -> list[str]:
    """How the copies in ``out`` differ from ``texts`` (name -> text); with ``every_lab``, copies of no lab too."""
    found = []
    for name, text in texts.items():
        path = out / name
        if not path.is_file():
            found.append(f"{_shown(path)} is missing")
        elif path.read_text() != text:
            found.append(f"{_shown(path)} differs from the student copy of its lab")
    found += [f"{_shown(path)} is the copy of no lab" for path in (orphans(texts, out) if every_lab else [])]
    if found:
        found.append("make_student_copies: regenerate them with `python tools/make_student_copies.py`")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "notebooks", nargs="*", type=Path, help="lab notebooks (default: notebooks/lab*.ipynb)"
    )
    parser.add_argument(
        "--out", type=Path, default=STUDENT, help="folder of the copies (default: notebooks/student)"
    )
    parser.add_argument(
        "--check",
        "--verify-only",
        action="store_true",
        help="write nothing; exit 1 if a copy would leak or differs from the one in --out",
    )
    args = parser.parse_args(argv)
    paths = args.notebooks or LABS
    if not paths:
        print("make_student_copies: no lab notebooks found", file=sys.stderr)
        return 1
    found: list[str] = []
    texts = {}
    for path in paths:
        notebook = nbformat.read(path, as_version=4)
        found += problems(notebook, path.name)
        try:
            copy = student_copy(notebook, _folder(path))
        except ValueError as error:
            found.append(f"{path.name}: {error}")
            continue
        found += leaks(notebook, copy, path.name)
        texts[path.name] = serialise(copy)
    if not found and args.check:
        found = stale(texts, args.out, every_lab=not args.notebooks)
    if found:
        print("\n".join(found), file=sys.stderr)
        return 1
    if args.check:
        print(
            f"make_student_copies: {len(texts)} student copies are clean and up to date in {_shown(args.out)}"
        )
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in texts.items():
        if not (args.out / name).is_file() or (args.out / name).read_text() != text:
            (args.out / name).write_text(text)
    for path in orphans(texts, args.out) if not args.notebooks and args.out == STUDENT else []:
        path.unlink()
        print(f"make_student_copies: removed {_shown(path)}, the copy of no lab")
    print(f"make_student_copies: wrote {len(texts)} student copies to {_shown(args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
