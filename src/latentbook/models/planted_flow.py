"""Planted models whose later blocks change how the stream flows: a transverse contraction, a contraction of every
direction, attention sharpening.

The end-to-end ground truth of the verdict's ``transverse_contraction`` and ``attention_cooling`` rows (chapter 8),
as ``models.planted`` is for the Omega and spectral rows: ``build(spec)`` takes the planted Llama model of
``spec.base`` (its shape, nuisances and any code written at ``l* = round(gamma L)``) and rebuilds the blocks from
depth ``l*`` on, so that the book's capture -> Jacobian-vector gains -> rows code judges a real forward pass.

What is planted (``FLOWS``), in every decoder layer ``i >= l*`` (the blocks mapping depth ``i`` to ``i + 1``):

- ``transverse``: the MLP becomes a linear writer ``-c r_i P⊥ x̂`` of its normalised input ``x̂ = h / rms(h)``,
  with ``P⊥`` the projector off ``U``, the top ``k`` directions of the unit-normalised states at depth ``l*``
  (the relevant subspace, as ``capturing.jacobian`` estimates it) and ``r_i`` the median RMS of the tokens
  entering layer ``i`` (measured after the layers below are rebuilt). For a token of typical size the block
  maps ``h -> (I - c P⊥) h``: the transverse gain ``1 - c`` relative to the relevant one (Theorem 6.1);
- ``uniform``: the same writer with ``P⊥ = I``, ``-c r_i x̂``: every direction shrinks alike. In a pre-norm
  block this is what a normalisation rescaling everything can write (a linear ``-c h`` would need ``rms(h)``,
  which the normalised input has lost): it shortens each token by a fixed length, so between RMS-normalised
  states the directions orthogonal to ``h`` keep their gain 1 and ``h``'s own direction gains ``1 / (1 - c)``;
- ``sharpening``: the query and key projections scaled by ``strength * sqrt(REFERENCE_WIDTH / d)`` (the logits
  by its square; at random initialisation their scale grows with ``d``, so a strength sharpens alike at every
  width): attention sharpens from ``l*`` on, its entropy falls;
- ``sink``: an attention sink (Xiao et al. 2023) drawn from ``l*`` on: each head's queries gain a bias ``a`` along
  the head dimension of RoPE's lowest frequency (turned by under 0.01 rad over 64 positions) and its keys read the
  sink coordinate (``planted.nuisance_dims``, which only the first token carries: the base needs ``sink``) there,
  so that every query's logit to the first token rises by ``strength`` nats (measured layer by layer, as the
  contraction's scale is) and another key's by ``strength`` times its share of that coordinate. The attention
  drawn to the sink grows; the rows over the other keys barely change: the raw entropy falls, the entropy
  without the sink key (``analysis.cooling``) should not;
- ``none``: the blocks as they are.

The linear writer needs a constant hidden activation: the configuration gains MLP biases (``mlp_bias``, zero in
every layer, so the base model's function is unchanged) and the writer's gate bias is 1 (``relu2(1) = 1``); the
sink's queries need attention biases (``attention_bias``, zero but where the sink is planted).
``save(spec, folder)`` writes the model as a folder that ``lb.load_model(folder)`` loads like any user's.
Introduced in: chapter 8 (the end-to-end calibration of the flow rows).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InvalidInputError
from . import planted

if TYPE_CHECKING:
    from .zoo import LoadedModel

FLOWS = ("transverse", "uniform", "sharpening", "sink", "none")
SPEC_FILE = "planted_flow.json"  # what was planted, beside config.json in a saved folder
N_TEXTS = 32  # the general prompts whose states set U and each writer's scale
REFERENCE_WIDTH = 256  # sharpening's strength is the factor on queries and keys at this width


@dataclass(frozen=True)
class FlowSpec:
    """A planted model (``base``) whose blocks from depth ``base.depth`` on carry ``flow`` of size ``strength``
    (the contraction ``c`` per block, or the factor on queries and keys), keeping a relevant subspace of
    ``k`` directions."""

    base: planted.PlantSpec
    flow: str = "transverse"
    strength: float = 0.1
    k: int = 10

    def __post_init__(self) -> None:
        if self.flow not in FLOWS:
            raise InvalidInputError(f"flow must be one of {FLOWS}, got {self.flow!r}.")
        if self.flow in ("transverse", "uniform") and not 0 < self.strength < 1:
            raise InvalidInputError(f"a contraction's strength c must lie in (0, 1), got {self.strength!r}.")
        if self.flow in ("sharpening", "sink") and not self.strength > 0:
            raise InvalidInputError(f"{self.flow}'s strength must be positive, got {self.strength!r}.")
        if self.flow == "sink" and not self.base.sink:
            raise InvalidInputError(
                "the sink flow draws attention to the first token's sink coordinate: give a base with sink=True."
            )
        if not (isinstance(self.k, int) and 1 <= self.k < self.base.d):
            raise InvalidInputError(f"k must be an integer in 1..d - 1 = {self.base.d - 1}, got {self.k!r}.")

    @property
    def name(self) -> str:
        flow = "" if self.flow == "none" else f"+{self.flow}{self.strength:.3g}"
        return self.base.name + flow


def build(spec: FlowSpec) -> LoadedModel:
    """The model of ``spec``, in memory and in eval mode (``save`` writes it as a folder)."""
    from ..prompts import load

    loaded = planted.build(spec.base)
    _add_mlp_biases(loaded.model)
    loaded.name = spec.name
    loaded.sha = json.dumps({"base": asdict(spec.base), **asdict(spec)}, sort_keys=True, default=str)
    start, layers = spec.base.depth, loaded.model.model.layers
    if spec.flow == "sharpening":
        import torch

        factor = spec.strength * np.sqrt(REFERENCE_WIDTH / spec.base.d)
        with torch.no_grad():
            for layer in layers[start:]:
                layer.self_attn.q_proj.weight.mul_(factor)
                layer.self_attn.k_proj.weight.mul_(factor)
    elif spec.flow in ("transverse", "uniform"):
        _plant_contraction(loaded, spec, load("general", limit=N_TEXTS))
    elif spec.flow == "sink":
        _plant_sink(loaded, spec, load("general", limit=N_TEXTS))
    return loaded


def relevant_subspace(states: np.ndarray, k: int) -> np.ndarray:
    """``U`` (``d x k``): the top ``k`` eigenvectors of ``sum_t x_t x_t^T``, ``x = h / ||h||`` over ``states``
    ``(n, d)`` (uncentred, every token weighing the same, as ``capturing.jacobian`` estimates it)."""
    x = states / np.linalg.norm(states, axis=1, keepdims=True)
    _, vectors = np.linalg.eigh(x.T @ x)
    return vectors[:, ::-1][:, :k]


def _add_mlp_biases(model) -> None:
    """Zero biases on every MLP projection (``config.mlp_bias``): the function is unchanged, the writer can
    use them, and a saved folder loads with them."""
    import torch

    model.config.mlp_bias = True
    for layer in model.model.layers:
        for linear in (layer.mlp.gate_proj, layer.mlp.up_proj, layer.mlp.down_proj):
            linear.bias = torch.nn.Parameter(torch.zeros(linear.out_features), requires_grad=False)


def _linear_writer(loaded: LoadedModel, index: int, matrix: np.ndarray) -> None:
    """Rebuild the MLP of layer ``index`` to write ``matrix @ (h / rms(h))``: ``d`` hidden units whose gate is
    the constant ``relu2(1) = 1`` (bias 1, no weights), up rows ``matrix / g`` (``g``: the layer's norm weight)
    and down columns the identity."""
    import torch

    layer = loaded.model.model.layers[index]
    mlp, d = layer.mlp, matrix.shape[0]
    scale = layer.post_attention_layernorm.weight.detach().double().numpy()
    with torch.no_grad():
        for linear in (mlp.gate_proj, mlp.up_proj, mlp.down_proj):
            linear.weight.zero_()
            linear.bias.zero_()
        mlp.gate_proj.bias[:d] = 1.0
        mlp.up_proj.weight[:d] = torch.from_numpy(matrix / scale[None, :])
        mlp.down_proj.weight[:, :d] = torch.eye(d)


def _plant_contraction(loaded: LoadedModel, spec: FlowSpec, texts: list[str]) -> None:
    """Rebuild layers ``l*`` to ``L - 1`` as contraction writers in one forward pass over ``texts``: a hook
    before each layer reads the tokens entering it (real tokens but each prompt's first, the sink), takes ``U``
    from the first of them (``transverse``) and ``r_i`` from each, and rebuilds the layer before it runs."""
    d, keep = spec.base.d, {}

    def rebuild(index: int):
        def hook(_module, args):
            h = args[0][keep["mask"]].double().numpy()
            if "projector" not in keep:
                relevant = relevant_subspace(h, spec.k) if spec.flow == "transverse" else np.zeros((d, 0))
                keep["projector"] = np.eye(d) - relevant @ relevant.T
            rms = float(np.median(np.sqrt((h**2).mean(1))))
            _linear_writer(loaded, index, -spec.strength * rms * keep["projector"])

        return hook

    batch = _tokens(loaded, texts)
    keep["mask"] = batch["attention_mask"].bool()
    keep["mask"][:, 0] = False
    layers = loaded.model.model.layers
    hooks = [layers[i].register_forward_pre_hook(rebuild(i)) for i in range(spec.base.depth, len(layers))]
    _one_pass(loaded, batch, hooks)


def _tokens(loaded: LoadedModel, texts: list[str]) -> dict:
    """The padded batch of ``texts`` the rebuilding pass reads (64 tokens at most, as the calibration captures)."""
    return loaded.tokenizer(texts, return_tensors="pt", padding=True, truncation=True, max_length=64)


def _one_pass(loaded: LoadedModel, batch: dict, hooks: list) -> None:
    """Run ``batch`` through the model once, without gradients, so that ``hooks`` rebuild the layers they are on;
    the hooks are removed after, whatever happens."""
    import torch

    try:
        with torch.no_grad():
            loaded.model(**batch)
    finally:
        for hook in hooks:
            hook.remove()


SINK_QUERY_BIAS = 1.0  # ``a``: the queries' shared component along the sink's head dimension


def _add_attention_biases(model) -> None:
    """Zero biases on every attention projection (``config.attention_bias``): the function is unchanged."""
    import torch

    model.config.attention_bias = True
    for layer in model.model.layers:
        attention = layer.self_attn
        for linear in (attention.q_proj, attention.k_proj, attention.v_proj, attention.o_proj):
            linear.bias = torch.nn.Parameter(torch.zeros(linear.out_features), requires_grad=False)


def _plant_sink(loaded: LoadedModel, spec: FlowSpec, texts: list[str]) -> None:
    """Rebuild the attention of layers ``l*`` to ``L - 1`` to draw ``spec.strength`` more nats to the first token,
    in one forward pass over ``texts``: a hook after each layer's input norm reads the first token's normalised
    sink coordinate ``s0`` (median over prompts) and sets, in every head, the query bias ``a`` on the head
    dimension ``j`` of RoPE's lowest frequency and the key weight ``strength * sqrt(head_dim) / (a s0)`` from the
    sink coordinate to ``j``: the first key's logit rises by ``strength`` before the layer attends."""
    import torch

    _add_attention_biases(loaded.model)
    config = loaded.model.config
    head_dim = config.hidden_size // config.num_attention_heads
    slow = head_dim // 2 - 1  # rotate_half pairs j with j + head_dim / 2; the last pair turns slowest
    sink = int(planted.nuisance_dims(spec.base)[1])

    def rebuild(index: int):
        attention = loaded.model.model.layers[index].self_attn

        def hook(_module, _args, output):
            first = float(np.median(output[:, 0, sink].double().numpy()))
            weight = spec.strength * np.sqrt(head_dim) / (SINK_QUERY_BIAS * first)
            with torch.no_grad():
                for head in range(config.num_attention_heads):
                    attention.q_proj.bias[head * head_dim + slow] = SINK_QUERY_BIAS
                for head in range(config.num_key_value_heads):
                    attention.k_proj.weight[head * head_dim + slow, sink] += weight

        return hook

    layers = loaded.model.model.layers
    depths = range(spec.base.depth, len(layers))
    hooks = [layers[i].input_layernorm.register_forward_hook(rebuild(i)) for i in depths]
    _one_pass(loaded, _tokens(loaded, texts), hooks)


def twin(spec: FlowSpec, same_flow: bool = False) -> FlowSpec:
    """The random twin: ``planted.twin_spec`` of the base and nothing in its blocks; with ``same_flow`` the twin
    that carries the same change (its own code of the base's kind, written where the base writes it, and the same
    flow: it contracts or sharpens as much)."""
    if not same_flow:
        return replace(spec, base=planted.twin_spec(spec.base), flow="none")
    return replace(spec, base=replace(planted.twin_spec(spec.base), plant=spec.base.plant))


def save(spec: FlowSpec, folder: str | Path) -> Path:
    """Write the model of ``spec`` to ``folder`` (config, safetensors, tokenizer and ``SPEC_FILE``),
    atomically: a temporary sibling folder, then a rename. An existing folder is refused."""
    import os
    import shutil

    folder = Path(folder)
    if folder.exists():
        raise InvalidInputError(f"{folder} already exists: choose a new folder for the planted model.")
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    loaded = build(spec)
    try:
        loaded.model.save_pretrained(tmp, safe_serialization=True)
        loaded.tokenizer.save_pretrained(tmp)
        record = {**asdict(spec), "base": asdict(spec.base)}
        (tmp / SPEC_FILE).write_text(json.dumps(record, indent=1), encoding="utf-8")
        os.rename(tmp, folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder
