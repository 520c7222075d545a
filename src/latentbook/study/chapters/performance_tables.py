"""The performance appendix: the capture benchmark's records in ``results/bench/`` as the page shows and quotes them.

Usage: ``bench = bench_record("capture_cpu")``; ``bench_glue(bench)`` (the ``perf_*`` numbers), ``bench_table(
"capture_cpu")`` and ``Markdown(bench_findings(bench))``; ``build_times()`` and ``gpu_figures()`` (each says what
to run where its record is missing), and ``gpu_glue()`` (the ``gpu_*`` numbers, none before a GPU run).
Introduced in: the performance appendix.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from IPython.display import Markdown

TARGET = 1.05  # issue #31: a capture at most 1.05 times the forward
RSS_TARGET = 1.10  # the capture's peak memory at 4N tokens at most 1.10 times that at N
NO_BUILD = (
    "**Not measured yet.** `.venv/bin/python benchmarks/book_build.py` "
    "builds the book from cold and writes `results/bench/book_build.json`, "
    "which this section reads."
)
NO_GPU = (
    "**Not run on a GPU yet.** `benchmarks/gpu_check.sh` is prepared for a "
    "CUDA machine with its own torch and transformers and no network: from the "
    "repository, `bash benchmarks/gpu_check.sh` checks the capture on the GPU "
    "(float32 and bfloat16 models) against float64 on the CPU on "
    "`random:llama-tiny`, a random model of SmolLM2-135M's shape and, when its "
    "weights are given with `--smollm2 PATH`, SmolLM2-135M itself; then it "
    "times (a) against (e) on `random:llama-1b` and an 8B-shaped random Llama "
    "in bfloat16, 32 x 512 tokens. It writes `gpu.json` and `gpu.md` to `$OUT` "
    "or `results/bench/`, which this section then shows. So far only its "
    "CPU-reachable parts have run (`--device cpu --dry-run`, and the "
    "correctness rows with `--device cpu --skip-timing`)."
)


def bench_folder() -> Path:
    """The repository's ``results/bench`` (found from the working folder)."""
    from ..._files import repository_root

    return Path(repository_root()) / "results" / "bench"


def bench_record(name: str) -> dict | None:
    """``results/bench/<name>.json``, or None where it has not been written."""
    path = bench_folder() / f"{name}.json"
    return json.loads(path.read_text()) if path.is_file() else None


def bench_table(name: str) -> Markdown:
    """The table of ``results/bench/<name>.md``, without its title."""
    from IPython.display import Markdown

    return Markdown((bench_folder() / f"{name}.md").read_text().split("\n", 2)[2])


def timed(bench: dict) -> dict[str, dict]:
    """A benchmark record's timing rows by model (the last, where a model was timed twice)."""
    return {row["model"]: row for row in bench["timing"]}


def bench_glue(bench: dict, target: float = TARGET) -> dict[str, object]:
    """What the page quotes of the CPU benchmark: date, CPU, threads, the highest load, the memory runs, the flush
    size, and per model (its name with ``_`` for ``:``) the tokens a run, the capture's ratio to the forward and to
    the trunk, the unembedding's share, the MLP width, the capture's floor (``capturing.cost.capture_floor``) and the
    Gram's share of a layer; and how far below ``target`` the 1B model's floor is (``llama_1b_slack``)."""
    from ...capturing.accumulators import Moments
    from ...capturing.cost import capture_floor
    from ...capturing.plan import read_config

    machine, load, rss = bench["machine"], bench["load_average"], bench["rss"]
    perf: dict[str, object] = {
        "target": target,
        "date": bench["date"][:10],
        "cpu": f"{machine['cpu']} ({machine['logical_cores']} logical cores)",
        "threads": machine["torch_threads"],
        "load_max": max([load["start"][0], load["end"][0], *load.get("after_each_round", [])]),
        "rss_N": rss["tokens_N"],
        "rss_4N": 4 * rss["tokens_N"],
        "rss_e": rss["methods"]["e"]["peak_ratio_4N_to_N"],
        "flush_tokens": Moments.FLUSH_TOKENS,
    }
    for model in timed(bench).values():
        key = model["model"].replace(":", "_")
        methods = model["methods"]
        trunk = methods["a-trunk"]
        config = read_config(model["model"])
        floor = capture_floor(config, context=model["seq_len"])
        perf[f"{key}_tokens"] = model["tokens_per_run"]
        perf[f"{key}_e_over_a"] = methods["e"]["ratio_to_a"]
        perf[f"{key}_e_over_trunk"] = methods["e"]["median_cpu_s"] / trunk["median_cpu_s"]
        perf[f"{key}_head_share"] = 1 - trunk["ratio_to_a"]
        perf[f"{key}_d_ff"] = config.intermediate_size
        perf[f"{key}_floor"] = floor.ratio
        perf[f"{key}_floor_exact"] = floor.exact_ratio
        perf[f"{key}_gram_share"] = floor.gram / floor.layer
        perf[f"{key}_d"] = model["d_model"]
    perf["llama_1b_slack"] = target - perf["random_llama-1b_floor"]
    return perf


def _model_finding(model: dict, target: float) -> str:
    m = model["methods"]
    e = m["e"]["ratio_to_a"]
    fold = model["e_first_read_of_all_covariances_cpu_s"]
    per_round = [t_e / t_a for t_e, t_a in zip(m["e"]["cpu_s"], m["a"]["cpu_s"])]
    peers = {k: m[k]["ratio_to_a"] for k in ("b", "c", "d") if m.get(k, {}).get("status") == "ok"}
    slower = [k for k, r in peers.items() if r > e]
    faster = [k for k in peers if k not in slower]
    return (
        f"- **{model['model']}** ({model['tokens_per_run']} tokens a run): the capture took {e:.2f} times the plain "
        f"forward ({'within' if e <= target else 'above'} the target of {target}; round by round "
        f"{min(per_round):.2f} to {max(per_round):.2f}, the noise of a shared machine), "
        f"{m['e']['median_cpu_s'] / m['a-trunk']['median_cpu_s']:.2f} times the trunk alone, and "
        f"{(m['e']['median_cpu_s'] + fold) / m['a']['median_cpu_s']:.2f} times the forward counting the "
        f"first read of every covariance ({fold:.2f} s, when its last block is folded into float64); "
        + (
            "it was faster than " + ", ".join(f"({k}) at {peers[k]:.2f}" for k in slower)
            if slower
            else "no peer was slower"
        )
        + (", and slower than " + ", ".join(f"({k})" for k in faster) + "." if faster else ".")
    )


def bench_findings(bench: dict, target: float = TARGET) -> str:
    """The benchmark in words, one Markdown item per model (the capture against the forward, round by round, the
    trunk and the first read of the covariances, and which peers were slower) and one for memory."""
    rss = bench["rss"]
    grow = {
        k: row["peak_ratio_4N_to_N"]
        for k, row in rss["methods"].items()
        if row["status"] == "ok" and k in ("b", "c", "d", "e")
    }
    memory = (
        f"- **Memory** ({rss['model']}, {rss['tokens_N']} and {4 * rss['tokens_N']} tokens): the capture's peak "
        f"RSS at 4N was {grow['e']:.3f} times that at N "
        f"({'within' if grow['e'] <= RSS_TARGET else 'above'} the 10% target); "
        + ", ".join(f"({k}) {r:.2f}" for k, r in grow.items() if k != "e")
        + " for the tools that hold the activations."
    )
    return "\n".join([*(_model_finding(model, target) for model in timed(bench).values()), memory])


def build_times() -> Markdown:
    """The cold build's page times (``results/bench/book_build.md``) and, where it was measured, a newcomer's whole
    ``make book`` (``book_build_newcomer.md``: a fresh clone, an empty HOME, setup included), or what to run where
    the build has not been timed."""
    from IPython.display import Markdown

    if bench_record("book_build") is None:
        return Markdown(NO_BUILD)
    parts = [bench_table("book_build").data]
    if bench_record("book_build_newcomer") is not None:
        title, body = (bench_folder() / "book_build_newcomer.md").read_text().split("\n", 1)
        parts.append(
            f"**{title.lstrip('# ')}.**\n{body}"
        )  # a heading in a cell's output would break the page's
    return Markdown("\n\n".join(parts))


def gpu_figures() -> Markdown:
    """The GPU check's figures (``results/bench/gpu.md``), or what to run where it has not run on a GPU."""
    from IPython.display import Markdown

    gpu = bench_record("gpu")
    return Markdown(NO_GPU) if gpu is None or gpu.get("dry_run") else bench_table("gpu")


def gpu_glue() -> dict[str, object]:
    """What the page quotes of the GPU run (none before one, or without its profile): the GPU, the capture's lowest
    and highest ratio to the forward, and the profile's ratio at batches of 8 and 32 prompts."""
    gpu, profile = bench_record("gpu"), bench_record("gpu_profile")
    if gpu is None or gpu.get("dry_run") or profile is None:
        return {}
    ratios = [row["methods"]["e"]["ratio_to_a"] for row in timed(gpu).values()]
    batches = {b["batch_size"]: b["ratio"] for b in profile["batches"]}
    return {
        "capture_ratio_low": float(min(ratios)),
        "capture_ratio_high": float(max(ratios)),
        "profile_batch8": float(batches[8]),
        "profile_batch32": float(batches[32]),
        "device": gpu["environment"]["gpu"],
    }
