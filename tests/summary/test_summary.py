"""tf.summary and the Keras TensorBoard callback write TensorBoard's event files: TFRecord
framing with masked CRC-32C, Event protos with TensorFlow 2's tensor summaries (plugin
'scalars' float32 scalars, 'histograms' (k, 3) float64 buckets, 'text' strings). The files
were checked once with TensorFlow 2.21's tf.compat.v1.train.summary_iterator; here a small
decoder reads the fields back."""

import glob
import os
import struct

import numpy as np
import pytest

import mixprec as tf
from mixprec import keras
from mixprec.summary import _events


def _fields(buf):
    """(field number, wire type, value) of one protobuf message."""
    pos, out = 0, []
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 2:
            n, pos = _varint(buf, pos)
            value, pos = buf[pos:pos + n], pos + n
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ValueError(wire)
        out.append((field, wire, value))
    return out


def _varint(buf, pos):
    shift = result = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _text_or_bytes(b):
    try:
        return b.decode()
    except UnicodeDecodeError:
        return bytes(b)


def _png_pixels(png):
    """Pixels of an 8-bit, non-interlaced, unfiltered-or-None-filtered PNG (as written)."""
    import zlib
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, {}
    while pos < len(png):
        n = struct.unpack(">I", png[pos:pos + 4])[0]
        kind, data = png[pos + 4:pos + 8], png[pos + 8:pos + 8 + n]
        assert struct.unpack(">I", png[pos + 8 + n:pos + 12 + n])[0] == \
            zlib.crc32(kind + data) & 0xFFFFFFFF
        chunks[kind] = chunks.get(kind, b"") + data
        pos += 12 + n
    w, h, depth, color = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    c = {0: 1, 4: 2, 2: 3, 6: 4}[color]
    raw = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), np.uint8).reshape(h, w * c + 1)
    assert depth == 8 and (raw[:, 0] == 0).all()
    return raw[:, 1:].reshape(h, w, c)


def _events_of(path):
    """[(step, {tag: (plugin, dtype, shape, value)})] of an event file, in order."""
    out = []
    for payload in _events.read_records(path):
        f = {n: v for n, _, v in _fields(payload)}
        step = f.get(2, 0)
        values = {}
        for n, _, v in _fields(payload):
            if n != 5:
                continue
            for _, _, val in _fields(v):
                vf = {k: x for k, _, x in _fields(val)}
                tag = vf[1].decode()
                meta = {k: x for k, _, x in _fields(vf[9])}
                plugin = {k: x for k, _, x in _fields(meta[1])}[1].decode()
                tensor = _fields(vf[8])
                dtype = [x for k, _, x in tensor if k == 1][0]
                dims = [{k: x for k, _, x in _fields(d)}[1] for k, _, d in
                        _fields([x for k, _, x in tensor if k == 2][0]) if k == 2]
                if dtype == _events.DT_STRING:  # text decoded; PNG/WAV bytes kept
                    value = [_text_or_bytes(x) for k, _, x in tensor if k == 8]
                else:
                    raw = [x for k, _, x in tensor if k == 4][0]
                    fmt = "<f4" if dtype == _events.DT_FLOAT else "<f8"
                    value = np.frombuffer(raw, fmt).reshape(dims)
                values[tag] = (plugin, dtype, dims, value)
        out.append((step, f.get(3, b"").decode(), values))
    return out


def test_scalars_histograms_and_text(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    assert tf.summary.scalar("ignored", 1.0, step=0) is False  # no default writer
    with writer.as_default(step=3):
        assert tf.summary.scalar("loss", 0.5) is True
        assert tf.summary.scalar("acc", tf.constant(0.25), step=7) is True
        tf.summary.histogram("h", np.arange(10.0), step=1, buckets=5)
        tf.summary.text("note", "hello", step=2)
        with tf.summary.record_if(False):
            assert tf.summary.scalar("skipped", 1.0) is False
    (path,) = glob.glob(os.path.join(str(tmp_path), "events.out.tfevents.*.v2"))
    events = _events_of(path)
    assert events[0][1] == "brain.Event:2"
    steps = {tag: (step, v) for step, _, vals in events for tag, v in vals.items()}
    assert set(steps) == {"loss", "acc", "h", "note"}
    assert steps["loss"][0] == 3 and steps["loss"][1][:3] == ("scalars", _events.DT_FLOAT, [])
    assert float(steps["acc"][1][3]) == 0.25 and steps["acc"][0] == 7
    h = steps["h"][1][3]
    assert steps["h"][1][0] == "histograms" and h.shape == (5, 3)
    np.testing.assert_array_equal(h[:, 2], [2, 2, 2, 2, 2])
    np.testing.assert_allclose(h[0, :2], [0.0, 1.8])
    assert steps["note"][1][3] == ["hello"]


def test_missing_step_is_an_error_and_a_corrupt_file_is_detected(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    with writer.as_default():
        with pytest.raises(ValueError, match="No step set"):
            tf.summary.scalar("x", 1.0)
        tf.summary.experimental.set_step(5)
        try:
            assert tf.summary.scalar("x", 1.0)
        finally:
            tf.summary.experimental.set_step(None)
    (path,) = glob.glob(os.path.join(str(tmp_path), "events*"))
    data = bytearray(open(path, "rb").read())
    data[-6] ^= 0xFF
    open(path, "wb").write(bytes(data))
    with pytest.raises(ValueError, match="corrupted"):
        _events.read_records(path)


def test_summaries_inside_a_traced_function_are_written_at_every_call(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))

    @tf.function
    def step(x, i):
        with writer.as_default():
            tf.summary.scalar("x", tf.reduce_sum(x), step=i)
        return x * 2.0

    for i in range(3):
        step(tf.constant([1.0, float(i)]), tf.constant(i, "int64"))
    writer.flush()
    (path,) = glob.glob(os.path.join(str(tmp_path), "events*"))
    got = [(s, float(v["x"][3])) for s, _, v in _events_of(path) if "x" in v]
    assert got[-3:] == [(0, 1.0), (1, 2.0), (2, 3.0)]


def test_tensorboard_callback_writes_train_and_validation_scalars(tmp_path):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse", metrics=["mae"])
    tb = keras.callbacks.TensorBoard(str(tmp_path), histogram_freq=1, update_freq="batch")
    model.fit(np.ones((8, 3)), np.ones((8, 1)), epochs=2, batch_size=4, verbose=0,
              validation_split=0.25, callbacks=[tb])
    (train,) = glob.glob(os.path.join(str(tmp_path), "train", "events*"))
    (val,) = glob.glob(os.path.join(str(tmp_path), "validation", "events*"))
    train_tags = {t for _, _, v in _events_of(train) for t in v}
    assert {"keras", "epoch_loss", "epoch_mae", "batch_loss", "batch_mae"} <= train_tags
    assert any(t.endswith("/kernel_0/histogram") for t in train_tags)  # dense[_N]/kernel
    val_tags = {t for _, _, v in _events_of(val) for t in v}
    assert {"epoch_loss", "epoch_mae", "evaluation_loss_vs_iterations"} <= val_tags
    with pytest.raises(ValueError, match="Unrecognized arguments"):
        keras.callbacks.TensorBoard(str(tmp_path), bogus=1)


def test_record_framing_matches_tensorflow():
    # TensorFlow 2.21's tf.io.TFRecordWriter wrote these bytes for the payload b"abc":
    # length, masked CRC-32C of the length, payload, masked CRC-32C of the payload
    framed = _events.record(b"abc")
    assert framed.hex() == "0300000000000000b099490e6162636e57f121"
    assert framed[:8] == struct.pack("<Q", 3)


def test_images_and_audio(tmp_path):
    rng = np.random.default_rng(0)
    imgs = rng.random((4, 3, 5, 3)).astype("float32")
    writer = tf.summary.create_file_writer(str(tmp_path))
    with writer.as_default():
        assert tf.summary.image("img", imgs, step=1, max_outputs=2)
        tf.summary.image("gray", np.arange(4, dtype=np.uint8).reshape(1, 2, 2, 1), step=2)
        tf.summary.audio("clip", np.array([[[0.5], [-1.5], [0.25]]], np.float32),
                         sample_rate=8000, step=3)
        with pytest.raises(ValueError, match=r"must have rank 4\.  Received rank 3"):
            tf.summary.image("bad", np.zeros((2, 2, 3)), step=1)
    (path,) = glob.glob(os.path.join(str(tmp_path), "events.out.tfevents.*.v2"))
    vals = {tag: v for _, _, vs in _events_of(path) for tag, v in vs.items()}
    plugin, dtype, dims, value = vals["img"]
    # TensorBoard's layout: [width, height, png, png, ...] (max_outputs of them)
    assert plugin == "images" and dims == [4] and value[:2] == ["5", "3"]
    expect = tf.image.convert_image_dtype(imgs[:2], tf.uint8, saturate=True).numpy()
    # values TensorFlow 2.21 gives for the first pixels of the first image
    assert expect[0].ravel()[:8].tolist() == [162, 68, 10, 4, 207, 233, 154, 186]
    for png, want in zip(value[2:], expect):
        np.testing.assert_array_equal(_png_pixels(png), want)
    assert _png_pixels(vals["gray"][3][2]).ravel().tolist() == [0, 1, 2, 3]
    plugin, dtype, dims, value = vals["clip"]
    assert plugin == "audio" and dims == [1, 2] and value[1] == ""
    # the bytes of TensorFlow 2.21's tf.audio.encode_wav for the same clip
    assert value[0] == (b"RIFF*\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00@\x1f"
                        b"\x00\x00\x80>\x00\x00\x02\x00\x10\x00data\x06\x00\x00\x00\x00@"
                        b"\x00\x80\x00 ")


def _graph_nodes(graph_def):
    """(name, op, inputs) of each NodeDef of a serialized GraphDef."""
    out = []
    for field, _, node in _fields(graph_def):
        if field != 1:
            continue
        f = _fields(node)
        out.append((bytes([x for k, _, x in f if k == 1][0]).decode(),
                    bytes([x for k, _, x in f if k == 2][0]).decode(),
                    [bytes(x).decode() for k, _, x in f if k == 3]))
    return out


def test_trace_export_and_graph(tmp_path):
    @tf.function
    def f(x, w):
        return tf.nn.relu(tf.matmul(x, w) + 1.0)
    writer = tf.summary.create_file_writer(str(tmp_path))
    with pytest.raises(ValueError, match="Must enable trace before export"):
        tf.summary.trace_export("t", step=0)
    tf.summary.trace_on(graph=True)
    f(tf.ones([2, 3]), tf.ones([3, 4]))
    with writer.as_default():
        assert tf.summary.trace_export("my_trace", step=0)
        assert bool(tf.summary.graph(f.get_concrete_function(tf.ones([2, 3]),
                                                            tf.ones([3, 4])).graph))
    writer.flush()
    with pytest.raises(ValueError, match="Must enable trace"):  # export turned tracing off
        tf.summary.trace_export("again", step=0)
    (path,) = glob.glob(os.path.join(str(tmp_path), "events.out.tfevents.*.v2"))
    payloads = list(_events.read_records(path))
    vals = {tag: v for _, _, vs in _events_of(path) for tag, v in vs.items()}
    plugin, dtype, dims, value = vals["my_trace"]
    assert plugin == "graph_run_metadata_graph" and dims == []
    run_metadata = value[0] if isinstance(value[0], bytes) else value[0].encode()
    (fg,) = [x for k, _, x in _fields(run_metadata) if k == 4]  # one function traced
    pre = [x for k, _, x in _fields(fg) if k == 2][0]
    assert _graph_nodes(pre) == [
        ("f/Placeholder", "Placeholder", []), ("f/Placeholder_1", "Placeholder", []),
        ("f/MatMul", "MatMul", ["f/Placeholder", "f/Placeholder_1"]), ("f/Const", "Const", []),
        ("f/AddV2", "AddV2", ["f/MatMul", "f/Const"]), ("f/Relu", "Relu", ["f/AddV2"])]
    graph_events = [dict((k, x) for k, _, x in _fields(p)) for p in payloads]
    (gd,) = [e[4] for e in graph_events if 4 in e]
    assert [n[1] for n in _graph_nodes(gd)] == ["Placeholder", "Placeholder", "MatMul", "Const",
                                                 "AddV2", "Relu"]


def test_tensorboard_callback_writes_weight_images(tmp_path):
    model = keras.Sequential([keras.layers.Dense(3, input_shape=(5,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    cb = keras.callbacks.TensorBoard(str(tmp_path), histogram_freq=1, write_images=True)
    model.fit(np.ones((4, 5)), np.ones((4, 1)), epochs=1, verbose=0, callbacks=[cb])
    (path,) = glob.glob(os.path.join(str(tmp_path), "train", "events.out.tfevents.*.v2"))
    vals = {tag: v for _, _, vs in _events_of(path) for tag, v in vs.items()}
    images = sorted(t for t, v in vals.items() if v[0] == "images")
    # the 1-unit bias squeezes to a scalar: no picture (tf-keras skips it too)
    assert sorted(t.split("/", 1)[1] for t in images) == ["bias_0/image", "kernel_0/image",
                                                          "kernel_0/image"]
    kernel = [vals[t] for t in images if "kernel" in t and vals[t][3][:2] == ["5", "3"]]
    assert kernel  # the 5x3 kernel drawn 5 wide, 3 high (long side across)
    assert _png_pixels(kernel[0][3][2]).shape == (3, 5, 1)
