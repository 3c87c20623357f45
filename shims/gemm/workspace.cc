#include "shims/gemm/workspace.h"

#include <atomic>
#include <cstdlib>
#include <regex>
#include <string>
#include <utility>

#include "shims/common/env.h"
#include "shims/common/error.h"
#include "shims/cuda/device.h"
#include <cuda_runtime.h>

namespace aotirt {
namespace gemm {
namespace {

// ---- cuBLASLt workspace bound, as PyTorch computes it (CublasHandlePool.cpp, getCUDABlasLtWorkspaceSize): the
// heuristic's choice depends on MAX_WORKSPACE_BYTES, so the same bound gives the same algorithm as torch's addmm.
// cuBLAS workspace: CUBLAS_WORKSPACE_CONFIG (":SIZE_KiB:COUNT" terms summed) or 32 MiB on sm90/sm100/sm120 and
// 4096 KiB * 2 + 16 KiB * 8 elsewhere. cuBLASLt: CUBLASLT_WORKSPACE_SIZE (KiB), else the cuBLAS size when unified
// (TORCH_CUBLASLT_UNIFIED_WORKSPACE unset or true, torch's default outside fbcode) or 1 MiB; unified caps it at the
// cuBLAS size.
uint64_t CublasWorkspaceBytes(int major) {
  const uint64_t fallback = (major == 9 || major == 10 || major == 12) ? 4096ull * 8 * 1024
                                                                        : 4096ull * 1024 * 2 + 16ull * 1024 * 8;
  const char* v = std::getenv("CUBLAS_WORKSPACE_CONFIG");
  if (v == nullptr) return fallback;
  const std::string config(v);
  const std::regex exp(":([0-9]+):([0-9]+)");
  uint64_t total = 0;
  bool any = false;
  for (std::sregex_iterator it(config.begin(), config.end(), exp), end; it != end; ++it) {
    total += std::stoull((*it)[1].str()) * 1024 * std::stoull((*it)[2].str());
    any = true;
  }
  return any ? total : fallback;
}

uint64_t ComputeLtWorkspaceBytes(int32_t device) {
  int major = 9;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) {
    (void)cudaGetLastError();
    major = 9;
  }
  const bool unified = EnvFlag("TORCH_CUBLASLT_UNIFIED_WORKSPACE", true);
  const uint64_t cublas = CublasWorkspaceBytes(major);
  uint64_t lt = unified ? cublas : 1024ull * 1024;
  if (const char* v = std::getenv("CUBLASLT_WORKSPACE_SIZE")) {
    char* end = nullptr;
    const long long kib = std::strtoll(v, &end, 10);
    if (end != v && kib >= 0) lt = static_cast<uint64_t>(kib) * 1024;
  }
  if (unified && cublas < lt) lt = cublas;
  return lt;
}

constexpr int kMaxDevices = 64;
std::atomic<int64_t> g_lt_workspace[kMaxDevices];  // 0: not computed yet (stored as bytes + 1)

}  // namespace

uint64_t LtWorkspaceBytes(int32_t device) {
  if (device < 0 || device >= kMaxDevices) return ComputeLtWorkspaceBytes(device);
  int64_t v = g_lt_workspace[device].load(std::memory_order_relaxed);
  if (v == 0) {
    v = static_cast<int64_t>(ComputeLtWorkspaceBytes(device)) + 1;
    g_lt_workspace[device].store(v, std::memory_order_relaxed);
  }
  return static_cast<uint64_t>(v - 1);
}

// ---- cached cuBLASLt workspaces of one thread state, per (device, stream), for streams that are not capturing.
// Per state, never per stream alone: a cuBLASLt algorithm may be several kernels that pass data through the
// workspace (split-K: partial products, then a reduction kernel that reads them). Two threads enqueueing on one
// stream interleave their kernels, so with one workspace per stream thread B's first kernel could overwrite thread
// A's partials before A's reduction read them: wrong results, seen as one wrong output in 240 cycles of 4 threads
// loading, running and dropping packages on the legacy default stream (H200, 9bc4bc0). PyTorch keys its cuBLAS
// workspaces by (handle, stream), handles being per thread, for the same reason. A state is owned by one thread at a
// time (an exiting thread hands it to the next), so its own work on a stream is ordered and may share that stream's
// buffer; a state handed over while its last work is still pending keeps that order on the same stream, and work on
// another stream gets another buffer. Each buffer has the full workspace bound (every algorithm the heuristic may
// return fits), is never resized, and lives as long as its state (one per stream the state has used, as in torch).
// Under CUDA-graph capture the workspace is allocated per call instead (Scratch), stream-ordered on the capturing
// stream: it becomes the graph's own allocation node. Caveat (shared with torch): a stream destroyed while work is
// still pending on it, whose handle is then reused by a new stream, shares the buffer with that pending work.
void* StreamWorkspaces::Get(const char* fn, int32_t device, void* stream) {
  if (last_ != nullptr && last_device_ == device && last_stream_ == stream) return last_;
  auto it = buffers_.find({device, stream});
  void* ptr = nullptr;
  if (it != buffers_.end()) {
    ptr = it->second;
  } else {
    ptr = gpu::Allocate(fn, device, static_cast<int64_t>(LtWorkspaceBytes(device)), stream);
    // Once per (state, stream): the allocation is then complete, hence valid on any stream this state later uses.
    try {
      gpu::StreamSynchronize(fn, stream);
    } catch (...) {
      gpu::Free(device, ptr, stream);
      throw;
    }
    buffers_.emplace(std::make_pair(device, stream), ptr);
  }
  last_device_ = device;
  last_stream_ = stream;
  last_ = ptr;
  return ptr;
}

StreamWorkspaces::~StreamWorkspaces() {
  // Only when the state is destroyed (ReleaseGemmThreadStates, from a live thread): nothing may still use them.
  int original = -1;
  if (cudaGetDevice(&original) != cudaSuccess) original = -1;
  for (const auto& kv : buffers_) {
    // Errors are ignored (a context already torn down at exit): the buffers are dropped either way.
    if (cudaSetDevice(kv.first.first) == cudaSuccess) (void)cudaDeviceSynchronize();
    (void)cudaFree(kv.second);
  }
  if (original >= 0) (void)cudaSetDevice(original);
  (void)cudaGetLastError();
}

Scratch::~Scratch() {
  for (int i = 0; i < n_; ++i) gpu::Free(device_, ptrs_[i], stream_);
}

void* Scratch::Get(const char* fn, int64_t bytes) {
  void* p = gpu::Allocate(fn, device_, bytes, stream_);
  if (n_ == kMax) {  // never reached: a call takes at most 7 scratch buffers
    gpu::Free(device_, p, stream_);
    throw ShimError(StrCat(fn, ": internal error: too many scratch buffers"));
  }
  ptrs_[n_++] = p;
  return p;
}

}  // namespace gemm
}  // namespace aotirt
