/* strings_hash.c — string hashing as TensorFlow buckets it: FarmHash Fingerprint64 (farmhashna's
 * 64-bit hash, tf.strings.to_hash_bucket_fast, Keras Hashing) and SipHash-2-4 (the keyed
 * to_hash_bucket_strong), both written from their published descriptions. Pure functions of
 * the bytes: the results must never depend on the machine (little-endian reads explicit). */
#include <string.h>

#include "strings.h"

static const mp_device host = {MP_DEV_CPU, 0};

static const uint64_t k0 = 0xc3a5c85c97cb3127ULL;
static const uint64_t k1 = 0xb492b66fbe98f273ULL;
static const uint64_t k2 = 0x9ae16a3b2f90404fULL;

static uint64_t fetch64(const char *p) {
    const unsigned char *u = (const unsigned char *)p;
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | u[i];
    return v;
}

static uint32_t fetch32(const char *p) {
    const unsigned char *u = (const unsigned char *)p;
    return (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;
}

static uint64_t rot(uint64_t v, int s) { return s == 0 ? v : (v >> s) | (v << (64 - s)); }
static uint64_t shift_mix(uint64_t v) { return v ^ (v >> 47); }

static uint64_t hash16(uint64_t u, uint64_t v, uint64_t mul) {
    uint64_t a = (u ^ v) * mul;
    a ^= a >> 47;
    uint64_t b = (v ^ a) * mul;
    b ^= b >> 47;
    return b * mul;
}

static uint64_t len0to16(const char *s, size_t len) {
    if (len >= 8) {
        uint64_t mul = k2 + len * 2, a = fetch64(s) + k2, b = fetch64(s + len - 8);
        uint64_t c = rot(b, 37) * mul + a, d = (rot(a, 25) + b) * mul;
        return hash16(c, d, mul);
    }
    if (len >= 4) {
        uint64_t mul = k2 + len * 2, a = fetch32(s);
        return hash16(len + (a << 3), fetch32(s + len - 4), mul);
    }
    if (len > 0) {
        uint8_t a = (uint8_t)s[0], b = (uint8_t)s[len >> 1], c = (uint8_t)s[len - 1];
        uint32_t y = (uint32_t)a + ((uint32_t)b << 8), z = (uint32_t)len + ((uint32_t)c << 2);
        return shift_mix(y * k2 ^ z * k0) * k2;
    }
    return k2;
}

static uint64_t len17to32(const char *s, size_t len) {
    uint64_t mul = k2 + len * 2, a = fetch64(s) * k1, b = fetch64(s + 8);
    uint64_t c = fetch64(s + len - 8) * mul, d = fetch64(s + len - 16) * k2;
    return hash16(rot(a + b, 43) + rot(c, 30) + d, a + rot(b + k2, 18) + c, mul);
}

static uint64_t len33to64(const char *s, size_t len) {
    uint64_t mul = k2 + len * 2, a = fetch64(s) * k2, b = fetch64(s + 8);
    uint64_t c = fetch64(s + len - 8) * mul, d = fetch64(s + len - 16) * k2;
    uint64_t y = rot(a + b, 43) + rot(c, 30) + d, z = hash16(y, a + rot(b + k2, 18) + c, mul);
    uint64_t e = fetch64(s + 16) * mul, f = fetch64(s + 24);
    uint64_t g = (y + fetch64(s + len - 32)) * mul, h = (z + fetch64(s + len - 24)) * mul;
    return hash16(rot(e + f, 43) + rot(g, 30) + h, e + rot(f + a, 18) + g, mul);
}

typedef struct {
    uint64_t first, second;
} pair64;

static pair64 weak32(const char *s, uint64_t a, uint64_t b) {
    uint64_t w = fetch64(s), x = fetch64(s + 8), y = fetch64(s + 16), z = fetch64(s + 24);
    a += w;
    b = rot(b + a + z, 21);
    uint64_t c = a;
    a += x;
    a += y;
    b += rot(a, 44);
    return (pair64){a + z, b + c};
}

uint64_t mp_fingerprint64(const char *s, size_t len) {
    if (len <= 16)
        return len0to16(s, len);
    if (len <= 32)
        return len17to32(s, len);
    if (len <= 64)
        return len33to64(s, len);
    const uint64_t seed = 81;
    uint64_t x = seed, y = seed * k1 + 113, z = shift_mix(y * k2 + 113) * k2;
    pair64 v = {0, 0}, w = {0, 0};
    x = x * k2 + fetch64(s);
    const char *end = s + ((len - 1) / 64) * 64;
    const char *last64 = end + ((len - 1) & 63) - 63;
    do {
        x = rot(x + y + v.first + fetch64(s + 8), 37) * k1;
        y = rot(y + v.second + fetch64(s + 48), 42) * k1;
        x ^= w.second;
        y += v.first + fetch64(s + 40);
        z = rot(z + w.first, 33) * k1;
        v = weak32(s, v.second * k1, x + w.first);
        w = weak32(s + 32, z + w.second, y + fetch64(s + 16));
        uint64_t t = z;
        z = x;
        x = t;
        s += 64;
    } while (s != end);
    uint64_t mul = k1 + ((z & 0xff) << 1);
    s = last64;
    w.first += ((len - 1) & 63);
    v.first += w.first;
    w.first += v.first;
    x = rot(x + y + v.first + fetch64(s + 8), 37) * mul;
    y = rot(y + v.second + fetch64(s + 48), 42) * mul;
    x ^= w.second * 9;
    y += v.first * 9 + fetch64(s + 40);
    z = rot(z + w.first, 33) * mul;
    v = weak32(s, v.second * mul, x + w.first);
    w = weak32(s + 32, z + w.second, y + fetch64(s + 16));
    uint64_t t = z;
    z = x;
    x = t;
    return hash16(hash16(v.first, w.first, mul) + shift_mix(y) * k0 + z, hash16(v.second, w.second, mul) + x, mul);
}

#define SIPROUND                                                                        \
    do {                                                                                \
        v0 += v1; v1 = rot(v1, 64 - 13); v1 ^= v0; v0 = rot(v0, 64 - 32);               \
        v2 += v3; v3 = rot(v3, 64 - 16); v3 ^= v2;                                      \
        v0 += v3; v3 = rot(v3, 64 - 21); v3 ^= v0;                                      \
        v2 += v1; v1 = rot(v1, 64 - 17); v1 ^= v2; v2 = rot(v2, 64 - 32);               \
    } while (0)

uint64_t mp_siphash24(const char *s, size_t len, uint64_t key0, uint64_t key1) {
    uint64_t v0 = 0x736f6d6570736575ULL ^ key0, v1 = 0x646f72616e646f6dULL ^ key1;
    uint64_t v2 = 0x6c7967656e657261ULL ^ key0, v3 = 0x7465646279746573ULL ^ key1;
    size_t full = len & ~(size_t)7;
    for (size_t i = 0; i < full; i += 8) {
        uint64_t m = fetch64(s + i);
        v3 ^= m;
        SIPROUND;
        SIPROUND;
        v0 ^= m;
    }
    uint64_t b = (uint64_t)len << 56;
    for (size_t i = full; i < len; i++)
        b |= (uint64_t)(unsigned char)s[i] << (8 * (i - full));
    v3 ^= b;
    SIPROUND;
    SIPROUND;
    v0 ^= b;
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

uint64_t mp_tf_hash64(const char *s, size_t n) {
    const uint64_t m = 0xc6a4a7935bd1e995ULL;
    const int r = 47;
    uint64_t h = 0xDECAFCAFFEULL ^ (n * m);
    while (n >= 8) {
        uint64_t k = fetch64(s);
        s += 8;
        n -= 8;
        k *= m;
        k ^= k >> r;
        k *= m;
        h ^= k;
        h *= m;
    }
    if (n > 0) {
        for (size_t i = n; i-- > 0;)
            h ^= (uint64_t)(unsigned char)s[i] << (8 * i);
        h *= m;
    }
    h ^= h >> r;
    h *= m;
    h ^= h >> r;
    return h;
}

mp_status mp_str_hash_bucket(mp_tensor *x, int64_t buckets, int strong, uint64_t key0, uint64_t key1,
                             mp_tensor **out) {
    if (x->dtype != MP_STRING)
        return mp_error_set(MP_ERR_DTYPE, "StringToHashBucket expects a string tensor, got %s",
                            mp_dtype_name(x->dtype));
    if (buckets <= 0)
        return mp_error_set(MP_ERR_SHAPE, "Number of buckets must be at least 1 [Op:StringToHashBucketFast]");
    MP_TRY(mp_tensor_new(MP_I64, x->ndim, x->shape, host, out));
    int64_t *o = mp_tensor_data(*out);
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t n;
        const char *p = mp_str_at(x, i, &n);
        uint64_t h = strong == 1   ? mp_siphash24(p, (size_t)n, key0, key1)
                     : strong == 2 ? mp_tf_hash64(p, (size_t)n)
                                   : mp_fingerprint64(p, (size_t)n);
        o[i] = (int64_t)(h % (uint64_t)buckets);
    }
    return MP_OK;
}
