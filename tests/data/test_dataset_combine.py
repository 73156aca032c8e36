"""Dataset.zip, Dataset.concatenate, Dataset.reduce and len() messages as tf.data in
TensorFlow 2.21 (values recorded from TensorFlow)."""

import numpy as np
import pytest

import mixprec as tf

D = tf.data.Dataset
X = np.arange(10, dtype="float32").reshape(5, 2)
Y = np.arange(5)


def test_zip():
    assert [tuple(int(v) for v in e) for e in D.zip(D.range(3), D.range(5))] == \
        [(0, 0), (1, 1), (2, 2)]
    assert int(D.zip((D.range(3), D.range(5))).cardinality()) == 3
    assert int(D.zip((D.range(3), D.range(5).repeat())).cardinality()) == 3
    assert int(D.zip((D.range(3).repeat(), D.range(5).repeat())).cardinality()) == -1
    e = next(iter(D.zip({"a": D.range(2), "b": D.range(2)})))
    assert sorted(e) == ["a", "b"] and int(e["a"]) == 0 and e["b"].dtype == tf.int64
    with pytest.raises(TypeError, match=r"^Invalid input to `zip`\. Inputs are expected to be "
                                        r"\(nested\) structures of `tf.data.Dataset` objects "
                                        r"but encountered object of type <class 'int'>\.$"):
        D.zip((D.range(2), 3))


def test_concatenate_and_reduce():
    ds = D.from_tensor_slices((X, Y))
    assert len(list(ds.concatenate(ds))) == 10
    assert int(ds.concatenate(ds).cardinality()) == 10
    assert int(ds.concatenate(ds.repeat()).cardinality()) == -1
    total = D.range(5).reduce(np.int64(0), lambda s, v: s + v)
    assert total.dtype == tf.int64 and int(total) == 10
    first = ds.reduce(np.float32(0), lambda s, e: s + e[0][0])
    assert first.dtype == tf.float32 and float(first) == 20.0


def test_len_messages():
    ds = D.from_tensor_slices((X, Y))
    assert len(ds.batch(2)) == 3
    with pytest.raises(TypeError, match=r"^The dataset is infinite\.$"):
        len(ds.repeat())
    with pytest.raises(TypeError, match=r"^The dataset length is unknown\.$"):
        len(ds.filter(lambda a, b: b > 1))
