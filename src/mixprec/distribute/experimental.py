"""``tf.distribute.experimental``: the names TensorFlow code still reaches for there."""

import enum

from mixprec.distribute.input_lib import ValueContext  # noqa: F401
from mixprec.distribute.multi_worker import MultiWorkerMirroredStrategy  # noqa: F401


class CommunicationImplementation(enum.Enum):
    AUTO = "AUTO"
    RING = "RING"
    NCCL = "NCCL"


CollectiveCommunication = CommunicationImplementation


class CommunicationOptions:
    """Accepted and recorded (mixprec picks the engine from the devices)."""

    def __init__(self, bytes_per_pack=0, timeout_seconds=None,
                 implementation=CommunicationImplementation.AUTO):
        if bytes_per_pack < 0:
            raise ValueError("bytes_per_pack must be non-negative")
        self.bytes_per_pack = bytes_per_pack
        self.timeout_seconds = timeout_seconds
        self.implementation = implementation

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
