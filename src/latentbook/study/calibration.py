"""The slow calibration families as the book shows them: read from ``results/calibration/``, with whether the
code they ran on is still the code of the package (``analysis.calibration.slow_source_hash``).

``tools/calibrate_slow.py`` writes the file; chapter 8 calls ``slow_families()``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..analysis import calibration
from ..errors import InvalidInputError

if TYPE_CHECKING:
    import pandas as pd

SLOW_FILE = Path("calibration") / "slow_families.json"


@dataclass(frozen=True)
class SlowFamilies:
    """The confusion table of the slow families, its provenance, and ``current``: the code is unchanged since."""

    table: pd.DataFrame
    provenance: dict
    current: bool


def slow_families(results_dir: str | Path) -> SlowFamilies:
    """``results_dir / calibration / slow_families.json`` as a table (the columns of ``calibration.calibrate``)."""
    import pandas as pd

    path = Path(results_dir) / SLOW_FILE
    if not path.is_file():
        raise InvalidInputError(f"{path} does not exist: run `python tools/calibrate_slow.py` to make it.")
    record = json.loads(path.read_text(encoding="utf-8"))
    provenance = record["provenance"]
    return SlowFamilies(
        table=pd.DataFrame(record["table"]),
        provenance=provenance,
        current=provenance.get("source_hash") == calibration.slow_source_hash(),
    )
