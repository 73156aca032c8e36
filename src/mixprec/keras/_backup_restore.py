"""``tf.keras.callbacks.BackupAndRestore``: fault-tolerant ``fit``. At each epoch's end the
model, its optimizer and the epoch reached are written to ``backup_dir/chief`` (a
TensorFlow-format checkpoint kept by a CheckpointManager, one at a time: 'checkpoint',
'ckpt-N.*', as tf-keras); a later ``fit`` with the same directory restores them and resumes
after that epoch; a ``fit`` that completes deletes the backup. Bookkeeping only (the
checkpoint itself is mixprec.train's)."""

import os
import shutil

from mixprec.keras.callbacks import Callback

__all__ = ["BackupAndRestore"]


class BackupAndRestore(Callback):
    """Backs ``fit`` up to ``backup_dir`` at every epoch end (``save_freq='epoch'``) and
    resumes an interrupted ``fit`` from there; ``delete_checkpoint`` removes the backup when
    training completes."""

    def __init__(self, backup_dir, save_freq="epoch", delete_checkpoint=True,
                 save_before_preemption=False):
        super().__init__()
        if backup_dir is None:
            raise ValueError("Empty `backup_dir` argument passed")
        if save_freq != "epoch" and save_freq is not False:
            raise NotImplementedError("BackupAndRestore(save_freq=%r): mixprec backs up at "
                                      "epoch ends only (save_freq='epoch' or False)"
                                      % (save_freq,))
        if save_before_preemption:
            raise NotImplementedError("BackupAndRestore(save_before_preemption=True) is not "
                                      "supported by mixprec (no preemption notices here)")
        self.backup_dir = os.fspath(backup_dir)
        self.save_freq = save_freq
        self.delete_checkpoint = delete_checkpoint
        self.save_before_preemption = save_before_preemption
        self._chief_dir = os.path.join(self.backup_dir, "chief")
        self._manager = None

    def _state(self):
        """(CheckpointManager, epoch variable): the model, its optimizer and the epoch."""
        if self._manager is None:
            from mixprec import train
            from mixprec._dtypes import int64
            from mixprec._variable import Variable

            self._epoch = Variable(-1, dtype=int64, trainable=False, name="ckpt_saved_epoch")
            ckpt = train.Checkpoint(model=self.model, optimizer=self.model.optimizer,
                                    _ckpt_saved_epoch=self._epoch)
            self._manager = train.CheckpointManager(ckpt, self._chief_dir, max_to_keep=1)
        return self._manager

    def on_train_begin(self, logs=None):
        manager = self._state()
        latest = manager.latest_checkpoint
        if latest is None:
            return
        manager.checkpoint.restore(latest)
        if int(self._epoch.numpy()) >= 0:
            # read by Model.fit right after on_train_begin: the first epoch still to run
            self.model._backup_resume_epoch = int(self._epoch.numpy()) + 1

    def on_epoch_end(self, epoch, logs=None):
        if self.save_freq != "epoch":
            return
        manager = self._state()
        self._epoch.assign(int(epoch))
        manager.save(checkpoint_number=int(epoch) + 1)

    def on_train_end(self, logs=None):
        if self.delete_checkpoint and os.path.isdir(self._chief_dir):
            shutil.rmtree(self._chief_dir, ignore_errors=True)  # backup_dir stays, empty
        self._manager = None
