"""benchmarks/ladder_plateau.py: its gradient sharing, its baseline and one short run end to end."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from latentbook.errors import CaptureFileError

from .conftest import load_benchmark


@pytest.fixture(scope="module")
def plateau():
    return load_benchmark("ladder_plateau")


def test_shared_rows_get_the_mean_gradient_and_the_others_their_own(plateau):
    weight = torch.nn.Parameter(torch.zeros(5, 3))
    rows = torch.tensor([1, 3, 4])
    plateau._share_rows(weight, rows)
    target = torch.arange(15.0).reshape(5, 3)
    (weight * target).sum().backward()
    np.testing.assert_allclose(weight.grad[rows].numpy(), np.tile(target[rows].mean(0).numpy(), (3, 1)))
    np.testing.assert_allclose(weight.grad[[0, 2]].numpy(), target[[0, 2]].numpy())


def test_guessing_baseline_matches_its_closed_form(plateau):
    # two chains, values uniform over k: right with probability (1 + 1/k) / 2
    from latentbook.ladder.diagnostics import guess_floor

    k = plateau.SPEC.n_values
    assert guess_floor(plateau.SPEC, 1, 4000, seed=5) == pytest.approx((1 + 1 / k) / 2, abs=0.02)


def test_a_short_run_writes_every_variant(plateau, tmp_path, monkeypatch):
    out = tmp_path / "plateau.json"
    argv = [
        "ladder_plateau.py",
        "--steps",
        "3",
        "--n-eval",
        "32",
        "--out",
        str(out),
        "--only",
        "llama",
        "names iid",
    ]
    monkeypatch.setattr(sys, "argv", argv)
    plateau.main()
    report = json.loads(out.read_text())
    assert set(report["variants"]) == {"llama", "names iid"}
    for row in report["variants"].values():
        assert 0 <= row["train_names_accuracy"] <= 1 and 0 <= row["heldout_accuracy"] <= 1
        assert np.isfinite(row["final_loss"])


def test_plateau_table_marks_learners_and_shared_names():
    from latentbook.ladder import report

    def row(names, mlp, acc, **extra):
        return dict(
            names=names, mlp=mlp, final_loss=0.1, train_names_accuracy=acc, heldout_accuracy=acc, **extra
        )

    plateau = {
        "guessing_baseline": 0.56,
        "variants": {
            "llama": row("frozen", "stock", 0.57),
            "iid": row("frozen", "none", 0.90, name_init="iid"),
            "trained": row("trained", "zero-init", 0.75),
            "edge": row("frozen", "stock", 0.76),  # exactly guess + margin: not learnt
        },
    }
    table, learns = report.plateau_table(plateau, margin=0.2)
    assert learns == ["iid"]
    assert table["shared name direction"].tolist() == [True, False, False, True]
    assert report.plateau_table(plateau, margin=0.1)[1] == ["iid", "trained", "edge"]
    with pytest.raises(CaptureFileError, match="ladder_plateau.py"):
        report.load_plateau(Path("/nonexistent/ladder_plateau.json"))
    assert report.load_plateau()["variants"]["llama"]["mlp"] == "stock"  # the shipped report


def test_an_interrupted_run_keeps_the_variants_it_finished(plateau, tmp_path, monkeypatch):
    out = tmp_path / "plateau.json"
    real_run = plateau.run
    calls = []

    def run_then_fail(*args):
        calls.append(args)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real_run(*args)

    monkeypatch.setattr(plateau, "run", run_then_fail)
    argv = [
        "ladder_plateau.py",
        "--steps",
        "2",
        "--n-eval",
        "16",
        "--out",
        str(out),
        "--only",
        "llama",
        "no MLP",
    ]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(KeyboardInterrupt):
        plateau.main()
    assert list(json.loads(out.read_text())["variants"]) == ["llama"]
