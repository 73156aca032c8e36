"""``tf.config.optimizer``: Grappler's experimental options. ``auto_mixed_precision``
(float16) and ``auto_mixed_precision_onednn_bfloat16`` (bfloat16) switch mixprec's
automatic mixed precision (``mixprec._amp``); the other options are kept only."""

from mixprec._amp.rewrite import get_experimental_options, set_experimental_options  # noqa: F401

__all__ = ["set_experimental_options", "get_experimental_options"]

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
