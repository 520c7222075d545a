"""Prompts from a user's file, one reader for every format (``latentbook capture --prompts FILE``).

- **JSON lines** (``.jsonl``, any case, or content whose first non-blank line is a JSON object): one
  ``{"text": ...}`` per line;
- **a JSON array** (``.json``, any case, or content that parses as one): strings, or ``{"text": ...}`` objects;
- **text** (anything else): one prompt per line.

Lines end at ``\\n``, ``\\r\\n`` or a lone ``\\r`` (old Mac files), never at the form feeds, NEL or U+2028 that
``str.splitlines`` also splits on, so one prompt stays one prompt; a UTF-8 byte-order mark is dropped and UTF-16
(with its mark, or without one, told by its zero bytes) is read as such; a NUL character is refused (it is no
text); blank lines are skipped, and errors name the file's physical line.
Introduced in: the CLI (appendix on the command line).
"""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import InvalidInputError

BOM = "\ufeff"


def _utf16(data: bytes) -> str | None:
    """The codec of UTF-16 ``data``: by its byte-order mark, else by the zero bytes that ASCII letters leave in every
    other byte (little or big endian); None for anything else."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return "utf-16"
    if len(data) >= 4 and len(data) % 2 == 0:
        even, odd = data[0::2], data[1::2]
        if odd.count(0) > 0.4 * len(odd) and even.count(0) == 0:
            return "utf-16-le"
        if even.count(0) > 0.4 * len(even) and odd.count(0) == 0:
            return "utf-16-be"
    return None


def utf8_text(path: Path) -> str:
    """The file's text, decoded as UTF-8 without its byte-order mark (or as UTF-16, ``_utf16``), or an error naming
    the line to fix; a NUL character, which no text holds, is refused."""
    data = path.read_bytes()
    codec = _utf16(data)
    try:
        text = data.decode(codec or "utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InvalidInputError(
            f"{path} is not UTF-8 text (byte {exc.start}, line {line}: {exc.reason}). Save it as UTF-8, e.g. "
            f"iconv -f latin1 -t utf-8 {path.name} > fixed{path.suffix}."
        ) from exc
    text = text.removeprefix(BOM)
    if "\0" in text:
        line = text[: text.index("\0")].count("\n") + 1
        raise InvalidInputError(
            f"{path} holds a NUL character (line {line}): it is binary data, not prompts. Give a text file: one prompt "
            "per line, JSON lines or a JSON array."
        )
    return text


def physical_lines(text: str) -> list[tuple[int, str]]:
    """``(line number, line)`` of every non-blank line, split at ``\\n``, ``\\r\\n`` or a lone ``\\r``."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return [(number, line) for number, line in enumerate(lines, start=1) if line.strip()]


def file_format(path: Path, text: str) -> str:
    """``"jsonl"``, ``"json"`` or ``"text"``: from the suffix (any case) when it names one, else from content."""
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json"):
        return suffix[1:]
    if suffix in (".txt", ".text"):
        return "text"
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            if isinstance(json.loads(text), list):
                return "json"
        except ValueError:
            pass
    first = physical_lines(text)[:1]
    if first and first[0][1].lstrip().startswith("{"):
        try:
            if isinstance(json.loads(first[0][1]), dict):
                return "jsonl"
        except ValueError:
            pass
    return "text"


def _text_of(item, where: str) -> str:
    text = item.get("text") if isinstance(item, dict) else item
    if isinstance(item, dict) and "text" not in item:
        raise InvalidInputError(
            f"{where}: expected a JSON object with a 'text' field, got keys {sorted(item)}."
        )
    if not isinstance(text, str):
        raise InvalidInputError(f"{where}: 'text' must be a string, got {type(text).__name__}.")
    return text


def check_readable(path: Path) -> None:
    """``path`` is something prompts can be read from: a regular file, or a pipe (``--prompts <(grep ...)``, a
    FIFO), never a folder or a device (``/dev/zero`` never ends)."""
    import stat

    if path.is_dir():
        raise InvalidInputError(
            f"{path} is a folder, not a prompt file: give one file in it (one prompt per line, JSON lines or a JSON "
            "array), or join them first (cat folder/*.txt > prompts.txt)."
        )
    mode = path.stat().st_mode
    if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
        raise InvalidInputError(
            f"{path} is a device or socket, not a prompt file: give a file of prompts, or a pipe such as "
            "<(grep word prompts.txt)."
        )


def read_prompt_file(path: str | Path) -> list[str]:
    """The prompts of ``path`` (a file, or a pipe read once) in the file's format (``file_format``), in order; a
    file that holds none (empty, blank lines only, ``[]``) is refused, naming it."""
    path = Path(path)
    check_readable(path)
    text = utf8_text(path)
    kind = file_format(path, text)
    prompts = _prompts_of(path, text, kind)
    if not prompts:
        what = "an empty file" if not text else "blank lines only" if not text.strip() else "an empty array"
        raise InvalidInputError(
            f'{path} holds no prompt ({what}): write one prompt per line, JSON lines ({{"text": ...}} per line) '
            "or a JSON array of strings."
        )
    return prompts


def _prompts_of(path: Path, text: str, kind: str) -> list[str]:
    if kind == "json":
        try:
            items = json.loads(text)
        except ValueError as exc:
            raise InvalidInputError(f"{path} is not a JSON array of prompts ({exc}).") from exc
        if not isinstance(items, list):
            raise InvalidInputError(
                f'{path} holds a JSON {type(items).__name__}, not an array: write ["first prompt", ...].'
            )
        return [_text_of(item, f"{path}, item {i}") for i, item in enumerate(items, start=1)]
    lines = physical_lines(text)
    if kind == "text":
        return [line for _, line in lines]
    prompts = []
    for number, line in lines:
        try:
            item = json.loads(line)
        except ValueError as exc:
            raise InvalidInputError(
                f"{path}, line {number}: expected a JSON object with a 'text' field ({exc!r})."
            ) from exc
        if not isinstance(item, dict):
            raise InvalidInputError(
                f"{path}, line {number}: expected a JSON object with a 'text' field, got a "
                f"{type(item).__name__}."
            )
        prompts.append(_text_of(item, f"{path}, line {number}"))
    return prompts
