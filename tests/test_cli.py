"""The command line: models, capture (with its final line) and report, as a user runs them."""

import subprocess
import sys

import numpy as np
import pytest

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
    """The depth lines `latentbook report` prints hold the library's m(gamma) and its interval, depth by depth."""
    from latentbook.analysis import omega_profiles

    path = lb.capture(tiny, ["one prompt", "and another one"], progress=False).save(
        tmp_path / "c.safetensors"
    )
    assert main(["report", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Capture report: random:llama-tiny (c.safetensors)"
    cap = lb.load_capture(path)
    prof = omega_profiles.profile(cap, n_boot=1000, seed=0)  # the report's draws and seed
    printed = {}
    for line in lines:
        fields = line.split()
        if len(fields) >= 5 and fields[0].isdigit() and fields[3].startswith("["):
            printed[int(fields[0])] = (
                float(fields[1]),
                float(fields[2]),
                float(fields[3].strip("[,")),
                float(fields[4].strip("]")),
            )
    assert sorted(printed) == list(range(cap.n_depths))
    for layer, (gamma, m, low, high) in printed.items():
        assert gamma == pytest.approx(cap.gamma[layer], abs=5e-4)
        assert m == pytest.approx(cap.omega_mean()[layer], abs=5e-5)
        assert (low, high) == pytest.approx((prof.low[layer], prof.high[layer]), abs=5e-5)
        assert low < m < high


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
    twin_states = rng.standard_normal((13, len(ids), 24))
    synthetic.as_capture(twin_states, ids, np.tile(np.arange(1, 6), 60), name="random:planted").save(
        results / "twin.safetensors"
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
        "scope",
        "reason",
    ]
    assert {"critical_depth", "omega_jump", "stays_liquid", "bimodality"} <= set(table["claim"])
    # a 24-wide synthetic capture is far below 1.5B parameters: the large-model claims are out of the paper's range
    scopes = table.set_index(["claim", "model"])["scope"]
    assert scopes[("omega_jump", "planted (p.safetensors)")].startswith("below the paper's range")
    assert scopes[("stays_liquid", "planted (p.safetensors)")].startswith("below the paper's range")
    measured = table[table["run"] != "not run"]  # the "not run" rows name the paper's 32B model
    assert not (measured["scope"] == "in the paper's range").any()  # nothing measured here is of its size
    # no trained "holds" whose twin holds the same claim: that row is "uninformative"
    verdicts = table.set_index(["claim", "model"])["verdict"]
    twin = "random:planted (twin.safetensors)"
    for claim in table.loc[table["model"] == twin, "claim"]:
        if verdicts[(claim, twin)] == "holds":
            assert verdicts[(claim, "planted (p.safetensors)")] != "holds", claim
    assert "uninformative" in set(table["verdict"])
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
        assert f"(default: {default})" in text.split(f"{option} ", 2)[-1].split(" --")[0], option
    assert "(default: None)" not in text and "(default: False)" not in text


# --- models in 100 columns, and the report of a capture (#18) ------------------------------------------------


def test_models_fits_100_columns_and_lists_every_model(capsys):
    assert main(["models"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) <= 100
    listed = {line.split()[0] for line in lines[1:] if line and not line.startswith(" ")}
    table = lb.models()
    assert set(table["name"]) <= listed
    assert main(["models", "--wide"]) == 0
    wide = capsys.readouterr().out
    assert all(source in wide for source in table["source"])  # unwrapped: every source on one line


def _planted(name: str, seed: int, massive: float):
    from latentbook.analysis import synthetic

    rng = np.random.default_rng(seed)
    ids = np.repeat(np.arange(40), 4)  # few tokens: the verdict's spike bootstrap is the cost
    states = rng.standard_normal((13, len(ids), 24))
    states[7:, :, :1] *= massive
    return synthetic.as_capture(states, ids, np.tile(np.arange(1, 5), 40), name=name)


@pytest.fixture(scope="module")
def planted_report(tmp_path_factory):
    """A 13-depth planted capture and its random twin in one results folder, and the report of the first."""
    from latentbook.study.capture_report import capture_report, results_label

    folder = tmp_path_factory.mktemp("results")
    _planted("planted", 0, 15.0).save(folder / "p.safetensors")
    _planted("random:planted", 1, 1.0).save(folder / "twin.safetensors")
    cap, twin = lb.load_capture(folder / "p.safetensors"), lb.load_capture(folder / "twin.safetensors")
    return folder, cap, capture_report(cap, results_label(cap, "p.safetensors"), twin=twin)


def test_report_numbers_are_the_analysis_functions_numbers(planted_report):
    from latentbook.analysis import layer_spectra, omega, omega_profiles, verdict

    _, cap, report = planted_report
    prof = omega_profiles.profile(cap, n_boot=1000, seed=0)
    np.testing.assert_allclose(report.profile.m, cap.omega_mean())
    for got, want in zip(
        (report.profile.m, report.profile.low, report.profile.high), (prof.m, prof.low, prof.high)
    ):
        np.testing.assert_array_equal(got, want)
    assert np.all(report.profile.low <= report.profile.m) and np.all(report.profile.m <= report.profile.high)
    assert report.profile.by == "prompt" and report.profile.n_prompts == 40
    excess = omega_profiles.excess_profile(cap, n_boot=1000, seed=0)
    np.testing.assert_array_equal(report.excess.m, excess.m)
    assert np.all(report.excess.low <= report.excess.m) and np.all(report.excess.m <= report.excess.high)
    spectra = layer_spectra.token_sample_spectrum_profile(cap)
    for column in ("participation_ratio", "effective_rank", "n_spikes", "settled"):
        np.testing.assert_array_equal(report.spectra[column], spectra[column])
    assert report.references["gaussian"] == omega.gaussian_omega(24)
    assert report.references["solid_threshold"] == verdict.solid_threshold(24)


def test_report_verdict_rows_are_the_verdict_tables_rows(planted_report):
    import pandas as pd

    from latentbook.study import verdict_table as verdict

    folder, _, report = planted_report
    table = verdict.runs_table({}, results_dir=folder, ladder=False)
    mine = table[table["model"] == report.label].reset_index(drop=True)
    assert report.twin_label == "random:planted" and len(mine) >= 10
    pd.testing.assert_frame_equal(report.rows, mine, check_dtype=False)
    assert len(verdict.interval_problems(report.rows)) == 0


def test_report_text_prints_those_numbers_within_100_columns(planted_report):
    _, cap, report = planted_report
    lines = report.text().splitlines()
    assert max(len(line) for line in lines) <= 100
    by_start = {line[:12]: line for line in lines}
    for layer, gamma in enumerate(cap.gamma):
        fields = by_start[f"{layer:>3}  {gamma:5.3f}  "].split()
        m, low, high = report.profile.m[layer], report.profile.low[layer], report.profile.high[layer]
        assert fields[2:5] == [f"{m:.4f}", f"[{low:.4f},", f"{high:.4f}]"]
        assert fields[5] == f"{report.excess.m[layer]:+.4f}"
        spikes = int(report.spectra["n_spikes"][layer])
        assert fields[-1] in (str(spikes), f">={spikes}")
    assert f"Gaussian vector   {report.references['gaussian']:.4f}" in report.text()
    for row in report.rows.itertuples():
        assert any(line.startswith(row.claim) and row.verdict in line for line in lines)
    # a small synthetic capture: its large-model claims are named as out of the paper's range
    scope = " ".join(report.text().split()).split("Scope: ")[1]
    assert "omega_jump" in scope and "stays_liquid" in scope and "not whether the paper holds" in scope


def _png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_report_cli_writes_the_figure_and_never_overwrites_it(tmp_path, capsys, tiny):
    from latentbook.analysis.omega import gaussian_omega

    path = lb.capture(tiny, lb.prompts.load("general", 8), progress=False).save(tmp_path / "c.safetensors")
    png = tmp_path / "fig.png"
    assert main(["report", str(path), "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 100
    assert f"-> {png}" in out and "random:llama-tiny (c.safetensors)" in out
    assert f"{gaussian_omega(64):.4f}" in out
    assert "not testable from this capture alone" in out  # 3 depths: the spectral claims cannot be judged
    width, height = _png_size(png)
    assert 600 <= width <= 3000 and 300 <= height <= 1500 and png.stat().st_size > 10_000
    before = png.read_bytes()
    assert main(["report", str(path), "--plot", str(png)]) == 2
    captured = capsys.readouterr()
    assert "exists already" in captured.err and "--force" in captured.err and "measuring" not in captured.err
    assert png.read_bytes() == before
    assert main(["report", str(path), "--plot", str(png), "--force"]) == 0
    assert _png_size(png) == (width, height)
    (tmp_path / "folder.png").mkdir()
    (tmp_path / "file").write_text("")
    for bad, says in (
        (tmp_path / "fig.pdf", "must end in .png"),
        (tmp_path / "folder.png", "is a folder"),
        (tmp_path / "file" / "fig.png", "is a file"),
    ):
        capsys.readouterr()
        assert main(["report", str(path), "--plot", str(bad)]) == 2
        err = capsys.readouterr().err
        assert says in err and "measuring" not in err, bad  # refused before any work
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.safetensors", "fig.png", "file", "folder.png"]
    assert main(["report", str(path), "--no-verdict"]) == 0
    captured = capsys.readouterr()
    assert "No verdict rows: skipped (--no-verdict)." in captured.out and "measuring" not in captured.err


def test_train_ladder_measures_the_rungs_by_name_so_each_architectures_seeds_sit_together(
    tmp_path, monkeypatch
):
    """``--measure-only`` with seeds: the folders are made seed by seed, the measurements list them by name."""
    from latentbook.ladder import report

    asked = []
    monkeypatch.setenv("LATENTBOOK_LADDER_DIR", str(tmp_path))  # main sets it: restored after the test
    monkeypatch.setattr(report, "measure_ladder", lambda rungs: asked.append(rungs) or tmp_path / "m.json")
    args = [
        "train-ladder",
        "--out",
        str(tmp_path),
        "--rungs",
        "l4-d64,l1-d64",
        "--seeds",
        "0,1",
        "--measure-only",
    ]
    assert main(args) == 0
    assert asked == [["l1-d64-s0", "l1-d64-s1", "l4-d64-s0", "l4-d64-s1"]]


def test_models_prepare_dequantises_each_embedded_gguf_instead_of_listing(monkeypatch, capsys):
    from latentbook.models import embedded

    built = []
    monkeypatch.setattr(embedded, "gemma3_gguf", lambda: ("gemma.gguf", "sha-g"))
    monkeypatch.setattr(embedded, "smollm2_gguf", lambda: ("smollm2.gguf", None))
    monkeypatch.setattr(
        embedded, "gguf_cached_folder", lambda gguf, sha: built.append((gguf, sha)) or (f"/cache/{gguf}", sha)
    )
    assert main(["models", "--prepare"]) == 0
    assert built == [("gemma.gguf", "sha-g"), ("smollm2.gguf", None)]
    out = capsys.readouterr().out
    assert "gemma3-270m: /cache/gemma.gguf" in out and "smollm2-135m: /cache/smollm2.gguf" in out
    assert "here:" not in out  # not the zoo's listing
