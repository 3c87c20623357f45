#include "shims/int4/int4_kernel.h"

#include <cstdint>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace aotirt {
namespace int4 {
namespace {

// A block computes one n-tile (8 output columns) for kRows rows; its kWarps warps split the k-loop (warp w takes
// k_outer steps w, w + kWarps, ...) and their partial sums meet in shared memory. One n-tile per block gives n / 8
// blocks (512 for n = 4096), enough to keep the GPU's memory busy at m = 1, where the kernel is a streaming read of
// the packed weights.
constexpr int kWarps = 8;

template <int kWords>
__device__ __forceinline__ void LoadWords(const int32_t* p, uint32_t (&w)[kWords]) {
  if constexpr (kWords == 4) {
    const ::int4 v = __ldg(reinterpret_cast<const ::int4*>(p));  // CUDA's vector type, not this namespace
    w[0] = v.x; w[1] = v.y; w[2] = v.z; w[3] = v.w;
  } else if constexpr (kWords == 2) {
    const ::int2 v = __ldg(reinterpret_cast<const ::int2*>(p));
    w[0] = v.x; w[1] = v.y;
  } else {
    w[0] = static_cast<uint32_t>(__ldg(p));
  }
}

// a[idx], a[idx + 1] as floats (idx even): one 4-byte load where kVec (the caller checked the alignment).
template <bool kVec>
__device__ __forceinline__ float2 LoadPair(const __nv_bfloat16* a, int64_t idx) {
  if constexpr (kVec) {
    return __bfloat1622float2(__ldg(reinterpret_cast<const __nv_bfloat162*>(a + idx)));
  } else {
    return make_float2(__bfloat162float(a[idx]), __bfloat162float(a[idx + 1]));
  }
}

// The 8 weights of a packed word, dequantized as torch's kernel does: bf16((q - 8) * scale + zero), the fma in
// float32. kFast: q - 8 as (2^23 + q) - (2^23 + 8), the bits of 2^23 + q being 0x4B000000 | q (no int-to-float
// conversion, a quarter-rate instruction on sm90), and two bfloat16 roundings in one conversion; the same values.
template <bool kFast>
__device__ __forceinline__ void Dequantize8(uint32_t word, float2 s_z, float (&wv)[8]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (kFast) {
      const float hi = __uint_as_float(0x4B000000u | ((word >> (4 * i)) & 0xFu)) - 8388616.0f;
      const float lo = __uint_as_float(0x4B000000u | ((word >> (16 + 4 * i)) & 0xFu)) - 8388616.0f;
      const float2 w = __bfloat1622float2(__floats2bfloat162_rn(fmaf(hi, s_z.x, s_z.y), fmaf(lo, s_z.x, s_z.y)));
      wv[2 * i] = w.x;
      wv[2 * i + 1] = w.y;
    } else {
      const float hi = static_cast<float>(static_cast<int>((word >> (4 * i)) & 0xF) - 8);
      const float lo = static_cast<float>(static_cast<int>((word >> (16 + 4 * i)) & 0xF) - 8);
      // torch's kernel dequantizes to bfloat16 ((q - 8) * scale + zero, one rounding) before the product
      wv[2 * i] = __bfloat162float(__float2bfloat16(fmaf(hi, s_z.x, s_z.y)));
      wv[2 * i + 1] = __bfloat162float(__float2bfloat16(fmaf(lo, s_z.x, s_z.y)));
    }
  }
}

// Lane: column 8 tile + lane / 4, the k positions of its words (int4_kernel.h); the 4 lanes of a column and the
// kWarps warps are summed at the end, in float32.
template <int kInnerKTiles, int kRows, bool kVec, bool kFast>
__global__ void __launch_bounds__(kWarps * 32) Int4MmKernel(const __nv_bfloat16* __restrict__ a,
                                                            const int32_t* __restrict__ b,
                                                            const __nv_bfloat16* __restrict__ sz,
                                                            __nv_bfloat16* __restrict__ out, int m, int n, int k,
                                                            int k_outer, int group_size) {
  constexpr int kWords = kInnerKTiles / 2;
  __shared__ float partial[kWarps][kRows][8];
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int tile = blockIdx.x;
  const int row0 = blockIdx.y * kRows;
  const int col = tile * 8 + lane / 4;
  const int q = lane % 4;
  float acc[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) acc[r] = 0.f;
  const int32_t* bt = b + (static_cast<int64_t>(tile) * k_outer * 32 + lane) * kWords;
  // kFast also unrolls the k-loop 4 times, so a warp has the next steps' weight loads in flight while it computes
  // (at m = 1 the kernel streams the weights; the order of the sums is the same).
#pragma unroll(kFast ? 4 : 1)
  for (int o = warp; o < k_outer; o += kWarps) {
    uint32_t words[kWords];
    LoadWords<kWords>(bt + static_cast<int64_t>(o) * 32 * kWords, words);
#pragma unroll
    for (int j = 0; j < kWords; ++j) {
      const int ka = (o * kInnerKTiles + 2 * j) * 16;
      const int64_t g = ka / group_size;
      const float2 s_z = LoadPair<kVec>(sz, (g * n + col) * 2);  // (scale, zero)
      float wv[8];
      Dequantize8<kFast>(words[j], s_z, wv);
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        if (row0 + r < m) {
          const int64_t ar = static_cast<int64_t>(row0 + r) * k;
          float s = 0.f;
#pragma unroll
          for (int i = 0; i < 4; ++i) {  // the pair of weights at base_i, base_i + 1
            const float2 x = LoadPair<kVec>(a, ar + (i < 2 ? ka : ka + 16) + 2 * q + 8 * (i % 2));
            s = fmaf(x.x, wv[2 * i], s);
            s = fmaf(x.y, wv[2 * i + 1], s);
          }
          acc[r] += s;
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    float v = acc[r];
    v += __shfl_xor_sync(0xffffffffu, v, 1);
    v += __shfl_xor_sync(0xffffffffu, v, 2);
    if (q == 0) partial[warp][r][lane / 4] = v;
  }
  __syncthreads();
  if (threadIdx.x < kRows * 8) {
    const int r = threadIdx.x / 8, c = threadIdx.x % 8;
    float v = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) v += partial[w][r][c];
    if (row0 + r < m) out[static_cast<int64_t>(row0 + r) * n + tile * 8 + c] = __float2bfloat16(v);
  }
}

template <int kInnerKTiles, int kRows, bool kVec>
int Launch(const Int4MmParams& p, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(p.n / 8), static_cast<unsigned>((p.m + kRows - 1) / kRows));
  auto* kernel = p.fast_dequant ? Int4MmKernel<kInnerKTiles, kRows, kVec, true>
                                : Int4MmKernel<kInnerKTiles, kRows, kVec, false>;
  kernel<<<grid, kWarps * 32, 0, stream>>>(
      static_cast<const __nv_bfloat16*>(p.a), p.b, static_cast<const __nv_bfloat16*>(p.scales_and_zeros),
      static_cast<__nv_bfloat16*>(p.out), static_cast<int>(p.m), static_cast<int>(p.n), static_cast<int>(p.k),
      static_cast<int>(p.k_outer), static_cast<int>(p.group_size));
  return static_cast<int>(cudaGetLastError());
}

template <int kRows, bool kVec>
int LaunchTiles(const Int4MmParams& p, cudaStream_t stream) {
  switch (p.inner_k_tiles) {
    case 2: return Launch<2, kRows, kVec>(p, stream);
    case 4: return Launch<4, kRows, kVec>(p, stream);
    case 8: return Launch<8, kRows, kVec>(p, stream);
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
}

template <bool kVec>
int LaunchRows(const Int4MmParams& p, cudaStream_t stream) {
  if (p.m == 1) return LaunchTiles<1, kVec>(p, stream);
  if (p.m == 2) return LaunchTiles<2, kVec>(p, stream);
  if (p.m <= 4) return LaunchTiles<4, kVec>(p, stream);
  return LaunchTiles<8, kVec>(p, stream);
}

// One thread per packed word: its 8 weights, column 8 t_n + lane / 4, the k positions of int4_kernel.h, written as
// 4 bfloat16 pairs (base_i, base_i + 1).
__global__ void Int4DequantizeKernel(const int32_t* __restrict__ b, const __nv_bfloat16* __restrict__ sz,
                                     __nv_bfloat16* __restrict__ w, int64_t words, int n, int k, int k_outer,
                                     int words_per_lane, int group_size) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= words) return;
  const int j = static_cast<int>(idx % words_per_lane);
  const int lane = static_cast<int>((idx / words_per_lane) % 32);
  const int64_t rest = idx / (static_cast<int64_t>(words_per_lane) * 32);
  const int o = static_cast<int>(rest % k_outer);
  const int tile = static_cast<int>(rest / k_outer);
  const int col = tile * 8 + lane / 4;
  const int q = lane % 4;
  const uint32_t word = static_cast<uint32_t>(__ldg(b + idx));
  const int ka = (o * words_per_lane * 2 + 2 * j) * 16;
  const int64_t g = ka / group_size;
  const float scale = __bfloat162float(sz[(g * n + col) * 2]);
  const float zero = __bfloat162float(sz[(g * n + col) * 2 + 1]);
  __nv_bfloat16* row = w + static_cast<int64_t>(col) * k;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int base = (i < 2 ? ka : ka + 16) + 2 * q + 8 * (i % 2);
    const float hi = static_cast<float>(static_cast<int>((word >> (4 * i)) & 0xF) - 8);
    const float lo = static_cast<float>(static_cast<int>((word >> (16 + 4 * i)) & 0xF) - 8);
    row[base] = __float2bfloat16(fmaf(hi, scale, zero));
    row[base + 1] = __float2bfloat16(fmaf(lo, scale, zero));
  }
}

}  // namespace

int LaunchInt4Dequantize(const Int4MmParams& p, void* w, void* stream) {
  if (p.n <= 0 || p.k <= 0) return 0;
  const int64_t words = p.n * p.k / 8;
  const int threads = 256;
  const int64_t blocks = (words + threads - 1) / threads;
  if (blocks > 0x7fffffff) return static_cast<int>(cudaErrorInvalidConfiguration);
  Int4DequantizeKernel<<<static_cast<unsigned>(blocks), threads, 0, static_cast<cudaStream_t>(stream)>>>(
      p.b, static_cast<const __nv_bfloat16*>(p.scales_and_zeros), static_cast<__nv_bfloat16*>(w), words,
      static_cast<int>(p.n), static_cast<int>(p.k), static_cast<int>(p.k_outer),
      static_cast<int>(p.inner_k_tiles / 2), static_cast<int>(p.group_size));
  return static_cast<int>(cudaGetLastError());
}

int LaunchInt4Mm(const Int4MmParams& p, void* stream) {
  if (p.m <= 0 || p.n <= 0) return 0;
  if ((p.m + 7) / 8 > 65535) return static_cast<int>(cudaErrorInvalidConfiguration);  // grid.y
  if (p.n / 8 > 0x7fffffff) return static_cast<int>(cudaErrorInvalidConfiguration);   // grid.x
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  // bfloat16 pairs load as one 4-byte word where both operands are 4-byte aligned (k is a multiple of 32, so every
  // row and every (scale, zero) pair then is); a view at an odd element offset takes the 2-byte loads.
  const bool vec = reinterpret_cast<uintptr_t>(p.a) % 4 == 0 && reinterpret_cast<uintptr_t>(p.scales_and_zeros) % 4 == 0;
  return vec ? LaunchRows<true>(p, s) : LaunchRows<false>(p, s);
}

}  // namespace int4
}  // namespace aotirt
