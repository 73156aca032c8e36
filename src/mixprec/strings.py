"""``tf.strings``: text ops on string tensors.

The Python face only: argument checks, TensorFlow's names and defaults, and arranging layouts
(broadcasting scalars, moving reduced axes last) before one core call per op; the element
loops are csrc/strings_text.c, strings_regex.c and strings_hash.c. Regular expressions are
POSIX extended (glibc) with RE2's ``\\d``/``\\D`` translated, not RE2 (docs/architecture.md).
"""

import numpy as np

from mixprec import _core, _dtypes, _ragged

__all__ = [
    "as_string", "bytes_split", "format", "join", "length", "lower", "ngrams", "reduce_join",
    "regex_full_match", "regex_replace", "split", "strip", "substr", "to_hash_bucket_fast",
    "to_hash_bucket", "to_hash_bucket_strong", "to_number", "unicode_decode", "unicode_split", "upper",
]

_UNITS = ("BYTE", "UTF8_CHAR")


def _str(x, what="input"):
    t = x if isinstance(x, _core.Tensor) else _core.convert_to_tensor(x, "string")
    if t.dtype != _dtypes.string:
        raise TypeError("Input '%s' of the op has type %s that does not match expected type of "
                        "string." % (what, t.dtype.name))
    return t


def _unit(unit, op):
    if unit not in _UNITS:
        raise _core.InvalidArgumentError(
            "Value for attr 'unit' of \"%s\" is not in the list of allowed values: \"BYTE\", "
            "\"UTF8_CHAR\" [Op:%s]" % (unit, op))
    return unit == "UTF8_CHAR"


def _pattern(p):
    if isinstance(p, _core.Tensor):
        p = p.numpy()
    return p.decode("utf-8") if isinstance(p, bytes) else str(p)


def length(input, unit="BYTE", name=None):  # noqa: A002 - TensorFlow's argument name
    """Length of each element in bytes or UTF-8 characters (int32)."""
    return _core.str_length(_str(input), _unit(unit, "StringLength"))


def _utf8_case(encoding):
    if encoding in ("", None):
        return False
    if str(encoding).lower().replace("-", "") == "utf8":
        return True
    raise _core.InvalidArgumentError("Unsupported encoding: %s" % (encoding,))


def lower(input, encoding="", name=None):  # noqa: A002
    """Letters to lower case: ASCII only, or all of Unicode with encoding="utf-8"."""
    return _core.str_case(_str(input), False, _utf8_case(encoding))


def upper(input, encoding="", name=None):  # noqa: A002
    """Letters to upper case: ASCII only, or all of Unicode with encoding="utf-8"."""
    return _core.str_case(_str(input), True, _utf8_case(encoding))


def strip(input, name=None):  # noqa: A002
    """Leading and trailing ASCII whitespace removed."""
    return _core.str_strip(_str(input))


def _sep(s):
    if isinstance(s, _core.Tensor):
        s = s.numpy()
    return s.encode("utf-8") if isinstance(s, str) else bytes(s)


def join(inputs, separator="", name=None):
    """Element-wise concatenation of same-shape string tensors (scalars broadcast)."""
    from mixprec import _ops
    ts = [_str(t) for t in inputs]
    if not ts:
        raise ValueError("tf.strings.join needs at least one input")
    shapes = [tuple(t.shape.as_list()) for t in ts]
    full = [s for s in shapes if s != ()]
    target = full[0] if full else ()
    for s in full:
        if s != target:
            raise _core.InvalidArgumentError(
                "Input shapes do not match: [%s] vs. [%s] [Op:StringJoin]" % (
                    ",".join(map(str, target)), ",".join(map(str, s))))
    ts = [_ops.broadcast_to(t, list(target)) if tuple(t.shape.as_list()) != target else t
          for t in ts]
    return _core.str_join(ts, _sep(separator))


def reduce_join(inputs, axis=None, keepdims=False, separator="", name=None):
    """Joins the elements along ``axis`` (all when None) with ``separator``."""
    from mixprec import _ops
    x = _str(inputs)
    nd = x.ndim
    if axis is None:
        axes = list(range(nd))
    else:
        axes = [int(a) for a in (np.ravel(axis.numpy() if isinstance(axis, _core.Tensor) else axis))]
        for a in axes:
            if not -nd <= a < nd:
                raise _core.InvalidArgumentError(
                    "Invalid reduction dimension %d for input with %d dimensions." % (a, nd))
        axes = sorted(set(a % nd for a in axes))
    keep = [d for d in range(nd) if d not in axes]
    dims = x.shape.as_list()
    if axes and keep + axes != list(range(nd)):
        x = _ops.transpose(x, keep + axes)
    k = int(np.prod([dims[d] for d in axes])) if axes else 1
    out_shape = [1 if d in axes else dims[d] for d in range(nd)] if keepdims else \
        [dims[d] for d in keep]
    return _core.str_join_rows(x, k, _sep(separator), out_shape)


def regex_full_match(input, pattern, name=None):  # noqa: A002
    """Whether each element matches ``pattern`` as a whole (bool)."""
    return _core.str_regex_full_match(_str(input), _pattern(pattern))


def regex_replace(input, pattern, rewrite, replace_global=True, name=None):  # noqa: A002
    """Replaces matches of ``pattern`` with ``rewrite`` (``\\1`` for groups)."""
    return _core.str_regex_replace(_str(input), _pattern(pattern), _pattern(rewrite),
                                   bool(replace_global))


def substr(input, pos, len, name=None, unit="BYTE"):  # noqa: A002
    """Substrings from ``pos`` (negative: from the end) of ``len`` bytes / characters."""
    from mixprec import _ops
    x = _str(input)
    utf8 = _unit(unit, "Substr")
    pos_t = _core.convert_to_tensor(pos)
    len_t = _core.convert_to_tensor(len)
    if pos_t.dtype != len_t.dtype or not pos_t.dtype.is_integer:
        raise TypeError("pos and len must be integer tensors of one dtype, got %s and %s" % (
            pos_t.dtype.name, len_t.dtype.name))
    target = x.shape.as_list()
    if pos_t.ndim and pos_t.shape.as_list() != target:
        pos_t = _ops.broadcast_to(pos_t, target)
    if len_t.ndim and len_t.shape.as_list() != target:
        len_t = _ops.broadcast_to(len_t, target)
    return _core.str_substr(x, pos_t, len_t, utf8)


def to_number(string_tensor, out_type=_dtypes.float32, name=None):
    """Parses each element as a number of ``out_type`` (float32/float64/int32/int64)."""
    return _core.str_to_number(_str(string_tensor), _dtypes.as_dtype(out_type))


def as_string(input, precision=-1, scientific=False, shortest=False, width=-1, fill="",  # noqa: A002
              name=None):
    """Formats numbers as strings (printf: %f by default, %e scientific, %g shortest)."""
    if scientific and shortest:
        raise _core.InvalidArgumentError(
            "Cannot select both scientific and shortest notation [Op:AsString]")
    if fill not in ("", " ", "0"):
        raise _core.InvalidArgumentError('Fill argument not supported: "%s" [Op:AsString]' % fill)
    x = _core.convert_to_tensor(input)
    conv = "e" if scientific else "g" if shortest else "f"
    return _core.str_as_string(x, int(precision), conv, int(width), fill or " ")


def to_hash_bucket_fast(input, num_buckets, name=None):  # noqa: A002
    """FarmHash Fingerprint64 of each element modulo ``num_buckets`` (int64)."""
    return _core.str_hash_bucket(_str(input), int(num_buckets), 0, 0, 0)


def to_hash_bucket(string_tensor, num_buckets, name=None):
    """TensorFlow's legacy (non-fingerprint) Hash64 of each element modulo ``num_buckets``."""
    return _core.str_hash_bucket(_str(string_tensor), int(num_buckets), 2, 0, 0)


def to_hash_bucket_strong(input, num_buckets, key, name=None):  # noqa: A002
    """Keyed SipHash-2-4 of each element modulo ``num_buckets`` (int64); key: two ints."""
    k = [int(v) for v in key]
    if len(k) != 2:
        raise _core.InvalidArgumentError("Key must have 2 elements")
    return _core.str_hash_bucket(_str(input), int(num_buckets), 1, k[0] & (2**64 - 1),
                                 k[1] & (2**64 - 1))


def _ragged_or_dense(x, values, splits):
    if x.ndim == 0:
        return values
    return _ragged.RaggedTensor(values, splits)


def _rank_check(x, op):
    if x.ndim > 1:
        raise NotImplementedError(
            "mixprec's tf.strings.%s takes a scalar or 1-D input (a rank-%d input would need "
            "nested ragged tensors); reshape it to 1-D first" % (op, x.ndim))


def split(input, sep=None, maxsplit=-1, name=None):  # noqa: A002
    """Splits each element on ``sep`` (runs of whitespace when None): a RaggedTensor for 1-D
    input, a Tensor for a scalar."""
    x = _str(input)
    _rank_check(x, "split")
    if sep is not None and _sep(sep) == b"":
        sep = None
    values, splits = _core.str_split(x, None if sep is None else _sep(sep), int(maxsplit))
    return _ragged_or_dense(x, values, splits)


def bytes_split(input, name=None):  # noqa: A002
    """Each element's single bytes."""
    x = _str(input)
    _rank_check(x, "bytes_split")
    values, splits = _core.str_chars_split(x, 0)
    return _ragged_or_dense(x, values, splits)


def unicode_split(input, input_encoding, errors="replace", replacement_char=65533,  # noqa: A002
                  name=None):
    """Each element's UTF-8 characters (malformed bytes become U+FFFD)."""
    _encoding(input_encoding)
    x = _str(input)
    _rank_check(x, "unicode_split")
    values, splits = _core.str_chars_split(x, 1)
    return _ragged_or_dense(x, values, splits)


def unicode_decode(input, input_encoding, errors="replace", replacement_char=65533,  # noqa: A002
                   replace_control_characters=False, name=None):
    """Each element's code points (int32); malformed bytes decode to U+FFFD."""
    _encoding(input_encoding)
    x = _str(input)
    _rank_check(x, "unicode_decode")
    values, splits = _core.str_chars_split(x, 2)
    return _ragged_or_dense(x, values, splits)


def _encoding(enc):
    if str(enc).upper().replace("-", "") != "UTF8":
        raise NotImplementedError("mixprec decodes UTF-8 only, got input_encoding=%r" % (enc,))


def _fmt_value(v, summarize):
    from mixprec import _control
    if isinstance(v, _core.Tensor) and v.dtype == _dtypes.string:
        a = np.asarray(v.numpy(), dtype=object)
        quoted = np.frompyfunc(lambda b: '"%s"' % b.decode("utf-8", "replace"), 1, 1)(a)
        text = _control._fmt_array(np.asarray(quoted, dtype=object), summarize) if a.ndim else \
            quoted.item() if hasattr(quoted, "item") else quoted
        return text
    if isinstance(v, _core.Tensor):
        return _control._fmt_array(np.asarray(v.numpy()), summarize)
    return str(v)


def format(template, inputs, placeholder="{}", summarize=3, name=None):  # noqa: A001
    """``template`` with each ``placeholder`` replaced by the next input, printed as tf.print
    prints tensors (``summarize`` items at each end of a long dimension)."""
    if not isinstance(inputs, (list, tuple)):
        inputs = [inputs]
    parts = template.split(placeholder)
    if len(parts) - 1 != len(inputs):
        raise ValueError(
            "The template expects %d tensors, but the inputs only has %d. Please ensure the "
            "number of placeholders in template matches inputs length." % (len(parts) - 1,
                                                                            len(inputs)))
    out = [parts[0]]
    for v, p in zip(inputs, parts[1:]):
        out.append(_fmt_value(v if isinstance(v, _core.Tensor) else _core.convert_to_tensor(v),
                              summarize))
        out.append(p)
    return _core.convert_to_tensor("".join(out), "string")


def ngrams(data, ngram_width, separator=" ", pad_values=None, padding_width=None,
           preserve_short_sequences=False, name=None):
    """n-grams of a 1-D token tensor (a Tensor) or of each row of a RaggedTensor: all grams
    of the first width, then of the next ... (no padding)."""
    from mixprec.keras.layers._text_preprocessing import _ngram_rows
    if pad_values is not None or preserve_short_sequences:
        raise NotImplementedError("mixprec's tf.strings.ngrams has no padding options")
    widths = (ngram_width,) if isinstance(ngram_width, int) else tuple(ngram_width)
    if isinstance(data, _ragged.RaggedTensor):
        values, splits = _ngram_rows(data.values, data._splits_np(), widths, separator)
        return _ragged.RaggedTensor(values, _core.constant(splits, "int64"))
    x = _str(data)
    if x.ndim != 1:
        raise NotImplementedError("mixprec's tf.strings.ngrams takes a 1-D Tensor or a "
                                  "RaggedTensor of rows")
    values, _ = _ngram_rows(x, np.array([0, x.shape[0]], dtype=np.int64), widths, separator)
    return values
