"""The controlled test of chapter 7: a ladder of small Llama models trained here on multi-hop variable binding.

``task`` (the seeded program generator and its tokenizer), ``train`` (the ladder and its fixed budget),
``store`` (``ladder:<rung>`` names, sha256-checked), ``measure`` (capability and the diagnostics).
"""
