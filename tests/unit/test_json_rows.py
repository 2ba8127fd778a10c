"""json_rows' values as the drivers hand them over: parsed exactly as json.loads parses them, whatever the text."""
from __future__ import annotations

import json

import pytest

from hmsproxy.store.sql.json_rows import as_dict, ordered_values, rows_of


@pytest.mark.parametrize("text", [
    '[[0, "2024-01-01"],[1, "0"]]',                       # MySQL/MariaDB's JSON_ARRAYAGG
    '[[0, "a"], [1, "b"]]',                                # PostgreSQL's json_agg
    '[[0,"a"],[1,"b"]]',                                   # SQLite's json_group_array
    ' [[0, "a"]]', '[[0, "a"]] ', '\n[[0, "a"]]\t',        # whitespace around the value
    '[[0, "\\u00e9\\"\\\\"], [1, null]]', '[]', '[[1, 2.5, true, -7]]',
])
def test_text_is_parsed_as_json_loads_parses_it(text):
    assert rows_of(text) == json.loads(text)
    assert rows_of(text.encode()) == json.loads(text)


@pytest.mark.parametrize("text", ['[[0, "a"]] x', '[[0, "a"]', '', 'x[]', '[[0, "a"]][]'])
def test_text_that_is_not_one_json_value_is_refused(text):
    with pytest.raises(json.JSONDecodeError):
        rows_of(text)


def test_null_and_decoded_values():
    assert rows_of(None) == []
    assert rows_of([[1, "b"], [0, "a"]]) == [[1, "b"], [0, "a"]]     # a driver that decodes JSON itself
    assert ordered_values('[[1, "b"], [0, "a"]]') == ["a", "b"]
    assert as_dict('[["k", null], ["j", "v"]]') == {"k": "", "j": "v"}
