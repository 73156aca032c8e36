"""MirroredStrategy over several GPUs: which collectives engine sums the replicas'
gradients (NCCL between real GPUs, the thread engine where "GPU" memory is host memory —
the emulated GPUs of the tests), where libnccl is found, and the mirrored variables — one
copy per GPU, reached by a replica through its table in the C binding
(``_core.replica_vars_*``), updated by every replica identically. Orchestration only: the
copies are made by C ops, the sums by the C collectives. NOTE: not yet run on real GPUs."""

import contextlib
import glob
import os
import sys
import threading

from mixprec import _core

_tls = threading.local()


# ----------------------------------------------------------------- engine and library

def gpu_backend():
    """The name of the registered GPU backend ('cuda', 'emulated-gpu') or None."""
    return _core.backend_name(1)


def select_engine(device_names, gpu_backend_name):
    """The collectives engine for local replicas on ``device_names`` ('/device:GPU:0'…):
    'none' for one replica, 'threads' for CPUs or GPUs whose memory is host memory (the
    emulated GPU), 'nccl' for GPUs of the CUDA backend."""
    kinds = {n.split(":")[-2].upper() for n in device_names}
    if len(device_names) <= 1:
        return "none"
    if kinds == {"CPU"}:
        return "threads"
    if kinds != {"GPU"}:
        raise ValueError("MirroredStrategy cannot mix CPU and GPU devices: %s" % (list(device_names),))
    return "nccl" if nccl_backend(gpu_backend_name) else "threads"


def nccl_backend(gpu_backend_name):
    """Whether this GPU backend's tensors are summed by NCCL: the CUDA backend's; and, as a
    test aid only (``MIXPREC_NCCL_ON_EMULATED_GPU=1``), the emulated GPU's, whose memory is
    host memory, so that the tests' fake libnccl (tests/distribute/fake_nccl.c, named by
    MIXPREC_NCCL_LIBRARY) runs the NCCL engine's logic without a GPU."""
    if gpu_backend_name == "cuda":
        return True
    return (gpu_backend_name == "emulated-gpu"
            and os.environ.get("MIXPREC_NCCL_ON_EMULATED_GPU") == "1")


def nccl_library():
    """Where libnccl is: MIXPREC_NCCL_LIBRARY, else the ``nvidia-nccl-cu13`` (or -cu12)
    wheel's copy next to this Python's packages, else the system's ``libnccl.so.2`` (the
    dynamic loader's search)."""
    lib = os.environ.get("MIXPREC_NCCL_LIBRARY")
    if lib:
        return lib
    for base in sys.path:
        if base and os.path.isdir(os.path.join(base, "nvidia")):
            hits = sorted(glob.glob(os.path.join(base, "nvidia", "nccl", "lib", "libnccl.so*")))
            if hits:
                return hits[0]
    return "libnccl.so.2"


def ordinal(device_name):
    """'/job:…/device:GPU:3' -> 3."""
    return int(device_name.rsplit(":", 1)[1])


# ----------------------------------------------------------------- this thread's replica

def active_table():
    """The replica variable table this thread uses (None: cross-replica, primaries)."""
    return getattr(_tls, "table", None)


@contextlib.contextmanager
def use_table(table):
    prev = getattr(_tls, "table", None)
    _tls.table = table
    _core.replica_vars_use(table)
    try:
        yield
    finally:
        _tls.table = prev
        _core.replica_vars_use(prev)


def creating_copy():
    return getattr(_tls, "copying", False)


def _device_of(t):
    """(type, index) of a tensor's device string ('/job:…/device:GPU:1')."""
    name = t.device.rsplit("device:", 1)[-1]
    kind, idx = name.split(":")
    return (0 if kind.upper() == "CPU" else 1, int(idx))


def to_device(x, spec):
    """x on device spec (type, index): itself when already there, else a copy (C op)."""
    if not isinstance(x, _core.Tensor) or _device_of(x) == spec:
        return x
    prev = _core.set_device(spec)
    try:
        return _core.identity(x)
    finally:
        _core.set_device(prev)


class Mirrors:
    """The strategy's mirrored variables: for each replica, a table primary -> copy on its
    GPU (the primary is the copy of the replica whose GPU it lives on)."""

    def __init__(self, device_names):
        self.devices = tuple(device_names)
        self.specs = [(1, ordinal(d)) for d in self.devices]
        self.tables = [_core.replica_vars_new() for _ in self.devices]
        self.components = {}  # primary id -> (primary, [variable of replica i])
        self.lock = threading.RLock()

    def add(self, var):
        """Mirror ``var`` (created in the strategy's scope or replica): a copy of its value
        on every replica's GPU but its own."""
        with self.lock:
            if var._id in self.components:
                return self.components[var._id][1]
            with use_table(None):
                value = var._peek()
                home = _device_of(value)
                if home != self.specs[0] and home in self.specs:
                    # made by another replica (a layer or metric built lazily in a replica
                    # thread): the variable itself goes to the first GPU — cross-replica
                    # code works there — and that replica gets a copy like the others
                    var._move_to(self.specs[0])
                    home = self.specs[0]
                per = []
                _tls.copying = True
                try:
                    for i, spec in enumerate(self.specs):
                        if spec == home:
                            per.append(var)
                            continue
                        from mixprec._variable import Variable

                        copy = Variable(to_device(value, spec), trainable=var.trainable,
                                        name=var.name)
                        copy._autocast = var._autocast
                        per.append(copy)
                        _core.replica_vars_add(self.tables[i], var, copy)
                finally:
                    _tls.copying = False
            self.components[var._id] = (var, per)
            var.__dict__["_mirror_copies"] = [c for c in per if c is not var]
            return per

    def local_results(self, var):
        comp = self.components.get(var._id)
        return tuple(comp[1]) if comp is not None else (var,) * len(self.devices)

    @contextlib.contextmanager
    def replica(self, i):
        """Replica i's view: its table, its GPU as the default device."""
        prev = _core.set_device(self.specs[i])
        try:
            with use_table(self.tables[i]):
                yield
        finally:
            _core.set_device(prev)

    @contextlib.contextmanager
    def cross_replica(self):
        """The primaries, on the first replica's GPU (merge functions, reduce)."""
        prev = _core.set_device(self.specs[0])
        try:
            with use_table(None):
                yield
        finally:
            _core.set_device(prev)

    def for_each_replica(self, fn):
        """fn(i) under replica i's view for every replica, in order (the updates of a
        merge_call: each GPU's copies updated with that replica's summed gradients)."""
        from mixprec.distribute.values import regroup

        results = []
        for i in range(len(self.devices)):
            with self.replica(i):
                results.append(fn(i))
        return regroup(results)


def broadcast_assign(var):
    """After a cross-replica assignment of a mirrored variable: every copy takes the
    primary's new value (TensorFlow's MirroredVariable.assign outside a replica)."""
    copies = var.__dict__.get("_mirror_copies")
    if not copies or active_table() is not None:
        return
    value = var._peek()
    for c in copies:
        c._assign(to_device(value, _device_of(c._peek())))
