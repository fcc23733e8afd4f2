"""Values as Java writes them: Double.toString (as Java 19 and later write it), a list,
a map and a record inside a CSV cell, and whole Arrow columns of them."""

from __future__ import annotations

import pyarrow as pa
import pytest

from flow.java_text import double_column, double_text, nested_column

# What Java 17's Double.toString printed for each (the shortest digits agree with
# Java 19's for these)
JAVA = [
    (1.0, "1.0"),
    (10.5, "10.5"),
    (7.0, "7.0"),
    (1e7, "1.0E7"),
    (9999999.5, "9999999.5"),
    (1234567.5, "1234567.5"),
    (0.001, "0.001"),
    (0.00012, "1.2E-4"),
    (1e-4, "1.0E-4"),
    (-2.5e-300, "-2.5E-300"),
    (123456.0, "123456.0"),
    (0.0, "0.0"),
    (-0.0, "-0.0"),
    (1.0 / 3.0, "0.3333333333333333"),
]


@pytest.mark.parametrize(("value", "text"), JAVA)
def test_a_double_is_written_as_java_writes_it(value, text):
    assert double_text(value) == text


def test_a_double_column_is_written_value_by_value_as_double_text():
    values = [value for value, _ in JAVA] + [None]
    assert double_column(pa.array(values, pa.float64())).to_pylist() == [text for _, text in JAVA] + [None]
    assert double_column(pa.array([2.5, 3.0], pa.float32())).to_pylist() == ["2.5", "3.0"]


def test_lists_maps_and_records_are_written_as_nifis_csv_writer_writes_them():
    assert nested_column(pa.array([["a", "b"], None, []])).to_pylist() == ["[a, b]", None, "[]"]
    assert nested_column(pa.array([[1.0, None, 2.5]])).to_pylist() == ["[1.0, null, 2.5]"]
    assert nested_column(pa.array([[True, False]])).to_pylist() == ["[true, false]"]
    assert nested_column(pa.array([{"x": 1, "s": "é"}])).to_pylist() == ['{"x":1,"s":"é"}']
    assert nested_column(pa.array([[("k", 1), ("j", 2)]], pa.map_(pa.string(), pa.int64()))).to_pylist() == [
        "{k=1, j=2}"
    ]
