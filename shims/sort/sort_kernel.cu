// Row sorts for the sort/topk shims on CUB (the CUDA toolkit's CCCL): each value becomes an unsigned key whose
// unsigned order is torch's order (NaN above +inf with every NaN equal, -0.0 equal to +0.0, integers by sign; bit-
// inverted for a descending sort, so a stable ascending sort of the keys is torch's stable descending sort), the
// (key, position) pairs of all rows are sorted at once by cub::DeviceSegmentedSort::StableSortPairs (one segment per
// row), and the first k positions of each row gather the values from the input. 1- and 2-byte dtypes sort 16-bit keys,
// 4-byte ones 32-bit and 8-byte ones 64-bit keys: three instantiations of CUB's sort.
#include <cub/device/device_segmented_sort.cuh>

#include <cstdint>

#include "shims/cuda/vendor.h"
#include "shims/sort/sort_kernel.h"

namespace aotirt {
namespace sort {
namespace {

enum Code : int32_t {
  U8 = 0, I8 = 1, I16 = 2, I32 = 3, I64 = 4, F16 = 5, F32 = 6, F64 = 7, BOOL = 11, BF16 = 15
};

constexpr size_t kAlign = 256;
size_t Up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

int KeyBits(int32_t dtype) {
  switch (dtype) {
    case I32: case F32: return 32;
    case I64: case F64: return 64;
    default: return 16;
  }
}

// IEEE bits -> unsigned order: NaN (any sign, any payload) -> all ones; -0.0 -> +0.0; negatives inverted, positives
// above them.
template <typename U>
__device__ U FloatKey(U bits, U exp_mask) {
  constexpr U sign = U(1) << (sizeof(U) * 8 - 1);
  const U mag = bits & ~sign;
  if (mag > exp_mask) return ~U(0);
  if (mag == 0) return sign;
  return (bits & sign) ? U(~bits) : U(bits | sign);
}

template <typename K>
__device__ K MakeKey(const void* in, int64_t i, int32_t dtype) {
  switch (dtype) {
    case U8: return K(static_cast<const uint8_t*>(in)[i]);
    case BOOL: return K(static_cast<const uint8_t*>(in)[i] != 0);
    case I8: return K(uint8_t(static_cast<const int8_t*>(in)[i]) ^ 0x80u);
    case I16: return K(uint16_t(static_cast<const int16_t*>(in)[i]) ^ 0x8000u);
    case I32: return K(uint32_t(static_cast<const int32_t*>(in)[i]) ^ 0x80000000u);
    case I64: return K(uint64_t(static_cast<const int64_t*>(in)[i]) ^ 0x8000000000000000ull);
    case F16: return K(FloatKey<uint16_t>(static_cast<const uint16_t*>(in)[i], 0x7C00u));
    case BF16: return K(FloatKey<uint16_t>(static_cast<const uint16_t*>(in)[i], 0x7F80u));
    case F32: return K(FloatKey<uint32_t>(static_cast<const uint32_t*>(in)[i], 0x7F800000u));
    default: return K(FloatKey<uint64_t>(static_cast<const uint64_t*>(in)[i], 0x7FF0000000000000ull));
  }
}

template <typename K>
__global__ void KeysKernel(const void* in, int32_t dtype, int64_t total, int64_t n, bool descending, K* keys,
                           int32_t* pos) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step) {
    const K key = MakeKey<K>(in, i, dtype);
    keys[i] = descending ? K(~key) : key;
    pos[i] = static_cast<int32_t>(i % n);
  }
}

__global__ void OffsetsKernel(int32_t* offsets, int64_t rows, int64_t n) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; r <= rows; r += step)
    offsets[r] = static_cast<int32_t>(r * n);
}

__global__ void GatherKernel(const void* in, int32_t elem_bytes, const int32_t* pos, int64_t rows, int64_t n,
                             int64_t k, void* values, int64_t* indices) {
  const int64_t total = rows * k;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step) {
    const int64_t r = i / k, j = i % k;
    const int64_t p = pos[r * n + j];
    const int64_t src = r * n + p;
    switch (elem_bytes) {
      case 1: static_cast<uint8_t*>(values)[i] = static_cast<const uint8_t*>(in)[src]; break;
      case 2: static_cast<uint16_t*>(values)[i] = static_cast<const uint16_t*>(in)[src]; break;
      case 4: static_cast<uint32_t*>(values)[i] = static_cast<const uint32_t*>(in)[src]; break;
      default: static_cast<uint64_t*>(values)[i] = static_cast<const uint64_t*>(in)[src]; break;
    }
    indices[i] = p;
  }
}

int ElemBytes(int32_t dtype) {
  switch (dtype) {
    case U8: case I8: case BOOL: return 1;
    case I16: case F16: case BF16: return 2;
    case I32: case F32: return 4;
    default: return 8;
  }
}

struct Layout {
  size_t keys_in = 0, keys_out = 0, pos_in = 0, pos_out = 0, offsets = 0, temp = 0, temp_bytes = 0, total = 0;
};

template <typename K>
gpuError_t CubSort(void* temp, size_t& temp_bytes, const K* keys_in, K* keys_out, const int32_t* pos_in,
                   int32_t* pos_out, int64_t total, int64_t rows, const int32_t* offsets, gpuStream_t stream) {
  return cub::DeviceSegmentedSort::StableSortPairs(temp, temp_bytes, keys_in, keys_out, pos_in, pos_out,
                                                   static_cast<int>(total), static_cast<int>(rows), offsets,
                                                   offsets == nullptr ? nullptr : offsets + 1, stream);
}

gpuError_t TempBytes(int bits, int64_t total, int64_t rows, size_t* bytes) {
  *bytes = 0;
  switch (bits) {
    case 16: return CubSort<uint16_t>(nullptr, *bytes, nullptr, nullptr, nullptr, nullptr, total, rows, nullptr, 0);
    case 32: return CubSort<uint32_t>(nullptr, *bytes, nullptr, nullptr, nullptr, nullptr, total, rows, nullptr, 0);
    default: return CubSort<uint64_t>(nullptr, *bytes, nullptr, nullptr, nullptr, nullptr, total, rows, nullptr, 0);
  }
}

gpuError_t Plan(const SortRowsParams& p, Layout* l) {
  const int64_t total = p.rows * p.n;
  const size_t kb = static_cast<size_t>(KeyBits(p.dtype) / 8);
  size_t at = 0;
  l->keys_in = at; at += Up(kb * total);
  l->keys_out = at; at += Up(kb * total);
  l->pos_in = at; at += Up(sizeof(int32_t) * total);
  l->pos_out = at; at += Up(sizeof(int32_t) * total);
  l->offsets = at; at += Up(sizeof(int32_t) * (p.rows + 1));
  const gpuError_t e = TempBytes(KeyBits(p.dtype), total, p.rows, &l->temp_bytes);
  l->temp = at; at += Up(l->temp_bytes);
  l->total = at;
  return e;
}

unsigned Blocks(int64_t items, int threads) {
  int64_t b = (items + threads - 1) / threads;
  if (b < 1) b = 1;
  if (b > 65535 * 8) b = 65535 * 8;
  return static_cast<unsigned>(b);
}

template <typename K>
gpuError_t Run(const SortRowsParams& p, const Layout& l, gpuStream_t stream) {
  char* ws = static_cast<char*>(p.workspace);
  K* keys_in = reinterpret_cast<K*>(ws + l.keys_in);
  K* keys_out = reinterpret_cast<K*>(ws + l.keys_out);
  int32_t* pos_in = reinterpret_cast<int32_t*>(ws + l.pos_in);
  int32_t* pos_out = reinterpret_cast<int32_t*>(ws + l.pos_out);
  int32_t* offsets = reinterpret_cast<int32_t*>(ws + l.offsets);
  const int64_t total = p.rows * p.n;
  constexpr int kThreads = 256;
  KeysKernel<K><<<Blocks(total, kThreads), kThreads, 0, stream>>>(p.in, p.dtype, total, p.n, p.descending, keys_in,
                                                                   pos_in);
  OffsetsKernel<<<Blocks(p.rows + 1, kThreads), kThreads, 0, stream>>>(offsets, p.rows, p.n);
  gpuError_t e = gpuGetLastError();
  if (e != gpuSuccess) return e;
  size_t temp_bytes = l.temp_bytes;
  e = CubSort<K>(ws + l.temp, temp_bytes, keys_in, keys_out, pos_in, pos_out, total, p.rows, offsets, stream);
  if (e != gpuSuccess) return e;
  GatherKernel<<<Blocks(p.rows * p.k, kThreads), kThreads, 0, stream>>>(p.in, ElemBytes(p.dtype), pos_out, p.rows,
                                                                         p.n, p.k, p.values, p.indices);
  return gpuGetLastError();
}

}  // namespace

size_t SortRowsWorkspaceBytes(const SortRowsParams& p, int* error) {
  Layout l;
  const gpuError_t e = Plan(p, &l);
  *error = static_cast<int>(e);
  return e == gpuSuccess ? l.total : 0;
}

int LaunchSortRows(const SortRowsParams& p, void* stream) {
  if (p.rows == 0 || p.k == 0) return 0;
  Layout l;
  gpuError_t e = Plan(p, &l);
  if (e != gpuSuccess) return static_cast<int>(e);
  const gpuStream_t s = static_cast<gpuStream_t>(stream);
  switch (KeyBits(p.dtype)) {
    case 16: e = Run<uint16_t>(p, l, s); break;
    case 32: e = Run<uint32_t>(p, l, s); break;
    default: e = Run<uint64_t>(p, l, s); break;
  }
  return static_cast<int>(e);
}

}  // namespace sort
}  // namespace aotirt
