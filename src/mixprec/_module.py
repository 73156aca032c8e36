"""``tf.Module``: a named container whose variables and submodules are found by walking its
attributes (TensorFlow's order), with ``with_name_scope`` and checkpoint children.

Owns the attribute walk only; it must not create, copy or compute variables (a Keras layer
met in the walk contributes its own ``variables``).
"""

import functools
import re

__all__ = ["Module"]

_VALID_NAME = re.compile(r"^[a-zA-Z_]([a-zA-Z0-9_])*$")
_OWN = frozenset(("_name", "_scope_name"))


def _camel_to_snake(value):
    # TensorFlow's module naming: "MyDense" -> "my_dense", "HTTPServer" -> "http_server"
    return re.sub(r"((?<=[a-z0-9])[A-Z]|(?!^)[A-Z](?=[a-z]))", r"_\1", value).lower()


def _leaves(value):
    """The leaves of one attribute's value, as TensorFlow's nest.flatten: dicts by sorted
    key, lists and tuples in order."""
    if isinstance(value, dict):
        for k in sorted(value, key=repr):
            yield from _leaves(value[k])
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _leaves(v)
    else:
        yield value


def _is_layer(x):
    from mixprec.keras.engine.base_layer import Layer
    return isinstance(x, Layer)


class _Scope:
    """The module's name scope (``module.name_scope.name`` is ``"name/"``, prefixed by the
    ``tf.name_scope`` the module was created in): entering it names new variables
    ``name/...`` as TensorFlow's."""

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        from mixprec import _scopes
        self._cm = _scopes.name_scope(self.name)  # absolute: the name ends with "/"
        return self._cm.__enter__()

    def __exit__(self, *exc):
        return self._cm.__exit__(*exc)


class Module:
    """Base class of containers of variables and other modules (``tf.Module``)."""

    def __init__(self, name=None):
        if name is None:
            name = _camel_to_snake(type(self).__name__)
        elif not isinstance(name, str) or not _VALID_NAME.match(name):
            raise ValueError(
                "%r is not a valid module name. Module names must be valid Python identifiers "
                "(e.g. a valid class name)." % (name,))
        from mixprec import _scopes
        self._name = name
        self._scope_name = _scopes.current_prefix() + name + "/"

    @property
    def name(self):
        return self._name

    @property
    def name_scope(self):
        return _Scope(self._scope_name)

    def _flatten(self, predicate, recursive=True):
        """TensorFlow's walk: this module's attributes by sorted name, each value's leaves
        in order (each object once), then the submodules met, depth first."""
        seen = {id(self)}
        yield from _walk(self, predicate, recursive, seen, [id(self)])

    @property
    def variables(self):
        from mixprec._variable import Variable
        return tuple(self._flatten(lambda x: isinstance(x, Variable)))

    @property
    def trainable_variables(self):
        from mixprec._variable import Variable
        return tuple(self._flatten(lambda x: isinstance(x, Variable) and x.trainable))

    @property
    def non_trainable_variables(self):
        from mixprec._variable import Variable
        return tuple(self._flatten(lambda x: isinstance(x, Variable) and not x.trainable))

    @property
    def submodules(self):
        return tuple(self._flatten(lambda x: isinstance(x, Module) or _is_layer(x)))

    @classmethod
    def with_name_scope(cls, method):
        """Decorator: the method runs inside the module's name scope."""
        @functools.wraps(method)
        def wrapped(self, *args, **kwargs):
            with self.name_scope:
                return method(self, *args, **kwargs)
        return wrapped

    def _trackable_children(self):
        """Checkpoint children: every attribute holding variables or trackables, by its name
        (TensorFlow's AutoTrackable: private names too)."""
        from mixprec.train import _trackable
        out = []
        for k, v in vars(self).items():
            if k in _OWN or v is None or v is self:
                continue
            if isinstance(v, (list, tuple)):
                items = [x for x in v if _trackable._is_trackable(x)]
                if items and len(items) == len(v):
                    out.append((k, _trackable.ListNode(items)))
            elif isinstance(v, dict):
                items = [(str(n), x) for n, x in v.items() if _trackable._is_trackable(x)]
                if items and len(items) == len(v):
                    out.append((k, _DictNode(items)))
            elif _trackable._is_trackable(v):
                out.append((k, v))
        return out

    def __repr__(self):
        return "<%s.%s object at 0x%x>" % (type(self).__module__, type(self).__qualname__,
                                           id(self))


class _DictNode:
    """A dict of trackables (TensorFlow's _DictWrapper): children named by their keys."""

    __slots__ = ("items",)

    def __init__(self, items):
        self.items = items

    def _trackable_children(self):
        return list(self.items)


def _walk(module, predicate, recursive, seen, stack):
    subs = []
    for key in sorted(vars(module)):
        if key in _OWN:
            continue
        for leaf in _leaves(vars(module)[key]):
            if id(leaf) in seen:
                continue
            seen.add(id(leaf))
            if predicate(leaf):
                yield leaf
            if recursive and (isinstance(leaf, Module) or _is_layer(leaf)):
                subs.append(leaf)
    for sub in subs:
        if id(sub) in stack:
            continue
        if isinstance(sub, Module):
            stack.append(id(sub))
            yield from _walk(sub, predicate, recursive, seen, stack)
            stack.pop()
        else:  # a Keras layer: its own weights (and their layers' through it)
            for v in sub.weights:
                if id(v) not in seen and predicate(v):
                    seen.add(id(v))
                    yield v
