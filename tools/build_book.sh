#!/usr/bin/env bash
# Build the book into _build/html. Extra arguments go to `jupyter-book build`.
# The execution cache of jupyter-book is keyed on cell source only, so it is cleared whenever the package's
# source or a record in results/ changes; captures are cached separately, keyed on the same source hash (latentbook.capturing.cache).
# LATENTBOOK_BOOK_FRESH=1 executes everything from scratch (CI).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
source_hash=$($BIN/python -c "from latentbook.capturing.cache import package_source_hash; print(package_source_hash())")
# The records in results/ too: a page reads them, and jupyter-cache keys a page on its code cells alone.
source_hash="$source_hash $(find results -type f \( -name '*.json' -o -name '*.md' -o -name '*.csv' \) -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-64)"
mkdir -p _build
if [ "${LATENTBOOK_BOOK_FRESH:-0}" = 1 ] || [ "$(cat _build/.package-source-hash 2>/dev/null)" != "$source_hash" ]; then
  rm -rf _build/.jupyter_cache _build/.doctrees _build/html _build/jupyter_execute  # doctrees too: Sphinx must re-read every page
fi
if [ "${LATENTBOOK_BOOK_FRESH:-0}" = 1 ]; then
  export LATENTBOOK_CAPTURE_CACHE="$(mktemp -d)"
fi
$BIN/python tools/vendor_js.py
# No progress bars in the executed pages: tqdm's (the capture's, transformers' "Loading weights") and the Hub's.
# In a Jupyter kernel they would be saved as widget state and shown as frozen bars.
export TQDM_DISABLE=1 HF_HUB_DISABLE_PROGRESS_BARS=1
# The pages run LATENTBOOK_BOOK_JOBS at a time into the execution cache first (0: one after the other, in Sphinx),
# after the runs' shared captures and measurements, one model per process (tools/warm_book.py), which they all read.
if [ "${LATENTBOOK_BOOK_JOBS:-2}" != 0 ]; then
  $BIN/python tools/warm_book.py --jobs "${LATENTBOOK_BOOK_JOBS:-2}"
  PATH="$PWD/$BIN:$PATH" $BIN/python tools/execute_pages.py --jobs "${LATENTBOOK_BOOK_JOBS:-2}" --cache _build/.jupyter_cache
fi
PATH="$PWD/$BIN:$PATH" $BIN/jupyter-book build . "$@"
echo "$source_hash" > _build/.package-source-hash
# What the prose says about the glued numbers, checked over this build (tests/built_book.py).
LATENTBOOK_REQUIRE_BUILD=1 $BIN/python -m pytest -q -p no:cacheprovider tests/test_claims_*.py
echo "Book built: $PWD/_build/html/index.html"
