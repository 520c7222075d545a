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


def modules_run(call) -> set[str]:
    """The modules of the package (``latentbook.x.y``) whose code runs while ``call()`` does (``sys.settrace``)."""
    import sys

    package = os.path.dirname(lb.__file__)
    ran = set()

    def tracer(frame, event, arg):
        if frame.f_code.co_filename.startswith(package):
            ran.add(frame.f_code.co_filename)

    sys.settrace(tracer)
    try:
        call()
    finally:
        sys.settrace(None)
    relative = (os.path.relpath(f, package)[: -len(".py")].replace(os.sep, ".") for f in ran)
    return {"latentbook." + name.removesuffix(".__init__") for name in relative}


@pytest.fixture(scope="session")
def deep_ladder_root(tmp_path_factory):
    """A ladder folder with one ten-layer rung (``l10-d16``, two training steps): enough depths for the Omega jump
    fit and the interior landmarks; ``LATENTBOOK_LADDER_DIR`` must point at it to load ``ladder:l10-d16``."""
    from latentbook.ladder import folders, task, train

    deep = train.Rung("l10-d16", 10, 16)
    config = train.TrainConfig(steps=2, batch_size=8, warmup=1, eval_every=2, n_eval=8, lr=1e-2)
    model, log = train.train(deep, task.TaskSpec(), config, progress=False, threads=None)
    root = tmp_path_factory.mktemp("deep-ladder")
    folders.save_rung(model, log, task.TaskSpec(), root / deep.name)
    return root


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
