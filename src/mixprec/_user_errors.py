"""TensorFlow's ``in user code:`` framing of an exception raised while a function traces.

The exception is raised again as TensorFlow 2.21 does: the same class where TensorFlow
keeps it (otherwise ``StagingError``), its message preceded by the user's frames and their
source lines. Formatting only: it decides which frames are the user's from file names
(mixprec's own frames, the autograph call wrapper's among them, are left out) and never
changes what was raised or when.
"""

import ast
import linecache
import os

from mixprec import _core

__all__ = ["StagingError", "in_user_code"]


class StagingError(Exception):
    """An error raised while tracing whose class TensorFlow does not re-create (as
    TensorFlow's autograph ``StagingError``)."""


# classes TensorFlow re-creates from the framed message (exactly these, not subclasses)
_MESSAGE_CLASSES = (AssertionError, AttributeError, NameError, NotImplementedError, RuntimeError,
                    StopIteration, TypeError, UnboundLocalError, ValueError)


class _MultilineKeyError(KeyError):
    """KeyError prints its key's repr; the framed one prints the framed message."""

    def __init__(self, message, key):
        super().__init__(key)
        self._message = message

    def __str__(self):
        return self._message


_MultilineKeyError.__name__ = _MultilineKeyError.__qualname__ = "KeyError"

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _lambda_source(filename, lineno):
    """The source of the one lambda on a line (TensorFlow shows the lambda itself)."""
    try:
        src = "".join(linecache.getlines(filename))
        found = [n for n in ast.walk(ast.parse(src)) if isinstance(n, ast.Lambda)
                 and n.lineno == lineno]
        if len(found) == 1:
            return ast.get_source_segment(src, found[0])
    except (SyntaxError, ValueError):
        pass
    return None


def _frames(tb, converted):
    """(file, line, function, source, mark) of the user-visible frames below the trace's
    own frame (tb): mark "*" for the user's code autograph converts, "**" for a function
    called from converted code but left as written (a library's, do_not_convert)."""
    from mixprec import _autograph
    out = []
    via_call = False
    tb = tb.tb_next  # (the tracing frame itself)
    while tb is not None:
        code = tb.tb_frame.f_code
        filename, lineno = code.co_filename, tb.tb_lineno
        if os.path.abspath(filename).startswith(_PACKAGE):
            via_call = code is _autograph.call.__code__
            tb = tb.tb_next
            continue
        user = not filename.startswith("<") and not os.path.abspath(filename).startswith(
            _autograph._library_dirs_cached())
        if user and converted and code not in _autograph.no_convert_codes:
            mark = "  *"
        else:
            mark = "  **" if via_call else ""
        name = code.co_name
        line = linecache.getline(filename, lineno).strip()
        if name == "<lambda>":
            name = "None"  # (TensorFlow's spelling)
            line = _lambda_source(filename, lineno) or line
        out.append((filename, lineno, name, line or "<source unavailable>", mark))
        via_call = False
        tb = tb.tb_next
    return out


def in_user_code(exc, converted=True):
    """The exception to raise for ``exc`` raised while tracing (framed as TensorFlow
    frames it), or None to raise ``exc`` itself (already framed)."""
    if getattr(exc, "_mp_in_user_code", False) or exc.__traceback__ is None:
        return None
    lines = ["in user code:", ""]
    for filename, lineno, name, code, mark in _frames(exc.__traceback__, converted):
        lines.append('    File "%s", line %d, in %s%s' % (filename, lineno, name, mark))
        lines.append("        " + code)
    lines.append("")
    lines.extend("    " + m for m in ("%s: %s" % (type(exc).__name__, exc)).split("\n"))
    lines.append("")
    message = "\n".join(lines)
    cls = type(exc)
    # mixprec's own classes (tf.errors, the strategies' internal ones) stand for the
    # TensorFlow classes callers catch: kept, with their state
    ours = cls.__module__.split(".")[0] == "mixprec" or issubclass(cls, _core.OpError)
    new = None
    try:
        if cls.__init__ is Exception.__init__ or cls in _MESSAGE_CLASSES or ours:
            new = cls(message)
            if ours:
                new.__dict__.update({k: v for k, v in vars(exc).items() if k != "message"})
        elif cls is KeyError:
            new = _MultilineKeyError(message, "%s: %s" % (cls.__name__, exc))
    except Exception:  # a constructor that wants other arguments
        if ours:
            return None
        new = None
    if new is None:
        new = StagingError(message)
    new._mp_in_user_code = True
    new.__suppress_context__ = True
    return new.with_traceback(None)
