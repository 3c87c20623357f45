// Runs an SdpaPlan as a cudnn-frontend SDPA graph on the current stream of the tensors' device, through the shared
// per-thread graph cache (shims/cudnn/graph_cache.h), keyed by everything the graph depends on (op, dtype, dims,
// strides, causal, scale, bias layout, output layouts).
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

}  // namespace attention
}  // namespace aotirt
#endif  // AOTIRT_ATTENTION_SDPA_EXECUTOR_H_
