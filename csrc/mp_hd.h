/* mp_hd.h — MP_HD marks a function defined in a header that compiles both as host C and as
 * CUDA device code, so the CPU backend and the CUDA kernels share one definition (philox.h,
 * scalar_cast.h). Such a function must use only what both sides have: <math.h>, <string.h>'s
 * memcpy, fixed-width integers; no globals, no allocation. */
#ifndef MP_HD_H
#define MP_HD_H
#ifdef __CUDACC__
#define MP_HD __host__ __device__ __forceinline__
#else
#define MP_HD static inline
#endif
#endif
