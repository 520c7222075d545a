"""The cheap checks of a capture's settings, made before any model work (the CLI makes them before loading).

``check_settings``: batch size, length, sample sizes, precision. ``parse_depths`` / ``resolve_depths``: which
depths a capture keeps (``DEPTHS_RULE`` says how they are written).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np

from ..errors import InvalidInputError

DEPTHS_RULE = (
    "depths are either all depth indices l in 0..L (integers: 0,7,14; negative ones count from L: -1 is L) "
    "or all gamma fractions in [0, 1] (with a decimal point: 0.25,0.5,1.0), each taken to the nearest depth "
    "l = round(gamma L); one kind per request"
)
_INDEX = re.compile(r"[+-]?\d+")
_FRACTION = re.compile(r"[+-]?(\d+\.\d*|\.\d+|\d+(\.\d*)?[eE][+-]?\d+)")


def parse_depths(spec) -> tuple[str, list] | None:
    """The syntax of a depths request, checked without a model: ``None`` (every depth, also for ``"all"``),
    ``("index", [l, ...])`` or ``("gamma", [g, ...])``.

    ``spec`` is a sequence (ints: depth indices; floats: gamma fractions) or a comma-separated string
    (``"0,7,14"``: indices; ``"0.25,0.5"``: fractions, told apart by the decimal point). Mixed kinds, an empty
    request, repeated entries and fractions outside [0, 1] are refused with the fix (``DEPTHS_RULE``).

    Parameters
    ----------
    spec : sequence, str or None
        The request: None or ``"all"``, a sequence of ints or of floats, or a comma-separated string.

    Returns
    -------
    tuple of (str, list) or None
        ``("index", [l, ...])`` or ``("gamma", [g, ...])`` in the order given; None for every depth.

    Raises
    ------
    InvalidInputError
        For a request that is empty, mixes kinds, repeats an entry, holds something else than numbers or a
        fraction outside [0, 1].

    Examples
    --------
    >>> from latentbook.capturing.capture import parse_depths
    >>> parse_depths("0,7,14"), parse_depths("0.25,0.5"), parse_depths([0, -1]), parse_depths("all")
    (('index', [0, 7, 14]), ('gamma', [0.25, 0.5]), ('index', [0, -1]), None)
    >>> parse_depths([0, 0.5])
    Traceback (most recent call last):
    ...
    latentbook.errors.InvalidInputError: depths=[0, 0.5] mixes depth indices (integers) and gamma fractions ...
    """
    if spec is None:
        return None
    if isinstance(spec, str):
        text = spec.strip()
        if text.lower() == "all":
            return None
        items: list = []
        for part in text.split(","):
            part = part.strip()
            if _INDEX.fullmatch(part):
                items.append(int(part))
            elif _FRACTION.fullmatch(part):
                items.append(float(part))
            else:
                raise InvalidInputError(
                    f"depths={spec!r}: {part!r} is neither a depth index nor a gamma fraction; {DEPTHS_RULE}."
                )
    elif isinstance(spec, (Sequence, np.ndarray)):
        items = list(np.asarray(spec).tolist()) if isinstance(spec, np.ndarray) else list(spec)
    else:
        raise InvalidInputError(
            f"depths must be a list or a comma-separated string, got {spec!r}; {DEPTHS_RULE}."
        )
    if not items:
        raise InvalidInputError(
            f"depths={spec!r} asks for no depth: {DEPTHS_RULE} (or None for every depth)."
        )
    kinds = set()
    for item in items:
        if isinstance(item, (bool, np.bool_)):
            kinds.add("bad")
        elif isinstance(item, (int, np.integer)):
            kinds.add("index")
        elif isinstance(item, (float, np.floating)):
            kinds.add("gamma")
        else:
            kinds.add("bad")
    if "bad" in kinds:
        raise InvalidInputError(f"depths={spec!r} holds an entry that is not a number; {DEPTHS_RULE}.")
    if len(kinds) > 1:
        raise InvalidInputError(
            f"depths={spec!r} mixes depth indices (integers) and gamma fractions (with a decimal point), which "
            "is ambiguous (is 1 the first layer's output or gamma = 1?). Write all as indices (0,14,28) or all as "
            "fractions (0.0,0.5,1.0)."
        )
    kind = kinds.pop()
    values = [int(v) for v in items] if kind == "index" else [float(v) for v in items]
    if kind == "gamma":
        outside = [v for v in values if not (math.isfinite(v) and 0.0 <= v <= 1.0)]
        if outside:
            raise InvalidInputError(
                f"depths={spec!r}: gamma fractions lie in [0, 1] (gamma = l/L), got {outside[0]!r}. For depth "
                f"index l write the integer l (all entries as integers)."
            )
    repeated = sorted({v for v in values if values.count(v) > 1})
    if repeated:
        raise InvalidInputError(f"depths={spec!r} names {repeated[0]!r} twice: list each depth once.")
    return kind, values


def resolve_depths(spec, n_layers: int, model: str = "the model") -> np.ndarray | None:
    """The depths ``0..L`` a request names (ascending), or ``None`` when it names every depth.

    An index outside ``-(L+1)..L``, a fraction half-way between two depths (``gamma L`` ends in ``.5``: which
    one is meant?) and two entries giving the same depth are refused, naming the fix.

    Parameters
    ----------
    spec : sequence, str, tuple or None
        A request as ``parse_depths`` reads it, or its ``parse_depths`` result.
    n_layers : int
        The model's layer count ``L``.
    model : str
        How messages name the model.

    Returns
    -------
    numpy.ndarray or None
        The int64 depths named, ascending (negative indices taken from ``L``, fractions to the nearest depth
        ``round(gamma L)``); None when they are every depth ``0..L``.

    Raises
    ------
    InvalidInputError
        For a bad request, an index out of range, a fraction half-way between two depths or a depth named twice.

    Examples
    --------
    >>> from latentbook.capturing.capture import resolve_depths
    >>> resolve_depths("0.25,0.5", 28), resolve_depths([-1, 0], 28), resolve_depths("0.2,1.0", 30)
    (array([ 7, 14]), array([ 0, 28]), array([ 6, 30]))
    >>> resolve_depths([0, 1, 2], 2) is None  # every depth of a 2-layer model
    True
    >>> resolve_depths([3], 2, "random:llama-tiny")
    Traceback (most recent call last):
    ...
    latentbook.errors.InvalidInputError: Depth 3 is out of range: random:llama-tiny has depths 0..2 ...
    """
    parsed = parse_depths(spec) if not isinstance(spec, tuple) else spec
    if parsed is None:
        return None
    kind, values = parsed
    if kind == "index":
        outside = [v for v in values if not -(n_layers + 1) <= v <= n_layers]
        if outside:
            raise InvalidInputError(
                f"Depth {outside[0]} is out of range: {model} has depths 0..{n_layers} ({n_layers} layers; "
                f"negative depths count from the end, -1 is {n_layers}). Ask for depths in 0..{n_layers}, or "
                "gamma fractions such as 0.25,0.5."
            )
        chosen = [v % (n_layers + 1) for v in values]
        names = {c: f"index {v}" for v, c in zip(values, chosen)}
    else:
        chosen = []
        names = {}
        for g in values:
            x = g * n_layers
            if abs(x - math.floor(x) - 0.5) < 1e-9:
                low = math.floor(x)
                raise InvalidInputError(
                    f"gamma {g} x {n_layers} layers of {model} = {x:g} lies half-way between depths {low} and "
                    f"{low + 1}: ask for one of them by index (e.g. --depths {low}), or another fraction."
                )
            depth = int(math.floor(x + 0.5))
            if depth in names:
                raise InvalidInputError(
                    f"{names[depth]} and gamma {g} both give depth {depth} of {model} (L = {n_layers}), so it "
                    "would be named twice: list each depth once."
                )
            names[depth] = f"gamma {g}"
            chosen.append(depth)
    if len(set(chosen)) != len(chosen):
        depth = next(c for c in chosen if chosen.count(c) > 1)
        raise InvalidInputError(
            f"depths={values!r} names depth {depth} of {model} twice (negative indices count from the end): "
            "list each depth once."
        )
    held = np.array(sorted(chosen), dtype=np.int64)
    return None if len(held) == n_layers + 1 else held


def _positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise InvalidInputError(f"{name} must be a positive integer, got {value!r}.")
    return int(value)


def check_flags(**flags) -> None:
    """Each of ``flags`` a boolean (``True``/``False``, numpy's too): a string such as ``"no"`` is truthy to
    Python and would switch the option on."""
    wrong = {name: value for name, value in flags.items() if not isinstance(value, (bool, np.bool_))}
    if wrong:
        raise InvalidInputError(
            f"{', '.join(f'{name}={value!r}' for name, value in wrong.items())}: give True or False "
            "(a string such as 'no' would count as True)."
        )


def check_path(value, name: str) -> None:
    """``value`` names a file: a ``str`` or ``os.PathLike`` (``Path``), not a number or an open file."""
    import os

    if isinstance(value, (bytes, bool)) or not isinstance(value, (str, os.PathLike)):
        raise InvalidInputError(
            f"{name} must be a path (str or pathlib.Path), got {type(value).__name__} {value!r}."
        )


def check_settings(
    *, max_length, batch_size, checkpoint_every, precision, n_vectors=512, n_omega_samples=4096
) -> dict[str, int | str]:
    """The numeric settings of a capture, checked (cheap: call it before loading a model).

    Parameters
    ----------
    max_length : int
        Tokens per prompt, at least 2.
    batch_size, checkpoint_every, n_vectors, n_omega_samples : int
        Positive integers: prompts per batch, batches between checkpoints, reservoir sizes.
    precision : str
        ``"float32"`` or ``"float64"``.

    Returns
    -------
    dict
        The settings by name, the integers as Python ints.

    Raises
    ------
    InvalidInputError
        For the first setting out of range or of the wrong type (a bool is not an integer).

    Examples
    --------
    >>> from latentbook.capturing.capture import check_settings
    >>> check_settings(max_length=128, batch_size=16, checkpoint_every=1, precision="float32")
    {'batch_size': 16, 'checkpoint_every': 1, 'n_vectors': 512, 'n_omega_samples': 4096, 'max_length': 128,
     'precision': 'float32'}
    >>> check_settings(max_length=1, batch_size=16, checkpoint_every=1, precision="float32")
    Traceback (most recent call last):
    ...
    latentbook.errors.InvalidInputError: max_length must be an integer >= 2, got 1.
    """
    sizes = dict(
        batch_size=batch_size,
        checkpoint_every=checkpoint_every,
        n_vectors=n_vectors,
        n_omega_samples=n_omega_samples,
    )
    checked: dict[str, int | str] = {name: _positive_int(name, value) for name, value in sizes.items()}
    if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 2:
        raise InvalidInputError(f"max_length must be an integer >= 2, got {max_length!r}.")
    if precision not in ("float32", "float64"):
        raise InvalidInputError(f"precision must be 'float32' or 'float64', got {precision!r}.")
    return {**checked, "max_length": max_length, "precision": precision}
