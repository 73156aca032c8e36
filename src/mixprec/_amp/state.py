"""The switches of automatic mixed precision and what they turn on in the core.

Three things switch it on: ``enable_mixed_precision_graph_rewrite`` (which also sets the
``auto_mixed_precision`` option), ``tf.config.optimizer.set_experimental_options`` and
``TF_ENABLE_AUTO_MIXED_PRECISION=1`` at import (NVIDIA's builds). This module only keeps
the flags and calls ``refresh()``; it must not import Keras (policy.py imports it).
"""

import os

from mixprec import _core

_F16, _BF16 = 1, 2  # mp_dtype codes

# options given to tf.config.optimizer.set_experimental_options (TensorFlow keeps them all)
options = {}
# set by enable_mixed_precision_graph_rewrite, cleared by disable_: a mixed global policy
# is then refused (TensorFlow's mixed_precision_global_state)
graph_rewrite_enabled = False
# TF_ENABLE_AUTO_MIXED_PRECISION, read once at import as NVIDIA's builds did
env_enabled = os.environ.get("TF_ENABLE_AUTO_MIXED_PRECISION", "").strip().lower() in ("1", "true")

_BF16_OPTIONS = ("auto_mixed_precision_onednn_bfloat16", "auto_mixed_precision_mkl")
_F16_OPTIONS = ("auto_mixed_precision", "auto_mixed_precision_cpu")


def bf16():
    """Whether the pass lowers to bfloat16 (TensorFlow's oneDNN variant) instead of float16."""
    return any(options.get(k) for k in _BF16_OPTIONS)


def active():
    return env_enabled or bf16() or any(options.get(k) for k in _F16_OPTIONS)


def lowered_dtype_name():
    return "bfloat16" if bf16() else "float16"


def refresh():
    """Applies the lists in force (environment read now) and the autocast switch to the core."""
    from mixprec._amp import lists

    if active():
        lists.apply(bf16=bf16())
        _core.amp_set_autocast(True, _BF16 if bf16() else _F16)
    else:
        _core.amp_set_autocast(False)
