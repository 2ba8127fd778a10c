"""EncodedList behaves as the list of the structs its pieces encode: length, indexes, slices, iteration."""
from __future__ import annotations

import pytest

from hmsproxy.idl import hms
from hmsproxy.idl.codec import EncodedList, decode, encode

PARTITIONS = [hms.Partition(values=[f"v{i}"], dbName="db", tableName="t", parameters={"i": str(i)})
              for i in range(7)]


def _encoded() -> EncodedList:
    pieces = []
    for part in PARTITIONS:   # two pieces per struct: its first byte, then the rest
        data = encode(part)
        pieces += [data[:1], data[1:]]
    return EncodedList(pieces, 2, lambda item: decode(hms.Partition, b"".join(item)))


@pytest.mark.parametrize("index", [0, 3, 6, -1, -7])
def test_an_index_decodes_the_struct_at_that_position(index):
    assert _encoded()[index] == PARTITIONS[index]


@pytest.mark.parametrize("index", [7, -8])
def test_an_index_past_either_end_is_an_index_error(index):
    with pytest.raises(IndexError):
        _encoded()[index]


@pytest.mark.parametrize("window", [slice(None), slice(2, 5), slice(-3, None), slice(None, None, 2),
                                    slice(None, None, -1), slice(5, 2), slice(1, 100)])
def test_a_slice_is_the_encoded_list_of_that_slice(window):
    sliced = _encoded()[window]
    assert isinstance(sliced, EncodedList)
    assert len(sliced) == len(PARTITIONS[window])
    assert list(sliced) == PARTITIONS[window]


def test_the_byte_size_is_that_of_the_pieces_unless_the_producer_says_it():
    assert _encoded().byte_size() == sum(len(encode(p)) for p in PARTITIONS)
    assert _encoded()[1:3].byte_size() == sum(len(encode(p)) for p in PARTITIONS[1:3])


def test_iteration_and_equality_follow_the_decoded_structs():
    assert list(_encoded()) == PARTITIONS
    assert _encoded() == PARTITIONS
    assert _encoded() != PARTITIONS[:-1]
