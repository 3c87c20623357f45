// Runs an SdpaPlan as a cudnn-frontend SDPA graph on the current stream of the tensors' device.
// Per thread: one cuDNN handle per device and the graphs built so far, keyed by everything a graph depends on
// (op, dtype, dims, strides, causal, scale, bias layout, output layouts); a problem's first call builds its graph
// (cuDNN's heuristic mode A, first supported plan), later calls only execute it. The workspace is allocated
// stream-ordered per call, so calls are capturable into CUDA graphs and graphs never share it. As for the GEMM
// shims, a thread's state goes back to a pool at thread exit (never destroyed from a thread_local destructor).
#ifndef AOTIRT_ATTENTION_SDPA_EXECUTOR_H_
#define AOTIRT_ATTENTION_SDPA_EXECUTOR_H_

#include <cstdint>

#include "shims/attention/sdpa_plan.h"
#include "shims/tensor/tensor.h"

namespace aotirt {
namespace attention {

struct SdpaTensors {
  const Tensor* q = nullptr;
  const Tensor* k = nullptr;
  const Tensor* v = nullptr;
  const Tensor* bias = nullptr;  // when plan.has_bias
  Tensor* out = nullptr;
  Tensor* lse = nullptr;         // written when plan.stats
};

void RunSdpa(const char* fn, const SdpaPlan& plan, const SdpaTensors& t);

struct AttentionStats {
  int64_t calls = 0;         // executed graphs
  int64_t graphs_built = 0;  // problems seen for the first time on a thread
};
AttentionStats GetAttentionStats();
// Destroys the pooled states of exited threads (tests, leak checkers); returns how many.
int ReleaseAttentionThreadStates();

}  // namespace attention
}  // namespace aotirt
#endif  // AOTIRT_ATTENTION_SDPA_EXECUTOR_H_
