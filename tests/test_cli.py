"""The command line: models, capture (with its final line) and report, as a user runs them."""

import subprocess
import sys

import numpy as np

import latentbook as lb
from latentbook.cli import main


def test_models_lists_the_zoo(capsys):
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert "smollm2-135m" in out and "random:llama-tiny" in out


def test_capture_writes_a_result_and_says_where(tmp_path):
    out = tmp_path / "tiny.safetensors"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "latentbook",
            "capture",
            "random:llama-tiny",
            "--prompts",
            "general",
            "--max-prompts",
            "12",
            "--batch-size",
            "4",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert str(out) in proc.stdout.strip().splitlines()[-1]
    cap = lb.load_capture(out)
    assert cap.provenance["n_prompts"] == 12 and cap.provenance["prompt_set"] == "general"
    assert not out.with_name(out.name + ".partial").exists()
    ref = lb.capture(
        lb.load_model("random:llama-tiny"), lb.prompts.load("general", 12), batch_size=4, progress=False
    )
    np.testing.assert_allclose(cap.covariance(1), ref.covariance(1), rtol=1e-6, atol=1e-9)


def test_report_prints_the_profile(tmp_path, capsys, tiny):
    path = lb.capture(tiny, ["one prompt", "and another one"], progress=False).save(
        tmp_path / "c.safetensors"
    )
    assert main(["report", str(path)]) == 0
    out = capsys.readouterr().out
    assert "random:llama-tiny" in out and "mean Omega" in out


def test_unknown_model_is_a_clear_error(capsys, tmp_path):
    assert (
        main(["capture", "smollm-135m", "--out", str(tmp_path / "x.safetensors"), "--max-prompts", "2"]) == 2
    )
    err = capsys.readouterr().err
    assert "Unknown model" in err and "smollm2-135m" in err


def test_verdict_writes_a_csv_of_every_claim_with_intervals_that_hold_their_estimates(tmp_path, capsys):
    import pandas as pd

    from latentbook.analysis import synthetic

    rng = np.random.default_rng(0)
    ids = np.repeat(np.arange(60), 5)
    states = rng.standard_normal((13, len(ids), 24))
    states[7:, :, :1] *= 15.0
    results = tmp_path / "results"
    results.mkdir()
    synthetic.as_capture(states, ids, np.tile(np.arange(1, 6), 60), name="planted").save(
        results / "p.safetensors"
    )
    out = tmp_path / "verdict.csv"
    assert main(["verdict", "--no-book", "--results", str(results), "--csv", str(out)]) == 0
    table = pd.read_csv(out)
    assert list(table.columns) == [
        "claim",
        "model",
        "run",
        "estimate",
        "ci_low",
        "ci_high",
        "verdict",
        "reason",
    ]
    assert {"critical_depth", "omega_jump", "stays_liquid", "bimodality"} <= set(table["claim"])
    mine = table[table["model"] == "planted (p.safetensors)"]
    assert (mine["run"] == "results file").all() and len(mine) >= 8
    both = table.dropna(subset=["estimate", "ci_low", "ci_high"])
    assert (
        len(both) >= 4
        and ((both["ci_low"] <= both["estimate"]) & (both["estimate"] <= both["ci_high"])).all()
    )
    gamma_c = table[
        (table["claim"] == "critical_depth") & (table["model"] == "planted (p.safetensors)")
    ].iloc[0]
    assert 0.0 <= gamma_c["ci_low"] <= gamma_c["ci_high"] <= 1.0
    assert f"-> {out}" in capsys.readouterr().out
    assert main(["verdict", "--no-book", "--results", str(results), "--csv", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err


def test_version_and_a_plain_description(capsys):
    import pytest

    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"latentbook {lb.__version__}"
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    assert "``" not in text and "so a GPU box can produce results/ files and judge them." in " ".join(
        text.split()
    )


def test_every_capture_option_has_help_and_its_default(capsys):
    import pytest

    with pytest.raises(SystemExit):
        main(["capture", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for option, default in (
        ("--batch-size", "16"),
        ("--max-length", "128"),
        ("--device", "auto"),
        ("--dtype", "auto"),
    ):
        assert f"(default: {default})" in text.split(option, 2)[-1].split(" --")[0], option
    assert "(default: None)" not in text and "(default: False)" not in text
