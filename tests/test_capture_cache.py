"""The book's capture cache: one file per run and settings, and one forward pass for a book model's plain and
attention statistics (``capturing.cache.WITH_ATTENTION``)."""

from __future__ import annotations

from latentbook.capturing import cache


def test_the_book_models_and_their_twins_are_the_runs_captured_with_attention():
    assert cache.WITH_ATTENTION == set(cache.BOOK_MODELS) | {f"random:{name}" for name in cache.BOOK_MODELS}


def test_a_book_model_reads_plain_and_attention_statistics_from_one_file(tmp_path, monkeypatch):
    monkeypatch.setenv("LATENTBOOK_CAPTURE_CACHE", str(tmp_path))
    for name in cache.WITH_ATTENTION:
        assert cache.book_capture_path(name) == cache.book_capture_path(name, attention=True)
        # shuffled words: nobody reads their attention, so their capture stays plain (and apart)
        shuffled = cache.book_capture_path(name, shuffle=True)
        assert shuffled != cache.book_capture_path(name, shuffle=True, attention=True)
        assert shuffled != cache.book_capture_path(name)
    other = "random:llama-tiny"
    assert cache.book_capture_path(other) != cache.book_capture_path(other, attention=True)


def test_a_plain_request_for_a_book_model_captures_attention_once_for_both(tmp_path, monkeypatch):
    monkeypatch.setenv("LATENTBOOK_CAPTURE_CACHE", str(tmp_path))
    monkeypatch.setattr(cache, "WITH_ATTENTION", frozenset({"random:llama-tiny"}))
    plain = cache.book_capture("random:llama-tiny", n_prompts=4)
    assert plain.attention is not None and plain.provenance["attention"] is True
    files = sorted(tmp_path.glob("*.safetensors"))
    with_attention = cache.book_capture("random:llama-tiny", attention=True, n_prompts=4)
    assert (
        sorted(tmp_path.glob("*.safetensors")) == files and len(files) == 1
    )  # read back, not captured again
    assert with_attention.n_tokens == plain.n_tokens
    assert (with_attention.omega_mean() == plain.omega_mean()).all()
    monkeypatch.setattr(cache, "WITH_ATTENTION", frozenset())
    assert cache.book_capture("random:llama-tiny", n_prompts=4).attention is None
    assert len(list(tmp_path.glob("*.safetensors"))) == 2


def test_a_runs_attention_capture_is_its_own_capture_when_that_carries_attention(tmp_path, monkeypatch):
    from latentbook.study.runs import Run

    monkeypatch.setenv("LATENTBOOK_CAPTURE_CACHE", str(tmp_path))
    monkeypatch.setattr(cache, "WITH_ATTENTION", frozenset({"random:llama-tiny"}))
    run = Run("random:llama-tiny", "trained")
    cap = run.capture()
    assert run.attention_capture(cap) is cap  # no second file read
    assert Run("random:llama-tiny", "shuffled words").attention_capture(cap) is None
    monkeypatch.setattr(cache, "WITH_ATTENTION", frozenset())
    plain = run.capture()  # another file: without attention
    assert plain.attention is None
    read = run.attention_capture(plain, cached_only=True)  # the file with attention, captured above
    assert read is not plain and read.attention is not None
    assert (read.omega_mean() == cap.omega_mean()).all()


def test_two_processes_asking_for_one_capture_run_it_once(tmp_path, monkeypatch):
    """The book's pages run two at a time (tools/execute_pages.py): a second asker waits for the first's file."""
    import threading
    import time

    monkeypatch.setenv("LATENTBOOK_CAPTURE_CACHE", str(tmp_path))
    real_capture, calls = cache.capture, []

    def slow_capture(*args, **kwargs):
        calls.append(threading.get_ident())
        time.sleep(0.5)  # long enough for the second asker to arrive while the first computes
        return real_capture(*args, **kwargs)

    monkeypatch.setattr(cache, "capture", slow_capture)
    texts = ["one prompt of a few words", "another prompt"]
    results = [None, None]

    def ask(i):
        results[i] = cache.cached_capture("random:llama-tiny", texts, max_length=16, batch_size=2)

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
        time.sleep(0.1)
    for t in threads:
        t.join()
    assert len(calls) == 1  # without the lock both would capture
    assert (
        results[0].n_tokens == results[1].n_tokens
        and (results[0].omega_mean() == results[1].omega_mean()).all()
    )
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no lock file left behind
