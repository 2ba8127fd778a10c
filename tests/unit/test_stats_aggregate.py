"""Decimals extrapolated by Hive go through a double and its Java text (Double.toString), then BigDecimal."""
from __future__ import annotations

import pytest

from hmsproxy.hive.stats_aggregate import java_double_text


@pytest.mark.parametrize("value, text", [
    (12.7, "12.7"), (100.0, "100.0"), (0.001, "0.001"), (0.0001, "1.0E-4"), (1e7, "1.0E7"), (9999999.5, "9999999.5"),
    (123456789.0, "1.23456789E8"), (-640.1990000000001, "-640.1990000000001"), (-6.75, "-6.75"), (0.0, "0.0"),
    (-2.5e-7, "-2.5E-7")])
def test_doubles_are_written_as_java_writes_them(value, text):
    assert java_double_text(value) == text
