"""Chapter 1's tables (depth as time: capturing the residual stream) and the numbers its prose glues.

Each ``*_table`` returns the DataFrame the chapter shows; each ``*_glue`` the values the chapter glues under
the prefix ``ch1``, keyed by their names without it (``glue_frame("ch1", values)``).
Introduced in: chapter 1.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ...analysis import stream
from . import label_key

if TYPE_CHECKING:
    from ...capturing import Capture
    from ...models import LoadedModel

SMOLLM2, GEMMA3, MINILM = "smollm2-135m", "gemma3-270m", "minilm-l6"
FINAL_NORM_COLUMNS = (
    "rms_before",
    "rms_after",
    "omega_before",
    "omega_after",
    "max_abs_before",
    "max_abs_after",
)


def capture_table(captures: Mapping[str, Capture]) -> pd.DataFrame:
    """Per capture (index): its depths ``L + 1``, the step ``1 / L`` of its depth axis ``gamma = l / L`` and the
    tokens it saw."""
    return pd.DataFrame(
        {
            "depths L+1": [cap.n_depths for cap in captures.values()],
            "gamma step 1/L": [1 / cap.n_layers for cap in captures.values()],
            "tokens captured": [cap.n_tokens for cap in captures.values()],
        },
        index=list(captures),
    )


def capture_glue(captures: Mapping[str, Capture]) -> dict[str, object]:
    """SmolLM2's prompts, tokens, prompt length and state size in MiB (what ``state_dict`` holds), MiniLM's
    depths, and the layers of SmolLM2, Gemma 3 and MiniLM."""
    smollm2 = captures[SMOLLM2]
    state_bytes = sum(t.numel() * t.element_size() for t in smollm2.state_dict().values())
    return {
        "n_prompts": int(smollm2.provenance["n_prompts"]),
        "n_tokens": int(smollm2.n_tokens),
        "max_length": int(smollm2.provenance["max_length"]),
        "minilm_depths": int(captures[MINILM].n_depths),
        "state_mb": float(state_bytes / 2**20),
        "smollm2_layers": int(smollm2.n_layers),
        "gemma_layers": int(captures[GEMMA3].n_layers),
        "minilm_layers": int(captures[MINILM].n_layers),
    }


def growth_glue(rms: Mapping[str, np.ndarray]) -> dict[str, float]:
    """``growth_<label>`` (``:`` written ``_``) per capture: the growth of its RMS coordinate from depth 0 to
    the last depth, ``RMS^(L) / RMS^(0)``."""
    return {f"growth_{name.replace(':', '_')}": float(values[-1] / values[0]) for name, values in rms.items()}


def step_glue(rms: np.ndarray, gamma: np.ndarray, key: str = "smollm2") -> dict[str, object]:
    """The largest layer-to-layer factor ``RMS^(l) / RMS^(l-1)`` after the first layer (``l >= 2``), the depth
    ``l`` where it happens and its ``gamma``, under the stem ``key``."""
    steps = rms[2:] / rms[1:-1]
    step = int(np.argmax(steps)) + 2
    return {
        f"{key}_step_layer": step,
        f"{key}_step_gamma": float(gamma[step]),
        f"{key}_step_factor": float(steps.max()),
    }


def embedding_scale_table(
    models: Mapping[str, LoadedModel], texts: Sequence[str], max_length: int, rms: Mapping[str, np.ndarray]
) -> pd.DataFrame:
    """Per model (index): its width ``d``, the embedding module's ``embed_scale`` (1 without one) beside
    ``sqrt(d)``, the RMS coordinate of the raw embedding rows of the tokens of ``texts`` (truncated to
    ``max_length``) and of the capture's depth 0 (``rms[name][0]``), and their ratio."""
    import torch

    rows = []
    for name, model in models.items():
        embedding = model.model.get_input_embeddings()
        encoded = model.tokenizer(texts, truncation=True, max_length=max_length)
        ids = torch.cat([torch.tensor(t) for t in encoded["input_ids"]])
        raw_rms = float(embedding.weight[ids].double().pow(2).mean().sqrt())
        rows.append(
            {
                "model": name,
                "d": model.d_model,
                "embed_scale (module)": float(getattr(embedding, "embed_scale", torch.tensor(1.0))),
                "sqrt(d)": float(np.sqrt(model.d_model)),
                "RMS of raw embedding rows": raw_rms,
                "RMS of depth 0 (capture)": float(rms[name][0]),
                "measured ratio": float(rms[name][0] / raw_rms),
            }
        )
    return pd.DataFrame(rows).set_index("model")


def embedding_scale_glue(scales: pd.DataFrame) -> dict[str, object]:
    """From ``embedding_scale_table``: Gemma 3's ``sqrt(d)``, ``d``, measured ratio and its square (the factor
    on covariance eigenvalues), and SmolLM2's measured ratio."""
    return {
        "gemma_sqrt_d": float(scales.loc[GEMMA3, "sqrt(d)"]),
        "gemma_d": int(scales.loc[GEMMA3, "d"]),
        "gemma_scale_ratio": float(scales.loc[GEMMA3, "measured ratio"]),
        "smollm2_scale_ratio": float(scales.loc[SMOLLM2, "measured ratio"]),
        "gemma_eig_factor": float(scales.loc[GEMMA3, "measured ratio"] ** 2),
    }


def relative_difference(a: np.ndarray, b: np.ndarray) -> float:
    """``||a - b|| / ||b||``."""
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def hidden_states_glue(hidden_states: Sequence, one: Capture) -> dict[str, object]:
    """One prompt's ``output_hidden_states`` (a tuple of ``(1, T, d)`` tensors) against a capture ``one`` of the
    same prompt, as token means: the relative difference of ``hidden_states[-1]`` from the capture's final-norm
    mean and from its depth-``L`` mean, of ``hidden_states[0]`` from depth 0, and the tuple's length."""
    last = hidden_states[-1][0].double().mean(0).numpy()
    return {
        "hs_vs_final": relative_difference(last, one.final_norm.moments.mean.numpy()),
        "hs_vs_layer_L": relative_difference(last, one.mean(one.n_layers)),
        "hs0_vs_depth0": relative_difference(hidden_states[0][0].double().mean(0).numpy(), one.mean(0)),
        "hs_count": len(hidden_states),
    }


def final_norm_table(captures: Mapping[str, Capture], names: Sequence[str]) -> pd.DataFrame:
    """Per capture of ``names`` (index): ``stream.final_norm_effect``, the last depth's RMS coordinate, mean Omega
    and largest ``|h_i|`` before and after the final norm."""
    return pd.DataFrame({name: stream.final_norm_effect(captures[name]) for name in names}).T


def final_norm_glue(effects: pd.DataFrame, names: Sequence[str] = (SMOLLM2, GEMMA3)) -> dict[str, float]:
    """``<run>_<column>`` (``chapters.label_key``: ``smollm2``, ``random_smollm2``) of ``final_norm_table`` for
    ``names``, before and after the final norm."""
    return {
        f"{label_key(name)}_{column}": float(effects.loc[name, column])
        for name in names
        for column in FINAL_NORM_COLUMNS
    }
