"""Captures cached on disk, keyed on everything they depend on, including the package's own source.

The book and the widgets call ``cached_capture`` so that an unchanged rebuild loads captures in seconds,
while any change of model, prompts, settings or latentbook code captures again. The folder is
``$LATENTBOOK_CAPTURE_CACHE`` or ``cache_dir()/captures``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path

from .._code_hash import code_text
from .._files import cache_dir, computing, env_folder, inside
from ..models.zoo import load_model
from .capture import capture, prompt_set_hash
from .results import Capture, load_capture

# What a capture's numbers depend on: the loaders, the capture code, the prompt sets and their helpers.
CAPTURE_SOURCES = ("models", "capturing", "prompts", "_files.py", "errors.py")


@cache
def package_source_hash(parts: tuple[str, ...] | None = None) -> str:
    """sha256 over the path and text of every .py and data file of latentbook (or of ``parts`` of it), the .py files
    without their docstrings and comments (``code_text``): rewording a docstring keeps the cached captures."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if parts is not None and relative.parts[0] not in parts:
            continue
        if path.is_file() and path.suffix in {".py", ".jsonl", ".json"} and "__pycache__" not in path.parts:
            text = path.read_text(encoding="utf-8")
            digest.update(
                str(relative).encode() + b"\0" + (code_text(text) if path.suffix == ".py" else text).encode()
            )
    return digest.hexdigest()


def capture_cache_dir() -> Path:
    """``$LATENTBOOK_CAPTURE_CACHE`` (an absolute folder: ``_files.env_folder`` refuses a relative path or a file),
    else ``cache_dir() / "captures"``; created when missing."""
    folder = env_folder("LATENTBOOK_CAPTURE_CACHE") or cache_dir() / "captures"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def cache_key(model_name: str, prompts: list[str], settings: dict) -> str:
    payload = {
        "model": model_name,
        "prompts": prompt_set_hash(prompts),
        "settings": settings,
        "source": package_source_hash(CAPTURE_SOURCES),  # an analysis or view change keeps the captures
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:32]


def cache_path(model_name: str, prompts: list[str], settings: dict) -> Path:
    """Where ``cached_capture(model_name, prompts, **settings)`` keeps its file (it may not exist yet).

    The model name becomes a plain file name (``[A-Za-z0-9_.-]``, at most 80 characters), so no name can
    point outside the cache folder.
    """
    return inside(
        capture_cache_dir(), f"{_stem(model_name)}-{cache_key(model_name, prompts, settings)}.safetensors"
    )


def _stem(model_name: str) -> str:
    """``model_name`` as a plain file name: ``[A-Za-z0-9_.-]``, at most 80 characters."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", model_name).strip("._")[:80] or "model"


def cached_capture(
    model_name: str,
    prompts: list[str],
    *,
    prompt_set: str | None = None,
    on_batch: Callable[[int, int], None] | None = None,
    **settings,
) -> Capture:
    """``capture(load_model(model_name), prompts, **settings)``, read from the cache when it was done before.

    Writes are atomic, and a second process asking for a key being filled waits for it (``_files.computing``),
    so the capture runs once and leaves one valid file. ``on_batch`` goes to
    ``capture`` (progress, cancel) and is not part of the key.
    """
    path = cache_path(model_name, prompts, settings)
    if path.is_file():
        return load_capture(path)
    with computing(path):  # another process filling the same key: wait for it, then read its file
        if path.is_file():
            return load_capture(path)
        result = capture(
            load_model(model_name),
            prompts,
            prompt_set=prompt_set,
            progress=False,
            on_batch=on_batch,
            **settings,
        )
        result.save(path)
    return result


BOOK_N_PROMPTS = 128
BOOK_SETTINGS = dict(max_length=128, batch_size=16)
BOOK_MODELS = ("smollm2-135m", "gemma3-270m", "minilm-l6")  # the embedded models every chapter measures
BOOK_CAPTURES = tuple(
    name for model in BOOK_MODELS for name in (model, f"random:{model}")
)  # each, then its twin
# Chapters 2 and 8 and the explorer read the attention of these, so their one book capture carries it: every
# chapter's plain statistics come from that same forward pass.
WITH_ATTENTION = frozenset(BOOK_CAPTURES)


def _book_request(
    model_name: str, attention: bool, shuffle: bool, n_prompts: int
) -> tuple[list[str], str, dict]:
    """The prompts, prompt-set name and settings of a book capture: with attention statistics when asked for, and
    always for the prompts as written of a model in ``WITH_ATTENTION``."""
    from .. import prompts as prompt_sets

    texts = prompt_sets.load("general", limit=n_prompts)
    name = "general"
    if shuffle:
        texts, name = prompt_sets.shuffled(texts), "general-shuffled"
    settings = dict(BOOK_SETTINGS)
    if attention or (model_name in WITH_ATTENTION and not shuffle):
        settings["attention"] = True
    return texts, name, settings


def book_capture(
    model_name: str,
    *,
    attention: bool = False,
    shuffle: bool = False,
    n_prompts: int = BOOK_N_PROMPTS,
    on_batch: Callable[[int, int], None] | None = None,
) -> Capture:
    """The capture every chapter shares: the first ``n_prompts`` of the ``general`` set at the book's settings.

    ``shuffle=True`` shuffles the words of each prompt (the shuffled-tokens null); ``attention=True`` adds
    attention statistics, which a model of ``WITH_ATTENTION`` carries anyway (one forward pass serves both).
    Cached, so chapters asking for the same capture share one file.
    """
    texts, name, settings = _book_request(model_name, attention, shuffle, n_prompts)
    return cached_capture(model_name, texts, prompt_set=name, on_batch=on_batch, **settings)


def book_capture_path(
    model_name: str, *, attention: bool = False, shuffle: bool = False, n_prompts: int = BOOK_N_PROMPTS
) -> Path:
    """The file ``book_capture`` reads or writes for these arguments; ``.is_file()`` says if it is cached."""
    texts, _, settings = _book_request(model_name, attention, shuffle, n_prompts)
    return cache_path(model_name, texts, settings)


BOOK_GAIN_PROMPTS = (
    16  # prompts of the transverse-gain measurement (one tangent each; see capturing.jacobian)
)
BOOK_GAIN_SETTINGS = dict(after=0.42, k=10, n_directions=1, max_length=64, batch_size=8, seed=0)


def _gain_prompts() -> tuple[list[str], str]:
    from .. import prompts as prompt_sets

    return prompt_sets.load("general", limit=BOOK_GAIN_PROMPTS), f"general[:{BOOK_GAIN_PROMPTS}]"


def book_gains_path(model_name: str) -> Path:
    """The file ``book_gains`` reads or writes for ``model_name``; ``.is_file()`` says if it is cached."""
    from .jacobian import SCHEMA_VERSION

    settings = {"transverse_gains": BOOK_GAIN_SETTINGS, "schema": SCHEMA_VERSION}
    key = cache_key(model_name, _gain_prompts()[0], settings)
    return inside(capture_cache_dir(), f"{_stem(model_name)}-gains-{key}.safetensors")


def book_gains(model_name: str, cached_only: bool = False):
    """The book's Jacobian-vector measurement of ``model_name`` (``jacobian.transverse_gains`` on the first
    ``BOOK_GAIN_PROMPTS`` of the ``general`` set at ``BOOK_GAIN_SETTINGS``), cached beside the captures; with
    ``cached_only``, None when it is not cached yet."""
    from .jacobian import load_gains, transverse_gains

    path = book_gains_path(model_name)
    if path.is_file():
        return load_gains(path)
    if cached_only:
        return None
    with computing(path):
        if path.is_file():
            return load_gains(path)
        texts, name = _gain_prompts()
        gains = transverse_gains(load_model(model_name), texts, prompt_set=name, **BOOK_GAIN_SETTINGS)
        gains.save(path, force=True)
    return gains
