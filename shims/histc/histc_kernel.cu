#include "shims/histc/histc_kernel.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace aotirt {
namespace histc {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 1024;
constexpr int64_t kSharedBins = 4096;  // per-block 32-bit counters in shared memory (16 KiB) up to this many bins

// torch's at::acc_type<T, /*is_cuda=*/true> for histc's types.
template <typename T>
using Acc = std::conditional_t<std::is_floating_point<T>::value, T, int64_t>;

struct Geometry {
  int ndim;
  int64_t sizes[kKernelMaxDims], strides[kKernelMaxDims];
};

__device__ __forceinline__ int64_t OffsetOf(int64_t i, const Geometry& g) {
  if (g.ndim == 1) return i * g.strides[0];
  int64_t off = 0;
  for (int d = g.ndim - 1; d >= 0; --d) {
    const int64_t s = g.sizes[d];
    off += (i % s) * g.strides[d];
    i /= s;
  }
  return off;
}

// torch's getBin: (int)((v - lo) * bins / (hi - lo)) in the accumulate type, the max itself in the last bin.
template <typename T>
__device__ __forceinline__ int64_t BinOf(T v, Acc<T> lo, Acc<T> hi, int64_t bins) {
  int64_t b = static_cast<int>((v - lo) * bins / (hi - lo));
  if (b == bins) b -= 1;
  return b;
}

template <typename T, bool kShared>
__global__ void __launch_bounds__(kThreads) CountKernel(const T* __restrict__ x, Geometry g, int64_t n, Acc<T> lo,
                                                        Acc<T> hi, int64_t bins,
                                                        unsigned long long* __restrict__ counts) {
  extern __shared__ unsigned int block_counts[];
  if (kShared) {
    for (int64_t i = threadIdx.x; i < bins; i += blockDim.x) block_counts[i] = 0;
    __syncthreads();
  }
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const T v = x[OffsetOf(i, g)];
    if (v >= lo && v <= hi) {  // never for NaN
      const int64_t b = BinOf<T>(v, lo, hi, bins);
      if (b >= 0 && b < bins) {  // always, for bins < 2^23; a guard for larger ones
        if (kShared) {
          atomicAdd(&block_counts[b], 1u);
        } else {
          atomicAdd(&counts[b], 1ull);
        }
      }
    }
  }
  if (kShared) {
    __syncthreads();
    for (int64_t i = threadIdx.x; i < bins; i += blockDim.x)
      if (block_counts[i] != 0) atomicAdd(&counts[i], static_cast<unsigned long long>(block_counts[i]));
  }
}

template <typename T>
__global__ void ConvertKernel(const unsigned long long* __restrict__ counts, T* __restrict__ out, int64_t bins) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < bins; i += step)
    out[i] = static_cast<T>(counts[i]);  // integer types: modulo 2^bits, as torch's atomic adds wrap
}

template <typename T>
struct Range {
  T lo, hi;
  int nan;
};

template <typename T>
__device__ __forceinline__ void Merge(Range<T>& a, const Range<T>& b) {
  a.lo = b.lo < a.lo ? b.lo : a.lo;
  a.hi = b.hi > a.hi ? b.hi : a.hi;
  a.nan |= b.nan;
}

template <typename T>
__device__ void BlockReduce(Range<T> r, Range<T>* out) {
  __shared__ Range<T> part[kThreads];
  part[threadIdx.x] = r;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) Merge(part[threadIdx.x], part[threadIdx.x + s]);
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = part[0];
}

template <typename T>
__global__ void __launch_bounds__(kThreads) RangeKernel(const T* __restrict__ x, Geometry g, int64_t n, T ident_lo,
                                                        T ident_hi, Range<T>* __restrict__ partial) {
  Range<T> r{ident_lo, ident_hi, 0};
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const T v = x[OffsetOf(i, g)];
    if (v != v) {
      r.nan = 1;
    } else {
      r.lo = v < r.lo ? v : r.lo;
      r.hi = v > r.hi ? v : r.hi;
    }
  }
  BlockReduce(r, &partial[blockIdx.x]);
}

template <typename T>
__global__ void __launch_bounds__(kThreads) RangeFinalKernel(const Range<T>* __restrict__ partial, int parts,
                                                             T ident_lo, T ident_hi, Range<T>* __restrict__ result) {
  Range<T> r{ident_lo, ident_hi, 0};
  for (int i = threadIdx.x; i < parts; i += blockDim.x) Merge(r, partial[i]);
  BlockReduce(r, result);
}

Geometry GeometryOf(const HistcParams& p) {
  Geometry g{};
  g.ndim = p.ndim;
  for (int d = 0; d < p.ndim && d < kKernelMaxDims; ++d) g.sizes[d] = p.sizes[d], g.strides[d] = p.strides[d];
  return g;
}

int BlocksFor(int64_t n) {
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(kMaxBlocks, (n + kThreads - 1) / kThreads)));
}

template <typename T>
int Histogram(const HistcParams& p, cudaStream_t s) {
  cudaError_t e = cudaMemsetAsync(p.counts, 0, static_cast<size_t>(p.bins) * sizeof(unsigned long long), s);
  if (e != cudaSuccess) return static_cast<int>(e);
  if (p.numel > 0) {
    using A = Acc<T>;
    A lo, hi;
    if constexpr (std::is_floating_point<T>::value) {
      lo = static_cast<A>(p.lo_f), hi = static_cast<A>(p.hi_f);
    } else {
      lo = static_cast<A>(p.lo_i), hi = static_cast<A>(p.hi_i);
    }
    const T* x = static_cast<const T*>(p.self);
    const Geometry g = GeometryOf(p);
    const int blocks = BlocksFor(p.numel);
    if (p.bins <= kSharedBins) {
      CountKernel<T, true><<<blocks, kThreads, static_cast<size_t>(p.bins) * sizeof(unsigned int), s>>>(
          x, g, p.numel, lo, hi, p.bins, p.counts);
    } else {
      CountKernel<T, false><<<blocks, kThreads, 0, s>>>(x, g, p.numel, lo, hi, p.bins, p.counts);
    }
    e = cudaGetLastError();
    if (e != cudaSuccess) return static_cast<int>(e);
  }
  ConvertKernel<T><<<BlocksFor(p.bins), kThreads, 0, s>>>(p.counts, static_cast<T*>(p.out), p.bins);
  return static_cast<int>(cudaGetLastError());
}

template <typename T>
int DataRange(const HistcParams& p, void* scratch, void* min8, void* max8, cudaStream_t s) {
  T ident_lo, ident_hi;  // the identities of min and max
  if constexpr (std::is_floating_point<T>::value) {
    ident_lo = std::numeric_limits<T>::infinity(), ident_hi = -std::numeric_limits<T>::infinity();
  } else {
    ident_lo = std::numeric_limits<T>::max(), ident_hi = std::numeric_limits<T>::lowest();
  }
  auto* partial = static_cast<Range<T>*>(scratch);
  Range<T>* result = partial + kMaxBlocks;
  const int blocks = BlocksFor(p.numel);
  RangeKernel<T><<<blocks, kThreads, 0, s>>>(static_cast<const T*>(p.self), GeometryOf(p), p.numel, ident_lo, ident_hi,
                                             partial);
  RangeFinalKernel<T><<<1, kThreads, 0, s>>>(partial, blocks, ident_lo, ident_hi, result);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return static_cast<int>(e);
  Range<T> host{};
  e = cudaMemcpyAsync(&host, result, sizeof(host), cudaMemcpyDeviceToHost, s);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  if (e != cudaSuccess) return static_cast<int>(e);
  if constexpr (std::is_floating_point<T>::value) {
    if (host.nan) host.lo = host.hi = std::numeric_limits<T>::quiet_NaN();
  }
  std::memset(min8, 0, 8);
  std::memset(max8, 0, 8);
  std::memcpy(min8, &host.lo, sizeof(T));
  std::memcpy(max8, &host.hi, sizeof(T));
  return 0;
}

template <typename F>
int Dispatch(Scalar sc, F&& f) {
  switch (sc) {
    case Scalar::kUInt8: return f(uint8_t{});
    case Scalar::kInt8: return f(int8_t{});
    case Scalar::kInt16: return f(int16_t{});
    case Scalar::kInt32: return f(int32_t{});
    case Scalar::kInt64: return f(int64_t{});
    case Scalar::kFloat32: return f(float{});
    case Scalar::kFloat64: return f(double{});
  }
  return static_cast<int>(cudaErrorInvalidValue);
}

}  // namespace

int64_t DataRangeScratchBytes() { return static_cast<int64_t>((kMaxBlocks + 1) * sizeof(Range<double>)); }

int ReadDataRange(const HistcParams& p, void* scratch, void* min8, void* max8, void* stream) {
  if (p.numel <= 0 || p.ndim < 1 || p.ndim > kKernelMaxDims) return static_cast<int>(cudaErrorInvalidValue);
  return Dispatch(p.scalar, [&](auto t) {
    return DataRange<decltype(t)>(p, scratch, min8, max8, static_cast<cudaStream_t>(stream));
  });
}

int LaunchHistc(const HistcParams& p, void* stream) {
  if (p.bins <= 0 || p.ndim < 1 || p.ndim > kKernelMaxDims) return static_cast<int>(cudaErrorInvalidValue);
  return Dispatch(p.scalar, [&](auto t) { return Histogram<decltype(t)>(p, static_cast<cudaStream_t>(stream)); });
}

}  // namespace histc
}  // namespace aotirt
