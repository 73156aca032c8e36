"""``tf.io.gfile``: TensorFlow's file API over the local filesystem (GFile, exists, glob,
isdir, listdir, makedirs, mkdir, remove, rename, rmtree, copy, stat, walk, join), with
TensorFlow's error classes (NotFoundError, AlreadyExistsError, PermissionDeniedError,
FailedPreconditionError). Paths with a scheme other than file:// raise
UnimplementedError: mixprec has no GCS/S3/HDFS filesystems."""

import glob as _glob
import os
import shutil

from mixprec import errors

__all__ = ["GFile", "exists", "glob", "isdir", "listdir", "makedirs", "mkdir", "remove",
           "rename", "rmtree", "copy", "stat", "walk", "join", "get_registered_schemes"]


def _local(path):
    path = os.fspath(path)
    if isinstance(path, bytes):
        path = path.decode()
    if path.startswith("file://"):
        return path[len("file://"):]
    if "://" in path:
        scheme = path.split("://", 1)[0]
        raise errors.UnimplementedError(
            None, None, "File system scheme '%s' not implemented (file: '%s'): mixprec reads "
            "and writes local files only" % (scheme, path))
    return path


def _raise(e, path):
    if isinstance(e, FileNotFoundError):
        raise errors.NotFoundError(None, None, "%s; No such file or directory" % path) from e
    if isinstance(e, FileExistsError):
        raise errors.AlreadyExistsError(None, None, "%s; File exists" % path) from e
    if isinstance(e, PermissionError):
        raise errors.PermissionDeniedError(None, None, "%s; Permission denied" % path) from e
    if isinstance(e, (IsADirectoryError, NotADirectoryError)):
        raise errors.FailedPreconditionError(None, None, "%s; %s" % (path, e.strerror)) from e
    raise errors.UnknownError(None, None, "%s; %s" % (path, e)) from e


class GFile:
    """A file object like Python's ``open`` (modes r, rb, w, wb, a, ab), with TF's
    ``size()``/``seek(offset, whence)``/``readline``/``readlines``/``write``/``flush``."""

    def __init__(self, name, mode="r"):
        self.name = _local(name)
        if mode not in ("r", "rb", "w", "wb", "a", "ab", "r+", "rb+", "w+", "wb+"):
            raise errors.PermissionDeniedError(None, None, "mode '%s' is not supported" % mode)
        self.mode = mode
        try:
            self._f = open(self.name, mode)
        except OSError as e:
            _raise(e, self.name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __iter__(self):
        return iter(self._f)

    def __next__(self):
        return next(self._f)

    def read(self, n=-1):
        return self._f.read(n)

    def readline(self):
        return self._f.readline()

    def readlines(self):
        return self._f.readlines()

    def write(self, data):
        self._f.write(data)

    def flush(self):
        self._f.flush()

    def seek(self, offset=None, whence=0, position=None):
        if position is not None:
            offset = position
        return self._f.seek(offset, whence)

    def tell(self):
        return self._f.tell()

    def size(self):
        return os.path.getsize(self.name)

    def seekable(self):
        return True

    def close(self):
        self._f.close()

    @property
    def closed(self):
        return self._f.closed


def exists(path):
    return os.path.exists(_local(path))


def isdir(path):
    return os.path.isdir(_local(path))


def glob(pattern):
    return sorted(_glob.glob(_local(pattern)))


def listdir(path):
    p = _local(path)
    if not os.path.isdir(p):
        raise errors.NotFoundError(None, None, "Could not find directory %s" % p)
    return sorted(os.listdir(p))


def makedirs(path):
    try:
        os.makedirs(_local(path), exist_ok=True)
    except OSError as e:
        _raise(e, path)


def mkdir(path):
    try:
        os.mkdir(_local(path))
    except OSError as e:
        _raise(e, path)


def remove(path):
    try:
        os.remove(_local(path))
    except OSError as e:
        _raise(e, path)


def rmtree(path):
    p = _local(path)
    if not os.path.exists(p):
        raise errors.NotFoundError(None, None, "%s; No such file or directory" % p)
    shutil.rmtree(p)


def rename(src, dst, overwrite=False):
    s, d = _local(src), _local(dst)
    if os.path.exists(d) and not overwrite:
        raise errors.AlreadyExistsError(None, None, "file already exists: %s" % d)
    try:
        os.replace(s, d)
    except OSError as e:
        _raise(e, s)


def copy(src, dst, overwrite=False):
    s, d = _local(src), _local(dst)
    if os.path.exists(d) and not overwrite:
        raise errors.AlreadyExistsError(None, None, "file already exists: %s" % d)
    try:
        shutil.copyfile(s, d)
    except OSError as e:
        _raise(e, s)


class _Stat:
    def __init__(self, st, is_dir):
        self.length = st.st_size
        self.mtime_nsec = st.st_mtime_ns
        self.is_directory = is_dir


def stat(path):
    p = _local(path)
    try:
        st = os.stat(p)
    except OSError as e:
        _raise(e, p)
    return _Stat(st, os.path.isdir(p))


def walk(top, topdown=True, onerror=None):
    p = _local(top)
    for root, dirs, files in os.walk(p, topdown=topdown, onerror=onerror):
        yield root, sorted(dirs), sorted(files)


def join(path, *paths):
    return os.path.join(path, *paths)


def get_registered_schemes():
    return ["", "file"]
