"""Calibrate the landmark row's judge on planted captures (``study.landmark_calibration``) and keep the records in
``results/calibration/landmarks.json`` with their provenance, for chapter 9 to show::

    .venv/bin/python tools/calibrate_landmarks.py --jobs 2              # 74 cases per family (a few minutes on 2 cores)
    .venv/bin/python tools/calibrate_landmarks.py --n-cases 2 --out /tmp/smoke.json    # a smoke test

74 cases is the fewest whose Wilson 95 % upper bound reaches the 5 % target with no false "holds". Rerun it
whenever the planted cases, a landmark estimator, the Omega fit or the judge change: the file records
``landmark_calibration.source_hash()`` of the code it ran on, and chapter 9 says so when the code has changed.
"""

from __future__ import annotations

from provenance import calibration_main

from latentbook.study import landmark_calibration


def main() -> None:
    calibration_main(
        landmark_calibration, "calibrate_landmarks.py", __doc__, depths=landmark_calibration.N_DEPTHS
    )


if __name__ == "__main__":
    main()
