"""``study.book_cache``: the book's shared work, made before its pages, one model per process, the costliest first,
and never a reason for a build to fail."""

from __future__ import annotations

import pytest

from latentbook.errors import InvalidInputError
from latentbook.study import book_cache
from latentbook.study.runs import KINDS


def _fake_work(model):
    return model, float(len(model)), ("Traceback: boom" if model == "minilm-l6" else None)


def test_the_costliest_model_starts_first_and_every_model_is_reported():
    lines = []
    results = book_cache.warm_book(1, report=lines.append, work=_fake_work)
    assert [model for model, _, _ in results] == ["gemma3-270m", "smollm2-135m", "minilm-l6"]
    assert lines[0] == "gemma3-270m: 11 s"
    assert lines[2].startswith("minilm-l6: 9 s, failed (the pages will say why):") and "boom" in lines[2]


def test_two_processes_warm_the_same_models():
    results = book_cache.warm_book(2, report=lambda line: None, work=_fake_work)
    assert sorted(model for model, _, _ in results) == ["gemma3-270m", "minilm-l6", "smollm2-135m"]


def test_a_failing_model_is_returned_with_its_traceback_not_raised(monkeypatch):
    def fail(run):
        raise RuntimeError(f"no capture of {run.label}")

    monkeypatch.setattr(book_cache, "warm_run", fail)
    model, seconds, failure = book_cache.warm_model("minilm-l6")
    assert model == "minilm-l6" and seconds >= 0
    assert "RuntimeError: no capture of minilm-l6" in failure


def test_each_run_of_a_model_is_warmed_in_order(monkeypatch):
    warmed = []
    monkeypatch.setattr(book_cache, "warm_run", lambda run: warmed.append(run.kind))
    assert book_cache.warm_model("smollm2-135m")[2] is None
    assert warmed == list(KINDS)


def test_jobs_below_one_are_refused():
    with pytest.raises(InvalidInputError, match="at least 1"):
        book_cache.warm_book(0, work=_fake_work)
