"""h5py, the optional dependency of HDF5 weights (``pip install h5py`` or
``pip install 'mixprec[h5]'``): imported on first use, with an ImportError that says what
to install. No file format knowledge here."""

__all__ = ["h5py", "available"]


def available():
    try:
        import h5py  # noqa: F401
    except ImportError:
        return False
    return True


def h5py(what):
    """The h5py module; ``what`` names the operation that needs it (for the message)."""
    try:
        import h5py as mod
    except ImportError:
        raise ImportError(
            "%s requires h5py, which is not installed. Install it with `pip install h5py` "
            "(or `pip install 'mixprec[h5]'`). hint: `model.save_weights('weights.npz')` "
            "needs no extra package." % what) from None
    return mod
