"""Ladder v2's training infrastructure: seeds as ``<rung>-s<seed>``, checkpoints as ``<rung>-s<seed>@<k>``,
resuming (a complete folder is skipped, never rewritten), parallel jobs (the weights of sequential ones), and
ladder v1's folders loading as before."""

import dataclasses
import json
import shutil

import pytest
import torch

import latentbook as lb
from latentbook._files import sha256_file
from latentbook.errors import IntegrityError, LatentbookError, UnknownModelError
from latentbook.ladder import diagnostics, report, store, task, train
from latentbook.ladder.folders import LOG_FILE, SUMS_FILE, read_sums, weights_sha256
from latentbook.ladder.jobs import ladder_jobs, train_ladder

V2 = train.LADDER_V2_SPEC
SMALL = train.Rung("l1-d32", 1, 32)
DEEP = train.Rung("l2-d32", 2, 32)
CONFIG = train.TrainConfig(steps=20, batch_size=8, warmup=5, eval_every=10, n_eval=8, lr=1e-2)
SEEDS = (0, 1)


def _ladder(root, jobs=1, **kwargs):
    lines = []
    folders = train_ladder(
        root,
        (SMALL, DEEP),
        V2,
        CONFIG,
        seeds=SEEDS,
        checkpoint_every=10,
        checkpoint_rungs=(DEEP.name,),
        jobs=jobs,
        progress=False,
        echo=lines.append,
        **kwargs,
    )
    return folders, lines


@pytest.fixture(scope="module")
def ladder(tmp_path_factory):
    root = tmp_path_factory.mktemp("ladder-v2")
    folders, lines = _ladder(root)
    return root, folders, lines


def _state(folder):
    from safetensors.torch import load_file

    return load_file(folder / "model.safetensors")


def test_the_v2_spec_is_balanced_and_v1_is_unchanged():
    assert V2.balanced_starts is True and train.LADDER_SPEC == task.TaskSpec()
    assert train.LADDER_SPEC.balanced_starts is False
    assert dataclasses.replace(V2, balanced_starts=False) == train.LADDER_SPEC  # only the starts differ


def test_jobs_run_seed_by_seed_the_slowest_rung_first(tmp_path):
    jobs = ladder_jobs(tmp_path, train.LADDER, V2, CONFIG, seeds=(0, 1, 2))
    names = [job.name for job in jobs]
    per_seed = ["l4-d128", "l8-d64", "l4-d64", "l2-d64", "l4-d32", "l1-d64"]  # measured time, slowest first
    assert names == [f"{r}-s{s}" for s in (0, 1, 2) for r in per_seed]
    assert [job.config.seed for job in jobs] == [s for s in (0, 1, 2) for _ in per_seed]
    assert all(job.spec == V2 and job.folder == tmp_path / job.name for job in jobs)
    v1 = ladder_jobs(tmp_path, train.LADDER, train.LADDER_SPEC, CONFIG)  # no seeds: v1's names
    assert sorted(job.name for job in v1) == sorted(r.name for r in train.LADDER)
    assert {job.config for job in v1} == {CONFIG}
    marked = ladder_jobs(
        tmp_path, train.LADDER, V2, CONFIG, seeds=(0,), checkpoint_every=500, checkpoint_rungs=("l8-d64",)
    )
    assert {job.name: job.checkpoint_every for job in marked if job.checkpoint_every} == {"l8-d64-s0": 500}
    for bad in (
        dict(seeds=(0, 0)),
        dict(seeds=(-1,)),
        dict(checkpoint_rungs=("l99-d1",)),
        dict(checkpoint_every=-5),
    ):
        with pytest.raises(LatentbookError):
            ladder_jobs(tmp_path, train.LADDER, V2, CONFIG, **bad)


def test_seeded_rungs_load_by_name_with_their_sha256_and_seed(ladder, monkeypatch):
    """Each ``<rung>-s<seed>`` is its seed's training on the v2 task (the weights of ``train`` at that seed,
    checkpointing changing nothing), its ``:init`` that seed's initialisation, its sha the folder's."""
    root, folders, lines = ladder
    monkeypatch.setenv("LATENTBOOK_LADDER_DIR", str(root))
    names = [f"{r.name}-s{s}" for s in SEEDS for r in (DEEP, SMALL)]
    assert [f.name for f in folders] == names
    assert {row for row in lb.models().name if row.startswith("ladder:")} == {f"ladder:{n}" for n in names}
    weights = {}
    for rung in (SMALL, DEEP):
        for seed in SEEDS:
            name = f"{rung.name}-s{seed}"
            loaded = lb.load_model(f"ladder:{name}")
            assert loaded.sha == weights_sha256(root / name) and len(loaded.sha) == 64
            config = dataclasses.replace(CONFIG, seed=seed)
            expected, _ = train.train(rung, V2, config, progress=False)
            for p, q in zip(loaded.model.parameters(), expected.parameters()):
                assert torch.equal(p, q.to(torch.float16).float())
            null = lb.load_model(f"ladder:{name}:init")
            for p, q in zip(null.model.parameters(), train.init_model(rung, V2, seed).parameters()):
                assert torch.equal(p, q)
            log = store.training_log(name)
            assert task.TaskSpec(**log["spec"]) == V2 and log["config"]["seed"] == seed
            assert log["rung"]["name"] == rung.name
            weights[name] = next(loaded.model.parameters()).detach().clone()
    assert not torch.equal(weights["l1-d32-s0"], weights["l1-d32-s1"])  # the seed reaches the weights
    assert sum("trained in" in line for line in lines) == len(names)  # one line per finished rung
    assert any(line.startswith("l2-d32-s1: step 10/20") for line in lines)  # and one per evaluation


def test_checkpoints_are_listed_loaded_and_verified(ladder, monkeypatch, tmp_path):
    root, _, _ = ladder
    copy = tmp_path / "ladder"
    shutil.copytree(root, copy)
    monkeypatch.setenv("LATENTBOOK_LADDER_DIR", str(copy))
    assert store.checkpoints("l2-d32-s0") == [10, 20] == store.checkpoints("l2-d32-s1")
    assert store.checkpoints("l1-d32-s0") == []  # not among the checkpoint rungs
    assert not any("@" in name for name in lb.models().name)  # lb.models() lists final models only
    early = lb.load_model("ladder:l2-d32-s0@10")
    assert early.sha == weights_sha256(copy / "l2-d32-s0" / "checkpoints" / "step-10")
    after_10, _ = train.train(DEEP, V2, dataclasses.replace(CONFIG, steps=10), progress=False)
    for p, q in zip(early.model.parameters(), after_10.parameters()):
        assert torch.equal(p, q.to(torch.float16).float())
    final = lb.load_model("ladder:l2-d32-s0")
    last = lb.load_model("ladder:l2-d32-s0@20")
    assert all(torch.equal(p, q) for p, q in zip(last.model.parameters(), final.model.parameters()))
    assert not all(torch.equal(p, q) for p, q in zip(early.model.parameters(), final.model.parameters()))
    assert early.sha != last.sha != final.sha
    info = store.checkpoint_info("l2-d32-s0", 10)
    assert info["step"] == 10 and info["hops"] >= 1
    for missing in (
        "ladder:l2-d32-s0@15",
        "ladder:l2-d32-s0@x",
        "ladder:l1-d32-s0@10",
        "ladder:l2-d32-s0@10:init",
    ):
        with pytest.raises(UnknownModelError):
            lb.load_model(missing)
    weights = copy / "l2-d32-s0" / "checkpoints" / "step-10" / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    with pytest.raises(IntegrityError):
        lb.load_model("ladder:l2-d32-s0@10")
    lb.load_model("ladder:l2-d32-s0@20")  # the other checkpoints and the model itself still load
    lb.load_model("ladder:l2-d32-s0")
    (copy / "l2-d32-s0" / "checkpoints" / "step-20" / "model.safetensors").unlink()
    with pytest.raises(IntegrityError):
        lb.load_model("ladder:l2-d32-s0@20")


def _fingerprint(root):
    return {
        str(p.relative_to(root)): (p.stat().st_mtime_ns, sha256_file(p))
        for p in root.rglob("*")
        if p.is_file()
    }


def test_a_complete_folder_is_skipped_and_never_rewritten(ladder, monkeypatch, tmp_path):
    root, _, _ = ladder
    copy = tmp_path / "ladder"
    shutil.copytree(root, copy)
    shutil.rmtree(copy / "l1-d32-s1")  # one rung left to train, as after a killed run
    (copy / ".l1-d32-s1.checkpoints" / "step-10").mkdir(parents=True)  # what a killed run leaves
    (copy / ".l1-d32-s1.4242.tmp").mkdir()
    before = _fingerprint(copy)
    trained = []
    real_train = train.train
    monkeypatch.setattr(
        "latentbook.ladder.jobs.train",
        lambda rung, *a, **k: trained.append(k["label"]) or real_train(rung, *a, **k),
    )
    _, lines = _ladder(copy)
    assert trained == ["l1-d32-s1"]
    after = _fingerprint(copy)
    for name, (mtime, sha) in before.items():
        if not name.startswith("."):
            assert after[name] == (mtime, sha), name  # not even rewritten with the same bytes
    assert sum("skipped" in line for line in lines) == 3
    assert store.verify(copy / "l1-d32-s1") and not any(p.name.startswith(".") for p in copy.iterdir())
    assert _state(copy / "l1-d32-s1")["model.embed_tokens.weight"].equal(
        _state(root / "l1-d32-s1")["model.embed_tokens.weight"]
    )

    trained.clear()  # --force retrains even a complete folder
    train_ladder(copy, (SMALL,), V2, CONFIG, seeds=(0,), force=True, progress=False, echo=None)
    assert trained == ["l1-d32-s0"]
    assert (copy / "l1-d32-s0" / "training_log.json").stat().st_mtime_ns != before[
        "l1-d32-s0/training_log.json"
    ][0]

    # a folder under a final name that does not verify is left alone, and the run says so at the end
    weights = copy / "l2-d32-s0" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-1])
    broken = _fingerprint(copy / "l2-d32-s0")
    trained.clear()
    with pytest.raises(LatentbookError, match="does not verify"):
        _ladder(copy)
    assert trained == [] and _fingerprint(copy / "l2-d32-s0") == broken


def test_a_ladder_of_other_settings_is_skipped_with_a_note(ladder, tmp_path):
    root, _, _ = ladder
    copy = tmp_path / "ladder"
    shutil.copytree(root / "l1-d32-s0", copy / "l1-d32-s0")
    lines = []
    train_ladder(
        copy,
        (SMALL,),
        V2,
        dataclasses.replace(CONFIG, steps=30),
        seeds=(0,),
        checkpoint_every=10,
        progress=False,
        echo=lines.append,
    )
    (line,) = lines
    assert "skipped" in line and "config.steps 20 (asked 30)" in line and "no checkpoints" in line


def test_parallel_jobs_give_the_weights_of_sequential_ones(ladder, tmp_path):
    root, _, _ = ladder
    folders, lines = _ladder(tmp_path / "parallel", jobs=2)
    assert [f.name for f in folders] == [f.name for f in ladder[1]]
    for folder in folders:
        first = read_sums(root / folder.name)
        again = read_sums(folder)
        assert first.keys() == again.keys()
        for name in first:  # every file but the log (which holds the wall time)
            assert name == LOG_FILE or first[name] == again[name], (folder.name, name)
        for step in (10, 20) if folder.name.startswith("l2") else ():
            sub = f"checkpoints/step-{step}"
            assert read_sums(folder / sub) == read_sums(root / folder.name / sub)
    assert sum("trained in" in line for line in lines) == 4


def test_v1_folders_load_as_before_beside_the_v2_root(ladder, monkeypatch, tmp_path):
    """Without ``$LATENTBOOK_LADDER_DIR``, ``ladder:<rung>`` is results/ladder's (v1, its own spec); with several
    roots, names of each load, and measuring reads every rung's spec from its own training log."""
    monkeypatch.delenv("LATENTBOOK_LADDER_DIR", raising=False)
    assert store.ladder_roots() == [store.REPO_LADDER, store.REPO_LADDER_V2]
    assert store.ladder_dir() == store.REPO_LADDER
    if not (store.REPO_LADDER / "l4-d64" / SUMS_FILE).is_file():
        pytest.skip("results/ladder is not here")
    v1 = lb.load_model("ladder:l4-d64")
    assert v1.sha == weights_sha256(store.REPO_LADDER / "l4-d64") and v1.n_layers == 4
    assert task.TaskSpec(**store.training_log("l4-d64")["spec"]) == train.LADDER_SPEC
    assert {f"ladder:{r.name}" for r in train.LADDER} <= set(lb.models().name)

    root, _, _ = ladder
    old = tmp_path / "v1"
    train_ladder(old, (SMALL,), train.LADDER_SPEC, CONFIG, progress=False, echo=None)  # v1 names
    monkeypatch.setenv("LATENTBOOK_LADDER_DIR", f"{old}:{root}")
    assert store.trained_rungs() == ["l1-d32", "l1-d32-s0", "l1-d32-s1", "l2-d32-s0", "l2-d32-s1"]
    assert lb.load_model("ladder:l1-d32").sha == weights_sha256(old / "l1-d32")
    assert lb.load_model("ladder:l2-d32-s1").sha == weights_sha256(root / "l2-d32-s1")
    assert store.training_log("l1-d32")["config"]["seed"] == CONFIG.seed

    seen = {}
    monkeypatch.setattr(
        report, "measure_model", lambda loaded, spec: seen.setdefault(loaded.name, spec) and {}
    )
    monkeypatch.setattr(report, "correlations", lambda m: {})
    report.measure_ladder(tmp_path / "m.json", rungs=["l1-d32", "l1-d32-s0"], progress=False, reuse=False)
    assert seen == {
        "ladder:l1-d32": train.LADDER_SPEC,
        "ladder:l1-d32:init": train.LADDER_SPEC,
        "ladder:l1-d32-s0": V2,
        "ladder:l1-d32-s0:init": V2,
    }
    assert json.loads((tmp_path / "m.json").read_text())["rungs"] == ["l1-d32", "l1-d32-s0"]


def test_a_killed_run_goes_on_from_its_last_evaluation_to_the_same_weights(ladder, monkeypatch, tmp_path):
    """Killed after step 15 (the state saved at the step-10 evaluation), the rung goes on from step 10 and ends
    with the files of the uninterrupted run: weights, checkpoints, loss curve and evaluations."""
    root, _, _ = ladder
    out = tmp_path / "killed"
    real_batch = train.training_batch

    def dies_at_15(spec, config, step, hops):
        if step == 15:
            raise KeyboardInterrupt  # not an Exception: the run stops here, like a kill
        return real_batch(spec, config, step, hops)

    monkeypatch.setattr(train, "training_batch", dies_at_15)
    kwargs = dict(seeds=(1,), checkpoint_every=10, progress=False)
    with pytest.raises(KeyboardInterrupt):
        train_ladder(out, (DEEP,), V2, CONFIG, echo=None, **kwargs)
    assert not (out / "l2-d32-s1").exists() and (out / ".l2-d32-s1.resume.pt").is_file()
    assert [p.name for p in (out / ".l2-d32-s1.checkpoints").iterdir()] == ["step-10"]
    shutil.rmtree(out / ".l2-d32-s1.checkpoints" / "step-10")  # as if killed between the state and it

    steps = []
    monkeypatch.setattr(train, "training_batch", lambda *a: steps.append(a[2]) or real_batch(*a))
    lines = []
    train_ladder(out, (DEEP,), V2, CONFIG, echo=lines.append, **kwargs)
    assert steps == list(range(10, 20)) and "l2-d32-s1: resumed at step 10/20" in lines[0]
    for sub in ("", "checkpoints/step-10", "checkpoints/step-20"):
        again, first = read_sums(out / "l2-d32-s1" / sub), read_sums(root / "l2-d32-s1" / sub)
        assert {k: v for k, v in again.items() if k != LOG_FILE} == {
            k: v for k, v in first.items() if k != LOG_FILE
        }
    log, uninterrupted = (json.loads((r / "l2-d32-s1" / LOG_FILE).read_text()) for r in (out, root))
    for key in ("loss", "evals", "stages", "config", "spec"):
        assert log[key] == uninterrupted[key], key
    assert not any(p.name.startswith(".") for p in out.iterdir())  # no state, staging or lock left

    # a state of other settings is not resumed from: the run starts at step 0
    steps.clear()
    other = dataclasses.replace(CONFIG, lr=2e-2)
    state = tmp_path / "state.pt"
    with pytest.raises(KeyboardInterrupt):
        monkeypatch.setattr(train, "training_batch", dies_at_15)
        train.train(DEEP, V2, CONFIG, progress=False, resume_file=state)
    monkeypatch.setattr(train, "training_batch", lambda *a: steps.append(a[2]) or real_batch(*a))
    train.train(DEEP, V2, other, progress=False, resume_file=state)
    assert steps[0] == 0


def test_a_checkpointed_rung_has_its_checkpoints_measured_once_and_remeasured_when_they_change(
    ladder, monkeypatch, tmp_path
):
    root, _, _ = ladder
    monkeypatch.setenv("LATENTBOOK_LADDER_DIR", str(root))
    calls = []

    def fake_measure(loaded, spec):
        calls.append(loaded.name)
        return {"name": loaded.name, "tco": {}}

    monkeypatch.setattr(report, "measure_model", fake_measure)
    monkeypatch.setattr(report, "correlations", lambda m: {})
    out = tmp_path / "measurements.json"
    rungs = ["l2-d32-s0", "l1-d32-s0"]
    report.measure_ladder(out, rungs=rungs, progress=False, checkpoint_stride=10)
    assert calls == [
        "ladder:l2-d32-s0",
        "ladder:l2-d32-s0:init",
        "ladder:l2-d32-s0@10",  # step 20 is the final model, measured as the rung
        "ladder:l1-d32-s0",
        "ladder:l1-d32-s0:init",
    ]
    m = json.loads(out.read_text())
    measured = m["models"]["l2-d32-s0"]["checkpoints"]
    assert list(measured) == ["10"] and measured["10"]["name"] == "ladder:l2-d32-s0@10"
    assert measured["10"]["sha256"] == store.checkpoint_sha("l2-d32-s0", 10)
    assert "checkpoints" not in m["models"]["l1-d32-s0"]
    calls.clear()
    report.measure_ladder(out, rungs=rungs, progress=False, checkpoint_stride=10)
    assert calls == []  # the same weights: everything reused
    m["models"]["l2-d32-s0"]["checkpoints"]["10"]["sha256"] = "0" * 64  # as if step 10 had been retrained
    out.write_text(json.dumps(m))
    report.measure_ladder(out, rungs=rungs, progress=False, checkpoint_stride=10)
    assert calls == ["ladder:l2-d32-s0@10"]
    assert report.stale_models(json.loads(out.read_text())) == []

    # measured by other code: the rung and its checkpoint are measured again, the other rung is kept
    calls.clear()
    m = json.loads(out.read_text())
    assert m["models"]["l1-d32-s0"]["measured_by"] == diagnostics.diagnostics_hash()
    m["models"]["l2-d32-s0"]["measured_by"] = "older code"
    m["models"]["l2-d32-s0"]["checkpoints"]["10"].pop("measured_by")  # from before the hash was recorded
    out.write_text(json.dumps(m))
    assert report.stale_models(m) == ["l2-d32-s0", "l2-d32-s0@10"]
    report.measure_ladder(out, rungs=rungs, progress=False, checkpoint_stride=10)
    assert calls == ["ladder:l2-d32-s0", "ladder:l2-d32-s0:init", "ladder:l2-d32-s0@10"]
    assert report.stale_models(json.loads(out.read_text())) == []
    report.measure_ladder(out, rungs=rungs, progress=False, checkpoint_stride=20)
    assert "checkpoints" not in json.loads(out.read_text())["models"]["l2-d32-s0"]
    with pytest.raises(LatentbookError, match="checkpoint_stride"):
        report.measure_ladder(out, rungs=rungs, progress=False, checkpoint_stride=0)


def test_the_verdicts_ladder_rows_default_to_ladder_v2_with_its_command():
    """The verdict table reads the book's ladder (v2): one partial row per diagnostic, one along-training row per
    checkpointed architecture and diagnostic, one TCO row per architecture, each with v2's command."""
    import json
    from collections import Counter

    from latentbook.ladder import report
    from latentbook.ladder.clustered import by_architecture
    from latentbook.study import ladder_rows

    path = store.REPO_LADDER_V2 / report.MEASUREMENTS
    if not path.is_file():
        pytest.skip("results/ladder-v2 is not measured here")
    m = json.loads(path.read_text())
    rows = ladder_rows.ladder_rows()
    assert [r.model for r in rows] == [r.model for r in ladder_rows.ladder_rows(path)]
    checkpointed = {
        a for a, names in by_architecture(m["rungs"]).items() if "checkpoints" in m["models"][names[0]]
    }
    runs = Counter(r.run for r in rows)
    n = len(report.DIAGNOSTICS)
    assert runs == {
        "ladder": n + len(by_architecture(m["rungs"])),
        "ladder, along training": n * len(checkpointed),
    }
    assert {r.command for r in rows} == {report.V2_COMMAND}
    assert ladder_rows.command_of({"rungs": ["l4-d64", "l8-d64"]}) == report.COMMAND


def test_the_shipped_ladder_v2_lists_six_rungs_by_three_seeds_each_loading_with_its_sha256():
    """Issue #15's ladder as committed: ``lb.models()`` lists 18 seeded models from results/ladder-v2, and each
    loads with the sha256 of its weights (``load_model`` refuses weights that do not match SHA256SUMS)."""
    from latentbook.ladder.clustered import by_architecture, is_seeded

    if not store.REPO_LADDER_V2.is_dir():
        pytest.skip("results/ladder-v2 is not here")
    listed = lb.models()
    names = [n[len("ladder:") :] for n in listed["name"] if n.startswith("ladder:") and is_seeded(n)]
    groups = by_architecture(names)
    assert len(names) >= 18 and len(groups) >= 6 and all(len(seeds) >= 3 for seeds in groups.values())
    for name in names:
        model = lb.load_model(f"ladder:{name}", device="cpu")
        assert model.sha == weights_sha256(store.REPO_LADDER_V2 / name), name
