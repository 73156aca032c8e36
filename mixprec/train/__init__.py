"""``tf.train``: checkpoints (Checkpoint, CheckpointManager, readers)."""

from mixprec.train._checkpoint import Checkpoint  # noqa: F401
from mixprec.train._management import (  # noqa: F401
    CheckpointManager, get_checkpoint_state, latest_checkpoint)
from mixprec.train._reader import CheckpointReader, list_variables, load_checkpoint  # noqa: F401
