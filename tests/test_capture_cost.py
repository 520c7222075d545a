"""The capture's arithmetic floor (``capturing.cost``): the block triangle it counts is the one ``Moments``
computes, and the layer's multiply-adds are those a forward pass of a Llama layer does."""

from __future__ import annotations

import pytest
import torch

from latentbook.capturing import cost
from latentbook.capturing.accumulators import Moments
from latentbook.capturing.plan import read_config


@pytest.mark.parametrize("d", [64, 255, 256, 576, 1000, 1024, 2048])
def test_the_counted_triangle_is_the_accumulators(d):
    """Every entry of the upper triangle is computed once, blocks of ``Moments``' width: the count equals the
    entries written on or above the block diagonal."""
    assert cost.gram_block(d) == Moments(d, torch.device("cpu"))._block
    b = cost.gram_block(d)
    written = torch.zeros(d, d, dtype=torch.bool)
    for i in range(0, d, b):
        written[i : i + b, i:] = True
    assert cost.gram_macs(d) == int(written.sum())
    assert d * (d + 1) / 2 <= cost.gram_macs(d) <= d * d
    if d >= 256:
        assert cost.gram_macs(d) < 0.65 * d * d  # 5/8 of the product, or 9/16 from 1024


def test_a_layers_multiply_adds_are_a_forward_pass_of_it():
    """Count the products of a real Llama layer with torch's flop counter: one multiply-add is two flops."""
    from torch.utils.flop_counter import FlopCounterMode
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding

    config = LlamaConfig(
        hidden_size=256,
        intermediate_size=688,
        num_attention_heads=4,
        num_key_value_heads=2,
        num_hidden_layers=1,
    )
    config._attn_implementation = "eager"
    layer, rotary = LlamaDecoderLayer(config, 0).eval(), LlamaRotaryEmbedding(config)
    context = 32
    h = torch.randn(1, context, 256)
    positions = torch.arange(context)[None]
    mask = torch.full((context, context), float("-inf")).triu(1)[None, None]
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        layer(h, attention_mask=mask, position_embeddings=rotary(h, positions), position_ids=positions)
    flops_per_token = counter.get_total_flops() / context
    model = type("Model", (), {})()
    model.d_model, model.n_heads, model.n_kv_heads, model.head_dim = 256, 4, 2, 64
    model.intermediate_size = 688
    # eager attention multiplies by every key, masked or not: t = context, not (context + 1) / 2
    counted = cost.layer_macs(model, 2 * context - 1)
    assert 2 * counted == pytest.approx(flops_per_token, rel=1e-9)


def test_the_floor_of_the_benchmarked_models():
    """SmolLM2's 576-wide stream against its 1536-wide MLP: its Gram is near 6 % of a layer, so no capture with
    these products reaches 1.05 of the trunk; the 1B model's is near 4 %."""
    small = cost.capture_floor(read_config("smollm2-135m"), context=96)
    assert (small.n_layers, small.n_grams, small.gram) == (30, 32, 207_360)
    assert 1.05 < small.ratio < 1.07 and small.exact_ratio < small.ratio
    large = cost.capture_floor(read_config("random:llama-1b"), context=96)
    assert 1.03 < large.ratio < 1.05
    with pytest.raises(ValueError, match="positive"):
        cost.capture_floor(read_config("random:llama-1b"), context=0)
