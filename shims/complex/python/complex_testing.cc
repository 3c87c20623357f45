// _complex_testing: the complex elementwise planner for Python tests (result dtypes, broadcast, output and operand
// strides against torch's meta functions and fake tensors, and the refusals).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <vector>

#include "shims/complex/eltwise_plan.h"
#include "tests/util/pybind_plan.h"

namespace py = pybind11;
using namespace aotirt::complex;

namespace {
Operand ToOperand(std::vector<int64_t> sizes, std::vector<int64_t> strides, int32_t dtype, bool cpu_scalar) {
  Operand o;
  o.meta.sizes = std::move(sizes);
  o.meta.strides = std::move(strides);
  o.meta.dtype = static_cast<aotirt::DType>(dtype);
  o.cpu_scalar = cpu_scalar;
  return o;
}

py::dict ToDict(const EltwisePlan& p) {
  py::dict d;
  d["out_dtype"] = static_cast<int32_t>(p.out_dtype);
  d["compute_dtype"] = static_cast<int32_t>(p.compute_dtype);
  d["out_sizes"] = p.out_sizes;
  d["out_strides"] = p.out_strides;
  d["operand_strides"] = p.operand_strides;
  d["numel"] = p.numel;
  return d;
}

using Spec = std::tuple<std::vector<int64_t>, std::vector<int64_t>, int32_t, bool>;
Operand FromSpec(const Spec& s) { return ToOperand(std::get<0>(s), std::get<1>(s), std::get<2>(s), std::get<3>(s)); }
}  // namespace

PYBIND11_MODULE(_complex_testing, m) {
  m.def("plan_mul", [](Spec a, Spec b) {
    const Operand x = FromSpec(a), y = FromSpec(b);
    return ToDict(aotirt_testing::PlanOrValueError([&] { return PlanMul("plan_mul", x, y); }));
  });
  m.def("plan_polar", [](Spec a, Spec b) {
    const Operand x = FromSpec(a), y = FromSpec(b);
    return ToDict(aotirt_testing::PlanOrValueError([&] { return PlanPolar("plan_polar", x, y); }));
  });
  m.def("plan_abs", [](Spec a) {
    const Operand x = FromSpec(a);
    return ToDict(aotirt_testing::PlanOrValueError([&] { return PlanAbs("plan_abs", x); }));
  });
  // *_wrapped: a 0-d CPU operand (a wrapped number; needs *_dim false).
  m.def(
      "result_type",
      [](int32_t a, bool a_dim, int32_t b, bool b_dim, bool a_wrapped, bool b_wrapped) {
        Operand x, y;
        x.meta.dtype = static_cast<aotirt::DType>(a);
        y.meta.dtype = static_cast<aotirt::DType>(b);
        if (a_dim) x.meta.sizes = {1}, x.meta.strides = {1};
        if (b_dim) y.meta.sizes = {1}, y.meta.strides = {1};
        x.cpu_scalar = a_wrapped;
        y.cpu_scalar = b_wrapped;
        return static_cast<int32_t>(ResultType(x, y));
      },
      py::arg("a"), py::arg("a_dim"), py::arg("b"), py::arg("b_dim"), py::arg("a_wrapped") = false,
      py::arg("b_wrapped") = false);
}
