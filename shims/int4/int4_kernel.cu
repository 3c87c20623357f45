#include "shims/int4/int4_kernel.h"

#include <cstdint>
#include <cstring>
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

// Calls f(word, ka) for each packed word of this lane in its warp's share of the k-loop (warp w takes k_outer steps
// w, w + kWarps, ...); ka is the first k of the word's two k-tiles (int4_kernel.h). The words of kBatch steps are
// loaded before any is used, so that a warp has kBatch loads in flight (at m = 1 the kernels are a streaming read of
// the weights); the steps left over after the whole batches are taken one at a time, and all in order, so the sums
// are the same for any kBatch.
template <int kInnerKTiles, int kBatch, int kWarpsPerBlock = kWarps, typename F>
__device__ __forceinline__ void ForEachWord(const int32_t* __restrict__ b, int tile, int lane, int warp, int k_outer,
                                            F&& f) {
  constexpr int kWords = kInnerKTiles / 2;
  const int32_t* bt = b + (static_cast<int64_t>(tile) * k_outer * 32 + lane) * kWords;
  int o0 = warp;
  // whole batches: no bounds checks
  for (; o0 + (kBatch - 1) * kWarpsPerBlock < k_outer; o0 += kWarpsPerBlock * kBatch) {
    uint32_t words[kBatch][kWords];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      LoadWords<kWords>(bt + static_cast<int64_t>(o0 + u * kWarpsPerBlock) * 32 * kWords, words[u]);
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
#pragma unroll
      for (int j = 0; j < kWords; ++j) f(words[u][j], ((o0 + u * kWarpsPerBlock) * kInnerKTiles + 2 * j) * 16);
    }
  }
  if constexpr (kBatch > 1) {
    for (; o0 < k_outer; o0 += kWarpsPerBlock) {  // the whole batches above take every step when kBatch is 1
      uint32_t words[kWords];
      LoadWords<kWords>(bt + static_cast<int64_t>(o0) * 32 * kWords, words);
#pragma unroll
      for (int j = 0; j < kWords; ++j) f(words[j], (o0 * kInnerKTiles + 2 * j) * 16);
    }
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

// The 8 weights of a packed word, dequantized to bf16((q - 8) * scale + zero), the fma in float32.
__device__ __forceinline__ void Dequantize8(uint32_t word, float2 s_z, float (&wv)[8]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float hi = static_cast<float>(static_cast<int>((word >> (4 * i)) & 0xF) - 8);
    const float lo = static_cast<float>(static_cast<int>((word >> (16 + 4 * i)) & 0xF) - 8);
    wv[2 * i] = __bfloat162float(__float2bfloat16(fmaf(hi, s_z.x, s_z.y)));
    wv[2 * i + 1] = __bfloat162float(__float2bfloat16(fmaf(lo, s_z.x, s_z.y)));
  }
}

// Lane: column 8 tile + lane / 4, the k positions of its words (int4_kernel.h); the 4 lanes of a column and the
// kWarps warps are summed at the end, in float32.
template <int kInnerKTiles, int kRows, bool kVec>
__global__ void __launch_bounds__(kWarps * 32) Int4MmKernel(const __nv_bfloat16* __restrict__ a,
                                                            const int32_t* __restrict__ b,
                                                            const __nv_bfloat16* __restrict__ sz,
                                                            __nv_bfloat16* __restrict__ out, int m, int n, int k,
                                                            int k_outer, int group_shift) {
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
  ForEachWord<kInnerKTiles, 1>(b, tile, lane, warp, k_outer, [&](uint32_t word, int ka) {
    const int64_t g = ka >> group_shift;  // group_size = 1 << group_shift (32..256)
    const float2 s_z = LoadPair<kVec>(sz, (g * n + col) * 2);  // (scale, zero)
    float wv[8];
    Dequantize8(word, s_z, wv);
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
  });
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

// ---- The tensor-core kernel (Int4MmParams::mma): tinygemm's scheme, the packed layout being the B fragment of
// mma.m16n8k16 (int4_kernel.h: lane's column lane / 4, its k pairs 2 q, 2 q + 8 of each k-tile of 16).
// A block computes one n-tile (8 columns) for 16 rows; its kMmaWarps warps (MmaWarps: 8 or 16) split the k-loop as
// above. Per packed word, 8 weights become four bfloat16 pairs (two B fragments) and two mma instructions do their
// products for all 16 rows, where the kernel above spends a float conversion, an fma and an activation load per
// weight and row.

__device__ __forceinline__ __nv_bfloat162 AsBf162(uint32_t u) {
  __nv_bfloat162 v;
  memcpy(&v, &u, sizeof(v));
  return v;
}

__device__ __forceinline__ uint32_t AsU32(__nv_bfloat162 v) {
  uint32_t u;
  memcpy(&u, &v, sizeof(u));
  return u;
}

// p[idx], p[idx + 1] (idx even) as one 32-bit register, the first in the low half: one 4-byte load where kVec.
template <bool kVec>
__device__ __forceinline__ uint32_t LoadBf16Pair(const __nv_bfloat16* p, int64_t idx) {
  if constexpr (kVec) {
    return static_cast<uint32_t>(__ldg(reinterpret_cast<const unsigned int*>(p + idx)));
  } else {
    const unsigned short* u = reinterpret_cast<const unsigned short*>(p);
    return static_cast<uint32_t>(__ldg(u + idx)) | (static_cast<uint32_t>(__ldg(u + idx + 1)) << 16);
  }
}

// A packed word's 8 weights as 4 bfloat16 pairs, pair i = the weights at bits [4 i, 4 i + 4) (low half) and
// [16 + 4 i, 20 + 4 i) (high half), i.e. k = base_i and base_i + 1 (int4_kernel.h): pairs 0, 1 are the B fragment of
// the word's first k-tile, 2, 3 of its second. As torch's kernel does it: (q | 0x4300) is the bfloat16 128 + q,
// exactly q - 8 after adding -136, then one bfloat16 fma with the column's scale and zero (one rounding).
__device__ __forceinline__ void DequantizeFragments(uint32_t word, uint32_t scale_zero, uint32_t (&frag)[4]) {
  const __nv_bfloat162 sz = AsBf162(scale_zero);  // (scale, zero): scale in the low half
  const __nv_bfloat162 scale = __bfloat162bfloat162(__low2bfloat16(sz));
  const __nv_bfloat162 zero = __bfloat162bfloat162(__high2bfloat16(sz));
  const __nv_bfloat162 one = AsBf162(0x3F803F80u);    // (1, 1)
  const __nv_bfloat162 bias = AsBf162(0xC308C308u);   // (-136, -136)
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const __nv_bfloat162 q = AsBf162(((word >> (4 * i)) & 0x000F000Fu) | 0x43004300u);
    frag[i] = AsU32(__hfma2(__hfma2(q, one, bias), scale, zero));
  }
}

// d = A (16 x 16, row major, bf16) * B (16 x 8, bf16) in float32, as mma.m16n8k16 lays the fragments out: a0/a2 row
// lane / 4 at k 2 q (+1) / 2 q + 8 (+1), a1/a3 the same 8 rows below; b0/b1 column lane / 4 at the same k; d0, d1 row
// lane / 4 at columns 2 q, 2 q + 1, d2, d3 the row 8 below.
__device__ __forceinline__ float4 Mma16816(uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                           uint32_t b1) {
  float4 d;
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%10,%10,%10};"
      : "=f"(d.x), "=f"(d.y), "=f"(d.z), "=f"(d.w)
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "f"(0.f));
  return d;
}

// kUpper: the block's rows 8..15 exist (m > 8 somewhere); without, their fragments are zeros and never loaded.
// Two steps of words in flight (ForEachWord): measured best on the H100 (benchmarks/RESULTS.md, int4 run 4). With 4
// the kernel takes 73 registers, 3 blocks of 256 threads a SM, and n = 4096's 512 blocks need two waves; with 2 it
// takes 54 or fewer on sm_90 (nvcc 13.0): 4 blocks a SM, one wave. (__launch_bounds__(256, 4) made ptxas spill.)
constexpr int kMmaBatch = 2;

template <int kInnerKTiles, bool kUpper, bool kVec, int kMmaWarps>
__global__ void __launch_bounds__(kMmaWarps * 32) Int4MmaKernel(const __nv_bfloat16* __restrict__ a,
                                                             const int32_t* __restrict__ b,
                                                             const __nv_bfloat16* __restrict__ sz,
                                                             __nv_bfloat16* __restrict__ out, int m, int n, int k,
                                                             int k_outer, int group_shift) {
  __shared__ float4 partial[kMmaWarps][32];
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int tile = blockIdx.x;
  const int g = lane / 4, q = lane % 4;
  const int col = tile * 8 + g;  // the column of this lane's B fragments (and of its scale and zero)
  const int r_lo = blockIdx.y * 16 + g, r_hi = r_lo + 8;
  const bool lo_in = r_lo < m, hi_in = kUpper && r_hi < m;
  const __nv_bfloat16* a_lo = a + static_cast<int64_t>(lo_in ? r_lo : 0) * k + 2 * q;
  const __nv_bfloat16* a_hi = a + static_cast<int64_t>(hi_in ? r_hi : 0) * k + 2 * q;
  // this lane's column of qScaleAndZeros, group g at g * 2 n (fits an int: the plan bounds its elements by 2^31 - 1)
  const __nv_bfloat16* sz_col = sz + 2 * static_cast<int64_t>(col);
  const int n2 = 2 * n;
  float4 c = make_float4(0.f, 0.f, 0.f, 0.f);
  ForEachWord<kInnerKTiles, kMmaBatch, kMmaWarps>(b, tile, lane, warp, k_outer, [&](uint32_t word, int ka) {
    const uint32_t s_z = LoadBf16Pair<kVec>(sz_col, (ka >> group_shift) * n2);
    uint32_t frag[4];
    DequantizeFragments(word, s_z, frag);
#pragma unroll
    for (int t = 0; t < 2; ++t) {  // the word's two k-tiles
      const int kt = ka + 16 * t;
      const uint32_t a0 = lo_in ? LoadBf16Pair<kVec>(a_lo, kt) : 0u;
      const uint32_t a2 = lo_in ? LoadBf16Pair<kVec>(a_lo, kt + 8) : 0u;
      const uint32_t a1 = hi_in ? LoadBf16Pair<kVec>(a_hi, kt) : 0u;
      const uint32_t a3 = hi_in ? LoadBf16Pair<kVec>(a_hi, kt + 8) : 0u;
      // each k-tile's products start from zero and are added after (a chain of mma accumulations would serialize
      // them, as in torch's kernel)
      const float4 d = Mma16816(a0, a1, a2, a3, frag[2 * t], frag[2 * t + 1]);
      c.x += d.x;
      c.y += d.y;
      c.z += d.z;
      c.w += d.w;
    }
  });
  partial[warp][lane] = c;
  __syncthreads();
  if (warp == 0) {
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int w = 0; w < kMmaWarps; ++w) {
      const float4 p = partial[w][lane];
      v.x += p.x;
      v.y += p.y;
      v.z += p.z;
      v.w += p.w;
    }
    // columns 2 q, 2 q + 1 of the tile; out is a new contiguous tensor and n a multiple of 8: 4-byte aligned
    const int64_t oc = static_cast<int64_t>(tile) * 8 + 2 * q;
    if (lo_in) {
      *reinterpret_cast<__nv_bfloat162*>(out + r_lo * static_cast<int64_t>(n) + oc) = __floats2bfloat162_rn(v.x, v.y);
    }
    if (hi_in) {
      *reinterpret_cast<__nv_bfloat162*>(out + r_hi * static_cast<int64_t>(n) + oc) = __floats2bfloat162_rn(v.z, v.w);
    }
  }
}

// log2(group_size): the plan allows 32, 64, 128 and 256 only (a shift where a division by a runtime value took a
// dozen instructions per packed word).
inline int GroupShift(int64_t group_size) {
  int s = 0;
  while ((int64_t{1} << s) < group_size) ++s;
  return s;
}

// The tensor-core kernel's warps per block: 16 where the grid leaves SMs without a second block (n / 8 blocks per 16
// rows; at n = 1024, 128 blocks on 132 SMs) and every warp still gets a step of the k-loop; else 8 (at n >= 4096
// 16-warp blocks would take two waves). At m = 1 the kernel is a streaming read of the weights, and with one block
// per SM its bytes in flight are what sets the time (int4 run 4's study: more steps in flight helped n = 1024 only).
int MmaWarps(const Int4MmParams& p) {
  int dev = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) !=
                                                cudaSuccess) {
    (void)cudaGetLastError();
    return kWarps;
  }
  const int64_t blocks = (p.n / 8) * ((p.m + 15) / 16);
  return blocks <= 2 * static_cast<int64_t>(sms) && p.k_outer >= 16 ? 16 : kWarps;
}

// kRows = 0: the tensor-core kernel (16 rows per block), else the CUDA-core one with kRows rows per block.
template <int kInnerKTiles, int kRows, bool kVec>
int Launch(const Int4MmParams& p, cudaStream_t stream) {
  const int rows = kRows == 0 ? 16 : kRows;
  const dim3 grid(static_cast<unsigned>(p.n / 8), static_cast<unsigned>((p.m + rows - 1) / rows));
  decltype(&Int4MmKernel<kInnerKTiles, 1, kVec>) kernel;  // every kernel takes the same arguments
  int warps = kWarps;
  if constexpr (kRows == 0) {
    warps = MmaWarps(p);
    if (warps == 16) {
      kernel = p.m > 8 ? Int4MmaKernel<kInnerKTiles, true, kVec, 16> : Int4MmaKernel<kInnerKTiles, false, kVec, 16>;
    } else {
      kernel = p.m > 8 ? Int4MmaKernel<kInnerKTiles, true, kVec, kWarps>
                       : Int4MmaKernel<kInnerKTiles, false, kVec, kWarps>;
    }
  } else {
    kernel = Int4MmKernel<kInnerKTiles, kRows, kVec>;
  }
  kernel<<<grid, warps * 32, 0, stream>>>(
      static_cast<const __nv_bfloat16*>(p.a), p.b, static_cast<const __nv_bfloat16*>(p.scales_and_zeros),
      static_cast<__nv_bfloat16*>(p.out), static_cast<int>(p.m), static_cast<int>(p.n), static_cast<int>(p.k),
      static_cast<int>(p.k_outer), GroupShift(p.group_size));
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
  if (p.mma) return LaunchTiles<0, kVec>(p, stream);
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
  // GroupShift's domain
  if (p.group_size < 32 || p.group_size > 256 || (p.group_size & (p.group_size - 1)) != 0)
    return static_cast<int>(cudaErrorInvalidValue);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  // bfloat16 pairs load as one 4-byte word where both operands are 4-byte aligned (k is a multiple of 32, so every
  // row and every (scale, zero) pair then is); a view at an odd element offset takes the 2-byte loads.
  const bool vec = reinterpret_cast<uintptr_t>(p.a) % 4 == 0 && reinterpret_cast<uintptr_t>(p.scales_and_zeros) % 4 == 0;
  return vec ? LaunchRows<true>(p, s) : LaunchRows<false>(p, s);
}

}  // namespace int4
}  // namespace aotirt
