"""keras.utils.image_dataset_from_directory and smart_resize against tf-keras 2.21
(golden/tf_image_dataset.npz, written by golden/make_tf_image_dataset.py from the tree of
golden/image_tree.py): file order and split for a seed, decoded + resized images per color
mode and interpolation, labels, messages and errors."""

import os
import sys

import numpy as np
import pytest

import mixprec as tf
from mixprec import errors, keras

pytest.importorskip("PIL")

GOLDEN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "golden")
sys.path.insert(0, GOLDEN)
from image_tree import make_tree  # noqa: E402

GOLD = np.load(os.path.join(GOLDEN, "tf_image_dataset.npz"))
f = keras.utils.image_dataset_from_directory


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return make_tree(str(tmp_path_factory.mktemp("images")))


def rel(paths, root):
    return [os.path.relpath(p, root) for p in paths]


def test_file_order_and_split_match_tf_keras(root, capsys):
    ds = f(root, image_size=(8, 8), batch_size=4, seed=3)
    assert capsys.readouterr().out == "Found 19 files belonging to 3 classes.\n"
    assert rel(ds.file_paths, root) == GOLD["seed3/paths"].tolist()
    assert ds.class_names == ["birds", "cats", "dogs"]
    assert repr(ds.element_spec) == (
        "(TensorSpec(shape=(None, 8, 8, 3), dtype=tf.float32, name=None), "
        "TensorSpec(shape=(None,), dtype=tf.int32, name=None))")
    assert int(ds.cardinality()) == 5
    assert repr(ds).startswith("<_PrefetchDataset")
    x, y = next(iter(ds))
    assert x.shape == (4, 8, 8, 3) and y.dtype == tf.int32
    tr, va = f(root, image_size=(8, 8), batch_size=4, seed=3, validation_split=0.25,
               subset="both")
    assert capsys.readouterr().out == ("Found 19 files belonging to 3 classes.\n"
                                       "Using 15 files for training.\n"
                                       "Using 4 files for validation.\n")
    assert rel(tr.file_paths, root) == GOLD["split/train"].tolist()
    assert rel(va.file_paths, root) == GOLD["split/val"].tolist()


@pytest.mark.parametrize("name,kw", [
    ("rgb_bilinear", dict(image_size=(7, 7))),
    ("rgb_crop", dict(image_size=(7, 7), crop_to_aspect_ratio=True)),
    ("gray_nearest", dict(image_size=(5, 6), color_mode="grayscale", interpolation="nearest")),
    ("categorical", dict(image_size=(3, 3), label_mode="categorical")),
])
def test_images_and_labels_match_tf_keras(root, name, kw):
    ds = f(root, batch_size=None, shuffle=False, **kw)
    assert rel(ds.file_paths, root) == GOLD[name + "/paths"].tolist()
    xs, ys = zip(*[(x.numpy(), y.numpy()) for x, y in ds])
    x, y, ref = np.stack(xs), np.stack(ys), GOLD[name + "/x"]
    assert x.dtype == ref.dtype and x.shape == ref.shape
    np.testing.assert_array_equal(y, GOLD[name + "/y"])
    jpeg = [i for i, p in enumerate(ds.file_paths) if p.endswith(".jpg")]
    png = [i for i in range(len(x)) if i not in jpeg]
    # PNGs decode bit-exactly (libpng's gray weights included) and resize bit-exactly
    # (float32 source coordinates, width then height, as TensorFlow's kernel)
    np.testing.assert_array_equal(x[png], ref[png])
    # JPEG: Pillow's IDCT is not TensorFlow's; a few levels of 255 apart
    assert np.abs(x[jpeg].astype("float64") - ref[jpeg]).max() <= 12


def test_rgba_and_unlabelled(root, capsys):
    ds = f(os.path.join(root, "dogs"), labels=None, image_size=(6, 5), color_mode="rgba",
           batch_size=None, shuffle=False)
    assert capsys.readouterr().out == "Found 7 files belonging to 1 classes.\n"
    assert rel(ds.file_paths, root) == GOLD["rgba_bilinear/paths"].tolist()
    x = np.stack([v.numpy() for v in ds])
    np.testing.assert_array_equal(x, GOLD["rgba_bilinear/x"])
    with pytest.raises(errors.InvalidArgumentError, match="JPEG does not support 4 channels"):
        list(f(root, color_mode="rgba", image_size=(4, 4)))


def test_explicit_labels_and_errors(root):
    paths = f(root, labels=None, shuffle=False, image_size=(2, 2)).file_paths
    ds = f(root, labels=list(range(19)), shuffle=False, image_size=(2, 2), batch_size=None)
    assert [int(y) for _, y in ds] == list(range(19)) and ds.file_paths == paths
    cases = [
        (dict(labels="bogus"), ValueError, "`labels` argument should be a list/tuple"),
        (dict(labels=[0] * 18), ValueError, r"len\(labels\) is 18 while we found 19 files"),
        (dict(validation_split=0.2), ValueError,
         r"If `subset` is set, `validation_split` must be set, and inversely\."),
        (dict(validation_split=0.2, subset="training"), ValueError, "you must provide a `seed`"),
        (dict(color_mode="cmyk"), ValueError, r"`color_mode` must be one of"),
        (dict(label_mode="binary"), ValueError,
         r"When passing `label_mode=\"binary\"`, there must be exactly 2 class_names"),
        (dict(label_mode="sparse"), ValueError, "`label_mode` argument must be one of"),
        (dict(class_names=["a", "b"]), ValueError,
         "did not match the names of the subdirectories"),
        (dict(interpolation="cubicish"), NotImplementedError, "Value not recognized"),
        (dict(bogus=1), TypeError, "Unknown keywords argument"),
    ]
    for kw, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            f(root, **kw)
    with pytest.raises(errors.NotFoundError, match="Could not find directory"):
        f(os.path.join(root, "missing"))


def test_binary_labels_and_fit(root):
    two = os.path.join(root, "..", "two")
    os.makedirs(two, exist_ok=True)
    for c in ("cats", "dogs"):
        if not os.path.exists(os.path.join(two, c)):
            os.symlink(os.path.join(root, c), os.path.join(two, c))
    ds = f(two, label_mode="binary", image_size=(6, 6), batch_size=4, seed=1,
           follow_links=True)
    assert repr(ds.element_spec[1]) == "TensorSpec(shape=(None, 1), dtype=tf.float32, name=None)"
    model = keras.Sequential([keras.layers.Rescaling(1 / 255.), keras.layers.Flatten(),
                              keras.layers.Dense(1)])
    model.compile("adam", keras.losses.BinaryCrossentropy(from_logits=True))
    hist = model.fit(ds, epochs=1, verbose=0)
    assert np.isfinite(hist.history["loss"][0])


def test_smart_resize_matches_the_crop_rule():
    img = np.arange(10 * 16 * 1, dtype="float32").reshape(10, 16, 1)
    out = keras.utils.image_dataset.smart_resize(img, (5, 5), interpolation="nearest")
    assert isinstance(out, np.ndarray) and out.shape == (5, 5, 1)
    # the centred 10x10 crop starts at column 3; nearest with half-pixel centres reads the
    # second of every two rows and columns
    np.testing.assert_array_equal(out[:, 0, 0], img[1::2, 4, 0])
    with pytest.raises(ValueError, match="Expected `size` to be a tuple of 2 integers"):
        keras.utils.image_dataset.smart_resize(img, (5,))
