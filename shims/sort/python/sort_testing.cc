// _sort_testing: the sort/topk planner for Python tests (output sizes, layouts and refusals against torch on CPU).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <vector>

#include "shims/sort/sort_plan.h"
#include "tests/util/pybind_plan.h"

namespace py = pybind11;
using namespace aotirt::sort;

namespace {
Meta ToMeta(std::vector<int64_t> sizes, std::vector<int64_t> strides, int32_t dtype) {
  Meta m;
  m.sizes = std::move(sizes);
  m.strides = std::move(strides);
  m.dtype = static_cast<aotirt::DType>(dtype);
  return m;
}

py::dict ToDict(const SortPlan& p) {
  py::dict d;
  d["out_sizes"] = p.out_sizes;
  d["out_strides"] = p.out_strides;
  d["dim"] = p.dim;
  d["n"] = p.n;
  d["rows"] = p.rows;
  d["k"] = p.k;
  d["descending"] = p.descending;
  d["row_sizes"] = p.row_sizes;
  d["self_row_strides"] = p.self_row_strides;
  d["out_row_sizes"] = p.out_row_sizes;
  d["out_row_strides"] = p.out_row_strides;
  d["empty"] = p.empty;
  return d;
}
}  // namespace

PYBIND11_MODULE(_sort_testing, m) {
  m.def("plan_sort", [](std::vector<int64_t> sizes, std::vector<int64_t> strides, int32_t dtype, int64_t dim,
                        bool descending) {
    const Meta meta = ToMeta(sizes, strides, dtype);
    return ToDict(aotirt_testing::PlanOrValueError([&] { return PlanSort("plan_sort", meta, dim, descending); }));
  });
  m.def("plan_topk", [](std::vector<int64_t> sizes, std::vector<int64_t> strides, int32_t dtype, int64_t k,
                        int64_t dim, bool largest) {
    const Meta meta = ToMeta(sizes, strides, dtype);
    return ToDict(aotirt_testing::PlanOrValueError([&] { return PlanTopk("plan_topk", meta, k, dim, largest); }));
  });
}
