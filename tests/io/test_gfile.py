"""tf.io.gfile on local files with TensorFlow's error classes, and TFRecord files that
TensorFlow's readers accept (framing recorded from TensorFlow 2.21)."""

import os

import pytest

import mixprec as tf


def test_gfile_round_trip_and_listing(tmp_path):
    d = os.path.join(str(tmp_path), "a", "b")
    tf.io.gfile.makedirs(d)
    p = tf.io.gfile.join(d, "x.txt")
    with tf.io.gfile.GFile(p, "w") as f:
        f.write("hello\nworld\n")
    with tf.io.gfile.GFile(p) as f:
        assert f.size() == 12 and f.readline() == "hello\n" and f.read() == "world\n"
    assert tf.io.gfile.exists(p) and tf.io.gfile.isdir(d) and not tf.io.gfile.isdir(p)
    assert tf.io.gfile.listdir(d) == ["x.txt"]
    assert tf.io.gfile.glob(os.path.join(d, "*.txt")) == [p]
    tf.io.gfile.copy(p, p + ".bak")
    with pytest.raises(tf.errors.AlreadyExistsError):
        tf.io.gfile.copy(p, p + ".bak")
    tf.io.gfile.rename(p + ".bak", p + ".old")
    assert tf.io.gfile.stat(p).length == 12
    assert [w[2] for w in tf.io.gfile.walk(d)] == [["x.txt", "x.txt.old"]]
    tf.io.gfile.remove(p + ".old")
    tf.io.gfile.rmtree(os.path.join(str(tmp_path), "a"))
    assert not tf.io.gfile.exists(d)


def test_gfile_errors(tmp_path):
    with pytest.raises(tf.errors.NotFoundError):
        tf.io.gfile.GFile(os.path.join(str(tmp_path), "nope")).read()
    with pytest.raises(tf.errors.NotFoundError):
        tf.io.gfile.listdir(os.path.join(str(tmp_path), "nope"))
    with pytest.raises(tf.errors.NotFoundError):
        tf.io.gfile.remove(os.path.join(str(tmp_path), "nope"))
    with pytest.raises(tf.errors.UnimplementedError, match="gs"):
        tf.io.gfile.exists("gs://bucket/x")


def test_tfrecords(tmp_path):
    p = os.path.join(str(tmp_path), "r.tfrecord")
    with tf.io.TFRecordWriter(p) as w:
        w.write(b"abc")
        w.write("de")
    # TensorFlow 2.21 wrote these bytes for a file with the one record b"abc"
    assert open(p, "rb").read()[:19].hex() == "0300000000000000b099490e6162636e57f121"
    assert list(tf.io.tf_record_iterator(p)) == [b"abc", b"de"]
    data = bytearray(open(p, "rb").read())
    data[13] ^= 1
    open(p, "wb").write(bytes(data))
    with pytest.raises(tf.errors.DataLossError):
        list(tf.io.tf_record_iterator(p))
