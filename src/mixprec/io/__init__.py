"""``tf.io``: ``gfile`` (local files), ``TFRecordWriter`` and TFRecordOptions (records
framed as TensorFlow frames them: length, masked CRC-32C, payload, masked CRC-32C),
``tf_record_iterator``. String tensors (read_file, decode_*, parse_example) are not part of
mixprec: these take and give Python bytes."""

from mixprec.io import gfile  # noqa: F401
from mixprec.summary import _events

__all__ = ["gfile", "TFRecordWriter", "TFRecordOptions", "tf_record_iterator"]


class TFRecordOptions:
    def __init__(self, compression_type=None, **kwargs):
        if compression_type not in (None, "", "NONE"):
            raise NotImplementedError("compressed TFRecord files (%s) are not supported by "
                                      "mixprec" % compression_type)
        self.compression_type = compression_type or ""


class TFRecordWriter:
    """Writes records (bytes) to a TFRecord file that TensorFlow's readers accept."""

    def __init__(self, path, options=None):
        if isinstance(options, str):
            options = TFRecordOptions(options)
        self._f = gfile.GFile(path, "wb")

    def write(self, record):
        if isinstance(record, str):
            record = record.encode()
        self._f.write(_events.record(bytes(record)))

    def flush(self):
        self._f.flush()

    def close(self):
        self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def tf_record_iterator(path, options=None):
    """The records (bytes) of a TFRecord file, each CRC checked (DataLossError if not)."""
    from mixprec import errors

    try:
        records = _events.read_records(gfile._local(path))
    except ValueError as e:
        raise errors.DataLossError(None, None, str(e)) from e
    return iter(records)


from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
