"""``tf.data.Options`` and ``Dataset.options()`` / ``with_options``; the ``tf.data.Iterator``
and ``tf.data.NumpyIterator`` types.

Options are TensorFlow's option tree (threading, optimization, distribution, autotune ...),
kept and merged along a pipeline as tf.data does; mixprec's host pipeline reads none of them
(it has no threads or graph rewrites to tune), so setting one changes no element.
"""

import abc
import enum

__all__ = ["Options", "ThreadingOptions", "OptimizationOptions", "DistributeOptions",
           "AutotuneOptions", "AutoShardPolicy", "ExternalStatePolicy", "Iterator",
           "NumpyIterator", "options_of", "with_options"]


class AutoShardPolicy(enum.IntEnum):
    """``tf.data.experimental.AutoShardPolicy``."""
    OFF = -1
    AUTO = 0
    FILE = 1
    DATA = 2
    HINT = 3


class ExternalStatePolicy(enum.Enum):
    WARN = 0
    IGNORE = 1
    FAIL = 2


class _OptionsBase:
    """A fixed set of options with defaults; setting another name raises AttributeError
    (TensorFlow's message), and ``==`` compares the values."""

    _FIELDS = {}
    _ALIASES = {}

    def __init__(self):
        object.__setattr__(self, "_values", {})

    def __getattr__(self, name):
        name = type(self)._ALIASES.get(name, name)
        fields = type(self)._FIELDS
        if name not in fields:
            raise AttributeError(name)
        values = self.__dict__["_values"]
        if name not in values:
            default = fields[name]
            values[name] = default() if isinstance(default, type) and issubclass(
                default, _OptionsBase) else default
        return values[name]

    def __setattr__(self, name, value):
        name = type(self)._ALIASES.get(name, name)
        if name not in type(self)._FIELDS:
            raise AttributeError("Cannot set the property %s on %s." % (name,
                                                                       type(self).__name__))
        self._values[name] = value

    def _set_values(self):
        return dict(self._values)

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in type(self)._FIELDS)

    def __ne__(self, other):
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    __hash__ = None

    def _merge_from(self, other):
        """Options ``other`` set explicitly override this one's."""
        for k, v in other._values.items():
            if isinstance(v, _OptionsBase):
                getattr(self, k)._merge_from(v)
            else:
                self._values[k] = v


class ThreadingOptions(_OptionsBase):
    _FIELDS = {"max_intra_op_parallelism": None, "private_threadpool_size": None}


class OptimizationOptions(_OptionsBase):
    _FIELDS = {k: None for k in (
        "apply_default_optimizations", "filter_fusion", "filter_parallelization",
        "inject_prefetch", "map_and_batch_fusion", "map_and_filter_fusion", "map_fusion",
        "map_parallelization", "noop_elimination", "parallel_batch", "seq_interleave_prefetch",
        "shuffle_and_repeat_fusion")}


class DistributeOptions(_OptionsBase):
    _FIELDS = {"auto_shard_policy": AutoShardPolicy.AUTO, "num_devices": None}


class AutotuneOptions(_OptionsBase):
    _FIELDS = {"enabled": None, "cpu_budget": None, "ram_budget": None,
               "autotune_algorithm": None, "initial_parallelism": None}


class ServiceOptions(_OptionsBase):
    _FIELDS = {"pinned": None}


class Options(_OptionsBase):
    """``tf.data.Options``: settings of a whole pipeline (see the module note: mixprec keeps
    them but its host pipeline is not changed by them)."""

    _FIELDS = {"autotune": AutotuneOptions, "dataset_name": None, "deterministic": None,
               "experimental_distribute": DistributeOptions,
               "experimental_external_state_policy": None,
               "experimental_optimization": OptimizationOptions,
               "experimental_service": ServiceOptions, "experimental_slack": None,
               "experimental_symbolic_checkpoint": None, "experimental_warm_start": None,
               "framework_type": None, "threading": ThreadingOptions}
    _ALIASES = {"experimental_deterministic": "deterministic",
                "experimental_threading": "threading"}

    def merge(self, options):
        """A new Options: this one's values, overridden by those ``options`` set."""
        out = Options()
        out._merge_from(self)
        if options is not None:
            out._merge_from(options)
        return out


def _parents(ds):
    from mixprec.data.dataset import Dataset
    for v in vars(ds).values():
        if isinstance(v, Dataset):
            yield v
        elif isinstance(v, (list, tuple)):
            for x in v:
                if isinstance(x, Dataset):
                    yield x


def options_of(ds):
    """``Dataset.options()``: the options set anywhere upstream of ``ds``, merged (inputs
    first, then the later ``with_options``)."""
    out = Options()
    seen = set()

    def visit(d):
        if id(d) in seen:
            return
        seen.add(id(d))
        for p in _parents(d):
            visit(p)
        own = d.__dict__.get("_own_options")
        if own is not None:
            out._merge_from(own)
    visit(ds)
    return out


def with_options(ds, options):
    """``Dataset.with_options``: the same elements, with ``options`` merged into the
    pipeline's (TensorFlow's _OptionsDataset)."""
    from mixprec.data.dataset import _PassThrough
    if not isinstance(options, Options):
        raise TypeError("options must be a tf.data.Options, got %s" % type(options).__name__)
    out = _PassThrough(ds, "_OptionsDataset")
    out._own_options = options
    return out


class Iterator(abc.ABC):
    """``tf.data.Iterator``: what ``iter(dataset)`` returns (``get_next``, ``next``)."""

    @abc.abstractmethod
    def get_next(self):
        """The next element; OutOfRangeError at the end."""


class NumpyIterator:
    """``dataset.as_numpy_iterator()``: the elements as NumPy values."""

    def __init__(self, dataset):
        self._it = iter(dataset)

    def __iter__(self):
        return self

    def __next__(self):
        from mixprec import _nest
        return _nest.map_structure(lambda t: t.numpy() if hasattr(t, "numpy") else t,
                                   next(self._it))

    def next(self):
        return self.__next__()

    def __repr__(self):
        return "<%s>" % type(self).__name__
