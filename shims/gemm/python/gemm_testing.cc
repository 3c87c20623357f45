// _gemm_testing: the planner and the CPU reference executor for Python tests (hypothesis vs torch on the CPU).
// A tensor is passed as (address, sizes, strides, dtype code, elements reachable from address) or None.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "shims/gemm/planner.h"
#include "shims/gemm/reference.h"

namespace py = pybind11;
using aotirt::DType;
using namespace aotirt::gemm;

namespace {

using PyTensor = std::tuple<uint64_t, std::vector<int64_t>, std::vector<int64_t>, int32_t, int64_t>;

GemmOp ParseOp(const std::string& s) {
  if (s == "mm") return GemmOp::kMm;
  if (s == "addmm") return GemmOp::kAddmm;
  if (s == "bmm") return GemmOp::kBmm;
  if (s == "baddbmm") return GemmOp::kBaddbmm;
  if (s == "_int_mm") return GemmOp::kIntMm;
  throw py::value_error("unknown op " + s);
}

Operand OperandOf(const py::object& o) {
  Operand r;
  if (o.is_none()) return r;
  auto t = o.cast<PyTensor>();
  r.present = true;
  r.sizes = std::get<1>(t);
  r.strides = std::get<2>(t);
  r.dtype = static_cast<DType>(std::get<3>(t));
  r.align = AddressAlignment(std::get<0>(t));
  return r;
}

// The one place a Status becomes a Python exception.
void Raise(const Status& s) {
  if (s.ok()) return;
  if (s.code == Status::kNotSupported) throw py::type_error("NotSupported: " + s.message);
  throw py::value_error(s.message);
}

py::dict PlanDict(const GemmPlan& p) {
  py::dict d;
  d["kind"] = static_cast<int>(p.kind);
  d["m"] = p.m;
  d["n"] = p.n;
  d["k"] = p.k;
  d["batch"] = p.batch;
  d["row_orientation"] = p.row_orientation;
  d["stage_a"] = static_cast<int>(p.stage_lt_a);
  d["stage_b"] = static_cast<int>(p.stage_lt_b);
  d["stage_out"] = p.stage_out;
  d["epilogue_bias"] = p.epilogue == Epilogue::kBias;
  d["stage_bias"] = p.stage_bias;
  d["precopy_self"] = p.precopy_self;
  d["compute"] = static_cast<int>(p.compute);
  d["describe"] = p.Describe();
  return d;
}

GemmProblem Problem(const std::string& op, const py::object& out, const py::object& self, const py::object& a,
                    const py::object& b, double beta, double alpha, bool allow_tf32) {
  GemmProblem p;
  p.op = ParseOp(op);
  p.out = OperandOf(out);
  p.self = OperandOf(self);
  p.a = OperandOf(a);
  p.b = OperandOf(b);
  p.beta = beta;
  p.alpha = alpha;
  p.allow_tf32 = allow_tf32;
  return p;
}

}  // namespace

PYBIND11_MODULE(_gemm_testing, m) {
  m.doc() = "GEMM planner + CPU reference executor (tests only)";
  m.def(
      "plan",
      [](const std::string& op, py::object out, py::object self, py::object a, py::object b, double beta,
         double alpha, bool allow_tf32) {
        GemmPlan plan;
        Raise(PlanGemm(Problem(op, out, self, a, b, beta, alpha, allow_tf32), &plan));
        return PlanDict(plan);
      },
      py::arg("op"), py::arg("out"), py::arg("self"), py::arg("a"), py::arg("b"), py::arg("beta") = 0.0,
      py::arg("alpha") = 1.0, py::arg("allow_tf32") = false);
  m.def(
      "run",
      [](const std::string& op, py::object out, py::object self, py::object a, py::object b, double beta,
         double alpha) {
        GemmProblem p = Problem(op, out, self, a, b, beta, alpha, false);
        GemmPlan plan;
        Raise(PlanGemm(p, &plan));
        HostTensors t;
        auto ptr = [](const py::object& o) -> void* {
          return o.is_none() ? nullptr : reinterpret_cast<void*>(std::get<0>(o.cast<PyTensor>()));
        };
        auto elems = [](const py::object& o) -> int64_t { return o.is_none() ? -1 : std::get<4>(o.cast<PyTensor>()); };
        t.out = ptr(out);
        t.self = ptr(self);
        t.a = ptr(a);
        t.b = ptr(b);
        t.out_elems = elems(out);
        t.self_elems = elems(self);
        t.a_elems = elems(a);
        t.b_elems = elems(b);
        Raise(ExecuteReference(p, plan, t));
        return PlanDict(plan);
      },
      py::arg("op"), py::arg("out"), py::arg("self"), py::arg("a"), py::arg("b"), py::arg("beta") = 0.0,
      py::arg("alpha") = 1.0);
}
