/* grad_image.c — the backward rule of ImageProjectiveTransformV3, TensorFlow's: the incoming
 * gradient warped back by the inverse transforms (rows [t, 1] as 3x3 matrices, inverted and
 * normalised so the last entry is 1), same interpolation and fill mode, fill value 0, onto the
 * images' size. It is the adjoint only for invertible pixel permutations (integer shifts,
 * flips), as in TensorFlow; the transforms get no gradient. Composed from ops, no kernels. */
#include <string.h>

#include "grad.h"
#include "grad_arena.h"

mp_status mp_grad_image_transform(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    arena a = {0};
    if (!need[0])
        return MP_OK;
    mp_tensor *x = IN(0), *t = IN(1);
    int64_t tb = t->shape[0];
    /* [t, 1] -> (tb, 3, 3) */
    int64_t one_shape[2] = {1, 1}, col_shape[2] = {tb, 1};
    mp_attrs bc = {{0}};
    bc.ints[0] = tb, bc.ints[1] = 1, bc.n_ints = 2;
    mp_tensor *one = reshape(&a, scalar(&a, t, 1.0), 2, one_shape);
    mp_tensor *ones = run(&a, MP_OP_BROADCAST_TO, 1, &one, &bc);
    mp_tensor *parts[2] = {t, ones};
    mp_attrs cat = {.i0 = 1};
    int64_t m_shape[3] = {tb, 3, 3}, flat_shape[2] = {tb, 9};
    mp_tensor *m = reshape(&a, run(&a, MP_OP_CONCAT, 2, parts, &cat), 3, m_shape);
    mp_attrs no_adj = {.i0 = 0};
    mp_tensor *inv = reshape(&a, run(&a, MP_OP_MATRIX_INVERSE, 1, &m, &no_adj), 2, flat_shape);
    /* divided by its last entry, then the first eight */
    mp_attrs last = {{0}};
    last.ints[0] = 0, last.ints2[0] = tb, last.ints3[0] = 1;
    last.ints[1] = 8, last.ints2[1] = 1, last.ints3[1] = 1;
    last.n_ints = 2;
    mp_tensor *norm = bin(&a, MP_OP_DIV, inv, reshape(&a, run(&a, MP_OP_STRIDED_SLICE, 1, &inv, &last), 2,
                                                          col_shape));
    mp_attrs first8 = last;
    first8.ints[1] = 0, first8.ints2[1] = 8;
    mp_tensor *ti = run(&a, MP_OP_STRIDED_SLICE, 1, &norm, &first8);
    mp_attrs at = {{0}};
    at.ints[0] = x->shape[1], at.ints[1] = x->shape[2], at.n_ints = 2;
    at.i0 = n->attrs.i0, at.i1 = n->attrs.i1, at.f0 = 0.0;
    mp_tensor *in2[2] = {dy, ti};
    if ((dx[0] = run(&a, MP_OP_IMAGE_PROJECTIVE_TRANSFORM, 2, in2, &at)))
        out(dx[0]);
    return finish(&a);
}
