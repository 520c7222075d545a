"""The book's runs: each embedded model, its random-weight twin and the model on shuffled words.

A run is typed (``Run``: model, kind) so that no other wing parses labels; ``label`` is the name the chapters and
the verdict table show: ``"<model>"``, ``"random:<model>"``, ``"<model> (shuffled)"``.
Introduced in: chapter 8 (the verdict), shared by chapters 3-6.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..capturing.cache import BOOK_MODELS

if TYPE_CHECKING:
    from pathlib import Path

    from ..capturing.results import Capture
    from ..capturing.states import TokenStates

CLASS_SET = "binding"  # the labelled reasoning set of chapters 6 and 8 and of the explorer's separability
KINDS = ("trained", "random twin", "shuffled words")


@dataclass(frozen=True)
class Run:
    """One model run of the book: ``kind`` is "trained", "random twin" or "shuffled words"."""

    model: str
    kind: str

    @property
    def label(self) -> str:
        if self.kind == "random twin":
            return f"random:{self.model}"
        if self.kind == "shuffled words":
            return f"{self.model} (shuffled)"
        return self.model

    @property
    def capture_name(self) -> str:
        """The zoo name the capture loads (the twin is the ``random:`` model)."""
        return f"random:{self.model}" if self.kind == "random twin" else self.model

    def capture_path(self, attention: bool = False) -> Path:
        """The file ``capture(attention=attention)`` reads or writes (``.is_file()``: already captured)."""
        from ..capturing.cache import book_capture_path

        shuffle = self.kind == "shuffled words"
        return book_capture_path(self.capture_name, attention=attention, shuffle=shuffle)

    def capture(self, cached_only: bool = False, attention: bool = False) -> Capture | None:
        """The book's capture of this run (``capturing.cache.book_capture``; ``attention``: the one with attention
        statistics, chapter 2); with ``cached_only``, None when it is not in the cache yet."""
        from ..capturing.cache import book_capture

        if cached_only and not self.capture_path(attention).is_file():
            return None
        return book_capture(self.capture_name, attention=attention, shuffle=self.kind == "shuffled words")

    def attention_capture(self, cap: Capture | None, cached_only: bool = False) -> Capture | None:
        """The run's capture with attention statistics: ``cap`` itself when it has them (the book's models and
        twins carry them, ``capturing.cache.WITH_ATTENTION``: no second file read), else ``capture(attention=True)``;
        None for a shuffled-words run (its attention is never read) or, with ``cached_only``, when not cached."""
        if self.kind == "shuffled words":
            return None
        if cap is not None and cap.attention is not None:
            return cap
        return self.capture(cached_only=cached_only, attention=True)

    def binding_states(self, cached_only: bool = False) -> TokenStates | None:
        """The book's token states of this run's model on the ``binding`` set (``book_binding_states``); None for a
        shuffled-words run (the labelled prompts are not shuffled)."""
        if self.kind == "shuffled words":
            return None
        return book_binding_states(self.capture_name, cached_only=cached_only)

    def gains(self, cached_only: bool = False):
        """The book's Jacobian-vector measurement of this run's model (``capturing.cache.book_gains``): for the
        trained model and its twin only (a shuffled-words run has the same block maps as its model)."""
        from ..capturing.cache import book_gains

        if self.kind == "shuffled words":
            return None
        return book_gains(self.capture_name, cached_only=cached_only)


def book_runs(models: tuple[str, ...] = BOOK_MODELS, kinds: tuple[str, ...] = KINDS) -> list[Run]:
    """Every run of the book, model by model: trained, then its twin, then shuffled words."""
    return [Run(model, kind) for model in models for kind in kinds]


def book_binding_states(capture_name: str, cached_only: bool = False) -> TokenStates | None:
    """Token states of ``capture_name`` (a zoo name) on the book's ``binding`` set: the ``BOOK_REASONING_ITEMS``
    items chapters 6 and 8 read (``capturing.state_cache.book_token_states``, one cached forward pass per model,
    shared with the explorer); with ``cached_only``, None when they are not in the cache yet."""
    from ..capturing.state_cache import BOOK_REASONING_ITEMS, book_token_states

    if cached_only and not book_binding_states_path(capture_name).is_file():
        return None
    return book_token_states(capture_name, CLASS_SET, n_items=BOOK_REASONING_ITEMS)


def book_binding_states_path(capture_name: str) -> Path:
    """The file ``book_binding_states(capture_name)`` reads or writes (``.is_file()``: already computed)."""
    from ..capturing.state_cache import BOOK_REASONING_ITEMS, book_token_states_path

    return book_token_states_path(capture_name, CLASS_SET, BOOK_REASONING_ITEMS)


def binding_step_names() -> tuple[str, ...]:
    """The names of the reasoning steps of the ``binding`` set (``prompts.reasoning``), in step order."""
    from ..prompts import reasoning

    return reasoning.load(CLASS_SET, n_items=8).steps
