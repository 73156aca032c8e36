/* crc32c.c — CRC-32C (Castagnoli, reflected 0x82F63B78), the checksum of TensorFlow's
 * checkpoint files (tensor bundles, LevelDB-style tables). Owns only the checksum: the
 * masking and the file formats live in src/mixprec/train/_bundle.py. SSE4.2's crc32
 * instruction when the CPU has it (checked at run time), else slicing-by-8 tables. */
#include "mixprec.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

static uint32_t crc_tab[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
        crc_tab[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_tab[t][i] = (crc_tab[t - 1][i] >> 8) ^ crc_tab[0][crc_tab[t - 1][i] & 0xFF];
}

static uint32_t crc_soft(uint32_t c, const unsigned char *p, size_t n) {
    pthread_once(&crc_once, crc_init);
    while (n && ((uintptr_t)p & 7)) {
        c = (c >> 8) ^ crc_tab[0][(c ^ *p++) & 0xFF];
        n--;
    }
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        w ^= c; /* little-endian hosts (x86, ARM): the low bytes come first */
        c = crc_tab[7][w & 0xFF] ^ crc_tab[6][(w >> 8) & 0xFF] ^ crc_tab[5][(w >> 16) & 0xFF] ^
            crc_tab[4][(w >> 24) & 0xFF] ^ crc_tab[3][(w >> 32) & 0xFF] ^
            crc_tab[2][(w >> 40) & 0xFF] ^ crc_tab[1][(w >> 48) & 0xFF] ^ crc_tab[0][w >> 56];
        p += 8;
        n -= 8;
    }
    while (n--)
        c = (c >> 8) ^ crc_tab[0][(c ^ *p++) & 0xFF];
    return c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t c, const unsigned char *p,
                                                         size_t n) {
    uint64_t c64 = c;
    while (n && ((uintptr_t)p & 7)) {
        c64 = __builtin_ia32_crc32qi((uint32_t)c64, *p++);
        n--;
    }
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c64 = __builtin_ia32_crc32di(c64, w);
        p += 8;
        n -= 8;
    }
    while (n--)
        c64 = __builtin_ia32_crc32qi((uint32_t)c64, *p++);
    return (uint32_t)c64;
}
#define MP_CRC_HW 1
#endif

uint32_t mp_crc32c_extend(uint32_t crc, const void *data, size_t n) {
    uint32_t c = crc ^ 0xFFFFFFFFu;
#ifdef MP_CRC_HW
    static int hw = -1;
    if (hw < 0) {
        __builtin_cpu_init();
        hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
    }
    if (hw)
        return crc_hw(c, (const unsigned char *)data, n) ^ 0xFFFFFFFFu;
#endif
    return crc_soft(c, (const unsigned char *)data, n) ^ 0xFFFFFFFFu;
}
