// _attention_testing: the SDPA planner for Python tests (its output layouts against torch's meta functions on CPU).
// A tensor is passed as (sizes, strides, dtype code) or None.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "shims/attention/sdpa_plan.h"
#include "shims/common/error.h"
#include "tests/util/pybind_plan.h"

namespace py = pybind11;
using namespace aotirt::attention;

namespace {

using PyMeta = std::tuple<std::vector<int64_t>, std::vector<int64_t>, int32_t>;

TensorMeta ToMeta(const PyMeta& t) {
  TensorMeta m;
  m.sizes = std::get<0>(t);
  m.strides = std::get<1>(t);
  m.dtype = static_cast<aotirt::DType>(std::get<2>(t));
  return m;
}

SdpaOp ParseOp(const std::string& s) {
  if (s == "flash") return SdpaOp::kFlash;
  if (s == "efficient") return SdpaOp::kEfficient;
  if (s == "cudnn") return SdpaOp::kCudnn;
  throw py::value_error("unknown op " + s);
}

}  // namespace

PYBIND11_MODULE(_attention_testing, m) {
  // plan(...) -> dict of the plan's fields; raises ValueError("ShimError: ...") / ("NotSupported: ...").
  m.def("plan", [](const std::string& op, const PyMeta& q, const PyMeta& k, const PyMeta& v,
                   const std::optional<PyMeta>& bias, double dropout_p, bool is_causal, bool return_debug_mask,
                   bool compute_log_sumexp, std::optional<double> scale) {
    SdpaArgs a;
    a.op = ParseOp(op);
    a.q = ToMeta(q);
    a.k = ToMeta(k);
    a.v = ToMeta(v);
    a.has_bias = bias.has_value();
    if (bias) a.bias = ToMeta(*bias);
    a.dropout_p = dropout_p;
    a.is_causal = is_causal;
    a.return_debug_mask = return_debug_mask;
    a.compute_log_sumexp = compute_log_sumexp;
    a.has_scale = scale.has_value();
    a.scale = scale.value_or(0.0);
    const SdpaPlan p = aotirt_testing::PlanOrValueError([&] { return PlanSdpa("plan", a); });
    py::dict d;
    d["out_sizes"] = p.out_sizes;
    d["out_strides"] = p.out_strides;
    d["lse_sizes"] = p.lse_sizes;
    d["lse_strides"] = p.lse_strides;
    d["stats"] = p.stats;
    d["stats_strides"] = p.stats_strides;
    d["seed_sizes"] = p.seed_sizes;
    d["scale"] = p.scale;
    d["causal"] = p.causal;
    d["has_bias"] = p.has_bias;
    d["bias_sizes"] = p.bias_sizes;
    d["bias_strides"] = p.bias_strides;
    d["empty"] = p.empty;
    d["dims"] = std::vector<int64_t>{p.b, p.hq, p.hkv, p.tq, p.tkv, p.d, p.dv};
    return d;
  });
}
