"""Chapter 2's tables and glued numbers (``study.chapters.thermodynamics_tables``) and its figure
(``view.thermodynamics_figures``), on hand-made attention rows and attention statistics: every value checked
against the free-energy identities or a hand computation, the figure against the data it was given."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from types import SimpleNamespace  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from scipy import special, stats  # noqa: E402

from latentbook.analysis import thermo  # noqa: E402
from latentbook.capturing.attention import AttentionRows, AttentionStats  # noqa: E402
from latentbook.study.chapters import thermodynamics_tables as tables  # noqa: E402
from latentbook.view import thermodynamics_figures  # noqa: E402


def _rows(n_heads: int, n_tokens: int, seed: int) -> AttentionRows:
    """Causal rows with random logits and the exact softmax weights over each query's keys."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(0.0, 2.0, size=(n_heads, n_tokens, n_tokens))
    valid = np.broadcast_to(np.tril(np.ones((n_tokens, n_tokens), dtype=bool)), logits.shape)
    weights = special.softmax(np.where(valid, logits, -np.inf), axis=-1)
    return AttentionRows(logits, valid, weights)


def _stats(rows, **per_row) -> AttentionStats:
    """``AttentionStats`` with ``rows[l, h]`` recorded rows whose per-row means are ``per_row[name][l, h]``."""
    rows = np.asarray(rows, dtype=np.float64)
    attention = AttentionStats(*rows.shape)
    attention.sums["rows"] += torch.tensor(rows)
    attention.sums["std_rows"] += torch.tensor(rows)
    for name, mean in per_row.items():
        attention.sums[name] += torch.tensor(rows * np.asarray(mean, dtype=np.float64))
    return attention


def test_label_key():
    assert tables.label_key("smollm2-135m") == "smollm2"
    assert tables.label_key("random:gemma3-270m") == "random_gemma3"


def test_row_check_table_and_glue():
    rows = {0: _rows(2, 3, seed=0), 4: _rows(3, 5, seed=1)}
    checks = tables.row_check_table(rows, betas=(0.5, 1.0, 2.0))
    assert checks["layer"].tolist() == [1, 1, 1, 5, 5, 5]  # shown 1-based
    assert checks["beta"].tolist() == [0.5, 1.0, 2.0] * 2
    assert checks["rows"].tolist() == [6] * 3 + [15] * 3  # heads x queries
    for _, row in checks.iterrows():
        r = rows[int(row["layer"]) - 1]
        expected = thermo.row_check(r.logits, r.valid, r.weights, beta=row["beta"])
        assert row.drop(["layer", "beta"]).to_dict() == pytest.approx(expected, nan_ok=True)
    assert (checks["fmin_error"] < 1e-12).all() and (checks["kl_identity_error"] < 1e-10).all()
    assert (checks["model_gap"] < 1e-12).all() and (checks["min_random_gap"] >= -1e-12).all()
    checks.loc[4, ["fmin_error", "model_gap", "kl_identity_error"]] = [0.5, 0.25, 0.125]
    checks.loc[2, "min_random_gap"] = -0.75
    values = tables.row_check_glue(checks, rows)
    assert values == {
        "rows_checked": 6 + 15,  # the rows at beta = 1 only
        "n_keys_max": 3,  # keys of the first layer's rows
        "fmin_error": 0.5,
        "model_gap": 0.25,
        "min_random_gap": -0.75,
        "kl_error": 0.125,
    }


def test_temperature_glue_reads_each_heads_minimum():
    temperatures = np.array([0.5, 1.0, 2.0, 4.0])
    excess = np.array([[3.0, 0.0, 1.0, 2.0], [1.0, 2.0, 0.0, 5.0]])  # minima at 1.0 and 2.0
    assert tables.temperature_glue(temperatures, excess) == {"n_temperatures": 4, "argmin_beta_max_dev": 1.0}


def test_capture_gap_glue_takes_the_largest_gap_and_all_rows():
    first, second = _stats([[10, 20], [5, 5]]), _stats([[1, 2], [3, 4], [5, 6]])
    first.sums["variational_gap"] += torch.tensor([[1e-7, 3e-7], [2e-7, 0.0]], dtype=torch.float64)
    second.sums["variational_gap"] += torch.tensor(
        [[5e-7, 0.0], [0.0, 0.0], [0.0, 4e-7]], dtype=torch.float64
    )
    attn = {"a": SimpleNamespace(attention=first), "b": SimpleNamespace(attention=second)}
    assert tables.capture_gap_glue(attn) == {"capture_gap": pytest.approx(5e-7), "capture_rows": 40 + 21}


def _heads(n_layers: int, entropy: float, seed: int) -> SimpleNamespace:
    """A capture whose every head has mean entropy ``entropy`` over ``log n = 2`` and random ``beta_eff``."""
    beta = np.random.default_rng(seed).uniform(0.5, 2.0, (n_layers, 2))
    attention = _stats(
        np.full((n_layers, 2), 10.0),
        entropy=np.full((n_layers, 2), entropy),
        log_keys=np.full((n_layers, 2), 2.0),
        logit_std=beta,
    )
    return SimpleNamespace(attention=attention, beta=beta)


def test_head_statistics_normalise_the_entropy_per_layer_and_head():
    cap = _heads(4, entropy=1.5, seed=0)
    gamma, entropy, beta = tables.head_statistics(cap)
    assert gamma.tolist() == [0.25, 0.5, 0.75, 1.0]  # layers 1 to L
    assert entropy.shape == beta.shape == (4, 2)
    assert entropy == pytest.approx(np.full((4, 2), 0.75))
    assert beta == pytest.approx(cap.beta)  # the mean logit spread of each head


def test_per_head_grid_puts_each_model_and_its_twin_on_one_row():
    caps = {
        "smollm2-135m": _heads(4, entropy=1.0, seed=1),
        "minilm-l6": _heads(3, entropy=0.5, seed=2),
        "random:smollm2-135m": _heads(4, entropy=1.9, seed=3),
        "random:minilm-l6": _heads(3, entropy=1.8, seed=4),
    }
    heads = {label: tables.head_statistics(cap) for label, cap in caps.items()}
    fig = thermodynamics_figures.per_head_grid(heads, ["smollm2-135m", "minilm-l6"])
    axes = np.array(fig.axes).reshape(2, 2)
    assert [ax.get_title() for ax in axes[:, 0]] == ["smollm2-135m", "minilm-l6"]
    assert all(ax.get_legend() is None for ax in axes.flat)  # one legend for all, placed by the chapter
    for ax, label, column in ((axes[1, 0], "random:minilm-l6", 1), (axes[0, 1], "smollm2-135m", 2)):
        (mean,) = [line for line in ax.get_lines() if line.get_label() == f"{label} (head mean)"]
        assert mean.get_ydata() == pytest.approx(heads[label][column].mean(axis=1))
    assert [len(ax.get_lines()) for ax in axes.flat] == [2, 2, 2, 2]  # the model and its twin
    assert "normalised entropy" in axes[0, 0].get_ylabel() and "beta" in axes[0, 1].get_ylabel()
    plt.close("all")


def test_trend_table_and_glue():
    cooling = _stats(  # 4 layers, 2 heads: entropy falls, beta_eff rises and follows |q||k|
        np.full((4, 2), 10.0),
        entropy=[[2.0, 2.0], [1.5, 1.5], [1.0, 0.5], [0.5, 0.5]],
        log_keys=[[4.0, 4.0]] * 4,
        logit_std=[[1.0, 1.0], [2.0, 2.0], [3.0, 3.0], [4.0, 6.0]],
        query_norm=[[1.0, 1.0], [2.0, 2.0], [3.0, 3.0], [4.0, 4.0]],
        key_norm=[[1.0, 1.0]] * 4,
    )
    warming = _stats(
        np.full((4, 2), 10.0),
        entropy=[[1.0, 1.0], [2.0, 2.0], [3.0, 3.0], [3.5, 3.5]],
        log_keys=[[4.0, 4.0]] * 4,
        logit_std=[[4.0, 4.0], [3.0, 3.0], [2.0, 2.0], [1.0, 1.0]],
        query_norm=[[1.0, 1.0], [3.0, 3.0], [2.0, 2.0], [4.0, 4.0]],
        key_norm=[[1.0, 1.0]] * 4,
    )
    attn = {"smollm2-135m": SimpleNamespace(attention=cooling), "random:smollm2-135m": warming}
    trends = tables.trend_table(attn)
    assert list(trends.index) == ["smollm2-135m", "random:smollm2-135m"]
    row = trends.loc["smollm2-135m"]
    p_monotone = stats.spearmanr([1, 2, 3, 4], [4, 3, 2, 1])[1]
    assert row.to_dict() == pytest.approx(
        {
            "layers": 4,
            "H/log n, first layer": 0.5,
            "H/log n, last layer": 0.125,
            "rho(H/log n, gamma)": -1.0,
            "p (entropy)": p_monotone,
            "beta_eff, first layer": 1.0,
            "beta_eff, last layer": 5.0,
            "rho(beta_eff, gamma)": 1.0,
            "p (beta_eff)": p_monotone,
            "rho(beta_eff, |q||k|)": 1.0,
        }
    )
    twin = trends.loc["random:smollm2-135m"]
    assert twin["rho(H/log n, gamma)"] == pytest.approx(1.0) and twin[
        "rho(beta_eff, gamma)"
    ] == pytest.approx(-1.0)
    assert twin["H/log n, last layer"] == 0.875 and twin["beta_eff, first layer"] == 4.0
    assert twin["rho(beta_eff, |q||k|)"] == pytest.approx(-0.8)  # |q||k| ranks 1, 3, 2, 4
    values = tables.trend_glue(trends)
    assert len(values) == 18
    assert values["smollm2_entropy_first"] == 0.5 and values["smollm2_beta_last"] == 5.0
    assert (
        values["smollm2_rho_entropy"] == pytest.approx(-1.0)
        and values["smollm2_p_beta"] == row["p (beta_eff)"]
    )
    assert values["random_smollm2_rho_beta_qk"] == pytest.approx(-0.8)
    assert values["random_smollm2_entropy_last"] == 0.875 and values["random_smollm2_beta_first"] == 4.0
    assert values["random_smollm2_p_entropy"] == twin["p (entropy)"]


def test_the_sink_table_sets_the_ratio_with_the_sink_kept_beside_it_removed():
    """Eight layers, two heads. With the sink kept, the normalised entropy halves after 0.42 (R = 0.5); with it
    removed it stays flat (R = 1): the model is listed as falling only while the sink is counted. A random twin
    is left out of the table."""
    n_layers, rows = 8, np.full((8, 2), 10.0)
    kept = np.where(np.arange(n_layers)[:, None] / n_layers >= 0.42 - 1 / n_layers, 0.3, 0.6) * np.ones(
        (1, 2)
    )
    stats_ = _stats(rows, entropy=kept, log_keys=np.ones((8, 2)), logit_std=np.ones((8, 2)))
    for name, mean in {"entropy_nosink": 0.7, "log_keys_nosink": 1.0, "logit_std_nosink": 1.0}.items():
        stats_.sums[name] = torch.tensor(rows * mean)
    for name in ("rows_nosink", "std_rows_nosink"):
        stats_.sums[name] = torch.tensor(rows)
    assert stats_.has_nosink
    cap = SimpleNamespace(attention=stats_)
    sinks = tables.sink_table({"smollm2-135m": cap, "random:smollm2-135m": cap}, n_boot=50)
    assert list(sinks.index) == ["smollm2-135m"]
    assert sinks.loc["smollm2-135m", "R, sink kept"] == pytest.approx(0.5)
    assert sinks.loc["smollm2-135m", "R, sink removed"] == pytest.approx(1.0)
    glued = tables.sink_glue(sinks)
    assert glued["smollm2_r_kept"] == pytest.approx(0.5) and glued["sink_only"] == "smollm2-135m"
    sinks.loc["smollm2-135m", "R, sink removed"] = 0.9
    assert tables.sink_glue(sinks)["sink_only"] == "none"
