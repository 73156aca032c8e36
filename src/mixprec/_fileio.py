"""Crash-safe writes and bounded reads of the files mixprec saves (weights, checkpoints,
the ``checkpoint`` state file). A write goes to a temporary name in the target's directory,
is flushed and fsynced, renamed into place, and the directory fsynced; a read refuses what
is not a regular file before reading and never reads past what the file holds. No format
knowledge lives here."""

import os
import stat
import uuid

from mixprec import errors

__all__ = ["atomic_write", "check_regular_file", "fsync_dir", "read_file", "remove_file",
           "temp_name"]


def temp_name(path):
    """A fresh temporary name next to ``path`` (same directory, so rename is atomic)."""
    d, base = os.path.split(path)
    return os.path.join(d, ".%s.tmp%s" % (base, uuid.uuid4().hex))


def fsync_dir(directory):
    """Makes renames and unlinks in ``directory`` durable (a no-op where unsupported)."""
    try:
        fd = os.open(directory or ".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path, write, sync_dir=True):
    """Calls ``write(f)`` on a temporary file, fsyncs it and renames it to ``path``: a
    process killed at any moment leaves ``path`` either as it was or complete. A path that
    exists but is not a regular file (a directory, /dev/null, a FIFO) is refused: renaming
    over it would replace a device node or swallow a directory."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        pass
    else:
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("%s exists and is not a regular file; refusing to replace it"
                             % path)
    tmp = temp_name(path)
    try:
        with open(tmp, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if sync_dir:
        fsync_dir(os.path.dirname(path))


def check_regular_file(path, what="file"):
    """The size of ``path``; NotFoundError when it does not exist, ValueError when it is
    not a regular file (a directory, a device such as /dev/zero, a FIFO): checked before
    anything is opened for reading, so nothing blocks or reads without end."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, "%s not found: %s" % (what, path)) from None
    except OSError as e:
        raise errors.NotFoundError(None, None, "%s %s could not be opened: %s"
                                   % (what, path, e)) from None
    if not stat.S_ISREG(st.st_mode):
        kind = ("a directory" if stat.S_ISDIR(st.st_mode) else
                "a FIFO" if stat.S_ISFIFO(st.st_mode) else
                "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else
                "not a regular file")
        raise ValueError("%s %s is %s, not a regular file" % (what, path, kind))
    return st.st_size


def read_file(path, what="file"):
    """The whole content of a regular file, read up to the size it had when opened."""
    size = check_regular_file(path, what)
    with open(path, "rb") as f:
        data = f.read(size)
    return data


def remove_file(path):
    """Unlinks ``path`` if it exists (the caller fsyncs the directory)."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
