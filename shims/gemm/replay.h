// GEMM graph replay: cublasLtMatmul costs several microseconds of host time per call (7-8 us on the H200 machines,
// against about 1 us to enqueue a kernel), which dominates Inductor-generated code run without whole-model CUDA
// graphs. A call whose exact arguments (stream, operand pointers, alpha/beta) were seen before is captured once into
// a one-call CUDA graph and replayed from then on with cudaGraphLaunch: same kernels, same parameters, a fraction of
// the host cost. Models rerun with the same buffers (the runtime's stream-ordered allocator hands out the same
// addresses run after run), so every GEMM call site becomes a replay after its second run.
// Off by default; AOTIRT_GEMM_GRAPHS=1 (or SetGraphReplay(1)) turns it on. Why off: a capture is visible to the whole
// process. While one thread captures (thread-local mode, a few microseconds per new argument set), another thread's
// cudaDeviceSynchronize -- torch.cuda.synchronize(), CuPy's Device.synchronize(), the implicit one in cudaFree --
// fails with cudaErrorStreamCaptureUnsupported and invalidates the capture; on the H200 it once crashed in libcuda
// (test_gemm_shims_gpu's ExitedThreadsHandTheirStateToTheNext, 8 threads, commit e5c7643). A library cannot know
// what the caller's other threads do, so it captures only when the caller says no other thread synchronizes the
// device (one serving thread, or one per process). Whole-model CUDA graphs (graphs.py, aotirt_run --graph) are
// the caller's own capture and the faster way anyway.
#ifndef AOTIRT_GEMM_REPLAY_H_
#define AOTIRT_GEMM_REPLAY_H_

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <list>
#include <unordered_map>

namespace aotirt {
namespace gemm {

// True when AOTIRT_GEMM_GRAPHS is set and not 0/off/false (read once), or SetGraphReplay(1) was called.
bool GraphReplayEnabled();
void SetGraphReplay(int mode);  // 1 on, 0 off, -1 back to the environment's choice

// Graph capture on a stream in thread-local mode (other threads' CUDA calls are unaffected). EndGraphCapture always
// ends the capture; it returns the instantiated graph, or null when `enqueued` is false or capture or instantiation
// failed (the CUDA error is cleared).
bool BeginGraphCapture(cudaStream_t stream);
cudaGraphExec_t EndGraphCapture(cudaStream_t stream, bool enqueued);

// What `enqueue(stream)` (a bool(cudaStream_t): false on failure) puts on `stream`, as an instantiated graph, or null.
template <typename Enqueue>
cudaGraphExec_t CaptureGraph(cudaStream_t stream, Enqueue&& enqueue) {
  if (!BeginGraphCapture(stream)) return nullptr;
  const bool enqueued = enqueue(stream);
  return EndGraphCapture(stream, enqueued);
}

// Everything a captured call depends on besides the plan entry's descriptors and algorithm.
struct ReplayKey {
  const void* stream = nullptr;
  const void* a = nullptr;
  const void* b = nullptr;
  const void* d = nullptr;
  const void* bias = nullptr;
  const void* workspace = nullptr;
  uint64_t alpha_bits = 0, beta_bits = 0;
  bool operator==(const ReplayKey& o) const {
    return stream == o.stream && a == o.a && b == o.b && d == o.d && bias == o.bias && workspace == o.workspace &&
           alpha_bits == o.alpha_bits && beta_bits == o.beta_bits;
  }
};

// Hash of a ReplayKey (its fields are pointers and bit patterns; no padding).
struct ReplayKeyHash {
  size_t operator()(const ReplayKey& k) const;
};

// Per thread: what the replay graphs of all its plan entries share. `clock` counts the thread's replayable calls;
// at most `max_graphs` graphs live at once. When a new graph is wanted and none is free, graphs unused for
// `stale_after` calls (those of a model that was unloaded, say) are destroyed to make room; graphs in use are never
// destroyed for room, so a working set larger than the pool runs its extra calls through cublasLtMatmul instead of
// thrashing. Should an evicted graph's arguments come back (a working set cycling over more than `stale_after`
// calls), `stale_after` doubles.
struct ReplayPool {
  int64_t max_graphs = 1024;
  uint64_t stale_after = 4096;
  int64_t live = 0;        // graphs alive in this thread
  uint64_t clock = 0;
  uint64_t next_scan = 0;  // no graph can be stale before this tick (a scan found none older)
};

// The replays of one plan entry: the argument sets seen recently (LRU, up to kMaxSlots), each seen once (no graph
// yet) or with its graph.
class GraphReplays {
 public:
  static constexpr size_t kMaxSlots = 256;
  GraphReplays() = default;
  ~GraphReplays();
  GraphReplays(const GraphReplays&) = delete;
  GraphReplays& operator=(const GraphReplays&) = delete;

  // Replays the graph of `key` on `stream` and returns true; or, for arguments seen once before, captures `call`
  // (a bool(cudaStream_t) that enqueues the GEMM on the stream it is given) on `capture_stream` into a graph, then
  // replays it. Returns false (the caller runs the GEMM itself) for arguments seen for the first time, when capture
  // or launch fails (those arguments are then never tried again), or when the pool is full and `make_room()` (a
  // bool(), see ReplayPool) frees nothing. All GraphReplays of one thread use that thread's pool.
  template <typename Call, typename MakeRoom>
  bool Launch(const ReplayKey& key, cudaStream_t stream, cudaStream_t capture_stream, Call&& call, ReplayPool* pool,
              MakeRoom&& make_room) {
    pool_ = pool;
    Slot* slot = Touch(key);
    if (slot == nullptr || slot->failed) return false;
    if (slot->exec == nullptr) {
      if (slot->evicted && pool->stale_after < (uint64_t{1} << 40)) pool->stale_after *= 2;  // came back: too eager
      slot->evicted = false;
      if (pool->live >= pool->max_graphs && !make_room()) return false;
      if (!Keep(slot, CaptureGraph(capture_stream, call))) return false;
    }
    return Replay(slot, stream);
  }

  // Destroys the graphs last used before `cutoff` (a pool clock value); returns the oldest last use among the graphs
  // kept (UINT64_MAX when none is left). `for_room`: counted as evictions, and a return of their arguments doubles
  // the pool's stale_after (false: a plain release).
  uint64_t DropGraphsUsedBefore(uint64_t cutoff, bool for_room = true);

 private:
  struct Slot {
    ReplayKey key;
    cudaGraphExec_t exec = nullptr;
    bool failed = false;
    bool evicted = false;  // its graph was destroyed for room
    uint64_t used = 0;
  };
  // The slot of `key` (moved to the front), or null after remembering a first sight (forgetting the least recently
  // used slot past kMaxSlots).
  Slot* Touch(const ReplayKey& key);
  bool Keep(Slot* slot, cudaGraphExec_t exec);
  bool Replay(Slot* slot, cudaStream_t stream);
  bool Fail(Slot* slot);
  void Destroy(Slot* slot);
  std::list<Slot> lru_;  // most recently used first
  std::unordered_map<ReplayKey, std::list<Slot>::iterator, ReplayKeyHash> index_;
  ReplayPool* pool_ = nullptr;
};

}  // namespace gemm
}  // namespace aotirt
#endif  // AOTIRT_GEMM_REPLAY_H_
