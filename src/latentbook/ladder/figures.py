"""Seaborn figures of the ladder (chapter 7), drawn from ``measurements.json`` and the training logs.

Each function takes the measurements dict (``report.load_measurements()``) and returns a matplotlib Figure
with labelled axes that meets the book's standard (``figure_standard.check``): legends go where they cover no
data, through ``figure_standard.legends``. Introduced in: chapter 7.
"""

from __future__ import annotations

import numpy as np

from ..figure_standard.legends import legend_below
from .clustered import by_architecture, is_seeded
from .report import DIAGNOSTICS, capability_of, diagnostic_values

SHORT_LABELS = {  # the diagnostics of report.DIAGNOSTICS, short enough for an axis
    "omega_rise": "Omega rise m(1) - m(0)",
    "bimodality": "bimodality coefficient",
    "spikes": "spikes above MP",
    "contraction": "contraction factor q",
    "stability": "TCO stability",
}


def _sns():
    import matplotlib.pyplot as plt
    import seaborn as sns

    sns.set_theme(style="whitegrid")
    return plt, sns


def training_curves(logs: dict[str, dict], smooth: int = 100):
    """Loss (moving average over ``smooth`` steps), the curriculum's stage and held-out 3-hop accuracy against
    the training step."""
    import pandas as pd

    plt, sns = _sns()
    loss_rows, stage_rows, acc_rows = [], [], []
    for rung, log in logs.items():
        loss = np.convolve(log["loss"], np.ones(smooth) / smooth, mode="valid")
        steps = np.arange(smooth, len(log["loss"]) + 1)
        loss_rows += [
            {"rung": rung, "step": int(s), "loss": float(v)} for s, v in zip(steps[::10], loss[::10])
        ]
        stages = [*log["stages"], {"step": len(log["loss"]), "hops": log["stages"][-1]["hops"]}]
        stage_rows += [{"rung": rung, "step": s["step"], "hops": s["hops"]} for s in stages]
        for e in log["evals"]:
            for hops, acc in e["accuracy"].items():
                acc_rows.append({"rung": rung, "step": e["step"], "hops": int(hops), "accuracy": acc})
    fig, axes = plt.subplots(1, 3, figsize=(10, 3.4))
    sns.lineplot(pd.DataFrame(loss_rows), x="step", y="loss", hue="rung", ax=axes[0])
    axes[0].get_legend().remove()  # one legend for the three panels, under them
    axes[0].set(xlabel="training step", ylabel=f"training loss (mean of {smooth} steps)", title="Loss")
    sns.lineplot(
        pd.DataFrame(stage_rows),
        x="step",
        y="hops",
        hue="rung",
        ax=axes[1],
        legend=False,
        drawstyle="steps-post",
    )
    axes[1].set(xlabel="training step", ylabel="longest chain trained on", title="Curriculum over hops")
    acc = pd.DataFrame(acc_rows)
    sns.lineplot(acc[acc.hops == 3], x="step", y="accuracy", hue="rung", ax=axes[2], legend=False, marker="o")
    axes[2].set(
        xlabel="training step",
        ylabel="held-out accuracy, 3 hops",
        title="Held-out 3-hop accuracy",
        ylim=(0, 1),
    )
    fig.tight_layout()
    legend_below(fig, ncol=len(logs))
    return fig


def accuracy_by_hops(m: dict):
    """Held-out accuracy per hop count of every rung (trained, and its untrained null), with Wilson intervals."""
    import pandas as pd

    plt, sns = _sns()
    rows = []
    for rung in m["rungs"]:
        for kind in ("trained", "null"):
            cap = m["models"][rung][kind]["capability"]
            for hops, a in cap["accuracy"].items():
                lo, hi = cap["ci"][hops]
                rows.append(
                    {"rung": rung, "kind": kind, "hops": int(hops), "accuracy": a, "lo": lo, "hi": hi}
                )
    df = pd.DataFrame(rows)
    fig, ax = plt.subplots(figsize=(8, 4))
    palette = dict(zip(m["rungs"], sns.color_palette("viridis", len(m["rungs"]))))
    for (rung, kind), g in df.groupby(["rung", "kind"], sort=False):
        ax.errorbar(
            g.hops + (0.04 if kind == "null" else 0),
            g.accuracy,
            yerr=[g.accuracy - g.lo, g.hi - g.accuracy],
            color=palette[rung],
            ls="-" if kind == "trained" else ":",
            marker="o" if kind == "trained" else "x",
            label=f"{rung}" if kind == "trained" else None,
            capsize=2,
        )
    cap = m["models"][m["rungs"][0]]["trained"]["capability"]
    baselines = (
        ("guess_floor", "--", "guess among written values"),
        ("first_value_floor", "-.", "answer the first value"),
    )
    for key, ls, label in baselines:
        if key in cap:
            ax.plot([int(h) for h in cap[key]], list(cap[key].values()), color="grey", ls=ls, label=label)
    ax.set(
        xlabel="hops from the query to the value",
        ylabel="held-out accuracy",
        ylim=(0, 1.02),
        xticks=sorted(df.hops.unique()),
        title="Capability: trained (solid) and untrained nulls (dotted)",
    )
    fig.tight_layout()
    legend_below(fig)
    return fig


def capability_by_architecture(m: dict):
    """Held-out accuracy per hop count of each architecture of a seeded ladder: the mean over its seeds (solid),
    each seed (small dots), the mean of the untrained nulls (dotted, grey), and the two baselines that bind
    nothing."""
    plt, sns = _sns()
    groups = by_architecture(m["rungs"])
    palette = dict(zip(groups, sns.color_palette("viridis", len(groups))))
    fig, ax = plt.subplots(figsize=(7, 4))
    for architecture, names in groups.items():
        hops = sorted(m["models"][names[0]]["trained"]["capability"]["accuracy"], key=int)
        x = np.array([int(h) for h in hops])
        seeds = np.array(
            [[m["models"][n]["trained"]["capability"]["accuracy"][h] for h in hops] for n in names]
        )
        nulls = np.array([[m["models"][n]["null"]["capability"]["accuracy"][h] for h in hops] for n in names])
        colour = palette[architecture]
        ax.plot(x, seeds.mean(0), "-o", color=colour, label=f"{architecture} ({len(names)} seeds)")
        for row in seeds:
            ax.plot(x + 0.06, row, ".", color=colour, ms=4, alpha=0.7)
        ax.plot(x, nulls.mean(0), ":", color="grey", lw=0.8)
    cap = m["models"][m["rungs"][0]]["trained"]["capability"]
    for key, ls, label in (
        ("guess_floor", "--", "guess among written values"),
        ("first_value_floor", "-.", "answer the first value"),
    ):
        ax.plot([int(h) for h in cap[key]], list(cap[key].values()), color="black", ls=ls, lw=1, label=label)
    ax.set(
        xlabel="hops from the query to the value",
        ylabel="held-out accuracy",
        ylim=(0, 1.02),
        xticks=[int(h) for h in cap["accuracy"]],
        title="Capability: mean of the seeds (dots: each seed; dotted: untrained nulls)",
    )
    ax.title.set_size(10)
    fig.tight_layout()
    legend_below(fig)
    return fig


def omega_profiles(m: dict):
    """``m(gamma)`` of every rung, trained (solid, with its bootstrap band) and null (dashed)."""
    plt, sns = _sns()
    fig, ax = plt.subplots(figsize=(7, 4))
    palette = dict(zip(m["rungs"], sns.color_palette("viridis", len(m["rungs"]))))
    for rung in m["rungs"]:
        for kind, ls in (("trained", "-"), ("null", "--")):
            o = m["models"][rung][kind]["omega"]
            ax.plot(
                o["gamma"],
                o["m"],
                ls=ls,
                marker="o",
                ms=3,
                color=palette[rung],
                label=rung if kind == "trained" else None,
            )
            if kind == "trained":
                ax.fill_between(o["gamma"], o["m_low"], o["m_high"], color=palette[rung], alpha=0.2)
    ax.axhline(1 - np.sqrt(2 / np.pi), color="grey", lw=1, ls=":", label=r"Gaussian $1-\sqrt{2/\pi}$")
    ax.set(
        xlabel=r"depth $\gamma = l/L$",
        ylabel=r"$m(\gamma)$, mean $\Omega$ over tokens",
        title="Order parameter: trained (solid) and untrained nulls (dashed)",
    )
    fig.tight_layout()
    legend_below(fig)
    return fig


def capability_scatter(m: dict):
    """Capability (mean held-out accuracy) against each diagnostic, one panel per diagnostic: trained models
    (dots) and their untrained nulls (crosses), coloured by architecture (the seeds of one architecture share a
    colour), titled with the plain Spearman rho and, where measured, the partial rho given log parameters."""
    plt, sns = _sns()
    names = list(DIAGNOSTICS)
    groups = _architectures(m["rungs"])
    palette = dict(zip(groups, sns.color_palette("viridis", len(groups))))
    n_columns = 3
    n_rows = -(-(len(names) + 1) // n_columns)  # one panel more, for the legend
    fig, axes = plt.subplots(n_rows, n_columns, figsize=(8.2, 2.9 * n_rows), sharey=True, squeeze=False)
    panels = axes.ravel()
    for ax, name in zip(panels, names):
        for architecture, rungs in groups.items():
            for kind, marker in (("trained", "o"), ("null", "x")):
                entries = [m["models"][rung][kind] for rung in rungs]
                ax.scatter(
                    [diagnostic_values(e)[name] for e in entries],
                    [capability_of(e) for e in entries],
                    color=palette[architecture],
                    marker=marker,
                    s=30,
                    label=architecture if kind == "trained" else None,
                )
        c = m["correlations"][name]
        title = "rho {:+.2f} [{:+.2f}, {:+.2f}]".format(c["level"]["rho"], *c["level"]["ci"])
        if c.get("partial") is not None:
            title += "\npartial given size {:+.2f} [{:+.2f}, {:+.2f}]".format(
                c["partial"]["rho"], *c["partial"]["ci"]
            )
        ax.set_xlabel(SHORT_LABELS[name], fontsize=8)
        ax.set_title(title, fontsize=8)
        ax.locator_params(axis="x", nbins=4)
        ax.tick_params(labelsize=7)
    for row in axes:
        row[0].set_ylabel("capability", fontsize=8)
    handles, labels = panels[0].get_legend_handles_labels()
    handles += [plt.Line2D([], [], ls="", marker=k, color="grey") for k in ("o", "x")]
    labels += ["trained", "untrained null"]
    for ax in panels[len(names) :]:
        ax.axis("off")
    spare = panels[len(names)]  # a panel of its own, with no data to cover
    spare.legend(handles, labels, loc="center", frameon=False, fontsize="small")
    fig.tight_layout()
    return fig


def _architectures(rungs: list[str]) -> dict[str, list[str]]:
    """The rungs grouped by architecture where they are seeded (ladder v2), else one group per rung (v1)."""
    if all(is_seeded(rung) for rung in rungs):
        return by_architecture(rungs)
    return {rung: [rung] for rung in rungs}


def tco_decoding(m: dict, rungs: list[str] | None = None):
    """The TCO test by depth, one panel per rung: two-way decoding of the bound value within the query step (the
    positive control) and at the hops by the query's probe (stability), trained (solid) and untrained null
    (dashed), with chance 0.5 and the strongest decoder that binds nothing (dotted)."""
    plt, sns = _sns()
    rungs = [r for r in (rungs or m["rungs"]) if "tco" in m["models"][r]["trained"]]
    n_columns = min(len(rungs), 3)
    n_rows = -(-len(rungs) // n_columns)
    fig, axes = plt.subplots(
        n_rows, n_columns, figsize=(2.6 * n_columns + 0.8, 2.6 * n_rows + 0.4), sharey=True, squeeze=False
    )
    colours = sns.color_palette("colorblind", 2)
    for ax in axes.ravel()[len(rungs) :]:
        ax.axis("off")
    for ax, rung in zip(axes.ravel(), rungs):
        for kind, style in (("trained", "-"), ("null", "--")):
            t = m["models"][rung][kind]["tco"]
            depth = np.arange(len(t["control_by_depth"]))
            for key, colour, name in (
                ("control_by_depth", colours[0], "within the query step"),
                ("stability_by_depth", colours[1], "hops, the query's probe"),
            ):
                ax.plot(
                    depth, t[key], style, color=colour, marker="o", ms=3,
                    label=f"{name} ({kind})" if rung == rungs[0] else None,
                )  # fmt: skip
        scores = m["models"][rung]["trained"]["tco"]["scores"]
        bar = max(scores["control_bag"]["accuracy"], scores["control_first"]["accuracy"])
        ax.axhline(bar, color="grey", ls=":", lw=1)
        ax.axhline(0.5, color="black", lw=0.6)
        ax.set(title=rung, xlabel="depth l", ylim=(0.4, 1.02), xticks=depth)
        ax.title.set_size(9)
    for row in axes:
        row[0].set_ylabel("two-way accuracy", fontsize=9)
    fig.tight_layout()
    legend_below(fig, ncol=2)
    return fig


def along_training(table, correlations: dict | None = None):
    """Each diagnostic (rows) against capability along the training of each checkpointed architecture (columns):
    one line per run (seed) through its checkpoints in step order, the first checkpoint hollow; a panel's title
    gives ``along_training.training_correlations``'s partial rho of the changes given the step, when passed.
    ``table`` is ``along_training.training_table(m)``."""
    plt, sns = _sns()
    architectures = sorted(set(table["architecture"]))
    names = list(DIAGNOSTICS)
    fig, axes = plt.subplots(
        len(names), len(architectures), figsize=(3.4 * len(architectures), 2.2 * len(names)), squeeze=False
    )
    seeds = sorted(set(table["seed"]))
    colours = dict(zip(seeds, sns.color_palette("colorblind", len(seeds))))
    for column, architecture in enumerate(architectures):
        rows = table[table["architecture"] == architecture]
        for row, name in enumerate(names):
            ax = axes[row, column]
            for seed, run in rows.groupby("seed"):
                run = run.sort_values("step")
                ax.plot(
                    run["capability"], run[name], "-o", ms=3, lw=1, color=colours[seed], label=f"seed {seed}"
                )
                ax.plot(
                    run["capability"].iloc[:1], run[name].iloc[:1], "o", ms=7, mfc="none", color=colours[seed]
                )
            ax.set_xlabel("capability (mean held-out accuracy)" if row == len(names) - 1 else "", fontsize=8)
            ax.set_ylabel(SHORT_LABELS[name] if column == 0 else "", fontsize=8)
            title = architecture if row == 0 else ""
            if correlations is not None:
                c = correlations[architecture][name]
                title = (
                    f"{title}\n" * bool(title)
                    + f"rho = {c['rho']:+.2f} [{c['ci'][0]:+.2f}, {c['ci'][1]:+.2f}]"
                )
            ax.set_title(title, fontsize=8)
            ax.tick_params(labelsize=7)
    fig.tight_layout()
    legend_below(fig, ncol=len(seeds))  # one legend for every panel
    return fig
