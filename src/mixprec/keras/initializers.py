"""``tf.keras.initializers``: GlorotUniform (Dense's default), Zeros, Ones, HeNormal …

Random initializers are stateless, as tf-keras 2.21's: an instance draws from a Philox key
that depends on its seed only, so every call gives the same values for the same shape. An
unseeded one picks its seed at its first call (tf-keras: from the generator of
``keras.utils.set_random_seed``, else Python's ``random``; mixprec adds: from
``tf.random.set_seed``'s sequence when that is set, so a seeded program stays reproducible)
and warns, as tf-keras, when it is called again. Values are not TensorFlow's bits.
"""

import math
import random as _pyrandom
import warnings

from mixprec import _core
from mixprec import random as _random
from mixprec._dtypes import as_dtype

__all__ = ["Initializer", "Zeros", "Ones", "Constant", "RandomNormal", "RandomUniform",
           "TruncatedNormal", "VarianceScaling", "GlorotUniform", "GlorotNormal", "HeNormal",
           "HeUniform", "LecunNormal", "LecunUniform", "get", "serialize", "deserialize"]


class Initializer:
    def __call__(self, shape, dtype=None, **kwargs):
        raise NotImplementedError(
            "Initializer subclasses must implement the `__call__()` method.")

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


_UNIFORM, _NORMAL, _TRUNCATED = 0, 1, 2


def _create_seed():
    """The seed an unseeded initializer takes at its first call (tf-keras' _create_seed)."""
    from mixprec.keras import backend

    gen = getattr(backend._SEED_GENERATOR, "generator", None)
    if gen is not None:
        return gen.randint(1, int(1e9))
    if _random._global_seed is not None:
        # mixprec: under tf.random.set_seed, the next value of its sequence
        key, stream = _random.get_seed(None)
        return 1 + _random._mix(key, stream) % int(1e9)
    return _pyrandom.randint(1, int(1e9))


class _Random(Initializer):
    """An initializer drawing random values: tf-keras' seeding and reuse warning."""

    def _key_seed(self):
        if getattr(self, "_used", False):
            if self.seed is None:
                warnings.warn(
                    "The initializer %s is unseeded and being called multiple times, which "
                    "will return identical values each time (even if the initializer is "
                    "unseeded). Please update your code to provide a seed to the initializer, "
                    "or avoid using the same initializer instance more than once."
                    % type(self).__name__)
        else:
            self._used = True
        if self.seed is not None:
            return self.seed
        if getattr(self, "_drawn_seed", None) is None:
            self._drawn_seed = _create_seed()
        return self._drawn_seed

    def _draw(self, dist, shape, a, b, dtype):
        """Values of ``dist`` (uniform in [a, b), or normal with mean a and stddev b).
        NOTE: draws are stateless (tf-keras' RandomGenerator(seed, 'stateless')): the key
        depends on the seed only, the stream is always 0."""
        key = _random._mix(int(self._key_seed()), 0x6B657261)  # 'kera': apart from op seeds
        return _core.random(dist, [int(d) for d in shape], float(a), float(b), dtype, key, 0)


_ALLOWED_KWARGS = ["partition_shape", "partition_offset", "layout"]


def _dtype(dtype):
    from mixprec.keras import backend

    return as_dtype(dtype or backend.floatx())


def _args(shape, dtype, kwargs, kinds="numeric"):
    """(shape, dtype) as tf-keras checks them: known keyword arguments only (a
    partition_shape replaces the shape), and a dtype of the kind the initializer draws."""
    invalid = [k for k in kwargs if k not in _ALLOWED_KWARGS]
    if invalid:
        raise TypeError("Unknown keyword arguments: %s. Allowed keyword arguments: %s."
                        % (invalid, _ALLOWED_KWARGS))
    if "partition_shape" in kwargs:
        shape = kwargs["partition_shape"]
    dt = _dtype(dtype)
    if kinds == "float" and not dt.is_floating:
        raise ValueError("Expected floating point type, got %s." % (dt,))
    if kinds == "float_or_int" and not (dt.is_floating or dt.is_integer):
        raise ValueError("Expected float or integer dtype, got %s." % (dt,))
    return shape, dt


class Zeros(Initializer):
    def __call__(self, shape, dtype=None, **kwargs):
        shape, dtype = _args(shape, dtype, kwargs)
        return _core.fill(list(shape), 0, dtype)


class Ones(Initializer):
    def __call__(self, shape, dtype=None, **kwargs):
        shape, dtype = _args(shape, dtype, kwargs)
        return _core.fill(list(shape), 1, dtype)


class Constant(Initializer):
    def __init__(self, value=0):
        self.value = value

    def __call__(self, shape, dtype=None, **kwargs):
        shape, dtype = _args(shape, dtype, kwargs)
        return _core.constant(self.value, dtype, list(shape))

    def get_config(self):
        return {"value": self.value}


class RandomUniform(_Random):
    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        self.minval, self.maxval, self.seed = minval, maxval, seed

    def __call__(self, shape, dtype=None, **kwargs):
        shape, dtype = _args(shape, dtype, kwargs, "float_or_int")
        return self._draw(_UNIFORM, shape, self.minval, self.maxval, dtype)

    def get_config(self):
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed}


class RandomNormal(_Random):
    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def __call__(self, shape, dtype=None, **kwargs):
        shape, dtype = _args(shape, dtype, kwargs, "float")
        return self._draw(_NORMAL, shape, self.mean, self.stddev, dtype)

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class TruncatedNormal(_Random):
    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def __call__(self, shape, dtype=None, **kwargs):
        shape, dtype = _args(shape, dtype, kwargs, "float")
        return self._draw(_TRUNCATED, shape, self.mean, self.stddev, dtype)

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


def _fans(shape):
    shape = list(shape)
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = 1
    for d in shape[:-2]:
        receptive *= d
    return shape[-2] * receptive, shape[-1] * receptive


class VarianceScaling(_Random):
    """Keras' VarianceScaling: scale / fan, truncated normal (stddev corrected by
    0.87962566103423978), untruncated normal, or uniform."""

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None):
        if scale <= 0.0:
            raise ValueError("`scale` must be positive float. Received: scale=%s." % (scale,))
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError("Invalid `mode` argument: %s. Please use one of the %s."
                             % (mode, "{'fan_avg', 'fan_in', 'fan_out'}"))
        distribution = distribution.lower()
        if distribution == "normal":
            distribution = "truncated_normal"
        if distribution not in ("uniform", "truncated_normal", "untruncated_normal"):
            raise ValueError("Invalid `distribution` argument: %s.Allowed distributions: %s."
                             % (distribution,
                                "{'truncated_normal', 'uniform', 'untruncated_normal'}"))
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed

    def __call__(self, shape, dtype=None, **kwargs):
        shape, dtype = _args(shape, dtype, kwargs, "float")
        fan_in, fan_out = _fans(shape)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        scale = self.scale / max(1.0, n)
        if self.distribution == "truncated_normal":
            stddev = math.sqrt(scale) / 0.87962566103423978
            return self._draw(_TRUNCATED, shape, 0.0, stddev, dtype)
        if self.distribution == "untruncated_normal":
            return self._draw(_NORMAL, shape, 0.0, math.sqrt(scale), dtype)
        limit = math.sqrt(3.0 * scale)
        return self._draw(_UNIFORM, shape, -limit, limit, dtype)

    def get_config(self):
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution,
                "seed": self.seed}


class GlorotUniform(VarianceScaling):
    def __init__(self, seed=None):
        super().__init__(1.0, "fan_avg", "uniform", seed)

    def get_config(self):
        return {"seed": self.seed}


class GlorotNormal(VarianceScaling):
    def __init__(self, seed=None):
        super().__init__(1.0, "fan_avg", "truncated_normal", seed)

    def get_config(self):
        return {"seed": self.seed}


class HeNormal(VarianceScaling):
    def __init__(self, seed=None):
        super().__init__(2.0, "fan_in", "truncated_normal", seed)

    def get_config(self):
        return {"seed": self.seed}


class HeUniform(VarianceScaling):
    def __init__(self, seed=None):
        super().__init__(2.0, "fan_in", "uniform", seed)

    def get_config(self):
        return {"seed": self.seed}


class LecunNormal(VarianceScaling):
    def __init__(self, seed=None):
        super().__init__(1.0, "fan_in", "truncated_normal", seed)

    def get_config(self):
        return {"seed": self.seed}


class LecunUniform(VarianceScaling):
    def __init__(self, seed=None):
        super().__init__(1.0, "fan_in", "uniform", seed)

    def get_config(self):
        return {"seed": self.seed}


_ALIASES = {
    "zeros": Zeros, "ones": Ones, "constant": Constant, "random_normal": RandomNormal,
    "random_uniform": RandomUniform, "truncated_normal": TruncatedNormal,
    "glorot_uniform": GlorotUniform, "glorot_normal": GlorotNormal, "he_normal": HeNormal,
    "he_uniform": HeUniform, "lecun_normal": LecunNormal, "lecun_uniform": LecunUniform,
    "variance_scaling": VarianceScaling,
}
_CLASSES = {c.__name__: c for c in set(_ALIASES.values())}
# tf-keras' short spellings (Embedding's default is 'uniform')
_ALIASES.update(uniform=RandomUniform, normal=RandomNormal, one=Ones, zero=Zeros)
# tf-keras exports the snake-case names as aliases of the classes (initializers.zeros is
# Zeros)
zeros, ones, constant = Zeros, Ones, Constant
random_normal, random_uniform, truncated_normal = RandomNormal, RandomUniform, TruncatedNormal
glorot_uniform, glorot_normal, he_normal, he_uniform = (GlorotUniform, GlorotNormal, HeNormal,
                                                        HeUniform)
lecun_normal, lecun_uniform, variance_scaling = LecunNormal, LecunUniform, VarianceScaling


def serialize(initializer, use_legacy_format=False):
    """tf-keras 2.21's format: module, class_name, config, registered_name."""
    if initializer is None:
        return None
    cls = type(initializer)
    if use_legacy_format:
        return {"class_name": cls.__name__, "config": initializer.get_config()}
    builtin = _CLASSES.get(cls.__name__) is cls
    return {"module": "keras.initializers" if builtin else cls.__module__,
            "class_name": cls.__name__, "config": initializer.get_config(),
            "registered_name": _registered_name(cls, builtin)}


def _registered_name(cls, builtin):
    from mixprec.keras.saving import object_registration

    return object_registration.registered_name_or_none(cls, builtin)


def deserialize(config, custom_objects=None):
    from mixprec.keras.saving import object_registration as _reg

    found = _reg.deserialize_registered(config, custom_objects)
    if found is not _reg._MISSING:
        return found
    classes = dict(_CLASSES)
    classes.update(custom_objects or {})
    cls = classes.get(config.get("class_name"))
    if cls is None:
        raise ValueError("Unknown initializer: %r" % (config.get("class_name"),))
    return cls.from_config(config.get("config", {}))


def get(identifier):
    """An initializer from a name ('glorot_uniform', 'zeros' …), a config, an instance or a
    callable."""
    if identifier is None:
        return None
    if isinstance(identifier, str):
        cls = _ALIASES.get(identifier) or _CLASSES.get(identifier)
        if cls is None:
            from mixprec.keras.saving import object_registration

            cls = object_registration.get_registered_object(identifier)
        if cls is None:
            raise ValueError(
                "Unknown initializer: '%s'. Please ensure you are using a "
                "`keras.utils.custom_object_scope` and that this object is included in the "
                "scope. See https://www.tensorflow.org/guide/keras/save_and_serialize"
                "#registering_the_custom_object for details." % (identifier,))
        return cls()
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, type) and issubclass(identifier, Initializer):
        return identifier()
    if callable(identifier):
        return identifier
    raise ValueError("Could not interpret initializer identifier: %r" % (identifier,))

from mixprec.keras._initializers_more import Identity, Orthogonal  # noqa: E402

_ALIASES.update(orthogonal=Orthogonal, identity=Identity)
_CLASSES.update(Orthogonal=Orthogonal, Identity=Identity)
orthogonal, identity = Orthogonal, Identity
__all__ += ["Orthogonal", "Identity", "orthogonal", "identity"]

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
