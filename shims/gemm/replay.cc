#include "shims/gemm/replay.h"

#include "shims/common/env.h"
#include "shims/gemm/stats.h"

namespace aotirt {
namespace gemm {
namespace {

// Off unless asked for: a capture in progress on any stream makes other threads' device-wide synchronizations
// (cudaDeviceSynchronize, torch.cuda.synchronize, cudaFree's implicit one) fail with
// cudaErrorStreamCaptureUnsupported and invalidates the capture (H200, 8 threads: see replay.h).
EnvSwitch g_replay("AOTIRT_GEMM_GRAPHS", /*default_on=*/false);

}  // namespace

bool GraphReplayEnabled() { return g_replay.On(); }

void SetGraphReplay(int mode) { g_replay.Set(mode); }

bool BeginGraphCapture(cudaStream_t stream) {
  if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess) return true;
  (void)cudaGetLastError();
  return false;
}

cudaGraphExec_t EndGraphCapture(cudaStream_t stream, bool enqueued) {
  cudaGraph_t graph = nullptr;
  const bool captured = cudaStreamEndCapture(stream, &graph) == cudaSuccess && graph != nullptr;
  cudaGraphExec_t exec = nullptr;
  if (!(enqueued && captured && cudaGraphInstantiateWithFlags(&exec, graph, 0) == cudaSuccess)) exec = nullptr;
  if (graph != nullptr) (void)cudaGraphDestroy(graph);
  (void)cudaGetLastError();
  return exec;
}

size_t ReplayKeyHash::operator()(const ReplayKey& k) const {
  const uintptr_t words[] = {reinterpret_cast<uintptr_t>(k.stream), reinterpret_cast<uintptr_t>(k.a),
                             reinterpret_cast<uintptr_t>(k.b),      reinterpret_cast<uintptr_t>(k.d),
                             reinterpret_cast<uintptr_t>(k.bias),   reinterpret_cast<uintptr_t>(k.workspace),
                             k.alpha_bits,                          k.beta_bits};
  uint64_t h = 1469598103934665603ull;
  for (uintptr_t w : words) h = (h ^ static_cast<uint64_t>(w)) * 1099511628211ull;
  return static_cast<size_t>(h ^ (h >> 29));
}

GraphReplays::~GraphReplays() {
  for (Slot& s : lru_) Destroy(&s);
  (void)cudaGetLastError();  // at process exit the context may be gone already
}

void GraphReplays::Destroy(Slot* slot) {
  if (slot->exec == nullptr) return;
  (void)cudaGraphExecDestroy(slot->exec);
  slot->exec = nullptr;
  if (pool_ != nullptr) --pool_->live;
}

GraphReplays::Slot* GraphReplays::Touch(const ReplayKey& key) {
  const uint64_t now = ++pool_->clock;
  auto found = index_.find(key);
  if (found != index_.end()) {
    lru_.splice(lru_.begin(), lru_, found->second);  // iterators stay valid
    found->second->used = now;
    return &*found->second;
  }
  if (lru_.size() >= kMaxSlots) {
    Slot& last = lru_.back();
    if (last.exec != nullptr) stats::Add(stats::kGraphEvictions);
    Destroy(&last);
    index_.erase(last.key);
    lru_.pop_back();
  }
  lru_.emplace_front();
  lru_.front().key = key;
  lru_.front().used = now;
  index_.emplace(key, lru_.begin());
  return nullptr;
}

uint64_t GraphReplays::DropGraphsUsedBefore(uint64_t cutoff, bool for_room) {
  uint64_t oldest_kept = UINT64_MAX;
  for (Slot& s : lru_) {
    if (s.exec == nullptr) continue;
    if (s.used < cutoff) {
      Destroy(&s);
      s.evicted = for_room;
      if (for_room) stats::Add(stats::kGraphEvictions);
    } else if (s.used < oldest_kept) {
      oldest_kept = s.used;
    }
  }
  (void)cudaGetLastError();
  return oldest_kept;
}

bool GraphReplays::Fail(Slot* slot) {
  (void)cudaGetLastError();
  slot->failed = true;  // never tried again for these arguments
  stats::Add(stats::kGraphCaptureFailures);
  return false;
}

bool GraphReplays::Keep(Slot* slot, cudaGraphExec_t exec) {
  if (exec == nullptr) return Fail(slot);
  slot->exec = exec;
  ++pool_->live;
  stats::Add(stats::kGraphCaptures);
  return true;
}

bool GraphReplays::Replay(Slot* slot, cudaStream_t stream) {
  if (cudaGraphLaunch(slot->exec, stream) != cudaSuccess) {
    Destroy(slot);
    return Fail(slot);
  }
  stats::Add(stats::kGraphReplays);
  return true;
}

}  // namespace gemm
}  // namespace aotirt
