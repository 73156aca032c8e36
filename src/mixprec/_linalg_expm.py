"""tf.linalg.expm: the matrix exponential as TensorFlow computes it — scaling and squaring with
Padé approximants chosen by the 1-norm (degrees 3/5/7 for float16/float32, 3/5/7/9/13 for
float64), one matrix solve, then the squarings in a while_loop. A composition of ops only
(gradients and tracing come with them); the coefficients are the published Padé ones."""

import numpy as np

from mixprec import _core, _ops
from mixprec._dtypes import float64

_B3 = [120.0, 60.0, 12.0]
_B5 = [30240.0, 15120.0, 3360.0, 420.0, 30.0]
_B7 = [17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0, 56.0]
_B9 = [17643225600.0, 8821612800.0, 2075673600.0, 302702400.0, 30270240.0, 2162160.0, 110880.0,
       3960.0, 90.0]
_B13 = [64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
        129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
        40840800.0, 960960.0, 16380.0, 182.0]


def _pade(m, b, eye):
    """(u, v) of the Padé approximant with coefficients b (odd part u, even part v)."""
    mm = _ops.matmul
    if len(b) == 13:
        m2 = mm(m, m)
        m4 = mm(m2, m2)
        m6 = mm(m4, m2)
        tu = mm(m6, m6 + b[11] * m4 + b[9] * m2) + b[7] * m6 + b[5] * m4 + b[3] * m2 + b[1] * eye
        u = mm(m, tu)
        v = mm(m6, b[12] * m6 + b[10] * m4 + b[8] * m2) + b[6] * m6 + b[4] * m4 + b[2] * m2 + b[0] * eye
        return u, v
    powers = [eye, mm(m, m)]
    for _ in range(len(b) // 2 - 1):
        powers.append(mm(powers[-1], powers[1]))
    k = len(powers) - 1  # the highest even power m^(2k)
    tmp = powers[k]
    for j in range(k - 1, -1, -1):
        tmp = tmp + b[2 * j + 1] * powers[j]
    u = mm(m, tmp)
    v = b[2 * k] * powers[k]
    for j in range(k - 1, -1, -1):
        v = v + b[2 * j] * powers[j]
    return u, v


def _nest_where(l1, conds, cases):
    if len(cases) == 1:
        return cases[0]
    return _ops.where(l1 < conds[0], cases[0], _nest_where(l1, conds[1:], cases[1:]))


def expm(x, solve):
    from mixprec._control import while_loop

    shp = [int(d) for d in x.shape]
    if len(shp) < 2 or shp[-1] != shp[-2]:
        raise _ops_invalid("Matrix size-incompatible: In[0]: %s, In[1]: %s 0 0"
                           % (_dims(shp), _dims(shp)))
    n = shp[-1]
    if n == 0:
        return x
    eye = _ops.cast(_ops.constant(np.eye(n)), x.dtype)
    l1 = _ops.reduce_max(_ops.reduce_sum(_ops.abs(x), axis=-2), axis=-1)
    l1 = _ops.expand_dims(_ops.expand_dims(l1, -1), -1)
    dt = x.dtype
    if dt == float64:
        maxnorm = 5.371920351148152
        conds = (1.495585217958292e-002, 2.539398330063230e-001, 9.504178996162932e-001,
                 2.097847961257068e+000)
        orders = (_B3, _B5, _B7, _B9)
    else:
        maxnorm = 3.925724783138660
        conds = (4.258730016922831e-001, 1.880152677804762e+000)
        orders = (_B3, _B5)
    c = lambda v: _ops.cast(_ops.constant(v), dt)  # noqa: E731
    squarings = _ops.maximum(_core.floor(_ops.log(l1 / c(maxnorm)) / c(np.log(2.0))), c(0.0))
    cases = [_pade(x, b, eye) for b in orders]
    scaled = x / _ops.pow(c(2.0), squarings)
    cases.append(_pade(scaled, _B13 if dt == float64 else _B7, eye))
    u = _nest_where(l1, conds, [p[0] for p in cases])
    v = _nest_where(l1, conds, [p[1] for p in cases])
    result = solve(-u + v, u + v)
    max_sq = _ops.reduce_max(squarings)

    def body(i, r):
        return i + c(1.0), _ops.where(i < squarings, _ops.matmul(r, r), r)

    _, result = while_loop(lambda i, r: i < max_sq, body, [c(0.0), result])
    return result


def _dims(shape):
    return "[" + ",".join(str(d) for d in shape) + "]"


def _ops_invalid(msg):
    from mixprec import _core

    return _core.InvalidArgumentError(msg)


__all__ = ["expm"]
