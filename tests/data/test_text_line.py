"""tf.data.TextLineDataset (lines as string elements, as TensorFlow 2.21 reads them)."""

import gzip

import mixprec as tf


def test_text_line_dataset(tmp_path):
    p = tmp_path / "a.txt"
    p.write_bytes(b"hello world\nsecond line\r\n\nlast")
    ds = tf.data.TextLineDataset([str(p)])
    assert list(ds.as_numpy_iterator()) == [b"hello world", b"second line", b"", b"last"]
    assert ds.element_spec == tf.TensorSpec(shape=(), dtype=tf.string)
    assert [int(n) for n in ds.map(tf.strings.length).as_numpy_iterator()] == [11, 11, 0, 4]
    batches = list(ds.batch(2).map(tf.strings.upper).as_numpy_iterator())
    assert [b.tolist() for b in batches] == [[b"HELLO WORLD", b"SECOND LINE"], [b"", b"LAST"]]


def test_text_line_dataset_gzip(tmp_path):
    p = tmp_path / "b.txt.gz"
    p.write_bytes(gzip.compress(b"x\ny\n"))
    assert list(tf.data.TextLineDataset(str(p), compression_type="GZIP").as_numpy_iterator()) == \
        [b"x", b"y"]
