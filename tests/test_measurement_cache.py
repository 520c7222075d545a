"""``study.measurement_cache``: a measurement is computed once per input file, code and settings, and never served
stale: a changed capture file, a changed code hash or another argument computes it again; entries are written
atomically, read back only through the safe unpickler, and computed once when two callers ask at the same time."""

from __future__ import annotations

import dataclasses
import os
import pickle
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from latentbook.analysis.synthetic import as_capture
from latentbook.errors import InvalidInputError
from latentbook.study import measurement_cache as mc
from latentbook.study.measure import measure


@pytest.fixture
def folder(tmp_path, monkeypatch) -> Path:
    """A private captures' folder, so no test reads or writes the book's cache."""
    monkeypatch.setenv("LATENTBOOK_CAPTURE_CACHE", str(tmp_path / "cache"))
    return tmp_path


def _counting(result=1):
    calls = []

    def compute():
        calls.append(1)
        return {"value": result, "array": np.arange(3.0)}

    return compute, calls


def _entries(folder: Path) -> list[str]:
    """Every file in the captures' folder, hidden ones too (temporaries, locks)."""
    return sorted(p.name for p in (folder / "cache").iterdir()) if (folder / "cache").is_dir() else []


def _one_entry(folder: Path):
    """A capture file, a counting computation, and the one entry ``cached`` wrote for it."""
    data = folder / "capture.bin"
    data.write_bytes(b"capture one")
    compute, calls = _counting()
    mc.cached("measure", compute, name="toy", files={"capture": data})
    (entry,) = (folder / "cache").glob("toy-measure-*.pickle")
    return data, compute, calls, entry


def test_an_entry_is_computed_once_and_read_back_equal(folder):
    data = folder / "capture.bin"
    data.write_bytes(b"capture one")
    compute, calls = _counting()
    first = mc.cached("measure", compute, name="toy", files={"capture": data}, settings={"n_boot": 200})
    second = mc.cached("measure", compute, name="toy", files={"capture": data}, settings={"n_boot": 200})
    assert calls == [1]
    assert second["value"] == first["value"] and np.array_equal(second["array"], first["array"])
    assert [name.split("-")[:2] for name in _entries(folder)] == [["toy", "measure"]]


def test_a_changed_capture_file_is_measured_again_even_at_once_and_of_the_same_size(folder):
    data = folder / "capture.bin"
    data.write_bytes(b"capture one")
    compute, calls = _counting()
    mc.cached("measure", compute, name="toy", files={"capture": data})
    with open(data, "r+b") as handle:  # the same inode, the same size, within the file system's clock tick
        handle.write(b"CAPTURE")
    mc.cached("measure", compute, name="toy", files={"capture": data})
    assert calls == [1, 1]


def test_a_settled_file_is_hashed_once_per_process_and_again_once_rewritten(folder, monkeypatch):
    data = folder / "capture.bin"
    data.write_bytes(b"capture one")
    old = time.time_ns() - 60 * 10**9
    os.utime(data, ns=(old, old))
    hashed = []
    real = mc.sha256_file
    monkeypatch.setattr(mc, "sha256_file", lambda path: hashed.append(path) or real(path))
    first = mc.file_digest(data)
    assert mc.file_digest(data) == first and len(hashed) == 1  # remembered
    data.write_bytes(b"capture two")
    assert mc.file_digest(data) != first and len(hashed) == 2


def test_a_change_of_the_measuring_code_is_measured_again(folder, monkeypatch):
    data = folder / "capture.bin"
    data.write_bytes(b"capture one")
    compute, calls = _counting()
    mc.cached("measure", compute, name="toy", files={"capture": data})
    monkeypatch.setattr(mc, "code_digest", lambda modules=(): "another version of the estimators")
    mc.cached("measure", compute, name="toy", files={"capture": data})
    assert calls == [1, 1]


def test_the_code_digest_covers_the_modules_named_and_the_wings_it_reads():
    assert mc.code_digest(("latentbook.study.measure",)) != mc.code_digest(
        ("latentbook.study.run_landmarks",)
    )
    assert set(mc.CODE_PARTS) >= {"analysis", "capturing"}


def test_other_settings_and_an_absent_input_are_other_entries(folder):
    data, gains = folder / "capture.bin", folder / "gains.bin"
    data.write_bytes(b"capture one")
    gains.write_bytes(b"gains")
    compute, calls = _counting()
    for settings, files in [
        ({"n_boot": 200}, {"capture": data, "gains": None}),
        ({"n_boot": 100}, {"capture": data, "gains": None}),
        ({"n_boot": 200}, {"capture": data, "gains": gains}),
        ({"n_boot": 200}, {"capture": data, "gains": None}),
    ]:
        mc.cached("measure", compute, name="toy", files=files, settings=settings)
    assert calls == [1, 1, 1]  # the last one is the first again


def test_call_settings_takes_every_keyword_with_its_default_so_a_new_one_enters_the_key():
    def measure_v1(cap, label=None, n_boot=200, seed=0):
        return None

    def measure_v2(cap, label=None, n_boot=200, seed=0, learned=False):
        return None

    v1 = mc.call_settings(measure_v1, ("cap",), label="x")
    v2 = mc.call_settings(measure_v2, ("cap",), label="x")
    assert v1 == {"label": "x", "n_boot": 200, "seed": 0}
    assert v2 == v1 | {"learned": False}
    assert mc.entry_key("measure", {}, settings=v1) != mc.entry_key("measure", {}, settings=v2)
    real = mc.call_settings(measure, ("cap", "attention", "gains"), label="x")
    assert {"label", "split", "n_boot", "seed", "spectra", "spikes"} <= set(real)
    assert not {"cap", "attention", "gains"} & set(real)


def test_an_object_whose_text_says_nothing_is_refused_in_a_key():
    with pytest.raises(InvalidInputError, match="as a file"):
        mc.entry_key("measure", {}, settings={"model": object()})
    assert mc.entry_key("measure", {}, settings={"split": np.float64(0.42)}) == mc.entry_key(
        "measure", {}, settings={"split": 0.42}
    )


def test_a_failed_computation_or_write_leaves_no_entry_and_no_temporary(folder, monkeypatch):
    data = folder / "capture.bin"
    data.write_bytes(b"capture one")

    def broken():
        raise RuntimeError("estimator failed")

    with pytest.raises(RuntimeError):
        mc.cached("measure", broken, name="toy", files={"capture": data})
    assert _entries(folder) == []

    def no_rename(src, dst):
        raise OSError("disk gone")

    monkeypatch.setattr(os, "replace", no_rename)
    compute, calls = _counting()
    with pytest.raises(OSError):
        mc.cached("measure", compute, name="toy", files={"capture": data})
    assert _entries(folder) == []  # never a half-written file under the entry's name, no temporary left
    monkeypatch.undo()


def test_an_entry_cut_short_or_of_another_key_is_computed_again_and_replaced(folder):
    data, compute, calls, entry = _one_entry(folder)
    whole = entry.read_bytes()
    entry.write_bytes(whole[: len(whole) // 2])
    assert mc.cached("measure", compute, name="toy", files={"capture": data})["value"] == 1
    assert calls == [1, 1] and entry.read_bytes() == whole
    entry.write_bytes(pickle.dumps({"key": "another", "value": {"value": 2}}))
    assert mc.cached("measure", compute, name="toy", files={"capture": data})["value"] == 1


def test_a_crafted_entry_is_never_executed(folder):
    data, compute, calls, entry = _one_entry(folder)
    planted = folder / "planted"

    class Exploit:
        def __reduce__(self):
            return (Path.touch, (planted,))

    entry.write_bytes(pickle.dumps(Exploit()))
    mc.cached("measure", compute, name="toy", files={"capture": data})
    assert not planted.exists() and calls == [1, 1]
    with pytest.raises(pickle.UnpicklingError):
        mc.SafeUnpickler(__import__("io").BytesIO(pickle.dumps(mc.cached))).load()  # a latentbook function


def test_two_callers_at_once_compute_once(folder):
    data = folder / "capture.bin"
    data.write_bytes(b"capture one")
    calls = []

    def slow():
        calls.append(1)
        time.sleep(0.5)
        return len(calls)

    results = []
    threads = [
        threading.Thread(
            target=lambda: results.append(mc.cached("measure", slow, name="toy", files={"capture": data}))
        )
        for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert calls == [1] and results == [1, 1]


def test_a_kind_must_be_a_plain_word_and_a_name_stays_inside_the_folder(folder):
    with pytest.raises(InvalidInputError):
        mc.entry_path("toy", "../measure", "0" * 32)
    path = mc.entry_path("../../etc/passwd (shuffled)", "measure", "0" * 32)
    assert path.parent == (folder / "cache").resolve() and "/" not in path.name


# --- a run, end to end ------------------------------------------------------------------------------------------


def _tokens(seed: int, n_depths: int = 13, n: int = 240, d: int = 32):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n_depths, n, d))
    return x, np.repeat(np.arange(n // 4), 4), np.tile(np.arange(4), n // 4)


class ToyRun:
    """What ``measurements_of`` reads of a ``study.runs.Run``, on a synthetic capture file."""

    def __init__(self, path: Path, kind: str = "trained"):
        self.path, self.kind, self.label, self.capture_name = path, kind, "toy", "toy"
        self.loads = 0

    def capture_path(self, attention: bool = False) -> Path:
        return self.path

    def capture(self, cached_only: bool = False, attention: bool = False):
        from latentbook.capturing.results import load_capture

        self.loads += 1
        return load_capture(self.path)

    def attention_capture(self, cap, cached_only: bool = False):
        return None

    def gains(self, cached_only: bool = False):
        return None


def _same(a, b) -> bool:
    """Equal value for value: dataclasses field by field, arrays with their NaNs and dtypes, floats exactly."""
    if dataclasses.is_dataclass(a):
        return type(a) is type(b) and all(
            _same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a)
        )
    if isinstance(a, np.ndarray):
        return (
            a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
        )
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, float) and np.isnan(a):
        return isinstance(b, float) and np.isnan(b)
    return type(a) is type(b) and a == b


def _untimed(m):
    """``m`` without the learned basis's fitting times (wall clock, different at every run)."""
    return dataclasses.replace(m, learned=dataclasses.replace(m.learned, seconds=None))


def _measured(run: ToyRun):
    """``measure`` of the run's capture as the cache computes it (on ``THREADS`` BLAS threads: the last digits),
    with the learned basis a trained run is read in."""
    with threadpool_limits(limits=mc.THREADS):
        return measure(run.capture(), "toy", spectra=True, learned=True)


def test_a_runs_measurements_are_measures_and_follow_its_capture_file(folder):
    path = folder / "toy.safetensors"
    as_capture(*_tokens(0), name="toy").save(path)
    run = ToyRun(path)
    first = mc.measurements_of(run)
    assert first.learned is not None and _same(_untimed(first), _untimed(_measured(run)))
    loads = run.loads
    assert (
        _same(mc.measurements_of(run), first) and run.loads == loads
    )  # read back: the capture is not loaded
    as_capture(*_tokens(1), name="toy").save(path, force=True)  # another capture under the same name
    changed = mc.measurements_of(run)
    assert _same(_untimed(changed), _untimed(_measured(run))) and not _same(changed, first)


def test_a_run_not_captured_is_none_unless_it_may_be_made(folder):
    run = ToyRun(folder / "missing.safetensors")
    assert mc.measurements_of(run) is None and mc.spreads_of(run, 0.42) is None


def test_a_results_file_is_measured_once(folder, monkeypatch):
    from latentbook.study import capture_report, verdict_table

    results = folder / "results"
    results.mkdir()
    as_capture(*_tokens(2), name="toy").save(results / "toy.safetensors")
    first = verdict_table.runs_table({}, results_dir=results, ladder=False, n_boot=100)
    monkeypatch.setattr(capture_report, "measure", lambda *a, **k: pytest.fail("measured again"))
    again = verdict_table.runs_table({}, results_dir=results, ladder=False, n_boot=100)
    assert first.equals(again) and (first["run"] == "results file").any()


def test_a_table_is_computed_once_and_read_back_with_its_types_and_index(folder):
    import pandas as pd

    calls = []

    def compute() -> pd.DataFrame:
        calls.append(1)
        table = pd.DataFrame(
            {
                "family": ["a", "b"],
                "n": np.array([40, 20], dtype=np.int64),
                "holds": [0.1, 1 / 3],
                "met": [True, False],
            },
            index=pd.Index([100, 2000], name="samples"),
        )
        return table

    first = mc.cached_frame("table_test", compute, settings={"n_cases": 40})
    again = mc.cached_frame("table_test", compute, settings={"n_cases": 40})
    assert len(calls) == 1
    pd.testing.assert_frame_equal(again, compute())  # exact floats, dtypes and the index's name
    pd.testing.assert_frame_equal(first, again)
    mc.cached_frame("table_test", compute, settings={"n_cases": 41})
    assert len(calls) == 3  # other settings: computed again (the third call is the comparison above)


def test_a_capture_too_narrow_for_the_learned_basis_keeps_every_other_measurement():
    """32 sources need 32 coordinates: a 16-wide capture is measured without the learned basis (no learned-basis
    row), its spectra kept; a 32-wide one with it."""
    from latentbook.study.capture_report import measure_what_it_can

    narrow, missing = measure_what_it_can(as_capture(*_tokens(3, d=16), name="narrow"), "narrow", n_boot=100)
    assert narrow.learned is None and narrow.pr is not None and missing == ""
    wide, _ = measure_what_it_can(as_capture(*_tokens(3), name="wide"), "wide", n_boot=100)
    assert wide.learned is not None and wide.pr is not None
