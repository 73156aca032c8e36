"""Writes tf_image_dataset.npz: what tf-keras 2.21's image_dataset_from_directory gives
for the tree of image_tree.py (file order for a seed, the validation split, decoded and
resized images per color mode and interpolation, labels); for
tests/keras/utils/test_image_dataset.py. Not run by the tests (it needs TensorFlow):
``pip install tensorflow-cpu==2.21.* tf-keras==2.21.* pillow`` in a separate environment,
then ``python tests/keras/golden/make_tf_image_dataset.py``."""

import os
import sys
import tempfile

os.environ["TF_USE_LEGACY_KERAS"] = "1"

import numpy as np  # noqa: E402
import tf_keras as keras  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from image_tree import make_tree  # noqa: E402


def rel(paths, root):
    return np.array([os.path.relpath(p, root) for p in paths])


def stacked(ds):
    xs, ys = [], []
    for x, y in ds:
        xs.append(x.numpy())
        ys.append(y.numpy())
    return np.stack(xs), np.stack(ys)


def main():
    root = make_tree(tempfile.mkdtemp())
    f = keras.utils.image_dataset_from_directory
    out = {}
    ds = f(root, image_size=(8, 8), batch_size=4, seed=3)
    out["seed3/paths"] = rel(ds.file_paths, root)
    tr, va = f(root, image_size=(8, 8), batch_size=4, seed=3, validation_split=0.25,
               subset="both")
    out["split/train"] = rel(tr.file_paths, root)
    out["split/val"] = rel(va.file_paths, root)
    for name, kw in {"rgb_bilinear": dict(image_size=(7, 7)),
                     "rgb_crop": dict(image_size=(7, 7), crop_to_aspect_ratio=True),
                     "gray_nearest": dict(image_size=(5, 6), color_mode="grayscale",
                                          interpolation="nearest"),
                     "categorical": dict(image_size=(3, 3), label_mode="categorical")}.items():
        d = f(root, batch_size=None, shuffle=False, **kw)
        out[name + "/paths"] = rel(d.file_paths, root)
        out[name + "/x"], out[name + "/y"] = stacked(d)
    # rgba: the dogs folder alone (a JPEG has no 4-channel form: TensorFlow's error)
    d = f(os.path.join(root, "dogs"), labels=None, image_size=(6, 5), color_mode="rgba",
          batch_size=None, shuffle=False)
    out["rgba_bilinear/paths"] = rel(d.file_paths, root)
    out["rgba_bilinear/x"] = np.stack([x.numpy() for x in d])
    np.savez_compressed(os.path.join(HERE, "tf_image_dataset.npz"), **out)


if __name__ == "__main__":
    main()
