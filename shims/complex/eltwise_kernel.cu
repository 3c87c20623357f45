#include "shims/complex/eltwise_kernel.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace aotirt {
namespace complex {
namespace {

enum Code : int32_t {
  U8 = 0, I8 = 1, I16 = 2, I32 = 3, I64 = 4, F16 = 5, F32 = 6, F64 = 7, C64 = 9, C128 = 10, B = 11, BF16 = 15
};
enum OpCode : int32_t { kMul = 0, kPolar = 1, kAbs = 2 };

template <typename T>
struct Cx {
  T re, im;
};

// torch's cast of one element to complex<T>: a complex value part by part, a real one as (v, 0) with an integer
// going to T first (one rounding).
template <typename T>
__device__ __forceinline__ Cx<T> Load(const void* base, int64_t i, int32_t code) {
  switch (code) {
    case C64: {
      const float* p = static_cast<const float*>(base) + 2 * i;
      return {static_cast<T>(p[0]), static_cast<T>(p[1])};
    }
    case C128: {
      const double* p = static_cast<const double*>(base) + 2 * i;
      return {static_cast<T>(p[0]), static_cast<T>(p[1])};
    }
    case F32: return {static_cast<T>(static_cast<const float*>(base)[i]), T(0)};
    case F64: return {static_cast<T>(static_cast<const double*>(base)[i]), T(0)};
    case F16: return {static_cast<T>(__half2float(static_cast<const __half*>(base)[i])), T(0)};
    case BF16: return {static_cast<T>(__bfloat162float(static_cast<const __nv_bfloat16*>(base)[i])), T(0)};
    case I64: return {static_cast<T>(static_cast<const int64_t*>(base)[i]), T(0)};
    case I32: return {static_cast<T>(static_cast<const int32_t*>(base)[i]), T(0)};
    case I16: return {static_cast<T>(static_cast<const int16_t*>(base)[i]), T(0)};
    case I8: return {static_cast<T>(static_cast<const int8_t*>(base)[i]), T(0)};
    case U8: return {static_cast<T>(static_cast<const uint8_t*>(base)[i]), T(0)};
    default: return {static_cast<const uint8_t*>(base)[i] != 0 ? T(1) : T(0), T(0)};  // bool
  }
}

__device__ __forceinline__ float Hypot(float a, float b) { return hypotf(a, b); }
__device__ __forceinline__ double Hypot(double a, double b) { return hypot(a, b); }
__device__ __forceinline__ void SinCos(float x, float* s, float* c) { sincosf(x, s, c); }
__device__ __forceinline__ void SinCos(double x, double* s, double* c) { sincos(x, s, c); }

template <typename T>
__global__ void EltwiseKernel(EltwiseParams p) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t linear = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; linear < p.numel;
       linear += step) {
    int64_t rem = linear, o = 0, i0 = 0, i1 = 0;
    for (int d = p.ndim - 1; d >= 0; --d) {
      const int64_t idx = rem % p.sizes[d];
      rem /= p.sizes[d];
      o += idx * p.out_strides[d];
      i0 += idx * p.in_strides[0][d];
      i1 += idx * p.in_strides[1][d];
    }
    const Cx<T> a = p.in_scalar[0] ? Cx<T>{static_cast<T>(p.scalar_re[0]), static_cast<T>(p.scalar_im[0])}
                                   : Load<T>(p.in[0], i0, p.in_dtype[0]);
    T* out = static_cast<T*>(p.out);
    if (p.op == kAbs) {
      out[o] = Hypot(a.re, a.im);
      continue;
    }
    const Cx<T> b = p.in_scalar[1] ? Cx<T>{static_cast<T>(p.scalar_re[1]), static_cast<T>(p.scalar_im[1])}
                                   : Load<T>(p.in[1], i1, p.in_dtype[1]);
    if (p.op == kMul) {  // c10::complex operator*
      out[2 * o] = a.re * b.re - a.im * b.im;
      out[2 * o + 1] = a.re * b.im + a.im * b.re;
    } else {  // polar(abs = a.re, angle = b.re): c10::polar
      T s, c;
      SinCos(b.re, &s, &c);
      out[2 * o] = a.re * c;
      out[2 * o + 1] = a.re * s;
    }
  }
}

}  // namespace

int LaunchEltwise(const EltwiseParams& p, void* stream) {
  if (p.numel == 0) return 0;
  constexpr int kThreads = 256;
  int64_t blocks = (p.numel + kThreads - 1) / kThreads;
  if (blocks > 65535 * 8) blocks = 65535 * 8;
  auto s = static_cast<cudaStream_t>(stream);
  if (p.is_double) {
    EltwiseKernel<double><<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(p);
  } else {
    EltwiseKernel<float><<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(p);
  }
  return static_cast<int>(cudaGetLastError());
}

}  // namespace complex
}  // namespace aotirt
