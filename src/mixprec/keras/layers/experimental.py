"""``tf.keras.layers.experimental``: the deprecated SyncBatchNormalization endpoint
(BatchNormalization with synchronized=True, as tf-keras 2.21) and the older
``experimental.preprocessing`` namespace. Names only."""

from mixprec import _logging
from mixprec.keras.layers import _experimental_preprocessing as preprocessing  # noqa: F401
from mixprec.keras.layers.normalization import BatchNormalization

__all__ = ["SyncBatchNormalization", "preprocessing"]

_warned = [False]


class SyncBatchNormalization(BatchNormalization):
    """Deprecated: ``tf.keras.layers.BatchNormalization(synchronized=True)``."""

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones",
                 moving_mean_initializer="zeros", moving_variance_initializer="ones",
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, **kwargs):
        if not _warned[0]:  # tf-keras logs it once per process
            _warned[0] = True
            _logging.get_logger().warning(
                "`tf.keras.layers.experimental.SyncBatchNormalization` endpoint is deprecated "
                "and will be removed in a future release. Please use "
                "`tf.keras.layers.BatchNormalization` with parameter `synchronized` set to "
                "True.")
        super().__init__(axis=axis, momentum=momentum, epsilon=epsilon, center=center,
                         scale=scale, beta_initializer=beta_initializer,
                         gamma_initializer=gamma_initializer,
                         moving_mean_initializer=moving_mean_initializer,
                         moving_variance_initializer=moving_variance_initializer,
                         beta_regularizer=beta_regularizer, gamma_regularizer=gamma_regularizer,
                         beta_constraint=beta_constraint, gamma_constraint=gamma_constraint,
                         synchronized=True, **kwargs)


from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
