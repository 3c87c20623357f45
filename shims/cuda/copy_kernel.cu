// Strided N-d copy with dtype conversion. One kernel, dtypes switched at run time (uniform per launch, so the
// branch costs nothing per warp). Integers go through int64, everything else through double (complex values through
// a pair of doubles), as ATen's casts do for every value the two types share.
// Vendor-neutral through vendor.h: nvcc builds it for CUDA, hipcc (AOTIRT_USE_HIP) for ROCm.
#include "shims/cuda/copy_kernel.h"
#include "shims/cuda/fill_bytes.h"
#include "shims/cuda/vendor.h"

namespace aotirt {
namespace gpu {
namespace {

enum Code : int32_t {
  U8 = 0, I8 = 1, I16 = 2, I32 = 3, I64 = 4, F16 = 5, F32 = 6, F64 = 7, C64 = 9, C128 = 10, B = 11, BF16 = 15
};

__device__ __forceinline__ bool IsIntegral(int32_t c) { return c <= I64 || c == B; }

__device__ __forceinline__ int64_t LoadInt(const void* base, int64_t i, int32_t c) {
  switch (c) {
    case U8: return static_cast<const uint8_t*>(base)[i];
    case I8: return static_cast<const int8_t*>(base)[i];
    case I16: return static_cast<const int16_t*>(base)[i];
    case I32: return static_cast<const int32_t*>(base)[i];
    case I64: return static_cast<const int64_t*>(base)[i];
    case B: return static_cast<const uint8_t*>(base)[i] != 0;
  }
  return 0;
}

__device__ __forceinline__ double LoadFloat(const void* base, int64_t i, int32_t c) {
  switch (c) {
    case F16: return gpuHalfToFloat(static_cast<const gpuHalf*>(base)[i]);
    case BF16: return gpuBFloat16ToFloat(static_cast<const gpuBFloat16*>(base)[i]);
    case F32: return static_cast<const float*>(base)[i];
    case F64: return static_cast<const double*>(base)[i];
  }
  return static_cast<double>(LoadInt(base, i, c));
}

__device__ __forceinline__ void StoreInt(void* base, int64_t i, int32_t c, int64_t v) {
  switch (c) {
    case U8: static_cast<uint8_t*>(base)[i] = static_cast<uint8_t>(v); return;
    case I8: static_cast<int8_t*>(base)[i] = static_cast<int8_t>(v); return;
    case I16: static_cast<int16_t*>(base)[i] = static_cast<int16_t>(v); return;
    case I32: static_cast<int32_t*>(base)[i] = static_cast<int32_t>(v); return;
    case I64: static_cast<int64_t*>(base)[i] = v; return;
    case B: static_cast<uint8_t*>(base)[i] = v != 0; return;
  }
}

__device__ __forceinline__ void StoreFloat(void* base, int64_t i, int32_t c, double v) {
  switch (c) {
    case F16: static_cast<gpuHalf*>(base)[i] = gpuFloatToHalfRn(static_cast<float>(v)); return;
    case BF16: static_cast<gpuBFloat16*>(base)[i] = gpuFloatToBFloat16Rn(static_cast<float>(v)); return;
    case F32: static_cast<float*>(base)[i] = static_cast<float>(v); return;
    case F64: static_cast<double*>(base)[i] = v; return;
    case B: static_cast<uint8_t*>(base)[i] = v != 0.0; return;
    default: StoreInt(base, i, c, static_cast<int64_t>(v)); return;
  }
}

__device__ __forceinline__ bool IsComplexCode(int32_t c) { return c == C64 || c == C128; }

// Casts to or from a complex type, as c10's casts: a real value becomes (v, 0) (an integer through float32 for
// complex64, one rounding); a complex value becomes its real part, or re != 0 || im != 0 for bool.
__device__ __forceinline__ void CastComplex(const CopyParams& p, int64_t di, int64_t si) {
  double re, im = 0.0;
  if (p.src_dtype == C64) {
    re = static_cast<const float*>(p.src)[2 * si];
    im = static_cast<const float*>(p.src)[2 * si + 1];
  } else if (p.src_dtype == C128) {
    re = static_cast<const double*>(p.src)[2 * si];
    im = static_cast<const double*>(p.src)[2 * si + 1];
  } else if (IsIntegral(p.src_dtype) && p.dst_dtype == C64) {
    re = static_cast<float>(LoadInt(p.src, si, p.src_dtype));
  } else {
    re = LoadFloat(p.src, si, p.src_dtype);
  }
  if (p.dst_dtype == C64) {
    static_cast<float*>(p.dst)[2 * di] = static_cast<float>(re);
    static_cast<float*>(p.dst)[2 * di + 1] = static_cast<float>(im);
  } else if (p.dst_dtype == C128) {
    static_cast<double*>(p.dst)[2 * di] = re;
    static_cast<double*>(p.dst)[2 * di + 1] = im;
  } else if (p.dst_dtype == B) {
    static_cast<uint8_t*>(p.dst)[di] = re != 0.0 || im != 0.0;
  } else {
    StoreFloat(p.dst, di, p.dst_dtype, re);
  }
}

__global__ void StridedCopyKernel(CopyParams p) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t linear = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; linear < p.numel;
       linear += stride) {
    int64_t rem = linear, di = 0, si = 0;
    for (int d = p.ndim - 1; d >= 0; --d) {
      const int64_t idx = rem % p.sizes[d];
      rem /= p.sizes[d];
      di += idx * p.dst_strides[d];
      si += idx * p.src_strides[d];
    }
    if (p.src_dtype == p.dst_dtype) {
      switch (p.src_dtype) {
        case U8: case I8: case B:
          static_cast<uint8_t*>(p.dst)[di] = static_cast<const uint8_t*>(p.src)[si]; break;
        case I16: case F16: case BF16:
          static_cast<uint16_t*>(p.dst)[di] = static_cast<const uint16_t*>(p.src)[si]; break;
        case I32: case F32:
          static_cast<uint32_t*>(p.dst)[di] = static_cast<const uint32_t*>(p.src)[si]; break;
        case C128:  // two 8-byte words: a blob's complex128 data need only be 8-byte aligned
          static_cast<uint64_t*>(p.dst)[2 * di] = static_cast<const uint64_t*>(p.src)[2 * si];
          static_cast<uint64_t*>(p.dst)[2 * di + 1] = static_cast<const uint64_t*>(p.src)[2 * si + 1];
          break;
        default:
          static_cast<uint64_t*>(p.dst)[di] = static_cast<const uint64_t*>(p.src)[si]; break;
      }
    } else if (IsComplexCode(p.src_dtype) || IsComplexCode(p.dst_dtype)) {
      CastComplex(p, di, si);
    } else if (IsIntegral(p.src_dtype) && IsIntegral(p.dst_dtype)) {
      StoreInt(p.dst, di, p.dst_dtype, LoadInt(p.src, si, p.src_dtype));
    } else if (IsIntegral(p.src_dtype) && p.dst_dtype != F64) {
      // One rounding int -> float32 (half types then round from float32), as torch; via double rounds twice.
      StoreFloat(p.dst, di, p.dst_dtype, static_cast<float>(LoadInt(p.src, si, p.src_dtype)));
    } else {
      StoreFloat(p.dst, di, p.dst_dtype, LoadFloat(p.src, si, p.src_dtype));
    }
  }
}

__global__ void ZeroFillKernel(unsigned char* dst, int64_t nbytes) {
  FillBytes(dst, static_cast<size_t>(nbytes), 0u, static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x,
            static_cast<size_t>(gridDim.x) * blockDim.x);
}

}  // namespace

int LaunchZeroFill(void* dst, int64_t nbytes, void* stream) {
  if (nbytes <= 0) return 0;
  const uintptr_t addr = reinterpret_cast<uintptr_t>(dst);
  int64_t head = static_cast<int64_t>((16 - addr % 16) % 16);
  if (head > nbytes) head = nbytes;
  const int64_t n16 = (nbytes - head) / 16;
  const int64_t edges = nbytes - 16 * n16;  // head + tail bytes
  const int threads = 256;
  int64_t blocks = ((n16 > edges ? n16 : edges) + threads - 1) / threads;
  if (blocks > 65535 * 8) blocks = 65535 * 8;
  ZeroFillKernel<<<static_cast<unsigned>(blocks), threads, 0, static_cast<gpuStream_t>(stream)>>>(
      static_cast<unsigned char*>(dst), nbytes);
  return static_cast<int>(gpuGetLastError());
}

int LaunchStridedCopy(const CopyParams& p, void* stream) {
  const int threads = 256;
  int64_t blocks = (p.numel + threads - 1) / threads;
  if (blocks > 65535 * 8) blocks = 65535 * 8;
  StridedCopyKernel<<<static_cast<unsigned>(blocks), threads, 0, static_cast<gpuStream_t>(stream)>>>(p);
  return static_cast<int>(gpuGetLastError());
}

}  // namespace gpu
}  // namespace aotirt
