#include "shims/attention/sdpa_executor.h"

#include <vector>

#include "shims/cudnn/graph_cache.h"

namespace aotirt {
namespace attention {
namespace {

namespace fe = cudnn_frontend;

enum Uid : int64_t { kQ = 1, kK, kV, kO, kStats, kBias };

constexpr const char* kHint = " (compile with attention_backend=MATH to decompose attention instead)";

// Everything a built graph depends on, as bytes.
std::string GraphKey(const SdpaPlan& p) {
  cudnn::KeyWriter k;
  k.Int(static_cast<int64_t>(p.op)).Int(static_cast<int64_t>(p.dtype));
  for (int64_t x : {p.b, p.hq, p.hkv, p.tq, p.tkv, p.d, p.dv}) k.Int(x);
  k.Ints(p.q_strides).Ints(p.k_strides).Ints(p.v_strides).Int(p.causal).Float(p.scale);
  k.Int(p.has_bias).Ints(p.bias_sizes).Ints(p.bias_strides).Ints(p.out_strides).Int(p.stats).Ints(p.stats_strides);
  return k.str();
}

fe::DataType_t FeType(DType d) { return d == DType::kBFloat16 ? fe::DataType_t::BFLOAT16 : fe::DataType_t::HALF; }

void Define(const SdpaPlan& p, fe::graph::Graph& g) {
  g.set_io_data_type(FeType(p.dtype))
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  auto tensor = [&g](const char* name, int64_t uid, std::vector<int64_t> dims, std::vector<int64_t> strides) {
    return g.tensor(fe::graph::Tensor_attributes().set_name(name).set_uid(uid).set_dim(dims).set_stride(strides));
  };
  auto q = tensor("Q", kQ, {p.b, p.hq, p.tq, p.d}, p.q_strides);
  auto k = tensor("K", kK, {p.b, p.hkv, p.tkv, p.d}, p.k_strides);
  auto v = tensor("V", kV, {p.b, p.hkv, p.tkv, p.dv}, p.v_strides);
  fe::graph::SDPA_attributes attrs;
  attrs.set_name("sdpa").set_generate_stats(p.stats).set_attn_scale(p.scale);
  if (p.causal) attrs.set_causal_mask(true);  // top-left aligned, torch's is_causal
  if (p.has_bias) attrs.set_bias(tensor("Bias", kBias, p.bias_sizes, p.bias_strides));
  auto outs = g.sdpa(q, k, v, attrs);
  outs[0]->set_output(true).set_uid(kO).set_dim(p.out_sizes).set_stride(p.out_strides);
  if (p.stats)
    outs[1]->set_output(true).set_uid(kStats).set_data_type(fe::DataType_t::FLOAT)
        .set_dim({p.b, p.hq, p.tq, 1}).set_stride(p.stats_strides);
}

}  // namespace

void RunSdpa(const char* fn, const SdpaPlan& p, const SdpaTensors& t) {
  if (p.empty) return;
  std::unordered_map<int64_t, void*> pack = {
      {kQ, t.q->data_ptr()}, {kK, t.k->data_ptr()}, {kV, t.v->data_ptr()}, {kO, t.out->data_ptr()}};
  if (p.stats) pack[kStats] = t.lse->data_ptr();
  if (p.has_bias) pack[kBias] = t.bias->data_ptr();
  cudnn::Execute(fn, t.q->device_index(), GraphKey(p), [&p](fe::graph::Graph& g) { Define(p, g); }, pack, kHint);
}

}  // namespace attention
}  // namespace aotirt
