/* philox.h — Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3").
 * Header-only so the CPU backend and the CUDA kernels share one definition and produce
 * the same streams. Element i of a (seed, stream) stream depends on (seed, stream, i) only.
 * NOTE: changing anything here changes every seeded result users have recorded. */
#ifndef MP_PHILOX_H
#define MP_PHILOX_H
#include <math.h>
#include <stdint.h>

#include "mp_hd.h"

typedef struct { uint32_t v[4]; } mp_philox_ctr;

MP_HD void mp_mulhilo32(uint32_t a, uint32_t b, uint32_t *hi, uint32_t *lo) {
    uint64_t p = (uint64_t)a * (uint64_t)b;
    *hi = (uint32_t)(p >> 32);
    *lo = (uint32_t)p;
}

MP_HD mp_philox_ctr mp_philox4x32_10(mp_philox_ctr c, uint32_t k0, uint32_t k1) {
    for (int r = 0; r < 10; r++) {
        uint32_t hi0, lo0, hi1, lo1;
        mp_mulhilo32(0xD2511F53u, c.v[0], &hi0, &lo0);
        mp_mulhilo32(0xCD9E8D57u, c.v[2], &hi1, &lo1);
        mp_philox_ctr n;
        n.v[0] = hi1 ^ c.v[1] ^ k0;
        n.v[1] = lo1;
        n.v[2] = hi0 ^ c.v[3] ^ k1;
        n.v[3] = lo0;
        c = n;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    return c;
}

/* The 4 words of block `blk` of stream (seed, stream). */
MP_HD mp_philox_ctr mp_philox_block(uint64_t seed, uint64_t stream, uint64_t blk) {
    mp_philox_ctr c;
    c.v[0] = (uint32_t)blk;
    c.v[1] = (uint32_t)(blk >> 32);
    c.v[2] = (uint32_t)stream;
    c.v[3] = (uint32_t)(stream >> 32);
    return mp_philox4x32_10(c, (uint32_t)seed, (uint32_t)(seed >> 32));
}

/* uniform in [0, 1) with 24 random bits (exactly representable in float32) */
MP_HD float mp_u32_to_unit_f32(uint32_t u) { return (float)(u >> 8) * 5.9604644775390625e-08f; }
/* uniform in (0, 1] (safe for log) */
MP_HD float mp_u32_to_open_unit_f32(uint32_t u) { return ((float)(u >> 8) + 1.0f) * 5.9604644775390625e-08f; }

/* Uniform element i: word i%4 of block i/4. */
MP_HD float mp_philox_uniform(uint64_t seed, uint64_t stream, uint64_t i) {
    mp_philox_ctr r = mp_philox_block(seed, stream, i >> 2);
    return mp_u32_to_unit_f32(r.v[i & 3]);
}

/* Normal element i: Box-Muller on words (2p, 2p+1) of block i/4, p = (i%4)/2; even i
 * takes the cosine, odd i the sine. Computed in float32 on both backends. */
MP_HD float mp_philox_normal(uint64_t seed, uint64_t stream, uint64_t i) {
    mp_philox_ctr r = mp_philox_block(seed, stream, i >> 2);
    unsigned p = (unsigned)((i & 3) >> 1);
    float u1 = mp_u32_to_open_unit_f32(r.v[2 * p]);
    float u2 = mp_u32_to_unit_f32(r.v[2 * p + 1]);
    float rad = sqrtf(-2.0f * logf(u1));
    float th = 6.2831853071795864769f * u2;
    return (i & 1) ? rad * sinf(th) : rad * cosf(th);
}

/* Truncated normal element i (|z| <= 2, as TensorFlow's): resample on sub-streams
 * stream ^ (attempt << 56) until accepted. */
MP_HD float mp_philox_truncated_normal(uint64_t seed, uint64_t stream, uint64_t i) {
    for (uint64_t attempt = 0;; attempt++) {
        float z = mp_philox_normal(seed, stream ^ (attempt << 56), i);
        if (z >= -2.0f && z <= 2.0f)
            return z;
    }
}
#endif
