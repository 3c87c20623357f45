// _fft_testing: the FFT planner for Python tests (every step's layout and the result's strides against torch's meta
// functions, and the refusals).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <vector>

#include "shims/fft/fft_plan.h"
#include "tests/util/pybind_plan.h"

namespace py = pybind11;
using namespace aotirt::fft;

namespace {
Meta ToMeta(std::vector<int64_t> sizes, std::vector<int64_t> strides, int32_t dtype) {
  Meta m;
  m.sizes = std::move(sizes);
  m.strides = std::move(strides);
  m.dtype = static_cast<aotirt::DType>(dtype);
  return m;
}

py::dict ViewDict(const View& v) {
  py::dict d;
  d["sizes"] = v.sizes;
  d["strides"] = v.strides;
  return d;
}

py::dict ToDict(const FftPlan& p) {
  py::dict d;
  d["out_dtype"] = static_cast<int32_t>(p.out_dtype);
  d["out_sizes"] = p.out_sizes;
  d["out_strides"] = p.out_strides;
  d["out_buf"] = static_cast<int>(p.out_buf);
  d["need_buf_b"] = p.need_buf_b;
  d["buf_elements"] = p.buf_elements;
  d["empty"] = p.empty;
  d["clone_only"] = p.clone_only;
  d["forward"] = p.forward;
  d["scale"] = p.scale;
  d["scale_buf"] = static_cast<int>(p.scale_buf);
  d["scale_view"] = ViewDict(p.scale_view);
  d["expand"] = p.expand;
  d["expand_from"] = static_cast<int>(p.expand_from);
  d["expand_src"] = ViewDict(p.expand_src);
  d["expand_dst"] = ViewDict(p.expand_dst);
  d["fill_conjugate"] = p.fill_conjugate;
  d["dims"] = p.dims;
  d["last_dim"] = p.last_dim;
  py::list steps;
  for (const Step& s : p.steps) {
    py::dict sd;
    sd["in"] = static_cast<int>(s.in);
    sd["out"] = static_cast<int>(s.out);
    sd["real_input"] = s.real_input;
    sd["dims"] = s.dims;
    sd["permute"] = s.permute;
    sd["batch"] = s.batch;
    sd["n"] = s.n;
    sd["in_extent"] = s.in_extent;
    sd["out_extent"] = s.out_extent;
    sd["input"] = ViewDict(s.input);
    sd["permuted_input"] = ViewDict(s.permuted_input);
    sd["input_packed"] = s.input_packed;
    sd["result"] = ViewDict(s.result);
    steps.append(sd);
  }
  d["steps"] = steps;
  return d;
}
}  // namespace

PYBIND11_MODULE(_fft_testing, m) {
  m.def("plan_r2c", [](std::vector<int64_t> sizes, std::vector<int64_t> strides, int32_t dtype,
                       std::vector<int64_t> dim, int64_t normalization, bool onesided) {
    const Meta meta = ToMeta(sizes, strides, dtype);
    return ToDict(aotirt_testing::PlanOrValueError(
        [&] { return PlanR2C("plan_r2c", meta, dim, normalization, onesided); }));
  });
  m.def("plan_c2c", [](std::vector<int64_t> sizes, std::vector<int64_t> strides, int32_t dtype,
                       std::vector<int64_t> dim, int64_t normalization, bool forward) {
    const Meta meta = ToMeta(sizes, strides, dtype);
    return ToDict(aotirt_testing::PlanOrValueError(
        [&] { return PlanC2C("plan_c2c", meta, dim, normalization, forward); }));
  });
}
