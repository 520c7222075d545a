"""Compute the book's shared work on every run (captures, gains, measurements, landmarks) before its pages execute,
one model per process: ``study.book_cache.warm_book``. ``tools/build_book.sh`` runs it; it can make a build faster,
never different (a model whose work fails is reported and left to the pages).

    .venv/bin/python tools/warm_book.py [--jobs 2]
"""

from __future__ import annotations

import argparse
import os
import time

for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[name] = "1"  # before numpy and torch load: each worker on one core

from latentbook.errors import InvalidInputError  # noqa: E402
from latentbook.study.book_cache import warm_book  # noqa: E402

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="models warmed at once (default: 2)")
    started = time.perf_counter()
    try:
        warm_book(parser.parse_args().jobs, report=lambda line: print(f"warm_book: {line}", flush=True))
    except InvalidInputError as exc:
        raise SystemExit(f"warm_book: {exc}") from None
    print(f"warm_book: done in {time.perf_counter() - started:.0f} s", flush=True)
