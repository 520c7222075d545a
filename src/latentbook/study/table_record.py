"""A table kept in ``results/`` by a long run, read back with whether the code it ran on is still the package's.

``load_table_record(results_dir, file, source_hash, script)``: the JSON ``{"provenance": ..., "table": [...]}``
that ``tools/provenance.table_main`` writes, as a ``TableRecord`` (the table, its provenance, ``current``: its
``source_hash`` is the code's now); a missing file is refused, naming the ``script`` that makes it. The slow
calibration families (``study.slow_calibration``) and the jump judge's power (``study.power_record``) are two.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InvalidInputError

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class TableRecord:
    """A table from ``results/``, its provenance, and ``current``: the code is unchanged since."""

    table: pd.DataFrame
    provenance: dict
    current: bool


def load_table_record(results_dir: str | Path, file: Path, source_hash: str, script: str) -> TableRecord:
    """``results_dir / file`` read back, ``current`` when its recorded source hash is ``source_hash``."""
    import pandas as pd

    path = Path(results_dir) / file
    if not path.is_file():
        raise InvalidInputError(f"{path} does not exist: run `python tools/{script}` to make it.")
    record = json.loads(path.read_text(encoding="utf-8"))
    provenance = record["provenance"]
    return TableRecord(
        table=pd.DataFrame(record["table"]),
        provenance=provenance,
        current=provenance.get("source_hash") == source_hash,
    )
