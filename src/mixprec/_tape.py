"""``mixprec.GradientTape``: TensorFlow's API on the C tape (csrc/tape.c).

Recording, the watch sets, the backward walk and every gradient rule are C; this class
only flattens and packs nested structures and follows TensorFlow's conventions
(persistent tapes, ``watch_accessed_variables``, ``unconnected_gradients``).
"""

import threading
import contextlib
import enum

from mixprec import _core, _nest
from mixprec import _variable

__all__ = ["GradientTape", "UnconnectedGradients"]


class UnconnectedGradients(enum.Enum):
    """What ``gradient`` returns for a source the target does not depend on."""
    NONE = "none"
    ZERO = "zero"


_traced_tapes = threading.local()  # .n: tapes entered while tracing, still open


def tapes_open_in_trace():
    """How many GradientTapes entered while a function traces on this thread are open."""
    return getattr(_traced_tapes, "n", 0)


class GradientTape:
    """Records operations for automatic differentiation (``tf.GradientTape``).

    Variables a recording tape sees being read are watched automatically (trainable ones,
    unless ``watch_accessed_variables=False``); tensors are watched with ``watch``.
    A non-persistent tape computes one set of gradients, then releases what it recorded.
    """

    def __init__(self, persistent=False, watch_accessed_variables=True):
        self._persistent = bool(persistent)
        self._watch_accessed_variables = bool(watch_accessed_variables)
        # NOTE: the C tape is always persistent; non-persistence (one gradient or jacobian,
        # then the record is released: _release) is kept here, so that jacobian can walk
        # the record once per row first.
        self._tape = _core.Tape(True, self._watch_accessed_variables)
        self._recording = False
        self._used = False
        self._watched_when_used = ()

    def __enter__(self):
        self._tape.push()
        self._recording = True
        # entered while a function traces: a loop inside the `with` would need the loop's
        # gradient recorded in the graph (src/mixprec/_loops.py breaks the graph then)
        self._in_trace = _core.graph_recording() is not None
        if self._in_trace:
            _traced_tapes.n = getattr(_traced_tapes, "n", 0) + 1
        return self

    def __exit__(self, exc_type, exc, tb):
        self._tape.pop()
        self._recording = False
        if getattr(self, "_in_trace", False):
            _traced_tapes.n -= 1
            self._in_trace = False
        return False

    def watch(self, tensor):
        """Ensures ``tensor`` (a tensor, variable, or nested structure of them) is traced."""
        for t in _nest.flatten(tensor):
            if not isinstance(t, (_core.Tensor, _core.Variable)):
                raise ValueError(
                    "Passed in object of type %s, not tf.Tensor or tf.Variable" % type(t).__name__)
            self._tape.watch(t)

    @contextlib.contextmanager
    def stop_recording(self):
        """Temporarily stops recording operations on this tape."""
        if not self._recording:
            raise ValueError("Tape must be recording to stop recording (use it inside `with`).")
        prev = self._tape.set_recording(False)
        try:
            yield
        finally:
            self._tape.set_recording(prev)

    def reset(self):
        """Clears everything recorded so far; the tape keeps recording if it was."""
        self._replace_tape(_core.Tape(True, self._watch_accessed_variables))
        self._used = False

    def _replace_tape(self, tape):
        if self._recording:
            self._tape.pop()
        self._tape = tape
        if self._recording:
            self._tape.push()

    def _check_usable(self):
        if self._used:  # TensorFlow's exception class and message
            raise RuntimeError("A non-persistent GradientTape can only be used to compute one "
                               "set of gradients (or jacobians)")

    def _release(self):
        """After a non-persistent tape's gradient: keep the watched variables (as TensorFlow
        does), drop the record, record nothing more."""
        if self._persistent:
            return
        self._watched_when_used = self.watched_variables()
        self._replace_tape(_core.Tape(True, False))
        self._used = True

    def watched_variables(self):
        """The variables this tape watched, in the order it saw them."""
        if self._used:
            return self._watched_when_used
        out = []
        for vid in self._tape.watched_variable_ids():
            v = _variable.lookup(vid)
            if v is not None:
                out.append(v)
        return tuple(out)

    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients=UnconnectedGradients.NONE):
        """d(sum of target) / d(sources), packed like ``sources``.

        ``target`` may be a tensor or a nested structure of tensors (their gradients add
        up); ``output_gradients`` seeds each target (default: ones). Sources are tensors
        or variables, possibly nested; unconnected ones give ``None`` (or zeros with
        ``unconnected_gradients='zero'``).
        """
        self._check_usable()
        unconnected = UnconnectedGradients(
            unconnected_gradients.value if isinstance(unconnected_gradients, UnconnectedGradients)
            else unconnected_gradients)
        flat_sources = _nest.flatten(sources)
        for s in flat_sources:
            if not isinstance(s, (_core.Tensor, _core.Variable)):
                raise TypeError(
                    "GradientTape.gradient: sources must be tensors or variables, got %r" % (s,))
        targets = [t for t in _nest.flatten(target)]
        targets = [t.value() if isinstance(t, _core.Variable) else t for t in targets]
        seeds = None
        if output_gradients is not None:
            seeds = _nest.flatten(output_gradients)
            if len(seeds) != len(targets):
                raise ValueError("output_gradients must have one entry per target")
            # NOTE: convert as TensorFlow does (no dtype hint: a float64 array stays
            # float64), then check every seed; the C side only checks the element count
            seeds = [None if sd is None else _core.convert_to_tensor(sd) for sd in seeds]
            for i, (sd, t) in enumerate(zip(seeds, targets)):
                # TensorFlow fails in the first backward op on a seed of another dtype or
                # shape; refuse it here, by name, instead of casting or reshaping it
                if sd is not None and isinstance(t, _core.Tensor):
                    if sd.dtype != t.dtype:
                        raise _core.InvalidDTypeError(
                            "output_gradients[%d] is %s but its target is %s" % (
                                i, sd.dtype.name, t.dtype.name))
                    if tuple(sd.shape) != tuple(t.shape):
                        raise _core.InvalidArgumentError(
                            "output_gradients[%d] has shape %s but its target has shape %s" % (
                                i, tuple(sd.shape), tuple(t.shape)))
        grads = self._tape.gradient(list(targets), seeds, flat_sources)
        self._release()
        if unconnected is UnconnectedGradients.ZERO:
            grads = [g if g is not None else _zeros_for(s) for g, s in zip(grads, flat_sources)]
        return _nest.pack_sequence_as(sources, grads)

    def jacobian(self, target, sources, unconnected_gradients=UnconnectedGradients.NONE,
                 parallel_iterations=None, experimental_use_pfor=True):
        """The Jacobian of ``target`` with respect to ``sources``: one gradient per element
        of ``target`` (computed row by row)."""
        self._check_usable()
        target = _core.convert_to_tensor(target)
        flat_sources = _nest.flatten(sources)
        n = target._numel
        unconnected = UnconnectedGradients(
            unconnected_gradients.value if isinstance(unconnected_gradients, UnconnectedGradients)
            else unconnected_gradients)
        rows = [[] for _ in flat_sources]
        raw = [[] for _ in flat_sources]
        for i in range(n):
            seed = _core.one_hot(i, n, dtype=target.dtype)
            seed = _core.reshape(seed, list(target.shape))
            gs = self._tape.gradient([target], [seed], flat_sources)
            for k, (g, s) in enumerate(zip(gs, flat_sources)):
                raw[k].append(g)
                rows[k].append(g if g is not None else _zeros_for(s))
        self._release()
        out = []
        for k, s in enumerate(flat_sources):
            shape = list(target.shape) + list(s.shape)
            if unconnected is UnconnectedGradients.NONE and n and all(
                    g is None for g in raw[k]):
                out.append(None)
            elif n == 0:
                out.append(_core.fill(shape, 0, s.dtype))
            else:
                out.append(_core.reshape(_core.stack(rows[k]), shape))
        return _nest.pack_sequence_as(sources, out)


def _zeros_for(s):
    dtype = s.true_dtype if isinstance(s, _core.Variable) else s.dtype
    return _core.fill(list(s.shape), 0, dtype)
