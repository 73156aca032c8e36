"""What a public module answers for a TensorFlow name mixprec does not have yet.

Each public module ends with ``__getattr__ = _unsupported.module_getattr(__name__)``: a miss
on a public name (``tf.sparse``, ``keras.layers.Foo``) becomes an AttributeError that says the
name is not supported yet and points to docs/porting.md. Private and dunder names keep the
plain message, because ``hasattr``, pickling, copy and IPython completion probe them. This
module must not import anything of mixprec's (every module imports it first).
"""

import importlib
import importlib.util

PORTING_DOC = "docs/porting.md"

# mixprec's module -> the TensorFlow spelling a user wrote
_TF_PREFIXES = (("mixprec.keras", "tf.keras"), ("mixprec", "tf"))


def tf_name(module, name):
    """``tf.keras.layers.Foo`` for ``('mixprec.keras.layers', 'Foo')``."""
    for ours, theirs in _TF_PREFIXES:
        if module == ours or module.startswith(ours + "."):
            return theirs + module[len(ours):] + "." + name
    return module + "." + name


def module_getattr(module_name):
    """The module-level ``__getattr__`` for ``module_name`` (PEP 562)."""

    def __getattr__(name):
        if not name.startswith("_"):
            # a submodule that exists but was not imported yet is found, as the import
            # system would on ``import module.name``
            full = module_name + "." + name
            try:
                found = importlib.util.find_spec(full) is not None
            except (ImportError, ValueError):  # the module is not a package
                found = False
            if found:
                return importlib.import_module(full)
            raise AttributeError(
                "%s is not supported yet by mixprec (module %r has no attribute %r); "
                "%s lists the supported names and how to port around the missing ones"
                % (tf_name(module_name, name), module_name, name, PORTING_DOC),
                name=name)
        raise AttributeError("module %r has no attribute %r" % (module_name, name))

    __getattr__.__qualname__ = __getattr__.__name__
    return __getattr__
