"""The logit lens: the next-token distribution read at every depth, and its divergence from the model's own.

``p_l = softmax(W_U norm(h_l))``: the model's final norm and unembedding (its output embeddings, with the final
logit soft-capping of the models that have one) applied to the residual stream at depth ``l`` (nostalgebraist
2020; the tuned lens of Belrose et al. 2023 adds a trained map per depth, which is not done here). At depth
``L`` this is the model's output. ``lens_kl`` returns ``KL(p_L || p_l) = sum_v p_L(v) (log p_L(v) - log p_l(v))``
per token and depth, in nats, from vectors already captured (a capture's token sample, ``Capture.vectors``): no
forward pass of the trunk, no logits kept beyond one chunk. The cost is the unembedding, ``V d`` multiply-adds per
token and depth (for SmolLM2 about 3.5 times a layer's), which is why it reads a sample of tokens and is not
streamed over every token of a capture. An encoder without a language-model head has no lens.
Introduced in: chapter 9 (other clocks of depth).
"""

from __future__ import annotations

import numpy as np
import torch

from ..errors import InvalidInputError
from ..models.zoo import LoadedModel


def lens_logits(loaded: LoadedModel, hidden: torch.Tensor) -> torch.Tensor:
    """The logits the model would output if ``hidden`` (residual vectors before the final norm, ``(..., d)``)
    were its last layer's output: final norm, output embeddings, soft-capping when configured."""
    head = loaded.model.get_output_embeddings() if loaded.kind == "causal" else None
    if head is None:
        raise InvalidInputError(
            f"{loaded.name} has no language-model head (an encoder), so it has no logit lens. "
            "Use a causal language model."
        )
    if loaded.anatomy.final_norm is not None:
        hidden = loaded.anatomy.final_norm(hidden)
    logits = head(hidden)
    cap = getattr(loaded.model.config, "final_logit_softcapping", None)
    return torch.tanh(logits / cap) * cap if cap else logits


def lens_kl(loaded: LoadedModel, vectors: np.ndarray | torch.Tensor, chunk: int = 64) -> np.ndarray:
    """``KL(p_L || p_l)`` in nats, shape ``(n_depths, n_tokens)``, for ``vectors`` of shape
    ``(n_depths, n_tokens, d)``: the same tokens at depths whose last is ``L`` (the model's output). Memory:
    two ``(chunk, V)`` float64 arrays at a time."""
    vectors = torch.as_tensor(np.asarray(vectors))
    if vectors.ndim != 3 or vectors.shape[-1] != loaded.d_model or vectors.shape[0] < 2:
        raise InvalidInputError(
            f"vectors must have shape (n_depths >= 2, n_tokens, {loaded.d_model}), got {tuple(vectors.shape)}."
        )
    if not torch.isfinite(vectors).all():
        raise InvalidInputError("vectors hold NaN or infinite values.")
    out = np.empty(vectors.shape[:2])
    with torch.inference_mode():
        for first in range(0, vectors.shape[1], chunk):
            block = vectors[:, first : first + chunk].to(loaded.device, loaded.dtype)
            final = torch.log_softmax(lens_logits(loaded, block[-1]).double(), dim=-1)  # (n, V)
            p_final = final.exp()
            neg_entropy = (p_final * final).sum(-1)  # sum_v p_L log p_L
            for depth in range(block.shape[0]):
                logits = lens_logits(loaded, block[depth]).double()
                # sum_v p_L log p_l = sum_v p_L z_l - logsumexp(z_l), since sum_v p_L = 1
                cross = torch.bmm(p_final[:, None, :], logits[:, :, None])[:, 0, 0] - torch.logsumexp(
                    logits, -1
                )
                out[depth, first : first + chunk] = (neg_entropy - cross).clamp_min(0).cpu().numpy()
    return out
