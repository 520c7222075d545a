"""Cached token states of the reasoning sets: computed once, read back identical, damaged files refused."""

from __future__ import annotations

import numpy as np
import pytest

import latentbook as lb
from latentbook.capturing import state_cache
from latentbook.capturing.states import token_states
from latentbook.prompts import reasoning


def test_token_states_are_cached_and_read_back_identical(tmp_path, monkeypatch):
    monkeypatch.setenv("LATENTBOOK_CAPTURE_CACHE", str(tmp_path))
    first = state_cache.book_token_states("random:llama-tiny", "binding", n_items=6)
    files = list((tmp_path / "states").glob("*.npz"))
    assert len(files) == 1
    again = state_cache.book_token_states("random:llama-tiny", "binding", n_items=6)
    direct = token_states("random:llama-tiny", reasoning.load("binding", n_items=6))
    for result in (again, direct):
        np.testing.assert_array_equal(result.states, first.states)
        np.testing.assert_array_equal(result.labels, first.labels)
        np.testing.assert_array_equal(result.steps, first.steps)
        np.testing.assert_array_equal(result.items, first.items)
        assert result.tokens == first.tokens
    state_cache.book_token_states("random:llama-tiny", "binding", n_items=7)
    assert len(list((tmp_path / "states").glob("*.npz"))) == 2  # another set, another file

    files[0].write_bytes(b"not an npz")
    with pytest.raises(lb.CaptureFileError, match="Delete it"):
        state_cache.book_token_states("random:llama-tiny", "binding", n_items=6)


def test_the_explorer_reads_the_chapters_binding_states(tmp_path, monkeypatch):
    """``study.runs.book_binding_states`` (the explorer's separability) is chapter 6's file, read, never recomputed."""
    from latentbook.study import runs

    monkeypatch.setenv("LATENTBOOK_CAPTURE_CACHE", str(tmp_path))
    monkeypatch.setattr(state_cache, "BOOK_REASONING_ITEMS", 6)
    twin = runs.Run("llama-tiny", "random twin")
    assert twin.binding_states(cached_only=True) is None
    chapter = state_cache.book_token_states("random:llama-tiny", "binding", n_items=6)
    path = state_cache.book_token_states_path("random:llama-tiny", "binding", 6)
    assert runs.book_binding_states_path(twin.capture_name) == path
    assert list((tmp_path / "states").glob("*.npz")) == [path]
    monkeypatch.setattr(state_cache, "token_states", lambda *a, **k: pytest.fail("a second forward pass"))
    read = twin.binding_states(cached_only=True)
    np.testing.assert_array_equal(read.states, chapter.states)
    np.testing.assert_array_equal(read.labels, chapter.labels)
    assert runs.Run("llama-tiny", "shuffled words").binding_states() is None
    assert runs.binding_step_names()[0] == reasoning.load("binding", n_items=2).steps[0]
