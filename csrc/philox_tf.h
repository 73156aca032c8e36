/* philox_tf.h — TensorFlow's stateless random conversions on the Philox4x32-10 stream of
 * philox.h, so tf.random.stateless_* give TensorFlow's numbers bit for bit (CPU; the GPU's
 * libm may differ in the last bits of normal draws). The key and counter come from
 * TensorFlow's seed scrambling (done in Python); the stream here is the counter's upper 64
 * bits, the block index its lower ones. Shared by the CPU backend and cuda/random.cu.
 * NOTE: every layout here is TensorFlow's (random_distributions.h); do not "improve" it. */
#ifndef MP_PHILOX_TF_H
#define MP_PHILOX_TF_H
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "philox.h"

/* Block `blk` of the stream whose 128-bit counter starts at (off, stream): a stateless
 * op's off is 0; a tf.random.Generator's is its state's counter (low word, carry into the
 * high one), as TensorFlow's Philox counter. */
MP_HD mp_philox_ctr mp_tf_block(uint64_t seed, uint64_t stream, uint64_t off, uint64_t blk) {
    uint64_t lo = off + blk;
    return mp_philox_block(seed, stream + (lo < off), lo);
}

/* float in [0, 1) from the low 23 bits (TensorFlow's Uint32ToFloat) */
MP_HD float mp_tf_u32_to_f32(uint32_t x) {
    uint32_t v = (x & 0x7fffffu) | 0x3f800000u;
    float f;
    memcpy(&f, &v, sizeof f);
    return f - 1.0f;
}

/* double in [0, 1) from 52 bits: x0's low 20 above x1 (TensorFlow's Uint64ToDouble) */
MP_HD double mp_tf_u64_to_f64(uint32_t x0, uint32_t x1) {
    uint64_t v = ((uint64_t)1023 << 52) | ((uint64_t)(x0 & 0xfffffu) << 32) | x1;
    double d;
    memcpy(&d, &v, sizeof d);
    return d - 1.0;
}

/* TensorFlow's BoxMullerFloat: (sin, cos) * sqrt(-2 log u1); 2*pi*u2 is taken in double */
MP_HD void mp_tf_box_muller_f32(uint32_t x0, uint32_t x1, float *f0, float *f1) {
    float u1 = mp_tf_u32_to_f32(x0);
    if (u1 < 1.0e-7f)
        u1 = 1.0e-7f;
    float v1 = (float)(2.0 * 3.14159265358979323846 * (double)mp_tf_u32_to_f32(x1));
    float u2 = sqrtf(-2.0f * logf(u1));
    *f0 = sinf(v1) * u2;
    *f1 = cosf(v1) * u2;
}

MP_HD void mp_tf_box_muller_f64(uint32_t x0, uint32_t x1, uint32_t x2, uint32_t x3, double *d0, double *d1) {
    double u1 = mp_tf_u64_to_f64(x0, x1);
    if (u1 < 1.0e-7)
        u1 = 1.0e-7;
    double v1 = 2.0 * 3.14159265358979323846 * mp_tf_u64_to_f64(x2, x3);
    double u2 = sqrt(-2.0 * log(u1));
    *d0 = sin(v1) * u2;
    *d1 = cos(v1) * u2;
}

/* uniform [0, 1) float32 element i: word i%4 of block i/4 */
MP_HD float mp_tf_uniform_f32(uint64_t seed, uint64_t stream, uint64_t off, uint64_t i) {
    return mp_tf_u32_to_f32(mp_tf_block(seed, stream, off, i >> 2).v[i & 3]);
}

/* uniform [0, 1) float16 / bfloat16 element i as bits: the low mantissa bits of word i%4
 * (TensorFlow's Uint16ToHalf / Uint16ToGfloat16); 1.0 + m - 1.0 is exact in both. */
MP_HD uint16_t mp_tf_uniform_16(int bf16, uint64_t seed, uint64_t stream, uint64_t off, uint64_t i) {
    uint32_t x = mp_tf_block(seed, stream, off, i >> 2).v[i & 3];
    if (bf16) {
        uint32_t m = x & 0x7fu; /* (1 + m/128) - 1 = m/128 */
        float f = (float)m * (1.0f / 128.0f);
        uint32_t b;
        memcpy(&b, &f, sizeof b);
        return (uint16_t)(b >> 16); /* exact: m/128 has at most 7 significant bits */
    }
    uint32_t m = x & 0x3ffu; /* (1 + m/1024) - 1 = m/1024, a float16 normal or zero */
    if (!m)
        return 0;
    int e = 0; /* normalise m/1024 = 1.f * 2^(p - 10) */
    while (!(m & 0x400u)) {
        m <<= 1;
        e++;
    }
    return (uint16_t)(((uint32_t)(15 - e) << 10) | (m & 0x3ffu));
}

/* uniform [0, 1) float64 element i: words 2(i%2), 2(i%2)+1 of block i/2 */
MP_HD double mp_tf_uniform_f64(uint64_t seed, uint64_t stream, uint64_t off, uint64_t i) {
    mp_philox_ctr r = mp_tf_block(seed, stream, off, i >> 1);
    unsigned p = (unsigned)(i & 1) * 2;
    return mp_tf_u64_to_f64(r.v[p], r.v[p + 1]);
}

/* standard normal float element i: Box-Muller on words (2p, 2p+1) of block i/4,
 * p = (i%4)/2; even i the sine, odd i the cosine */
MP_HD float mp_tf_normal_f32(uint64_t seed, uint64_t stream, uint64_t off, uint64_t i) {
    mp_philox_ctr r = mp_tf_block(seed, stream, off, i >> 2);
    unsigned p = (unsigned)((i & 3) >> 1) * 2;
    float f0, f1;
    mp_tf_box_muller_f32(r.v[p], r.v[p + 1], &f0, &f1);
    return (i & 1) ? f1 : f0;
}

/* standard normal float64 element i: Box-Muller on all 4 words of block i/2 */
MP_HD double mp_tf_normal_f64(uint64_t seed, uint64_t stream, uint64_t off, uint64_t i) {
    mp_philox_ctr r = mp_tf_block(seed, stream, off, i >> 1);
    double d0, d1;
    mp_tf_box_muller_f64(r.v[0], r.v[1], r.v[2], r.v[3], &d0, &d1);
    return (i & 1) ? d1 : d0;
}

/* Truncated normal (|z| < 2): output group g (4 floats, 2 doubles) reads words one by one
 * from block g*256 (TensorFlow's 256 reserved samples per output), Box-Muller on pairs
 * (quads for double), keeping the values inside; element i is the (i % group)-th kept. */
MP_HD float mp_tf_truncated_f32(uint64_t seed, uint64_t stream, uint64_t off, uint64_t i) {
    uint64_t blk = (i >> 2) * 256;
    int want = (int)(i & 3), got = 0;
    for (;; blk++) {
        mp_philox_ctr r = mp_tf_block(seed, stream, off, blk);
        for (int p = 0; p < 4; p += 2) {
            float f[2];
            mp_tf_box_muller_f32(r.v[p], r.v[p + 1], &f[0], &f[1]);
            for (int k = 0; k < 2; k++)
                if (fabsf(f[k]) < 2.0f && got++ == want)
                    return f[k];
        }
    }
}

MP_HD double mp_tf_truncated_f64(uint64_t seed, uint64_t stream, uint64_t off, uint64_t i) {
    uint64_t blk = (i >> 1) * 128;
    int want = (int)(i & 1), got = 0;
    for (;; blk++) {
        mp_philox_ctr r = mp_tf_block(seed, stream, off, blk);
        double d[2];
        mp_tf_box_muller_f64(r.v[0], r.v[1], r.v[2], r.v[3], &d[0], &d[1]);
        for (int k = 0; k < 2; k++)
            if (fabs(d[k]) < 2.0 && got++ == want)
                return d[k];
    }
}

/* uniform integers: lo + bits % range (range = hi - lo as unsigned); range 0 means the
 * full range (bits as they are). int32: word i%4 of block i/4; int64: words 2(i%2) (low)
 * and 2(i%2)+1 (high) of block i/2. */
MP_HD int64_t mp_tf_uniform_int(int is64, uint64_t seed, uint64_t stream, uint64_t off, uint64_t i, int64_t lo,
                                 uint64_t range) {
    if (!is64) {
        uint32_t x = mp_tf_block(seed, stream, off, i >> 2).v[i & 3];
        return range ? (int64_t)(int32_t)((uint32_t)lo + x % (uint32_t)range) : (int64_t)(int32_t)x;
    }
    mp_philox_ctr r = mp_tf_block(seed, stream, off, i >> 1);
    unsigned p = (unsigned)(i & 1) * 2;
    uint64_t bits = (uint64_t)r.v[p] | ((uint64_t)r.v[p + 1] << 32);
    return range ? (int64_t)((uint64_t)lo + bits % range) : (int64_t)bits;
}
#endif
