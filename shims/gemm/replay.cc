#include "shims/gemm/replay.h"

#include "shims/common/env.h"
#include "shims/gemm/stats.h"

namespace aotirt {
namespace gemm {
namespace {

EnvSwitch g_replay("AOTIRT_GEMM_GRAPHS");

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

GraphReplays::~GraphReplays() {
  for (Slot& s : slots_)
    if (s.exec != nullptr) (void)cudaGraphExecDestroy(s.exec);
  (void)cudaGetLastError();  // at process exit the context may be gone already
}

GraphReplays::Slot* GraphReplays::Touch(const ReplayKey& key, int64_t* budget) {
  ++clock_;
  for (Slot& s : slots_)
    if (s.key == key) {
      s.used = clock_;
      return &s;
    }
  Slot* slot = nullptr;
  if (static_cast<int>(slots_.size()) < kSlots) {
    slots_.emplace_back();
    slot = &slots_.back();
  } else {
    slot = &slots_[0];
    for (Slot& s : slots_)
      if (s.used < slot->used) slot = &s;
    if (slot->exec != nullptr) {
      (void)cudaGraphExecDestroy(slot->exec);
      ++*budget;
    }
    *slot = Slot();
  }
  slot->key = key;
  slot->used = clock_;
  return nullptr;
}

bool GraphReplays::Fail(Slot* slot) {
  (void)cudaGetLastError();
  slot->failed = true;  // never tried again for these arguments
  stats::Add(stats::kGraphCaptureFailures);
  return false;
}

bool GraphReplays::Keep(Slot* slot, cudaGraphExec_t exec, int64_t* budget) {
  if (exec == nullptr) return Fail(slot);
  slot->exec = exec;
  --*budget;
  stats::Add(stats::kGraphCaptures);
  return true;
}

bool GraphReplays::Replay(Slot* slot, cudaStream_t stream, int64_t* budget) {
  if (cudaGraphLaunch(slot->exec, stream) != cudaSuccess) {
    (void)cudaGraphExecDestroy(slot->exec);
    slot->exec = nullptr;
    ++*budget;
    return Fail(slot);
  }
  stats::Add(stats::kGraphReplays);
  return true;
}

}  // namespace gemm
}  // namespace aotirt
