"""Capture benchmark on the CPU: latentbook's streaming capture against the tools a researcher would use.

The same prompts, cut to the same length (so every batch is full and no method gains from padding), go
through five methods, timed in interleaved rounds (a b c d e, a b c d e, ...), medians reported. The time
that counts is the CPU time of this process (torch on one thread): on a machine shared with other jobs it
is the method's own work, where wall-clock time also counts the waits for a core (reported beside it).

- (a) a plain forward of the full causal LM (with its unembedding, as a user runs it) under
  ``torch.inference_mode``; (a-trunk) the same without the unembedding, shown for transparency;
- (b) transformers' ``output_hidden_states=True``, every depth held, then the statistics;
- (c) TransformerLens 4.x ``TransformerBridge.boot_transformers(..., hf_model=<the same model>)`` and
  ``run_with_cache`` restricted to the residual stream (its best case), every depth held, then the statistics;
- (d) nnsight: a trace that saves every layer output (an explicit for-loop), held, then the statistics;
- (e) ``lb.capture``: streaming statistics, nothing held.

"The statistics" for (b)-(d) are what ``lb.capture`` gives at least: per depth the mean, the covariance (a
float32 centred Gram, as ``torch.cov`` gives it) and Omega per token. ``lb.capture`` returns with its last
block of scatter sums in float32 and folds it into float64 at the first read; that read is timed apart. Peak RSS at ``N`` and
``4N`` tokens is measured for each method in its own process (``--rss-worker``), from the RSS after setup.

Peers live in a separate venv (``.venv-bench``) so the project's venv never changes; a peer that is not
installed is reported as such in the table. Usage::

    .venv-bench/bin/python benchmarks/capture_bench.py            # the full run (15-25 min on 2 shared cores)
    .venv-bench/bin/python benchmarks/capture_bench.py --quick    # a smoke test on random:llama-tiny
"""

from __future__ import annotations

import argparse
import copy
import datetime as dt
import gc
import importlib.metadata
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402

import latentbook as lb  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
METHODS = ("a", "a-trunk", "b", "c", "d", "e")
LABELS = {
    "a": "(a) plain forward, full causal LM",
    "a-trunk": "(a-trunk) plain forward, trunk only",
    "b": "(b) transformers output_hidden_states + stats",
    "c": "(c) TransformerLens run_with_cache + stats",
    "d": "(d) nnsight trace, save every layer + stats",
    "e": "(e) lb.capture (streaming)",
}
LOAD_SAMPLES: list[float] = []  # 1-minute load average after each round: was the machine shared?
PEER_PACKAGES = {"c": ("transformer_lens", "transformer-lens"), "d": ("nnsight", "nnsight")}


# --- the peers ---------------------------------------------------------------------------------------------


def peer_status() -> dict[str, str]:
    """'ok' or why a peer cannot run here (not installed, or fails to import beside this torch)."""
    status = {}
    for method, (module, dist) in PEER_PACKAGES.items():
        try:
            __import__(module)
            status[method] = "ok"
        except ImportError as exc:
            status[method] = (
                f"not installed here ({exc.name}): pip install {dist} into .venv-bench"
                if getattr(exc, "name", None) == module
                else f"did not install: import fails beside torch {torch.__version__} ({exc})"
            )
        except Exception as exc:  # a peer that installs but breaks on import
            status[method] = f"did not install: import fails ({type(exc).__name__}: {exc})"
    return status


def version_of(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def stats_afterwards(held: list[list[torch.Tensor]]) -> list[dict]:
    """What a hold-everything tool's user computes once the run is over, per depth: mean, covariance, Omega.

    The covariance is a float32 centred Gram, as ``torch.cov`` gives and as ``lb.capture`` holds it until read.
    """
    out = []
    for parts in held:
        x = torch.cat(parts)  # (n_tokens, d): every activation of this depth
        mean = x.double().mean(0)
        centred = x - mean.float()
        cov = (centred.T @ centred) / x.shape[0]
        omega = 1.0 - x.abs().sum(-1) / (math.sqrt(x.shape[1]) * torch.linalg.vector_norm(x, dim=-1))
        out.append({"n": x.shape[0], "mean": mean, "cov": cov, "omega": omega.double()})
    return out


def _first(output):
    return output[0] if isinstance(output, (tuple, list)) else output


def shared_copy(model: torch.nn.Module) -> torch.nn.Module:
    """A second module tree over the *same* parameter tensors: for a peer that rewrites modules in place."""
    return copy.deepcopy(model, memo={id(p): p for p in model.parameters()})


class Bench:
    """One loaded model, its prompts, and a runner per method (setup, e.g. TransformerLens' boot, excluded)."""

    def __init__(self, name: str, seq_len: int, batch_size: int, peers: dict[str, str], methods=METHODS):
        self.loaded = lb.load_model(name, device="cpu", dtype="float32")
        self.model = self.loaded.model
        self.tok = self.loaded.tokenizer
        self.seq_len, self.batch_size = seq_len, batch_size
        self.peers = peers
        self.runners = {
            "a": self.run_a,
            "a-trunk": self.run_a_trunk,
            "b": self.run_b,
            "e": self.run_e,
        }
        if peers.get("c") == "ok" and "c" in methods:
            self._setup_c()
            self.runners["c"] = self.run_c
        if peers.get("d") == "ok" and "d" in methods:
            self._setup_d()
            self.runners["d"] = self.run_d
        self.runners = {m: run for m, run in self.runners.items() if m in methods}

    # prompts: only those at least seq_len tokens long, cut to seq_len: every batch is full
    def prompts(self, n: int) -> list[str]:
        texts = lb.prompts.load("general")
        lengths = [len(ids) for ids in self.tok(texts)["input_ids"]]
        long = [t for t, n_tok in zip(texts, lengths) if n_tok >= self.seq_len]
        if len(long) < n:
            raise SystemExit(f"only {len(long)} prompts have >= {self.seq_len} tokens; asked for {n}")
        return long[:n]

    def batches(self, texts: list[str]):
        for i in range(0, len(texts), self.batch_size):
            yield self.tok(
                texts[i : i + self.batch_size],
                return_tensors="pt",
                padding=True,
                truncation=True,
                max_length=self.seq_len,
            )

    def run_a(self, texts):
        with torch.inference_mode():
            for enc in self.batches(texts):
                self.model(**enc, use_cache=False)

    def run_a_trunk(self, texts):
        with torch.inference_mode():
            for enc in self.batches(texts):
                self.loaded.anatomy.base(**enc, use_cache=False)

    def run_b(self, texts):
        held = None
        with torch.inference_mode():
            for enc in self.batches(texts):
                hidden = self.model(**enc, output_hidden_states=True, use_cache=False).hidden_states
                mask = enc["attention_mask"].bool()
                held = held or [[] for _ in hidden]
                for parts, h in zip(held, hidden):
                    parts.append(h[mask])
            return stats_afterwards(held)

    def _setup_c(self):
        from transformer_lens.model_bridge import TransformerBridge

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.bridge = TransformerBridge.boot_transformers(
                "HuggingFaceTB/SmolLM2-135M-Instruct",  # only a label here: config and weights are hf_model's
                hf_model=shared_copy(self.model),
                tokenizer=self.tok,
                device="cpu",
                dtype=torch.float32,
            )
        n_layers = self.loaded.n_layers
        self.c_names = ["blocks.0.hook_resid_pre"] + [f"blocks.{i}.hook_resid_post" for i in range(n_layers)]

    def run_c(self, texts):
        held = [[] for _ in self.c_names]
        names = set(self.c_names)
        with torch.inference_mode():
            for enc in self.batches(texts):
                _, cache = self.bridge.run_with_cache(
                    enc["input_ids"], attention_mask=enc["attention_mask"], names_filter=lambda n: n in names
                )
                mask = enc["attention_mask"].bool()
                for parts, name in zip(held, self.c_names):
                    parts.append(cache[name][mask])
            return stats_afterwards(held)

    def _setup_d(self):
        from nnsight import LanguageModel

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.lm = LanguageModel(shared_copy(self.model), tokenizer=self.tok)

    def run_d(self, texts):
        held = None
        with torch.inference_mode():
            for enc in self.batches(texts):
                saved = []
                with self.lm.trace(enc["input_ids"], attention_mask=enc["attention_mask"]):
                    saved.append(self.lm.model.embed_tokens.output.save())
                    for layer in self.lm.model.layers:  # a list comprehension fails inside a trace
                        saved.append(layer.output.save())
                mask = enc["attention_mask"].bool()
                held = held or [[] for _ in saved]
                for parts, h in zip(held, saved):
                    parts.append(_first(h)[mask])
            return stats_afterwards(held)

    def run_e(self, texts):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "prompts were truncated": on purpose, to seq_len
            return lb.capture(
                self.loaded, texts, max_length=self.seq_len, batch_size=self.batch_size, progress=False
            )


def agreement(bench: Bench, texts: list[str]) -> dict[str, float]:
    """Largest relative error (Frobenius) of each peer's covariance against lb.capture's, over shared depths."""
    cap = bench.run_e(texts)
    out = {}
    for method in ("b", "c", "d"):
        if method not in bench.runners:
            continue
        stats = bench.runners[method](texts)
        n_pre = (
            bench.loaded.n_layers if method == "b" else bench.loaded.n_layers + 1
        )  # (b)'s last is post-norm
        errors = []
        for depth in range(n_pre):
            ref = torch.from_numpy(cap.covariance(depth))
            errors.append(
                float(torch.linalg.norm(stats[depth]["cov"].double() - ref) / torch.linalg.norm(ref))
            )
        out[method] = max(errors)
    return out


# --- timing ------------------------------------------------------------------------------------------------


def time_model(
    name: str, n_prompts: int, seq_len: int, batch_size: int, rounds: int, peers, methods=METHODS
) -> dict:
    t0 = time.perf_counter()
    bench = Bench(name, seq_len, batch_size, peers, methods)
    texts = bench.prompts(n_prompts)
    print(f"[{name}] loaded in {time.perf_counter() - t0:.0f} s; {len(texts)} x {seq_len} tokens per run")
    seq_len, bench.seq_len = bench.seq_len, 16
    for run in bench.runners.values():  # warm-up on 16 tokens: lazy initialisation, first-call costs
        run(bench.prompts(1))
    bench.seq_len = seq_len
    checks = agreement(bench, bench.prompts(1))
    wall: dict[str, list[float]] = {m: [] for m in bench.runners}
    cpu: dict[str, list[float]] = {m: [] for m in bench.runners}
    read_cpu: list[float] = []  # (e) folds a pending block into float64 at the first read: timed apart
    for r in range(rounds):
        for method in METHODS:
            if method not in bench.runners:
                continue
            gc.collect()
            start, start_cpu = time.perf_counter(), time.process_time()
            result = bench.runners[method](texts)
            cpu[method].append(time.process_time() - start_cpu)
            wall[method].append(time.perf_counter() - start)
            if method == "e":
                start_cpu = time.process_time()
                for depth in range(result.n_depths):
                    result.covariance(depth)
                read_cpu.append(time.process_time() - start_cpu)
            del result
        line = " ".join(f"{m}={cpu[m][-1]:.2f}/{wall[m][-1]:.2f}" for m in cpu)
        LOAD_SAMPLES.append(os.getloadavg()[0])
        print(f"[{name}] round {r + 1}/{rounds} (CPU/wall s): {line} (load {LOAD_SAMPLES[-1]:.1f})")
    n_tokens = len(texts) * seq_len
    cpu_a, wall_a = statistics.median(cpu["a"]), statistics.median(wall["a"])
    methods_run, methods = methods, {}
    for method in METHODS:
        if method in cpu:
            median_cpu, median_wall = statistics.median(cpu[method]), statistics.median(wall[method])
            methods[method] = {
                "label": LABELS[method],
                "status": "ok",
                "cpu_s": [round(t, 4) for t in cpu[method]],
                "wall_s": [round(t, 4) for t in wall[method]],
                "median_cpu_s": round(median_cpu, 4),
                "median_wall_s": round(median_wall, 4),
                "ratio_to_a": round(median_cpu / cpu_a, 4),
                "wall_ratio_to_a": round(median_wall / wall_a, 4),
                "tokens_per_cpu_s": round(n_tokens / median_cpu, 2),
            }
        elif method in methods_run:
            methods[method] = {"label": LABELS[method], "status": peers[method]}
    config = bench.model.config
    return {
        "model": name,
        "n_layers": bench.loaded.n_layers,
        "d_model": bench.loaded.d_model,
        "vocab_size": int(config.vocab_size),
        "n_parameters": sum(p.numel() for p in bench.model.parameters()),
        "n_prompts": len(texts),
        "seq_len": seq_len,
        "batch_size": batch_size,
        "tokens_per_run": n_tokens,
        "rounds": rounds,
        "covariance_rel_error_vs_e": checks,
        "e_first_read_of_all_covariances_cpu_s": round(statistics.median(read_cpu), 4) if read_cpu else None,
        "methods": methods,
    }


# --- peak memory, one process per (method, size) ------------------------------------------------------------


def _vm_hwm_kib() -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def _vm_rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


def rss_worker(method: str, name: str, n_prompts: int, seq_len: int, batch_size: int, threads: int) -> None:
    """Set up ``method``, reset the peak-RSS mark, run it on ``n_prompts`` prompts; print peak and base RSS."""
    torch.set_num_threads(threads)
    bench = Bench(name, seq_len, batch_size, peer_status())
    texts = bench.prompts(n_prompts)
    bench.runners[method](texts[:1])  # first-call allocations belong to setup, not to the tokens
    gc.collect()
    base = _vm_rss_kib()
    try:
        Path("/proc/self/clear_refs").write_text("5")  # Linux: reset VmHWM (the peak) to the current RSS
        since = "setup"
    except OSError:  # not allowed here: the peak then includes loading the model
        since = "process start"
    result = bench.runners[method](texts)
    peak = _vm_hwm_kib()
    del result
    print(json.dumps({"method": method, "base_kib": base, "peak_kib": peak, "peak_since": since}))


def measure_rss(name: str, n_prompts: int, seq_len: int, batch_size: int, threads: int, peers) -> dict:
    out = {"model": name, "seq_len": seq_len, "tokens_N": n_prompts * seq_len, "methods": {}}
    for method in ("a", "b", "c", "d", "e"):
        if method in ("c", "d") and peers.get(method) != "ok":
            out["methods"][method] = {"status": peers[method]}
            continue
        row = {"status": "ok"}
        for label, n in (("N", n_prompts), ("4N", 4 * n_prompts)):
            cmd = [
                sys.executable,
                __file__,
                "--rss-worker",
                method,
                name,
                str(n),
                "--seq-len",
                str(seq_len),
                "--batch-size",
                str(batch_size),
                "--threads",
                str(threads),
            ]
            proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
            lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
            if proc.returncode != 0 or not lines:
                row = {"status": f"worker failed: {proc.stderr.strip().splitlines()[-1:]}"}
                break
            res = json.loads(lines[-1])
            row[f"peak_mb_{label}"] = round(res["peak_kib"] / 1024, 1)
            row[f"held_mb_{label}"] = round((res["peak_kib"] - res["base_kib"]) / 1024, 1)
            row["peak_since"] = res["peak_since"]
            print(
                f"[rss {name}] {method} {label}: peak {row[f'peak_mb_{label}']} MB (+{row[f'held_mb_{label}']})"
            )
        if row["status"] == "ok":
            row["peak_ratio_4N_to_N"] = round(row["peak_mb_4N"] / row["peak_mb_N"], 3)
        out["methods"][method] = row
    return out


# --- report ------------------------------------------------------------------------------------------------


def machine_info(threads: int) -> dict:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError):
        mem_gib = float("nan")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    return {
        "cpu": cpu,
        "logical_cores": os.cpu_count(),
        "memory_gib": round(mem_gib, 1),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch_threads": threads,
        "git_commit": commit.stdout.strip() or None,
        "versions": {
            d: version_of(d) for d in ("torch", "transformers", "transformer-lens", "nnsight", "latentbook")
        },
    }


def markdown(report: dict) -> str:
    m = report["machine"]
    load = report["load_average"]
    busiest = max([load["start"][0], load["end"][0], *load.get("after_each_round", [])])
    lines = [
        f"# Capture benchmark on the CPU ({report['date']})",
        "",
        f"{m['cpu']}, {m['logical_cores']} logical cores, {m['memory_gib']} GiB; torch "
        f"{m['versions']['torch']} with {m['torch_threads']} thread(s), transformers "
        f"{m['versions']['transformers']}, transformer-lens {m['versions']['transformer-lens']}, "
        f"nnsight {m['versions']['nnsight']}. Highest 1-minute load average during the run: {busiest:.1f}"
        + (
            f" on {m['logical_cores']} cores: **the machine was shared with other jobs**. Ratios are therefore "
            "taken on the CPU time of the benchmark process (its own work, whoever else runs), medians of "
            "interleaved rounds; wall-clock ratios are given beside them."
            if report["shared_machine"]
            else "."
        ),
        "",
        "| model | method | CPU s | x (a) | wall s | x (a), wall | tokens per CPU s | cov. rel. error vs (e) |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for model in report["timing"]:
        head = f"{model['model']} ({model['n_prompts']} x {model['seq_len']} tokens)"
        for method, row in model["methods"].items():
            if row["status"] != "ok":
                lines.append(f"| {head} | {row['label']} | {row['status']} | | | | | |")
                continue
            err = model["covariance_rel_error_vs_e"].get(method)
            lines.append(
                f"| {head} | {row['label']} | {row['median_cpu_s']:.2f} | {row['ratio_to_a']:.3f} | "
                f"{row['median_wall_s']:.2f} | {row['wall_ratio_to_a']:.3f} | {row['tokens_per_cpu_s']:.0f} | "
                f"{'' if err is None else f'{err:.1e}'} |"
            )
    folds = [
        f"{model['model']} {model['e_first_read_of_all_covariances_cpu_s']:.2f} CPU s"
        for model in report["timing"]
        if model.get("e_first_read_of_all_covariances_cpu_s") is not None
    ]
    if folds:
        lines += [
            "",
            "(e) returns with its last block of scatter sums still in float32; reading every depth's "
            f"covariance afterwards folds them into float64 (not in the times above): {', '.join(folds)}.",
        ]
    rss = report.get("rss")
    if rss:
        n = rss["tokens_N"]
        lines += [
            "",
            f"Peak RSS on {rss['model']}, each in its own process, at N = {n} and 4N = {4 * n} tokens "
            "(held = peak minus the RSS after setup; N is larger than the 512 tokens of the capture's "
            "sample of token vectors, which is full from then on):",
            "",
            "| method | peak MB at N | peak MB at 4N | 4N / N | held MB at N | held MB at 4N |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for method, row in rss["methods"].items():
            if row["status"] != "ok":
                lines.append(f"| {LABELS[method]} | {row['status']} | | | | |")
                continue
            lines.append(
                f"| {LABELS[method]} | {row['peak_mb_N']:.0f} | {row['peak_mb_4N']:.0f} | "
                f"{row['peak_ratio_4N_to_N']:.3f} | {row['held_mb_N']:.0f} | {row['held_mb_4N']:.0f} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rss-worker", nargs=3, metavar=("METHOD", "MODEL", "N_PROMPTS"))
    parser.add_argument("--quick", action="store_true", help="smoke test: random:llama-tiny, tiny sizes")
    parser.add_argument("--rounds", type=int, default=None, help="rounds per model (default 5)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1: steadier on a shared box)")
    parser.add_argument("--seq-len", type=int, default=96)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--out", type=Path, default=None, help="folder for capture_cpu.json / .md")
    parser.add_argument("--models", nargs="+", help="time only these (MODEL or MODEL=N_PROMPTS)")
    parser.add_argument("--no-rss", action="store_true", help="skip the peak-RSS processes")
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.rss_worker:
        method, name, n = args.rss_worker
        rss_worker(method, name, int(n), args.seq_len, args.batch_size, args.threads)
        return

    if args.quick:
        plan = [("random:llama-tiny", 4, 2)]
        rss_plan = ("random:llama-tiny", 2)
        out = args.out or Path("/tmp/latentbook-bench-quick")
    else:
        plan = [("smollm2-135m", 8, 5), ("random:llama-1b", 2, 5)]  # (model, prompts per run, rounds)
        rss_plan = ("smollm2-135m", 8)  # N = 768 tokens: more than the capture's 512-token sample holds
        out = args.out or ROOT / "results" / "bench"
    if args.models:
        default = {name: (n, rounds) for name, n, rounds in plan}
        plan = [
            (m.split("=")[0], int(m.split("=")[1]) if "=" in m else default.get(m, (2, 3))[0], 3)
            for m in args.models
        ]
    peers = peer_status()
    for method, status in peers.items():
        print(f"peer ({method}): {status}")
    report = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine_info(args.threads),
        "load_average": {"start": list(os.getloadavg())},
        "peers": peers,
        "timing": [
            time_model(name, n, args.seq_len, args.batch_size, args.rounds or rounds, peers, args.methods)
            for name, n, rounds in plan
        ],
    }
    if not args.no_rss:
        report["rss"] = measure_rss(*rss_plan, args.seq_len, args.batch_size, args.threads, peers)
    report["load_average"]["end"] = list(os.getloadavg())
    report["load_average"]["after_each_round"] = LOAD_SAMPLES
    busiest = max([report["load_average"]["start"][0], report["load_average"]["end"][0], *LOAD_SAMPLES])
    report["shared_machine"] = busiest > 0.75 * (os.cpu_count() or 1)
    out.mkdir(parents=True, exist_ok=True)
    (out / "capture_cpu.json").write_text(json.dumps(report, indent=1) + "\n")
    (out / "capture_cpu.md").write_text(markdown(report))
    print(markdown(report))
    print(f"wrote {out / 'capture_cpu.json'} and {out / 'capture_cpu.md'}")


if __name__ == "__main__":
    main()
