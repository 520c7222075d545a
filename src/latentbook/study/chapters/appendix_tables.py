"""The tables and glued numbers of three appendix pages: interval coverage, the fault matrix and the GPU plans.

Usage: ``coverage_glue(table)`` and ``coverage_view(table)`` of ``interval_coverage.coverage``;
``table = area_tables(fault_rows())`` then ``table("Bad input")``, ``error_messages()`` and ``error_classes()``;
``plans = shipped_plans(80)``, ``plan_table(plans)``, ``plan_glue(plans, 80)`` and ``claim_commands()``.
Introduced in: the appendix.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd
    from IPython.display import Markdown
    from pandas.io.formats.style import Styler

    from ...capturing.plan import Plan

COVERAGE_ROWS = {"m": "m(gamma)", "gamma_c": "gamma_c", "jump": "jump", "pr": "PR", "rank": "effective rank"}
SOURCE = "https://github.com/latentbook/latentbook/blob/main"  # where a fault test's link points
PLAN_DECIMALS = {"parameters (B)": 2, "weights on GPU (GiB)": 1, "statistics on host (GiB)": 1}
TWO_GPU_MODEL = "meta-llama/Meta-Llama-3-70B"  # the model the GPU page plans on two GPUs
COMMANDS = {  # the claims of the paper and the captures that test them
    "critical depth and Omega jump (claims 1, 4)": "latentbook capture"
    " Qwen/Qwen2.5-32B --prompts general --out results/qwen2.5-32b.safetensors",
    "bimodality (claim 2)": "latentbook capture google/gemma-2-9b"
    " --prompts general --out results/gemma-2-9b.safetensors",
    "spectral anomalies (claim 3)": "latentbook capture meta-llama/Llama-3.1-8B"
    " --prompts general --out results/llama-3.1-8b.safetensors",
    "scaling (claim 4)": "one capture each of Qwen/Qwen2.5-{1.5B,3B,7B,14B,32B}, as above",
}


# --- interval coverage -----------------------------------------------------------------------------------------


def spoken(numbers: Sequence[object]) -> str:
    """``[3, 4, 5]`` as "3, 4 and 5"."""
    words = [str(n) for n in numbers]
    return ", ".join(words[:-1]) + " and " + words[-1] if len(words) > 1 else words[0]


def coverage_glue(table: pd.DataFrame) -> dict[str, object]:
    """What the coverage page quotes: each estimator's observed coverage and spread (``COVERAGE_ROWS``' keys and
    ``spread_*``), the nominal level (``nominal``), the data sets a row, the target bands and how many rows meet
    them, and the local fits of ``transition.local_interval`` in words."""
    from ...analysis import interval_coverage, transition

    rows = table.set_index("estimator")

    def first(column: str, name: str) -> float:
        return float(rows.loc[rows.index.str.startswith(name), column].iloc[0])

    return (
        {key: first("observed", name) for key, name in COVERAGE_ROWS.items()}
        | {f"spread_{key}": first("spread", name) for key, name in COVERAGE_ROWS.items()}
        | {
            "nominal": first("nominal", COVERAGE_ROWS["gamma_c"]),
            "n": int(table["n"].min()),
            "target_low": interval_coverage.COVERAGE_TARGET[0],
            "target_high": interval_coverage.COVERAGE_TARGET[1],
            "n_on_target": int(table["on target"].sum()),
            "n_rows": len(table),
            "spread_low": interval_coverage.SPREAD_TARGET[0],
            "spread_high": interval_coverage.SPREAD_TARGET[1],
            "n_spread_on_target": int(table["spread on target"].sum()),
            "local_lines": spoken([h for h, degree in transition.LOCAL_FITS if degree == 1]),
            "local_quadratics": spoken([h for h, degree in transition.LOCAL_FITS if degree == 2]),
            "local_precision": transition.LOCAL_PRECISION,
        }
    )


def coverage_view(table: pd.DataFrame) -> Styler:
    """The coverage table as the page shows it: the observed rate with its Wilson interval in one column, the
    spread, and whether each is on target."""
    shown = table.drop(columns=["nominal", "ci_low", "ci_high"])
    wilson = zip(table["ci_low"], table["ci_high"])
    shown.insert(2, "Wilson 95 %", [f"[{low:.2f}, {high:.2f}]" for low, high in wilson])
    return shown.style.format({"observed": "{:.0%}", "spread": "{:.2f}"}).hide(axis="index")


# --- the fault matrix ------------------------------------------------------------------------------------------


def fault_rows(root: Path | None = None) -> list[dict]:
    """One row per ``@fault`` test of the repository's ``tests/`` (``tests/fault_matrix.collect``: area, case,
    error, says, outcome, test, file, line); ``root``: the repository (found from the working folder)."""
    from ..._files import repository_root

    folder = Path(root or repository_root()) / "tests"
    spec = importlib.util.spec_from_file_location("fault_matrix", folder / "fault_matrix.py")
    module = sys.modules["fault_matrix"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.collect()


def builtin_base(error: type) -> str:
    """The builtin exception an error class also is, e.g. ``KeyError``."""
    return next(c.__name__ for c in error.__mro__[1:] if c.__module__ == "builtins")


def what_you_see(row: Mapping[str, object]) -> str:
    """A fault row's outcome, or its error class, builtin base and phrase as code literals (an option such as
    ``--force`` keeps its two hyphens)."""
    from ... import errors

    if row["error"]:
        base = builtin_base(getattr(errors, str(row["error"])))
        return f"`{row['error']}` (a `{base}`): `…{row['says']}…`"
    return str(row["outcome"])


def area_tables(rows: Sequence[Mapping[str, object]]) -> Callable[[str], Markdown]:
    """``table(area)``: the rows of one area as a Markdown table of case, what a user sees, and the test (linked to
    its source)."""
    from IPython.display import Markdown

    def table(area: str) -> Markdown:
        lines = ["| Case | What you see | Test |", "|---|---|---|"]
        for row in (r for r in rows if r["area"] == area):
            test = f"[`{row['test']}`]({SOURCE}/{row['file']}#L{row['line']})"
            lines.append(f"| {row['case']} | {what_you_see(row)} | {test} |")
        return Markdown("\n".join(lines))

    return table


def fault_glue(rows: Sequence[Mapping[str, object]]) -> dict[str, object]:
    """The matrix's size: cases (``n``), areas (``n_areas``) and the areas, sorted (``areas``)."""
    areas = sorted({str(row["area"]) for row in rows})
    return {"n": len(rows), "n_areas": len(areas), "areas": "; ".join(areas)}


def _error_calls(scratch: Path) -> dict[str, Callable[[], object]]:
    """Each mistaken call as the page shows it (``lb.`` is the package, whose functions these are) and the call."""
    from ...capturing import capture, load_capture
    from ...models import load_model

    return {
        'lb.load_model("smollm-135m")': lambda: load_model("smollm-135m"),
        'lb.load_model("../weights/llama")': lambda: load_model("../weights/llama"),
        'lb.load_model("/data/no-such-model")': lambda: load_model("/data/no-such-model"),
        'lb.load_model("someone/some-model")  # not downloaded': lambda: load_model("someone/some-model"),
        'lb.capture("smollm2-135m", [])': lambda: capture("smollm2-135m", []),
        'lb.capture("smollm2-135m", ["fine", 42])': lambda: capture("smollm2-135m", ["fine", 42]),
        'lb.capture("smollm2-135m", ["a"], batch_size=0)': lambda: capture(
            "smollm2-135m", ["a"], batch_size=0
        ),
        'lb.load_capture("missing.safetensors")': lambda: load_capture(scratch / "missing.safetensors"),
        'lb.load_capture("notes.txt")': lambda: load_capture(scratch / "notes.txt"),
    }


def error_messages() -> pd.DataFrame:
    """Nine mistaken calls (a misspelt model, a path that is not there, no prompts, a prompt that is not text, a
    batch of 0, a capture that is missing or not a capture) run now: each call, its error class and its message
    (the scratch folder's path removed)."""
    import tempfile

    import pandas as pd

    from ...errors import LatentbookError

    messages = []
    with tempfile.TemporaryDirectory() as folder:
        scratch = Path(folder)
        (scratch / "notes.txt").write_text("not a capture")
        for call, run in _error_calls(scratch).items():
            try:
                run()
            except LatentbookError as error:
                text = str(error).replace(str(scratch) + "/", "")
                messages.append({"call": call, "error": type(error).__name__, "message": text})
    return pd.DataFrame(messages)


def error_classes() -> pd.DataFrame:
    """Every ``LatentbookError`` subclass of ``latentbook.errors``: its name, the builtin exception it also is and
    the first line of its docstring."""
    import inspect

    import pandas as pd

    from ... import errors

    classes = [
        c
        for _, c in inspect.getmembers(errors, inspect.isclass)
        if issubclass(c, errors.LatentbookError) and c is not errors.LatentbookError
    ]
    return pd.DataFrame(
        {
            "class": [c.__name__ for c in classes],
            "also a": [builtin_base(c) for c in classes],
            "meaning": [inspect.getdoc(c).splitlines()[0] for c in classes],
        }
    )


# --- reproduce on a GPU --------------------------------------------------------------------------------------------


def shipped_plans(gpu_mem_gib: float) -> dict[str, Plan]:
    """``plan.make_plan`` of every config that ships with latentbook (``plan.shipped_configs``) on one GPU of
    ``gpu_mem_gib`` GiB, at the book's settings."""
    from ...capturing import plan

    return {name: plan.make_plan(name, gpus=1, gpu_mem_gib=gpu_mem_gib) for name in plan.shipped_configs()}


def plan_table(plans: Mapping[str, Plan]) -> pd.DataFrame:
    """One row per plan: parameters (billions), depths, width, the weights on the GPU and the statistics on the host
    (GiB), the largest batch that fits and whether the book's batch does."""
    import pandas as pd

    rows = []
    for name, p in plans.items():
        held = p.accumulator_bytes()
        gpu = p.devices[0]
        rows.append(
            {
                "model": name,
                "parameters (B)": round(p.model.n_parameters / 1e9, 2),
                "depths": p.model.n_layers + 1,
                "d": p.model.d_model,
                "weights on GPU (GiB)": round(p.static_bytes(gpu) / 2**30 - held.get(gpu, 0) / 2**30, 1),
                "statistics on host (GiB)": round(held.get("host", 0) / 2**30, 1),
                "largest batch": p.max_batch_size,
                "fits": "yes" if p.fits else "no",
            }
        )
    return pd.DataFrame(rows)


def plan_glue(plans: Mapping[str, Plan], gpu_mem_gib: float) -> dict[str, object]:
    """What the GPU page quotes: how many configs ship (``n``), the GPU's memory (``mem``), the book's batch and
    length, Qwen2.5-32B's statistics on the host and its fit line, and ``TWO_GPU_MODEL``'s fit line on two GPUs."""
    from ...capturing import plan

    big = plans["Qwen/Qwen2.5-32B"]
    two_gpus = plan.make_plan(TWO_GPU_MODEL, gpus=2, gpu_mem_gib=gpu_mem_gib)
    return {
        "n": len(plans),
        "mem": gpu_mem_gib,
        "batch": big.batch_size,
        "length": big.max_length,
        "32b_host": round(big.accumulator_bytes().get("host", 0) / 2**30, 1),
        "32b_verdict": big.verdict,
        "70b_two": two_gpus.verdict,
    }


def claim_commands() -> pd.DataFrame:
    """Which claims of the paper need which models: each claim and the capture that tests it (``COMMANDS``)."""
    import pandas as pd

    return pd.DataFrame({"claim": list(COMMANDS), "command": list(COMMANDS.values())})
