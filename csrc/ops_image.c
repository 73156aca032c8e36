/* ops_image.c — the op layer of ImageProjectiveTransformV3: TensorFlow's checks and messages
 * on the images, the transforms and the output size, the output's allocation and one call of
 * the projective_transform slot. No pixel arithmetic here (projective_math.h's), no autodiff. */
#include "mixprec.h"
#include "ops_internal.h"

mp_status mp_run_image_transform(mp_tensor *const *in, const mp_attrs *at, const mp_backend *be, mp_tensor **out) {
    *out = NULL;
    mp_tensor *x = in[0], *t = in[1];
    if (x->dtype != MP_F32 && x->dtype != MP_F16 && x->dtype != MP_BF16 && x->dtype != MP_F64)
        return mp_error_set(MP_ERR_DTYPE,
                            "ImageProjectiveTransformV3: images of dtype %s (mixprec's kernel takes float16, "
                            "bfloat16, float32 and float64; cast integer images first)",
                            mp_dtype_name(x->dtype));
    if (t->dtype != MP_F32)
        return mp_error_set(MP_ERR_DTYPE, "ImageProjectiveTransformV3: transforms must be float32, got %s",
                            mp_dtype_name(t->dtype));
    if (x->ndim != 4)
        return mp_error_set(MP_ERR_SHAPE, "Input images must have rank 4");
    int64_t b = x->shape[0];
    if (t->ndim != 2 || t->shape[1] != 8 || (t->shape[0] != b && t->shape[0] != 1))
        return mp_error_set(MP_ERR_SHAPE, "Input transform should be num_images x 8 or 1 x 8");
    if (!at || at->n_ints != 2)
        return mp_error_set(MP_ERR_SHAPE, "output shape must have two elements[%d]", at ? at->n_ints : 0);
    if (at->ints[0] <= 0 || at->ints[1] <= 0)
        return mp_error_set(MP_ERR_SHAPE, "output dimensions must be positive");
    if (at->i0 < 0 || at->i0 > 1 || at->i1 < 0 || at->i1 > 3)
        return mp_error_set(MP_ERR_VALUE,
                            "ImageProjectiveTransformV3: interpolation %lld (0 nearest, 1 bilinear) or fill_mode "
                            "%lld (0 reflect, 1 wrap, 2 constant, 3 nearest) out of range",
                            (long long)at->i0, (long long)at->i1);
    if (mp_tensor_device(t).type != mp_tensor_device(x).type || mp_tensor_device(t).index != mp_tensor_device(x).index)
        return mp_error_set(MP_ERR_DEVICE, "ImageProjectiveTransformV3: images and transforms on different devices");
    int64_t shape[4] = {b, at->ints[0], at->ints[1], x->shape[3]};
    int64_t numel;
    MP_TRY(mp_shape_check(4, shape, &numel));
    mp_device dev = mp_tensor_device(x);
    MP_TRY(mp_tensor_new(x->dtype, 4, shape, dev, out));
    mp_status st = BE_CALL(be, projective_transform, dev, x->dtype, mp_tensor_data(x),
                           (const float *)mp_tensor_data(t), mp_tensor_data(*out), b, x->shape[1], x->shape[2],
                           x->shape[3], shape[1], shape[2], t->shape[0], (int)at->i0, (int)at->i1, at->f0);
    if (st != MP_OK) {
        mp_tensor_decref(*out);
        *out = NULL;
    }
    return st;
}
