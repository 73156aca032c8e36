"""``tf.train``: checkpoints (Checkpoint, CheckpointManager, readers) and ``experimental``
(the mixed precision graph rewrite switches)."""

from mixprec.train import experimental  # noqa: F401
from mixprec.train._checkpoint import Checkpoint  # noqa: F401
from mixprec.train._management import (  # noqa: F401
    CheckpointManager, get_checkpoint_state, latest_checkpoint)
from mixprec.train._reader import (  # noqa: F401
    CheckpointReader, list_variables, load_checkpoint, load_variable)

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
