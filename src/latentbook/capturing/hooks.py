"""Forward hooks that hand the residual stream at every depth to a callback.

Depth 0 is the input of the first layer (a forward *pre*-hook, so any embedding scaling is included);
depth ``l`` is the output of layer ``l``; the final norm, when there is one, is reported as depth ``"final"``.
Decoder layers of transformers 4.x return tuples and of 5.x plain tensors: both are handled.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch

from ..models.anatomy import Anatomy

DepthCallback = Callable[[int | str, torch.Tensor], None]


def _first(output) -> torch.Tensor:
    return output[0] if isinstance(output, (tuple, list)) else output


@contextmanager
def residual_hooks(anatomy: Anatomy, on_depth: DepthCallback) -> Iterator[None]:
    """Within the block, every forward of ``anatomy.base`` calls ``on_depth(depth, hidden)`` L+1 times (+ final)."""

    def before_first(module, args, kwargs):
        on_depth(0, args[0] if args else kwargs["hidden_states"])

    def after(depth: int):
        return lambda module, args, output: on_depth(depth, _first(output))

    handles = [anatomy.layers[0].register_forward_pre_hook(before_first, with_kwargs=True)]
    handles += [layer.register_forward_hook(after(i + 1)) for i, layer in enumerate(anatomy.layers)]
    if anatomy.final_norm is not None:
        handles.append(
            anatomy.final_norm.register_forward_hook(lambda m, a, out: on_depth("final", _first(out)))
        )
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()
