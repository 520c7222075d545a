"""Calibrate the verdict rows end to end on planted models (``study.planted_calibration``) and keep the records in
``results/calibration/planted_models.json`` with their provenance, for chapter 8 to show::

    .venv/bin/python tools/calibrate_planted.py --jobs 2              # 74 cases per family (1.7-2.7 hours, 2 cores)
    .venv/bin/python tools/calibrate_planted.py --n-cases 2 --out /tmp/smoke.json    # a smoke test

Every finished case is kept in ``planted_models.json.partial.jsonl`` beside the output: a run that is killed
carries on from it when started again with the same code and seed. 74 cases is the fewest whose Wilson 95 % upper bound reaches the 5 % target with no false "holds". Rerun it
whenever planting, capture, an Omega or spectral estimator, a judge or the rows change: the file records
``planted_calibration.source_hash()`` of the code it ran on, and chapter 8 says so when the code has changed.
"""

from __future__ import annotations

from provenance import calibration_main

from latentbook.study import planted_calibration


def main() -> None:
    calibration_main(
        planted_calibration, "calibrate_planted.py", __doc__, capture=planted_calibration.CAPTURE
    )


if __name__ == "__main__":
    main()
