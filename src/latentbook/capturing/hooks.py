"""Forward hooks that hand the residual stream at every depth (or the chosen ones) to a callback.

Depth 0 is the input of the first layer (a forward *pre*-hook, so any embedding scaling is included);
depth ``l`` is the output of layer ``l``; the final norm, when there is one, is reported as depth ``"final"``.
Decoder layers of transformers 4.x return tuples and of 5.x plain tensors: both are handled.

With ``depths`` only those depths are hooked; with ``stop=True`` the hook of the last of them raises
``StopForward`` once the callback has run (as baukit's ``TraceDict(..., stop=True)`` does), so the layers
after it never run: the caller runs the forward inside ``stopping()``. Every architecture of
``models/anatomy.py`` runs its layers in order, once each, so stopping there loses nothing asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import torch

from ..models.anatomy import Anatomy

DepthCallback = Callable[[int | str, torch.Tensor], None]


class StopForward(Exception):
    """Raised by the hook of the last requested depth to end the forward there (caught by ``stopping``)."""


def _first(output) -> torch.Tensor:
    return output[0] if isinstance(output, (tuple, list)) else output


@contextmanager
def stopping() -> Iterator[None]:
    """Run a forward that a ``residual_hooks(..., stop=True)`` hook may end early."""
    try:
        yield
    except StopForward:
        pass


@contextmanager
def residual_hooks(
    anatomy: Anatomy,
    on_depth: DepthCallback,
    depths: Sequence[int] | None = None,
    final: bool = True,
    stop: bool = False,
) -> Iterator[None]:
    """Within the block, every forward of ``anatomy.base`` calls ``on_depth(depth, hidden)`` at each depth of
    ``depths`` (default: ``0..L``) in order, then at ``"final"`` when ``final`` and the model has a final norm.

    ``stop=True`` ends the forward (``StopForward``) after the last of ``depths`` when nothing later is
    asked for (no ``"final"``, and the last depth is before ``L``).
    """
    n_layers = len(anatomy.layers)
    wanted = sorted(set(range(n_layers + 1) if depths is None else depths))
    final = final and anatomy.final_norm is not None
    last = wanted[-1] if stop and not final and wanted[-1] < n_layers else None

    def report(depth: int, hidden: torch.Tensor) -> None:
        on_depth(depth, hidden)
        if depth == last:
            raise StopForward

    def before_first(module, args, kwargs):
        report(0, args[0] if args else kwargs["hidden_states"])

    def after(depth: int):
        return lambda module, args, output: report(depth, _first(output))

    handles = []
    if 0 in wanted:
        handles.append(anatomy.layers[0].register_forward_pre_hook(before_first, with_kwargs=True))
    handles += [anatomy.layers[d - 1].register_forward_hook(after(d)) for d in wanted if d > 0]
    if final:
        handles.append(
            anatomy.final_norm.register_forward_hook(lambda m, a, out: on_depth("final", _first(out)))
        )
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()
