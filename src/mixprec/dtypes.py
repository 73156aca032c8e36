"""``tf.dtypes``: the DType class, ``as_dtype``, every dtype name and the casts.

A name space only: the DType objects live in ``_dtypes`` (int16/uint16/uint32/uint64 are
named there but have no tensor storage in the core) and the casts are the core's. It must
not define dtypes of its own.
"""

from mixprec._dtypes import (  # noqa: F401
    DType, as_dtype, bfloat16, bool, double, float16, float32, float64, half, int8, int16,
    int32, int64, uint8, uint16, uint32, uint64, string)
from mixprec._ops import cast, saturate_cast  # noqa: F401

__all__ = ["DType", "as_dtype", "cast", "saturate_cast", "bfloat16", "bool", "double",
           "float16", "float32", "float64", "half", "int8", "int16", "int32", "int64", "uint8",
           "uint16", "uint32", "uint64", "string"]

from mixprec import _unsupported  # noqa: E402

__getattr__ = _unsupported.module_getattr(__name__)  # unsupported TF names: a clear error
