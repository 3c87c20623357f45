#include "shims/int4/int4_kernel.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace aotirt {
namespace int4 {
namespace {

constexpr int kWarps = 4;  // warps per block: each warp computes one n-tile (8 output columns) for kRows rows

template <int kWords>
__device__ __forceinline__ void LoadWords(const int32_t* p, uint32_t (&w)[kWords]) {
  if constexpr (kWords == 4) {
    const ::int4 v = *reinterpret_cast<const ::int4*>(p);  // CUDA's vector type, not this namespace
    w[0] = v.x; w[1] = v.y; w[2] = v.z; w[3] = v.w;
  } else if constexpr (kWords == 2) {
    const ::int2 v = *reinterpret_cast<const ::int2*>(p);
    w[0] = v.x; w[1] = v.y;
  } else {
    w[0] = static_cast<uint32_t>(*p);
  }
}

// One warp: n-tile `tile` (columns 8 tile .. 8 tile + 7), rows row0 .. row0 + kRows - 1. Lane: column
// 8 tile + lane / 4, k positions of its words (int4_kernel.h); the 4 lanes of a column are summed at the end.
template <int kInnerKTiles, int kRows>
__global__ void __launch_bounds__(kWarps * 32) Int4MmKernel(const __nv_bfloat16* __restrict__ a,
                                                            const int32_t* __restrict__ b,
                                                            const __nv_bfloat16* __restrict__ sz,
                                                            __nv_bfloat16* __restrict__ out, int m, int n, int k,
                                                            int k_outer, int group_size) {
  constexpr int kWords = kInnerKTiles / 2;
  const int lane = threadIdx.x % 32;
  const int tile = blockIdx.x * kWarps + threadIdx.x / 32;
  if (tile * 8 >= n) return;  // the whole warp
  const int row0 = blockIdx.y * kRows;
  const int col = tile * 8 + lane / 4;
  const int q = lane % 4;
  float acc[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) acc[r] = 0.f;
  const int32_t* bp = b + (static_cast<int64_t>(tile) * k_outer * 32 + lane) * kWords;
  for (int o = 0; o < k_outer; ++o, bp += 32 * kWords) {
    uint32_t words[kWords];
    LoadWords<kWords>(bp, words);
#pragma unroll
    for (int j = 0; j < kWords; ++j) {
      const int ka = (o * kInnerKTiles + 2 * j) * 16;
      const int64_t g = ka / group_size;
      const float scale = __bfloat162float(sz[(g * n + col) * 2]);
      const float zero = __bfloat162float(sz[(g * n + col) * 2 + 1]);
      int ks[8];
      float wv[8];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int base = (i < 2 ? ka : ka + 16) + 2 * q + 8 * (i % 2);
        const float hi = static_cast<float>(static_cast<int>((words[j] >> (4 * i)) & 0xF) - 8);
        const float lo = static_cast<float>(static_cast<int>((words[j] >> (16 + 4 * i)) & 0xF) - 8);
        ks[2 * i] = base;
        ks[2 * i + 1] = base + 1;
        // torch's kernel dequantizes to bfloat16 ((q - 8) * scale + zero, one rounding) before the product
        wv[2 * i] = __bfloat162float(__float2bfloat16(fmaf(hi, scale, zero)));
        wv[2 * i + 1] = __bfloat162float(__float2bfloat16(fmaf(lo, scale, zero)));
      }
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        if (row0 + r < m) {
          const __nv_bfloat16* ar = a + static_cast<int64_t>(row0 + r) * k;
          float s = 0.f;
#pragma unroll
          for (int e = 0; e < 8; ++e) s = fmaf(__bfloat162float(ar[ks[e]]), wv[e], s);
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
    if (q == 0 && row0 + r < m) out[static_cast<int64_t>(row0 + r) * n + col] = __float2bfloat16(v);
  }
}

template <int kInnerKTiles, int kRows>
int Launch(const Int4MmParams& p, cudaStream_t stream) {
  const int tiles = static_cast<int>(p.n / 8);
  const dim3 grid((tiles + kWarps - 1) / kWarps, static_cast<unsigned>((p.m + kRows - 1) / kRows));
  Int4MmKernel<kInnerKTiles, kRows><<<grid, kWarps * 32, 0, stream>>>(
      static_cast<const __nv_bfloat16*>(p.a), p.b, static_cast<const __nv_bfloat16*>(p.scales_and_zeros),
      static_cast<__nv_bfloat16*>(p.out), static_cast<int>(p.m), static_cast<int>(p.n), static_cast<int>(p.k),
      static_cast<int>(p.k_outer), static_cast<int>(p.group_size));
  return static_cast<int>(cudaGetLastError());
}

template <int kRows>
int LaunchRows(const Int4MmParams& p, cudaStream_t stream) {
  switch (p.inner_k_tiles) {
    case 2: return Launch<2, kRows>(p, stream);
    case 4: return Launch<4, kRows>(p, stream);
    case 8: return Launch<8, kRows>(p, stream);
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
}

}  // namespace

int LaunchInt4Mm(const Int4MmParams& p, void* stream) {
  if (p.m <= 0 || p.n <= 0) return 0;
  if ((p.m + 7) / 8 > 65535) return static_cast<int>(cudaErrorInvalidConfiguration);  // grid.y
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  return p.m == 1 ? LaunchRows<1>(p, s) : LaunchRows<8>(p, s);
}

}  // namespace int4
}  // namespace aotirt
