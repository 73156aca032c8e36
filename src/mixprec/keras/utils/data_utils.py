"""``tf.keras.utils.pack_x_y_sample_weight`` / ``unpack_x_y_sample_weight``: the (x, y,
sample_weight) convention a custom ``train_step`` uses, as tf-keras 2.21 (structure only);
and ``keras.utils.Sequence``, the indexable batch source fit/evaluate/predict read
(keras/engine/data_streams.py)."""

__all__ = ["pack_x_y_sample_weight", "unpack_x_y_sample_weight", "Sequence"]


class Sequence:
    """Base class of an indexable dataset of batches: implement ``__getitem__(index)`` (one
    batch, ``(x, y)`` or ``(x, y, sample_weight)``) and ``__len__`` (the number of batches);
    ``on_epoch_end`` runs after every epoch of ``fit`` (e.g. to reshuffle)."""

    def __getitem__(self, index):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError

    def on_epoch_end(self):
        """Called at the end of every epoch."""

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]


def unpack_x_y_sample_weight(data):
    """(x, y, sample_weight) from ``x``, ``(x,)``, ``(x, y)`` or ``(x, y, sample_weight)``;
    the missing ones are None."""
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return data, None, None
    if len(data) == 1:
        return data[0], None, None
    if len(data) == 2:
        return data[0], data[1], None
    if len(data) == 3:
        return data[0], data[1], data[2]
    raise ValueError("Data is expected to be in format `x`, `(x,)`, `(x, y)`, or "
                     "`(x, y, sample_weight)`, found: %s" % (data,))


def pack_x_y_sample_weight(x, y=None, sample_weight=None):
    """The inverse: ``x`` alone (a nested ``x`` as ``(x,)``), ``(x, y)`` or the triple."""
    if y is None:
        # tf-keras 2.21 wraps only a tuple (its check is `isinstance(x, tuple or list)`)
        return (x,) if isinstance(x, tuple) else x
    if sample_weight is None:
        return (x, y)
    return (x, y, sample_weight)
