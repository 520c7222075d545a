"""Data frames as the book shows them (view.tables.present): no row numbers, no raw NaN or True/False, numbers
rounded, units in the column names, the dash explained."""

import numpy as np
import pandas as pd

from latentbook.view import tables


def test_numbers_round_and_small_ones_stay_visible():
    assert tables.number(0.123456) == "0.123"
    assert tables.number(7.5e-8) == "7.5e-08"
    assert tables.number(0.0) == "0.000"
    assert tables.number(np.int64(12)) == "12" and tables.number(True) == "yes"
    assert tables.number(2.5, decimals=1) == "2.5"


def test_present_shows_no_index_nan_or_booleans():
    frame = pd.DataFrame(
        {"run": ["a", "b"], "gamma": [0.4213, np.nan], "near 0.42": [True, False], "n": [3, 4]}
    )
    html = tables.present(frame, units={"gamma": "l/L"}, note="— : no landmark found").to_html()
    assert "NaN" not in html and "True" not in html and "False" not in html
    assert ">yes<" in html and ">no<" in html and ">—<" in html and ">0.421<" in html
    assert "gamma (l/L)" in html and "no landmark found" in html
    assert 'class="row_heading' not in html  # the 0, 1 row numbers are hidden


def test_present_takes_a_column_as_row_labels_and_per_column_decimals():
    frame = pd.DataFrame({"model": ["m1", "m2"], "x": [1.23456, 2.0], "y": [0.5, 0.25]})
    styler = tables.present(frame, index="model", decimals={"x": 1})
    html = styler.to_html()
    assert ">m1<" in html and 'class="row_heading' in html
    assert ">1.2<" in html and ">0.250<" in html
    assert "caption" not in html  # nothing missing, nothing to explain
