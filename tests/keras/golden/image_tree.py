"""The small image directory tree shared by tests/keras/utils/test_image_dataset.py and
make_tf_image_dataset.py: three class folders of seeded PNGs of different sizes, a
grayscale and an RGBA PNG, a JPEG, a nested subfolder and a non-image file."""

import os

import numpy as np


def make_tree(root):
    from PIL import Image
    rng = np.random.default_rng(0)
    for c in ("cats", "dogs", "birds"):
        os.makedirs(os.path.join(root, c), exist_ok=True)
        for i in range(5):
            h, w = 10 + i * 3, 12 + i * 2
            a = rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)
            Image.fromarray(a).save(os.path.join(root, c, "img%d.png" % i))
    Image.fromarray(rng.integers(0, 256, size=(9, 9), dtype=np.uint8)).save(
        os.path.join(root, "cats", "gray.png"))
    Image.fromarray(rng.integers(0, 256, size=(9, 9, 4), dtype=np.uint8)).save(
        os.path.join(root, "dogs", "rgba.png"))
    with open(os.path.join(root, "cats", "notes.txt"), "w") as f:
        f.write("not an image")
    os.makedirs(os.path.join(root, "dogs", "sub"), exist_ok=True)
    Image.fromarray(rng.integers(0, 256, size=(8, 8, 3), dtype=np.uint8)).save(
        os.path.join(root, "dogs", "sub", "deep.png"))
    Image.fromarray(rng.integers(0, 256, size=(16, 20, 3), dtype=np.uint8)).save(
        os.path.join(root, "birds", "j.jpg"), quality=90)
    return root
