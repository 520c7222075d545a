import importlib.util
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import pytest  # noqa: E402

import latentbook as lb  # noqa: E402

SHORT_PROMPTS = [
    "The cat sat on the mat.",
    "A quick brown fox jumps over the lazy dog near the river bank today.",
    "Hello",
    "Numbers such as 3, 14 and 159 appear in this sentence, with punctuation; and more!",
    "Depth acts like time in a transformer.",
]


@pytest.fixture(scope="session")
def tiny():
    """The 2-layer random-weight Llama (d=64): fast, and a real transformers model."""
    return lb.load_model("random:llama-tiny")


@pytest.fixture(scope="session")
def smollm2():
    return lb.load_model("smollm2-135m")


def load_benchmark(name: str):
    """The module of ``benchmarks/<name>.py`` (benchmarks are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(
        name, Path(__file__).resolve().parent.parent / "benchmarks" / f"{name}.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
