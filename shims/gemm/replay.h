// GEMM graph replay: cublasLtMatmul costs several microseconds of host time per call (7-8 us on the H200 machines,
// against about 1 us to enqueue a kernel), which dominates Inductor-generated code run without whole-model CUDA
// graphs. A call whose exact arguments (stream, operand pointers, alpha/beta) were seen before is captured once into
// a one-call CUDA graph and replayed from then on with cudaGraphLaunch: same kernels, same parameters, a fraction of
// the host cost. Models rerun with the same buffers (the runtime's stream-ordered allocator hands out the same
// addresses run after run), so every GEMM call site becomes a replay after its second run.
// AOTIRT_GEMM_GRAPHS=0 turns it off.
#ifndef AOTIRT_GEMM_REPLAY_H_
#define AOTIRT_GEMM_REPLAY_H_

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

namespace aotirt {
namespace gemm {

// True unless AOTIRT_GEMM_GRAPHS is 0/off/false (read once), or SetGraphReplay(0) was called.
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

// The replays of one plan entry: a few argument sets (LRU), each seen once (no graph yet) or with its graph.
class GraphReplays {
 public:
  static constexpr int kSlots = 8;
  GraphReplays() = default;
  ~GraphReplays();
  GraphReplays(const GraphReplays&) = delete;
  GraphReplays& operator=(const GraphReplays&) = delete;

  // Replays the graph of `key` on `stream` and returns true; or, for arguments seen once before, captures `call`
  // (a bool(cudaStream_t) that enqueues the GEMM on the stream it is given) on `capture_stream` into a graph, then
  // replays it. Returns false (the caller runs the GEMM itself) for arguments seen for the first time, when capture
  // or launch fails (those arguments are then never tried again), or when `budget` (graphs this thread may still
  // create; decremented per graph, incremented per graph destroyed) is 0.
  template <typename Call>
  bool Launch(const ReplayKey& key, cudaStream_t stream, cudaStream_t capture_stream, Call&& call, int64_t* budget) {
    Slot* slot = Touch(key, budget);
    if (slot == nullptr || slot->failed) return false;
    if (slot->exec == nullptr) {
      if (*budget <= 0) return false;
      if (!Keep(slot, CaptureGraph(capture_stream, call), budget)) return false;
    }
    return Replay(slot, stream, budget);
  }

 private:
  struct Slot {
    ReplayKey key;
    cudaGraphExec_t exec = nullptr;
    bool failed = false;
    uint64_t used = 0;
  };
  // The slot of `key` (marked used), or null after remembering a first sight (evicting the least recently used).
  Slot* Touch(const ReplayKey& key, int64_t* budget);
  // Stores a captured graph in the slot (false, and the slot failed, when exec is null).
  bool Keep(Slot* slot, cudaGraphExec_t exec, int64_t* budget);
  bool Replay(Slot* slot, cudaStream_t stream, int64_t* budget);
  bool Fail(Slot* slot);
  std::vector<Slot> slots_;
  uint64_t clock_ = 0;
};

}  // namespace gemm
}  // namespace aotirt
#endif  // AOTIRT_GEMM_REPLAY_H_
