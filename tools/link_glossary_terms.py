"""Link the first use of each glossary term on a page to the glossary (issue #50): a ``{term}`` role around the
word, in prose only (never in code, maths, roles, links, headings or front matter), once per page.

    python tools/link_glossary_terms.py book/*.md ...          # link them in place
    python tools/link_glossary_terms.py --dry book/*.md ...    # list what would be linked (exit 1 if anything)

``tests/test_chapters.py`` runs the dry mode over every page of the book: a page that uses a term first without
its link fails. The terms are those of ``book/appendix/glossary.md`` a reader meets in prose (``TERMS``).
"""

import re
import sys
from pathlib import Path

TERMS = [  # (the word as a page uses it, a regex; its glossary term)
    (r"planted", "planted"),
    (r"cleaned", "cleaned"),
    (r"twins?", "twin"),
    (r"glued", "glued"),
    (r"Wilson", "Wilson bound"),
    (r"TCOs?", "TCO"),
    (r"BIC", "BIC"),
    (r"Holm", "Holm"),
    (r"BBP", "BBP threshold"),
    (r"MAD", "MAD"),
    (r"Gride", "Gride"),
    (r"TwoNN", "TwoNN"),
    (r"attention sinks?", "attention sink"),
    (r"massive coordinates?", "massive coordinate"),
    (r"massive activations?", "massive coordinate"),
    (r"participation ratios?", "participation ratio"),
    (r"null models?", "null model"),
    (r"positive controls?", "positive control"),
    (r"critical depths?", "critical depth"),
    (r"uninformative", "uninformative"),
]
MASK = re.compile(r"\{[\w:-]+\}`[^`]*`|`[^`]*`|\$\$.*?\$\$|\$[^$]*\$|\[[^\]]*\]\([^)]*\)|<[^>]+>")
PROSE_DIRECTIVES = ("admonition", "note", "tip", "warning", "important", "exercise", "solution", "dropdown")


def linked_terms(text: str) -> set[str]:
    """The glossary terms ``text`` already links (``{term}`word <term>``` or ``{term}`term```)."""
    found = set()
    for role in re.finditer(r"\{term\}`([^`]*)`", text):
        target = re.search(r"<([^>]*)>", role.group(1))
        found.add((target.group(1) if target else role.group(1)).strip())
    return found


def prose_lines(lines: list[str]) -> list[int]:
    """Indices of the lines that are prose: not front matter, not inside a code fence or a directive that is not
    prose (``PROSE_DIRECTIVES``), not display maths, headings, directive options, targets, indented code or HTML."""
    found, fence, in_math = [], None, False
    in_front = bool(lines) and lines[0] == "---"
    for i, line in enumerate(lines):
        stripped = line.strip()
        if in_front:
            in_front = not (i > 0 and line == "---")
            continue
        opening = re.match(r"^\s*(`{3,}|:{3,})(\{?[\w-]*\}?)", line)
        if opening and fence is None:
            fence = (opening.group(1), opening.group(2).strip("{}") in PROSE_DIRECTIVES)
            continue
        if fence is not None and stripped == fence[0]:
            fence = None
            continue
        if stripped.startswith("$$"):
            in_math ^= stripped.count("$$") == 1
            continue
        skipped = stripped.startswith(("#", ":", "|---", "(", "<")) or line.startswith("    ")
        if not (in_math or skipped or (fence is not None and not fence[1])):
            found.append(i)
    return found


def link_line(line: str, done: set[str]) -> tuple[str, list[str]]:
    """``line`` with the first unmasked use of each term not in ``done`` linked (``done`` is updated), and the
    terms it linked."""
    linked = []
    for pattern, term in TERMS:
        if term in done:
            continue
        masked = [(m.start(), m.end()) for m in MASK.finditer(line)]
        for use in re.finditer(rf"(?<![\w`<{{-]){pattern}(?![\w`>}}-])", line):
            if any(start < use.end() and use.start() < end for start, end in masked):
                continue
            word = use.group(0)
            role = f"{{term}}`{word}`" if word == term else f"{{term}}`{word} <{term}>`"
            line = line[: use.start()] + role + line[use.end() :]
            done.add(term)
            linked.append(f"{word} -> {term}")
            break
    return line, linked


def link(path: Path, dry: bool) -> list[str]:
    """Link the first use of each term on the page at ``path`` (unless ``dry``); what was (or would be) linked."""
    lines = path.read_text().split("\n")
    done = linked_terms("\n".join(lines))
    changes = []
    for i in prose_lines(lines):
        lines[i], linked = link_line(lines[i], done)
        changes += [f"{path.name}:{i + 1}: {what}" for what in linked]
    if not dry and changes:
        path.write_text("\n".join(lines))
    return changes


def main(argv: list[str]) -> int:
    """Link (or with ``--dry`` list) the first uses on every page named in ``argv``."""
    dry = "--dry" in argv
    changes = [c for name in argv if not name.startswith("--") for c in link(Path(name), dry)]
    print("\n".join(changes))
    return 1 if dry and changes else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
