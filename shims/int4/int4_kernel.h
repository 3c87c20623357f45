// The weight-only int4 GEMM of the _weight_int4pack_mm shim (int4_kernel.cu): plain-data parameters built on the
// host, no CUDA types here.
//
// The packed weights (torch._convert_weight_to_int4pack on CUDA, tinygemm's m16n8k16 B layout): int32
// B[n / 8][k_outer][32][inner_k_tiles / 2]. Word B[t_n][o][lane][j] holds 8 unsigned 4-bit weights of output column
// n = 8 t_n + lane / 4, from the two k-tiles of 16 starting at kA = (o * inner_k_tiles + 2 j) * 16 and kB = kA + 16;
// with q = lane % 4 and i = 0..3, base_i = (i < 2 ? kA : kB) + 2 q + 8 (i % 2):
//   bits [4 i, 4 i + 4)         weight at k = base_i       (the high nibble of torch's uint8 input byte)
//   bits [16 + 4 i, 20 + 4 i)   weight at k = base_i + 1   (its low nibble)
// Both k-tiles of a word lie in one quantization group (groups of 32..256, words 32-aligned in k).
#ifndef AOTIRT_INT4_INT4_KERNEL_H_
#define AOTIRT_INT4_INT4_KERNEL_H_

#include <cstdint>

namespace aotirt {
namespace int4 {

struct Int4MmParams {
  int64_t m = 0, n = 0, k = 0;
  int64_t inner_k_tiles = 0, k_outer = 0, group_size = 0;
  const void* a = nullptr;                 // bfloat16 [m, k], contiguous
  const int32_t* b = nullptr;              // packed as above
  const void* scales_and_zeros = nullptr;  // bfloat16 [k / group_size, n, 2], contiguous
  void* out = nullptr;                     // bfloat16 [m, n], contiguous
  // The tensor-core kernel (mma.m16n8k16, 16 rows per block, the weights dequantized as torch's kernel does: one
  // bfloat16 fma; int4_kernel.cu) instead of the CUDA-core one: the default since benchmarks/int4.py measured it
  // (benchmarks/RESULTS.md, int4 run 3; AOTIRT_INT4_MMA=0 turns it off, shim_int4.cc).
  bool mma = true;
};

// out[r, c] = bf16(sum_k a[r, k] * w[c, k]), w = bf16((q - 8) * scale + zero) as torch's kernel dequantizes, the
// sum in float32. Returns a CUDA error code (0 = success); launches only (capturable, no synchronization).
int LaunchInt4Mm(const Int4MmParams& p, void* stream);

// w[c, k] = bf16((q - 8) * scale + zero) for every output column c and k (bfloat16 [n, k], contiguous; p.a, p.out
// unused): the dequantized weights, for a bfloat16 GEMM at large m. Launch only, as above.
int LaunchInt4Dequantize(const Int4MmParams& p, void* w, void* stream);

}  // namespace int4
}  // namespace aotirt
#endif  // AOTIRT_INT4_INT4_KERNEL_H_
