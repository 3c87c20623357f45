// Algorithm tuning: the first call of a problem (per thread, outside CUDA-graph capture) times the cuBLASLt
// heuristic's candidates on the caller's stream and keeps the fastest. The heuristic's first candidate is what
// PyTorch runs; another one is kept only when it is clearly faster (kTuneMargin), so a problem where the heuristic is
// right keeps torch's algorithm and its rounding. AOTIRT_GEMM_TUNE=0 turns tuning off (torch's algorithm always).
// Tuning never captures a CUDA graph (a capture would make other threads' device synchronizations fail). It
// synchronizes the caller's stream, so a problem's first call must not happen while another thread captures a CUDA
// graph in cudaStreamCaptureModeGlobal (the same rule as any synchronizing CUDA call; warm up first).
#ifndef AOTIRT_GEMM_TUNE_H_
#define AOTIRT_GEMM_TUNE_H_

#include <cstddef>

#include "shims/gemm/cublaslt_loader.h"
#include "shims/gemm/lt_plan.h"

namespace aotirt {
namespace gemm {

// Another candidate replaces the heuristic's first only when it takes at most this fraction of its time.
constexpr double kTuneMargin = 0.97;

// True unless AOTIRT_GEMM_TUNE is 0/off/false (read once), or SetTuning(false) was called.
bool TuningEnabled();
void SetTuning(int mode);  // 1 on, 0 off, -1 back to the environment's choice

// Everything one cublasLtMatmul call of the entry needs, with D (= C) pointing at scratch the candidates may write.
struct TuneArgs {
  const CublasLt* lt = nullptr;
  cublasLtHandle_t handle = nullptr;
  const void* alpha = nullptr;
  const void* beta = nullptr;
  const void* a = nullptr;
  const void* b = nullptr;
  void* d = nullptr;          // scratch with C's layout (never the caller's out: beta may read it)
  void* workspace = nullptr;  // at least the largest candidate's workspaceSize bytes, ready after stream sync
  size_t workspace_bytes = 0;
  void* stream = nullptr;     // the caller's stream (synchronized; the timing runs on a private one)
};

// Times e's candidates as batches of back-to-back calls on a private stream (each warmed up, then three
// interleaved rounds, best of three) and sets e.algo / e.workspace to the fastest, if it beats the heuristic's first
// by kTuneMargin. Synchronizes the caller's stream first (the operands it staged must be ready). Never throws: a
// candidate that fails is dropped; a CUDA error abandons tuning (the heuristic's first stays).
// Marks e tuned and frees the candidate list. Returns the chosen candidate's index.
int TuneEntry(PlanEntry& e, const TuneArgs& args);

// The largest workspace any of e's candidates needs.
size_t MaxCandidateWorkspace(const PlanEntry& e);

}  // namespace gemm
}  // namespace aotirt
#endif  // AOTIRT_GEMM_TUNE_H_
