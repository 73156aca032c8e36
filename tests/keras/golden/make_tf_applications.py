"""Writes tf_applications.json: for each keras.applications case of applications_cases.py,
tf-keras 2.21's model name, count_params, trainable count and per layer (name, class,
output shape, parameter count); plus preprocess_input of a fixed image per family. For
tests/keras/test_applications.py. Not run by the tests (it needs TensorFlow):
``python tests/keras/golden/make_tf_applications.py`` with tensorflow 2.21 and tf-keras 2.21."""

import json
import os
import sys

os.environ["TF_USE_LEGACY_KERAS"] = "1"

import numpy as np  # noqa: E402
import tf_keras as keras  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from applications_cases import CASES, PREPROCESS_FAMILIES, preprocess_image  # noqa: E402


def _shape(s):
    if isinstance(s, list):
        return [list(t) for t in s]
    return list(s)


def main():
    out = {"models": {}, "preprocess": {}}
    for key, (fn, kwargs) in CASES.items():
        family, name = fn.split(".")
        model = getattr(getattr(keras.applications, family), name)(weights=None, **kwargs)
        out["models"][key] = {
            "name": model.name,
            "count_params": int(model.count_params()),
            "trainable": int(sum(np.prod(w.shape) for w in model.trainable_weights)),
            "n_weights": len(model.weights),
            "weight_names": [w.name for w in model.weights][:40],
            "layers": [[l.name, type(l).__name__, _shape(l.output_shape), int(l.count_params())]
                       for l in model.layers],
            "output_shape": _shape(model.output_shape),
        }
        keras.backend.clear_session()
        print(key, model.count_params(), flush=True)
    img = preprocess_image()
    for family in PREPROCESS_FAMILIES:
        mod = getattr(keras.applications, family)
        out["preprocess"][family] = np.asarray(mod.preprocess_input(img.copy())).tolist()
    with open(os.path.join(HERE, "tf_applications.json"), "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
