// Capture pools: device memory for the allocations the shims make while a stream is captured into a CUDA graph,
// served from blocks allocated outside the graph (as torch's CUDA graph pools do), so the graph holds kernels and
// no memory nodes. Replaying a graph whose capture allocated with cudaMallocAsync costs host time per memory node
// (benchmarks/graph_launch.py); a graph over pool memory is launched like a graph of its kernels only.
//
// Life of a pool (CapturedModel drives it unless AOTIRT_CAPTURE_POOL=0, backends/cuda/runtime/graph.cc):
//   Begin(device, stream)  the stream is served: the shims' stream-ordered Allocate on it takes a pool block.
//                          A block freed while serving goes back to the pool and a later allocation of the same
//                          capture may take it: the capture is ordered on its stream, so the graph orders the reuse
//                          after the last use, as stream-ordered allocation does.
//   End(id)                capture over: the stream is no longer served. Blocks stay as they are: the graph's
//                          kernels use them at every replay, so a block freed now is only marked idle.
//   Release(id)            the owner is gone (after the graph's last replay completed): idle blocks go back to the
//                          device now, live ones (outputs a caller still holds) when their last tensor is freed.
// Retain(device, stream, object) keeps a host object the captured kernels need beyond memory (a cuDNN execution
// plan, whose code the graph launches) alive until Release, without a CUDA user object in the graph.
// The registry only books blocks; the memory calls are the backend's (device.cc: cudaMallocAsync on a private,
// never-captured stream, cudaFreeAsync), so this file needs no GPU and is tested on the CPU.
#ifndef AOTIRT_COMMON_CAPTURE_POOL_H_
#define AOTIRT_COMMON_CAPTURE_POOL_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace aotirt {

struct CapturePoolStats {
  int64_t blocks = 0;       // blocks the pool holds now
  int64_t bytes = 0;        // their bytes
  int64_t live = 0;         // blocks allocated and not freed
  int64_t allocations = 0;  // allocations it served
  int64_t reuses = 0;       // of which from a block freed earlier in the capture
  int64_t retained = 0;     // objects kept alive until Release (Retain)
};

class CapturePoolRegistry {
 public:
  // alloc: new device memory of nbytes on `device` (throws ShimError naming `fn` on failure). free: gives `ptr`
  // back, stream-ordered on `stream` (nullptr: no stream of the caller's; the backend picks one of its own).
  using AllocFn = void* (*)(const char* fn, int32_t device, size_t nbytes);
  using FreeFn = void (*)(int32_t device, void* ptr, void* stream) noexcept;
  static constexpr size_t kAlignment = 512;

  CapturePoolRegistry(AllocFn alloc, FreeFn free) : alloc_(alloc), free_(free) {}
  CapturePoolRegistry(const CapturePoolRegistry&) = delete;
  CapturePoolRegistry& operator=(const CapturePoolRegistry&) = delete;

  // One relaxed load each: whether any stream is served / any pool block exists (the shims' fast path).
  bool Serving() const { return serving_count_.load(std::memory_order_acquire) > 0; }
  bool HoldsBlocks() const { return block_count_.load(std::memory_order_acquire) > 0; }

  // A new pool serving `stream` of `device`; its id. Throws ShimError when the stream is already served.
  int64_t Begin(const char* fn, int32_t device, void* stream);
  // A block of at least nbytes (nbytes > 0) when `stream` is served for `device`, else nullptr (not ours).
  void* Allocate(const char* fn, int32_t device, void* stream, size_t nbytes);
  // True when ptr is a pool block (then handled here), false when it is not ours. Never throws.
  bool Free(void* ptr, void* stream) noexcept;
  // Keeps `object` alive until the pool serving `stream` of `device` is released; false (nothing kept) when no pool
  // serves that stream for that device. Never throws (false when out of host memory).
  bool Retain(int32_t device, void* stream, std::shared_ptr<void> object) noexcept;
  // Throw ShimError for an unknown id (or, End, a pool no longer serving).
  void End(const char* fn, int64_t id);
  void Release(const char* fn, int64_t id);
  CapturePoolStats Stats(const char* fn, int64_t id) const;

 private:
  struct Block {
    int64_t pool = 0;
    size_t size = 0;
    bool live = false;
  };
  struct Pool {
    int32_t device = 0;
    void* stream = nullptr;
    bool serving = true;
    bool owned = true;
    std::multimap<size_t, void*> idle;  // blocks freed while serving, by size: reusable in this capture
    std::unordered_set<void*> members;
    std::vector<std::shared_ptr<void>> retained;  // until Release (Retain)
    CapturePoolStats stats;
  };
  Pool& Find(const char* fn, int64_t id);
  void EndLocked(Pool& p);
  void DropBlockLocked(void* ptr, Pool& p, void* stream) noexcept;  // gives the block back (p stays)

  AllocFn alloc_;
  FreeFn free_;
  mutable std::mutex mu_;
  int64_t next_id_ = 1;
  std::unordered_map<int64_t, Pool> pools_;
  std::unordered_map<void*, int64_t> serving_;  // stream -> pool id
  std::unordered_map<void*, Block> blocks_;
  std::atomic<int64_t> serving_count_{0};
  std::atomic<int64_t> block_count_{0};
};

}  // namespace aotirt
#endif  // AOTIRT_COMMON_CAPTURE_POOL_H_
