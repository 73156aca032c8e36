/* dnnl_cpu.h — the CPU backend's oneDNN slots (dnnl_cpu.c, dnnl_gemm.c). */
#ifndef MP_DNNL_CPU_H
#define MP_DNNL_CPU_H
#include "mixprec.h"
mp_status mp_cpu_conv(mp_device dev, mp_conv_kind k, mp_dtype dt, const mp_window *win, const void *a, const void *b,
                      void *out);
mp_status mp_cpu_pool(mp_device dev, mp_pool_kind k, mp_dtype dt, const mp_window *win, const void *a, const void *b,
                      void *out);
/* Route every conv/pool call through the float64 loop kernels (tests); returns the previous setting. */
int mp_dnnl_force_reference(int on);
/* "oneDNN 3.2.0 (avx512_core_bf16)": the library and the instruction set it dispatches to. */
const char *mp_dnnl_info(void);
#endif
