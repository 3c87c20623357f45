#include "shims/embedding_bag/embedding_bag_kernel.h"

#include <cassert>
#include <cstdint>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace aotirt {
namespace embedding_bag {
namespace {

template <typename T> struct Acc { using type = float; };
template <> struct Acc<double> { using type = double; };

template <typename T> __device__ __forceinline__ typename Acc<T>::type ToAcc(T v) {
  return static_cast<typename Acc<T>::type>(v);
}
template <> __device__ __forceinline__ float ToAcc<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float ToAcc<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> __device__ __forceinline__ T FromAcc(typename Acc<T>::type v) { return static_cast<T>(v); }
template <> __device__ __forceinline__ __half FromAcc<__half>(float v) { return __float2half(v); }
template <> __device__ __forceinline__ __nv_bfloat16 FromAcc<__nv_bfloat16>(float v) { return __float2bfloat16(v); }

// One block per bag (grid-stride over bags), its threads over the features. Thread 0 also writes the bag's
// offset2bag entries and its count. Mirrors torch's EmbeddingBag_updateOutputKernel_{sum_mean,max}: the same bag
// bounds (the first bag starts at 0, the last ends at the last index), padding skipped, max keeps the first maximum.
template <typename T, typename I>
__global__ void EmbeddingBagKernel(const T* __restrict__ weight, int64_t ws0, int64_t ws1, const I* __restrict__ idx,
                                   int64_t is, const I* __restrict__ offsets, int64_t os, const T* __restrict__ psw,
                                   int64_t ps, T* __restrict__ out, I* __restrict__ offset2bag, I* __restrict__ bag_size,
                                   I* __restrict__ max_indices, int64_t rows, int64_t dim, int64_t n_idx,
                                   int64_t bags, int mode, int64_t padding_idx) {
  using A = typename Acc<T>::type;
  for (int64_t bag = blockIdx.x; bag < bags; bag += gridDim.x) {
    const int64_t begin = bag == 0 ? 0 : static_cast<int64_t>(offsets[bag * os]);
    const int64_t end = bag < bags - 1 ? static_cast<int64_t>(offsets[(bag + 1) * os]) : n_idx;
    assert(end >= begin && "embedding_bag: offsets must be non-decreasing");
    if (threadIdx.x == 0) {
      int64_t count = 0;
      for (int64_t e = begin; e < end; ++e) {
        offset2bag[e] = static_cast<I>(bag);
        count += static_cast<int64_t>(idx[e * is]) == padding_idx ? 0 : 1;
      }
      bag_size[bag] = static_cast<I>(count);
    }
    for (int64_t f = threadIdx.x; f < dim; f += blockDim.x) {
      const T* wf = weight + f * ws1;
      if (mode == 2) {
        A best = 0;
        int64_t best_word = -1, count = 0;
        for (int64_t e = begin; e < end; ++e) {
          const int64_t word = static_cast<int64_t>(idx[e * is]);
          assert(word >= 0 && word < rows && "embedding_bag: index out of range");
          if (word == padding_idx) continue;
          const A v = ToAcc<T>(wf[word * ws0]);
          if (count == 0 || v > best) {
            best = v;
            best_word = word;
          }
          ++count;
        }
        out[bag * dim + f] = FromAcc<T>(best);
        max_indices[bag * dim + f] = static_cast<I>(best_word);
      } else {
        A sum = 0;
        int64_t count = 0;
        for (int64_t e = begin; e < end; ++e) {
          const int64_t word = static_cast<int64_t>(idx[e * is]);
          assert(word >= 0 && word < rows && "embedding_bag: index out of range");
          if (word == padding_idx) continue;
          const A v = ToAcc<T>(wf[word * ws0]);
          sum += psw != nullptr ? ToAcc<T>(psw[e * ps]) * v : v;
          ++count;
        }
        if (mode == 1 && count != 0) sum /= static_cast<A>(count);
        out[bag * dim + f] = FromAcc<T>(sum);
      }
    }
  }
}

template <typename T, typename I>
int Launch(const EmbeddingBagParams& p, cudaStream_t stream) {
  const int threads = p.dim >= 128 ? 128 : (p.dim >= 64 ? 64 : 32);
  const int64_t blocks = p.bags < 65535 ? p.bags : 65535;
  EmbeddingBagKernel<T, I><<<static_cast<unsigned>(blocks), threads, 0, stream>>>(
      static_cast<const T*>(p.weight), p.weight_stride0, p.weight_stride1, static_cast<const I*>(p.index),
      p.index_stride, static_cast<const I*>(p.offsets), p.offsets_stride, static_cast<const T*>(p.per_sample_weights),
      p.per_sample_weights_stride, static_cast<T*>(p.out), static_cast<I*>(p.offset2bag), static_cast<I*>(p.bag_size),
      static_cast<I*>(p.max_indices), p.rows, p.dim, p.indices, p.bags, static_cast<int>(p.mode), p.padding_idx);
  return static_cast<int>(cudaGetLastError());
}

template <typename T>
int LaunchIndex(const EmbeddingBagParams& p, cudaStream_t stream) {
  return p.index64 ? Launch<T, int64_t>(p, stream) : Launch<T, int32_t>(p, stream);
}

}  // namespace

int LaunchEmbeddingBag(const EmbeddingBagParams& p, void* stream) {
  if (p.bags <= 0) return 0;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  switch (p.scalar) {
    case Scalar::kFloat16: return LaunchIndex<__half>(p, s);
    case Scalar::kBFloat16: return LaunchIndex<__nv_bfloat16>(p, s);
    case Scalar::kFloat32: return LaunchIndex<float>(p, s);
    case Scalar::kFloat64: return LaunchIndex<double>(p, s);
  }
  return static_cast<int>(cudaErrorInvalidValue);
}

}  // namespace embedding_bag
}  // namespace aotirt
