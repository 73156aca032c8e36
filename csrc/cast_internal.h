/* cast_internal.h — row-cast variants shared by dtype.c and cast_x86.c (not public). */
#ifndef MP_CAST_INTERNAL_H
#define MP_CAST_INTERNAL_H
#include <stdint.h>

int mp_cast_x86_available(void);
void mp_row_f16_to_f32_x86(const uint16_t *src, float *dst, int64_t n);
void mp_row_f32_to_f16_x86(const float *src, uint16_t *dst, int64_t n);
void mp_row_bf16_to_f32_x86(const uint16_t *src, float *dst, int64_t n);
void mp_row_f32_to_bf16_x86(const float *src, uint16_t *dst, int64_t n);

void mp_row_f16_to_f32_scalar(const uint16_t *src, float *dst, int64_t n);
void mp_row_f32_to_f16_scalar(const float *src, uint16_t *dst, int64_t n);
void mp_row_bf16_to_f32_scalar(const uint16_t *src, float *dst, int64_t n);
void mp_row_f32_to_bf16_scalar(const float *src, uint16_t *dst, int64_t n);
#endif
