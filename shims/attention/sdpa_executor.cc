#include "shims/attention/sdpa_executor.h"

#include <cuda_runtime.h>
#include <cudnn_frontend.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "shims/attention/cudnn_loader.h"
#include "shims/common/error.h"
#include "shims/common/thread_state_pool.h"
#include "shims/cuda/device.h"

namespace aotirt {
namespace attention {
namespace {

namespace fe = cudnn_frontend;

enum Uid : int64_t { kQ = 1, kK, kV, kO, kStats, kBias };

std::atomic<int64_t> g_calls{0}, g_built{0};

void Check(const char* fn, fe::error_t e, const char* what) {
  if (e.is_good()) return;
  throw NotSupportedError(StrCat(fn, ": cuDNN ", what, " failed: ", e.get_message(),
                                 " (compile with attention_backend=MATH to decompose attention instead)"));
}

void CheckStatus(const char* fn, cudnnStatus_t s, const char* what) {
  if (s == CUDNN_STATUS_SUCCESS) return;
  throw ShimError(StrCat(fn, ": ", what, " failed: ", fe::detail::get_error_string(s)));
}

// Everything a built graph depends on, as bytes.
std::string GraphKey(const SdpaPlan& p, int32_t device) {
  std::string k;
  auto put = [&k](const void* data, size_t n) { k.append(static_cast<const char*>(data), n); };
  auto put_i = [&put](int64_t v) { put(&v, sizeof(v)); };
  auto put_v = [&put_i](const std::vector<int64_t>& v) {
    put_i(static_cast<int64_t>(v.size()));
    for (int64_t x : v) put_i(x);
  };
  put_i(device);
  put_i(static_cast<int64_t>(p.op));
  put_i(static_cast<int64_t>(p.dtype));
  for (int64_t x : {p.b, p.hq, p.hkv, p.tq, p.tkv, p.d, p.dv}) put_i(x);
  put_v(p.q_strides);
  put_v(p.k_strides);
  put_v(p.v_strides);
  put_i(p.causal);
  put(&p.scale, sizeof(p.scale));
  put_i(p.has_bias);
  put_v(p.bias_sizes);
  put_v(p.bias_strides);
  put_v(p.out_strides);
  put_i(p.stats);
  put_v(p.stats_strides);
  return k;
}

struct Built {
  std::shared_ptr<fe::graph::Graph> graph;
  int64_t workspace = 0;
};

struct ThreadState {
  std::vector<cudnnHandle_t> handles;  // per device
  std::unordered_map<std::string, Built> graphs;
  ~ThreadState() {  // only from ReleaseAttentionThreadStates, on a live thread
    graphs.clear();
    for (cudnnHandle_t h : handles)
      if (h != nullptr) (void)fe::detail::destroy_handle(h);
  }
  cudnnHandle_t Handle(const char* fn, int32_t device) {
    if (static_cast<size_t>(device) >= handles.size()) handles.resize(device + 1, nullptr);
    if (handles[device] == nullptr) CheckStatus(fn, fe::detail::create_handle(&handles[device]), "cudnnCreate");
    return handles[device];
  }
};

thread_local ThreadSlot<ThreadState> t_slot;  // shims/common/thread_state_pool.h

fe::DataType_t FeType(DType d) { return d == DType::kBFloat16 ? fe::DataType_t::BFLOAT16 : fe::DataType_t::HALF; }

Built Build(const char* fn, const SdpaPlan& p, cudnnHandle_t handle) {
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(FeType(p.dtype))
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  auto tensor = [&g](const char* name, int64_t uid, std::vector<int64_t> dims, std::vector<int64_t> strides) {
    return g->tensor(fe::graph::Tensor_attributes().set_name(name).set_uid(uid).set_dim(dims).set_stride(strides));
  };
  auto q = tensor("Q", kQ, {p.b, p.hq, p.tq, p.d}, p.q_strides);
  auto k = tensor("K", kK, {p.b, p.hkv, p.tkv, p.d}, p.k_strides);
  auto v = tensor("V", kV, {p.b, p.hkv, p.tkv, p.dv}, p.v_strides);
  fe::graph::SDPA_attributes attrs;
  attrs.set_name("sdpa").set_generate_stats(p.stats).set_attn_scale(p.scale);
  if (p.causal) attrs.set_causal_mask(true);  // top-left aligned, torch's is_causal
  if (p.has_bias) attrs.set_bias(tensor("Bias", kBias, p.bias_sizes, p.bias_strides));
  auto outs = g->sdpa(q, k, v, attrs);
  outs[0]->set_output(true).set_uid(kO).set_dim(p.out_sizes).set_stride(p.out_strides);
  if (p.stats)
    outs[1]->set_output(true).set_uid(kStats).set_data_type(fe::DataType_t::FLOAT)
        .set_dim({p.b, p.hq, p.tq, 1}).set_stride(p.stats_strides);
  Check(fn, g->build(handle, {fe::HeurMode_t::A}), "graph build");
  Built b;
  b.graph = std::move(g);
  Check(fn, b.graph->get_workspace_size(b.workspace), "workspace query");
  g_built.fetch_add(1, std::memory_order_relaxed);
  return b;
}

void CheckAligned(const char* fn, const char* name, const void* p) {
  AOTIRT_CHECK_NOT_SUPPORTED(reinterpret_cast<uintptr_t>(p) % 16 == 0, fn, name,
                             "'s data is not 16-byte aligned (cuDNN attention needs aligned operands)");
}

}  // namespace

void RunSdpa(const char* fn, const SdpaPlan& p, const SdpaTensors& t) {
  if (p.empty) return;
  const int32_t device = t.q->device_index();
  gpu::DeviceGuard guard(fn, device);
  void* stream = gpu::CurrentStream(device);
  Cudnn(fn);  // loads libcudnn.so.9 on first use, or throws the named error
  ThreadState& ts = t_slot.Get();
  cudnnHandle_t handle = ts.Handle(fn, device);
  CheckStatus(fn, fe::detail::set_stream(handle, static_cast<cudaStream_t>(stream)), "cudnnSetStream");
  const std::string key = GraphKey(p, device);
  auto it = ts.graphs.find(key);
  if (it == ts.graphs.end()) it = ts.graphs.emplace(key, Build(fn, p, handle)).first;
  const Built& b = it->second;

  std::unordered_map<int64_t, void*> pack = {
      {kQ, t.q->data_ptr()}, {kK, t.k->data_ptr()}, {kV, t.v->data_ptr()}, {kO, t.out->data_ptr()}};
  if (p.stats) pack[kStats] = t.lse->data_ptr();
  if (p.has_bias) pack[kBias] = t.bias->data_ptr();
  for (const auto& kv : pack) CheckAligned(fn, kv.first == kBias ? "attn_bias" : "an operand", kv.second);
  void* ws = b.workspace > 0 ? gpu::Allocate(fn, device, b.workspace, stream) : nullptr;
  fe::error_t e = b.graph->execute(handle, pack, ws);
  if (ws != nullptr) gpu::Free(device, ws, stream);  // stream-ordered: freed after the graph ran
  Check(fn, e, "execute");
  g_calls.fetch_add(1, std::memory_order_relaxed);
}

AttentionStats GetAttentionStats() {
  AttentionStats s;
  s.calls = g_calls.load(std::memory_order_relaxed);
  s.graphs_built = g_built.load(std::memory_order_relaxed);
  return s;
}

int ReleaseAttentionThreadStates() {
  const int n = ThreadStatePool<ThreadState>::Get().Release();
  t_slot.Reset();
  return n;
}

}  // namespace attention
}  // namespace aotirt
