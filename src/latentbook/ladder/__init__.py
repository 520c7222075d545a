"""The controlled test of chapter 7: a ladder of small Llama models trained here on multi-hop variable binding.

``task`` (the seeded program generator and its tokenizer), ``train`` (the ladder and its fixed budget),
``store`` (``ladder:<rung>`` names, sha256-checked), ``measure`` (capability and the diagnostics of one
model), ``report`` (the whole ladder: measurements, rank correlations, verdict rows), ``figures``.
"""

from __future__ import annotations


def verdict_rows(path=None) -> list[dict]:
    """Rows for the verdict chapter, one per diagnostic (see ``report.verdict_rows``)."""
    from .report import verdict_rows as rows

    return rows(path)


__all__ = ["verdict_rows"]
