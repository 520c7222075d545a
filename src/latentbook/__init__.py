"""latentbook: capture the residual stream of transformers layer by layer and test how it changes with depth.

    import latentbook as lb
    model = lb.load_model("smollm2-135m")
    cap = lb.capture(model, lb.prompts.load("general"))
    cap.gamma, cap.omega_mean(), cap.eigvals(10)

Wings, in the one direction data flows (``tests/test_imports.py`` keeps it so):

- ``models``: load a model by name or folder (the zoo, random twins, planted models with a known phase);
- ``capturing``: stream per-depth statistics through a forward pass into a ``Capture`` file;
- ``analysis``: estimators on captures and token vectors (Omega, spectra, transitions, landmarks), no I/O;
- ``study``: the book's runs, their measurements, the verdict rows and the calibrations of their judges;
- ``view``: figures and widgets;
- beside them: ``ladder`` (the trained ladder of chapter 7), ``prompts``, ``course`` (the labs) and ``cli``.
"""

from __future__ import annotations

import importlib
from typing import Any

from . import ladder as _ladder  # noqa: F401  (registers the ladder: names with the zoo)
from ._version import __version__
from .capturing import Capture, capture, load_capture
from .errors import (
    CaptureFileError,
    CheckpointMismatchError,
    IntegrityError,
    InvalidInputError,
    LatentbookError,
    ModelUnavailableError,
    NonFiniteActivationError,
    UnknownModelError,
    UnsafePathError,
    UntrustedCodeError,
)
from .models import LoadedModel, load_model, models

# Imported on first use, so `import latentbook` stays light (no scipy, sklearn or matplotlib until needed).
_LAZY: dict[str, str] = {
    "prompts": "latentbook.prompts",
    "synthetic": "latentbook.analysis.synthetic",
    "mp_law": "latentbook.analysis.mp_law",
    "bulk_fit": "latentbook.analysis.bulk_fit",
    "ranks": "latentbook.analysis.ranks",
    "spectra": "latentbook.analysis.spectra",
    "transition": "latentbook.analysis.transition",
    "thermo": "latentbook.analysis.thermo",
    "stream": "latentbook.analysis.stream",
    "confounds": "latentbook.analysis.confounds",
    "flow": "latentbook.analysis.flow",
    "classes": "latentbook.analysis.classes",
    "omega_analysis": "latentbook.analysis.omega",
    "omega_profiles": "latentbook.analysis.omega_profiles",
    "standardisation": "latentbook.analysis.standardisation",
    "bimodality": "latentbook.analysis.bimodality",
    "plots": "latentbook.view.plots",
    "widgets": "latentbook.view.widgets",
    "course": "latentbook.course",
}
_LAZY_FUNCTIONS: dict[str, tuple[str, str]] = {
    "omega": ("latentbook.analysis.omega", "omega"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module = importlib.import_module(_LAZY[name])
        globals()[name] = module
        return module
    if name in _LAZY_FUNCTIONS:
        module_name, attribute = _LAZY_FUNCTIONS[name]
        value = getattr(importlib.import_module(module_name), attribute)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'latentbook' has no attribute {name!r}")


__all__ = [
    "__version__",
    "Capture",
    "CaptureFileError",
    "CheckpointMismatchError",
    "IntegrityError",
    "InvalidInputError",
    "LatentbookError",
    "LoadedModel",
    "ModelUnavailableError",
    "NonFiniteActivationError",
    "UnknownModelError",
    "UnsafePathError",
    "UntrustedCodeError",
    "capture",
    "load_capture",
    "load_model",
    "models",
    *_LAZY,
    *_LAZY_FUNCTIONS,
]
