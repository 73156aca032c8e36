"""mixprec._nest (tf.nest's flatten / pack_sequence_as / map_structure): dict keys in sorted
order, namedtuples and dicts rebuilt as their own types, size mismatches refused."""

import collections

import pytest

from mixprec import _nest

P = collections.namedtuple("P", "a b")


def test_flatten_orders_dict_keys_and_keeps_leaves():
    s = {"b": [1, (2, 3)], "a": P(4, {"z": 5, "y": 6})}
    assert _nest.flatten(s) == [4, 6, 5, 1, 2, 3]
    assert _nest.flatten(7) == [7]
    assert _nest.flatten([]) == []
    assert _nest.flatten([[], (), {}]) == []


def test_pack_sequence_as_rebuilds_the_types():
    s = {"b": [1, (2, 3)], "a": P(4, {"z": 5, "y": 6})}
    out = _nest.pack_sequence_as(s, [40, 60, 50, 10, 20, 30])
    assert out == {"b": [10, (20, 30)], "a": P(40, {"z": 50, "y": 60})}
    assert isinstance(out["a"], P) and list(out) == ["b", "a"]
    assert _nest.pack_sequence_as(7, (70,)) == 70


@pytest.mark.parametrize("flat", [[1], [1, 2, 3, 4]])
def test_pack_sequence_as_refuses_a_wrong_count(flat):
    with pytest.raises(ValueError, match="Structure had 3 elements, but flat_sequence had %d"
                       % len(flat)):
        _nest.pack_sequence_as([1, (2, 3)], flat)
    with pytest.raises(ValueError, match="Structure had 1 elements"):
        _nest.pack_sequence_as(5, flat + [0])


def test_map_structure():
    assert _nest.map_structure(lambda a, b: a + b, [1, (2,)], [10, (20,)]) == [11, (22,)]
    assert _nest.map_structure(str, 5) == "5"
    with pytest.raises(ValueError, match="same number"):
        _nest.map_structure(lambda a, b: a, [1, 2], [1])


def test_assert_same_structure_messages_are_tensorflows():
    import mixprec as tf
    tf.nest.assert_same_structure((1, 2), (3, 4))
    tf.nest.assert_same_structure((1, 2), [3, 4], check_types=False)
    cases = [
        ((1, 2), [3, 4], TypeError,
         "The two structures don't have the same nested structure.\n\nFirst structure: "
         "type=tuple str=(1, 2)\n\nSecond structure: type=list str=[3, 4]\n\nMore specifically:"
         " The two namedtuples don't have the same sequence type. First structure type=tuple "
         "str=(1, 2) has type tuple, while second structure type=list str=[3, 4] has type list"
         "\nEntire first structure:\n(., .)\nEntire second structure:\n[., .]"),
        ((1, (2, 3)), (1, 2), ValueError,
         "The two structures don't have the same nested structure.\n\nFirst structure: "
         "type=tuple str=(1, (2, 3))\n\nSecond structure: type=tuple str=(1, 2)\n\nMore "
         "specifically: Substructure \"type=tuple str=(2, 3)\" is a sequence, while "
         "substructure \"type=int str=2\" is not\nEntire first structure:\n(., (., .))\n"
         "Entire second structure:\n(., .)"),
        ({"a": 1}, {"b": 1}, ValueError,
         "The two structures don't have the same nested structure.\n\nFirst structure: "
         "type=dict str={'a': 1}\n\nSecond structure: type=dict str={'b': 1}\n\nMore "
         "specifically: The two dictionaries don't have the same set of keys. First structure "
         "has keys type=list str=['a'], while second structure has keys type=list str=['b']\n"
         "Entire first structure:\n{'a': .}\nEntire second structure:\n{'b': .}"),
        ((1, 2), (1, 2, 3), ValueError,
         "The two structures don't have the same nested structure.\n\nFirst structure: "
         "type=tuple str=(1, 2)\n\nSecond structure: type=tuple str=(1, 2, 3)\n\nMore "
         "specifically: The two structures don't have the same number of elements. First "
         "structure: type=tuple str=(1, 2). Second structure: type=tuple str=(1, 2, 3)\n"
         "Entire first structure:\n(., .)\nEntire second structure:\n(., ., .)"),
        (1, (1,), ValueError,
         "The two structures don't have the same nested structure.\n\nFirst structure: "
         "type=int str=1\n\nSecond structure: type=tuple str=(1,)\n\nMore specifically: "
         "Substructure \"type=tuple str=(1,)\" is a sequence, while substructure \"type=int "
         "str=1\" is not\nEntire first structure:\n.\nEntire second structure:\n(.,)"),
    ]
    for a, b, exc, text in cases:
        with pytest.raises(exc) as info:
            tf.nest.assert_same_structure(a, b)
        assert str(info.value) == text
