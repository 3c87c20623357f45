// Device code shared by the zero fill (copy_kernel.cu, HIP too through vendor.h) and the graph's memset-node kernels
// (backends/cuda/runtime/graph_memsets.cu): one fill of `nbytes` bytes at `dst` with a 4-byte pattern.
#ifndef AOTIRT_SHIMS_CUDA_FILL_BYTES_H_
#define AOTIRT_SHIMS_CUDA_FILL_BYTES_H_

#include <cstddef>
#include <cstdint>

#include "shims/cuda/vendor.h"  // the vendor's runtime header: uint4, make_uint4

namespace aotirt {
namespace gpu {

// Thread `first` of `stride` threads fills its share of [dst, dst + nbytes). The byte at address a gets byte a % 4 of
// `pattern` (little-endian: a memset value repeated over 4 bytes). 16-byte stores over the 16-byte-aligned body, byte
// stores over the unaligned head and the tail: thread i of those edge bytes takes byte i of the head, then byte
// i - head of the tail.
__device__ inline void FillBytes(unsigned char* dst, size_t nbytes, uint32_t pattern, size_t first, size_t stride) {
  const uintptr_t addr = reinterpret_cast<uintptr_t>(dst);
  size_t head = (16 - addr % 16) % 16;
  if (head > nbytes) head = nbytes;
  const size_t n16 = (nbytes - head) / 16;
  const size_t tail = head + 16 * n16;
  const uint4 body = make_uint4(pattern, pattern, pattern, pattern);
  for (size_t i = first; i < n16; i += stride) reinterpret_cast<uint4*>(dst + head)[i] = body;
  for (size_t i = first; i < head + (nbytes - tail); i += stride) {
    const size_t off = i < head ? i : tail + (i - head);
    dst[off] = static_cast<unsigned char>(pattern >> (8 * ((addr + off) % 4)));
  }
}

}  // namespace gpu
}  // namespace aotirt

#endif  // AOTIRT_SHIMS_CUDA_FILL_BYTES_H_
