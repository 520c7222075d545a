"""The controlled test of chapter 7: a ladder of small Llama models trained here on multi-hop variable binding.

``task`` (the seeded program generator and its tokenizer), ``train`` (the ladder and its fixed budget: one
rung's training), ``folders`` (a rung's or checkpoint's folder, written atomically with its ``SHA256SUMS``),
``jobs`` (the whole ladder, rung-seed by rung-seed), ``store`` (``ladder:<rung>`` names, sha256-checked),
``diagnostics`` (capability and the diagnostics of one model, and the hash of the code that measures them),
``rank_correlation`` (Spearman and partial Spearman across the rungs, and their verdicts), ``report`` (the whole
ladder: measurements, correlations, TCO judgements), ``along_training`` (capability against the diagnostics along the checkpoints of one
architecture, size held fixed), ``figures``; the verdict table reads its measurements in ``study.ladder_rows``.

``__all__`` names the public modules (import them as ``from latentbook.ladder import report, task``); ``folders``
and ``jobs`` serve ``latentbook train-ladder``. Importing the package only registers the ``ladder:`` names with
the zoo.
"""

from __future__ import annotations

from ..models.zoo import register_loader


def _load(name, dtype, device_map, trust_remote_code):
    from .store import load_ladder  # imported on first use: the ladder's training code is not light

    return load_ladder(name, dtype, device_map, trust_remote_code)


def _rows() -> list[dict]:
    from .store import model_table_rows

    return model_table_rows()


register_loader("ladder:", _load, _rows)

__all__ = [
    "along_training",
    "clustered",
    "diagnostics",
    "figures",
    "rank_correlation",
    "report",
    "store",
    "task",
    "train",
]
