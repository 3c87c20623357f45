#include "shims/gemm/workspace.h"

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
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

namespace {

// ---- cached cuBLASLt workspace per (device, stream), for streams that are not capturing.
// Work on one stream runs in order, so every GEMM enqueued on a stream may reuse that stream's workspace (whichever
// thread enqueues it), as PyTorch's per-(handle, stream) cuBLAS workspaces do; this saves a cudaMallocAsync +
// cudaFreeAsync pair per call. Each buffer has the full workspace bound (every algorithm the heuristic may return
// fits), is never resized and never freed while the process lives (one per stream ever used, as in torch), so a
// thread may keep its pointer without a lock. Under CUDA-graph capture the workspace is still allocated per call,
// stream-ordered on the capturing stream: it becomes the graph's own allocation node, so a graph never shares a
// buffer with eager work or with another graph (a cached buffer baked into a graph would race later work on the
// stream). Caveat (shared with torch): a stream destroyed while work is still pending on it, whose handle is
// then reused by a new stream, shares the buffer with that pending work.
struct WorkspaceSlot {
  int32_t device = -1;
  void* stream = nullptr;
  void* ptr = nullptr;
  uint64_t generation = 0;  // g_ws_generation when cached; ReleaseStreamWorkspaces bumps it
};
std::atomic<uint64_t> g_ws_generation{1};
std::mutex g_ws_mu;
std::map<std::pair<int32_t, void*>, void*>& Workspaces() {
  static auto* m = new std::map<std::pair<int32_t, void*>, void*>();  // leaked: never freed (see above)
  return *m;
}
constexpr int kThreadWorkspaceSlots = 8;
thread_local WorkspaceSlot t_ws[kThreadWorkspaceSlots];
thread_local int t_ws_next = 0;

}  // namespace

void* StreamWorkspace(const char* fn, int32_t device, void* stream) {
  const uint64_t gen = g_ws_generation.load(std::memory_order_acquire);
  for (const WorkspaceSlot& s : t_ws)
    if (s.ptr != nullptr && s.device == device && s.stream == stream && s.generation == gen) return s.ptr;
  void* ptr = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_ws_mu);
    auto& m = Workspaces();
    auto it = m.find({device, stream});
    if (it != m.end()) {
      ptr = it->second;
    } else {
      ptr = gpu::Allocate(fn, device, static_cast<int64_t>(LtWorkspaceBytes(device)), stream);
      // Once per stream: the allocation is then complete, hence valid on any stream that later has this handle.
      try {
        gpu::StreamSynchronize(fn, stream);
      } catch (...) {
        gpu::Free(device, ptr, stream);
        throw;
      }
      m.emplace(std::make_pair(device, stream), ptr);
    }
  }
  t_ws[t_ws_next] = WorkspaceSlot{device, stream, ptr, gen};
  t_ws_next = (t_ws_next + 1) % kThreadWorkspaceSlots;
  return ptr;
}

int ReleaseStreamWorkspaces() {
  std::lock_guard<std::mutex> lock(g_ws_mu);
  auto& m = Workspaces();
  int n = 0, original = -1;
  if (cudaGetDevice(&original) != cudaSuccess) original = -1;
  for (const auto& kv : m) {
    // Errors are ignored (a context already torn down at exit): the buffers are dropped either way.
    if (cudaSetDevice(kv.first.first) == cudaSuccess) (void)cudaDeviceSynchronize();  // nothing may still use it
    (void)cudaFree(kv.second);
    ++n;
  }
  if (original >= 0) (void)cudaSetDevice(original);
  (void)cudaGetLastError();
  m.clear();
  g_ws_generation.fetch_add(1, std::memory_order_acq_rel);  // every thread's cached slot is stale now
  return n;
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
