// extern "C" aoti_torch_cuda__fft_r2c / aoti_torch_cuda__fft_c2c with PyTorch's c_shim_cuda.h signatures:
// handle -> plan from metadata (fft_plan.h: torch's steps and layouts, every refusal before any device work) ->
// buffers A (and B) of numel(out) complex elements, stream-ordered on the current stream -> each step: its input
// (self or a buffer) read in place when packed and aligned, else packed into a scratch copy first; one cuFFT
// execution into a contiguous [batch, signal...] buffer -> normalization of the one-sided slice -> for a two-sided
// r2c, the expansion copy and the conjugate-symmetric fill (fft_kernel.cu). The returned tensor views the last
// buffer with the strides torch's meta function gives, which is what Inductor's generated code indexes with.
//
// cuFFT plans (plan_cache.h) are cached per (device, transform): created on the first call with that shape (so
// outside any CUDA graph capture: a plan made during capture would allocate, which the capture forbids, so that case
// is refused with the reason), then reused by every thread, each execution under the plan's own lock (a plan holds
// one stream and one work area). Work areas are ours, stream-ordered, per execution.
#include <cstdint>
#include <memory>
#include <vector>

#include "shims/common/error.h"
#include "shims/cuda/device.h"
#include "shims/fft/cufft_loader.h"
#include "shims/fft/fft_kernel.h"
#include "shims/fft/fft_plan.h"
#include "shims/fft/plan_cache.h"
#include "shims/include/aotirt/shim.h"
#include "shims/tensor/tensor.h"

namespace aotirt {
namespace fft {
namespace {

ComplexView MakeView(void* data, const View& v, bool is_double) {
  ComplexView cv;
  cv.ndim = static_cast<int32_t>(v.sizes.size());
  cv.is_double = is_double;
  cv.numel = 1;
  for (int d = 0; d < cv.ndim; ++d) {
    cv.sizes[d] = v.sizes[d];
    cv.strides[d] = v.strides[d];
    cv.numel *= v.sizes[d];
  }
  cv.data = data;
  return cv;
}

void Run(const char* fn, const Tensor* self, const FftPlan& p, AtenTensorHandle* ret0) {
  const int32_t dev = CheckCudaOperands(fn, {self});
  gpu::DeviceGuard guard(fn, dev);
  void* stream = gpu::CurrentStream(dev);
  const bool is_double = p.out_dtype == DType::kComplex128;
  std::unique_ptr<Tensor> bufs[3];
  bufs[kBufA].reset(gpu::NewDeviceTensor(fn, dev, p.out_dtype, {p.buf_elements}, {1}));
  if (p.need_buf_b) bufs[kBufB].reset(gpu::NewDeviceTensor(fn, dev, p.out_dtype, {p.buf_elements}, {1}));
  auto view_of = [&](Buffer b, const View& v, DType dtype) {
    return Tensor(bufs[b]->storage(), v.sizes, v.strides, 0, dtype);
  };
  if (p.clone_only) {
    Tensor dst = view_of(kBufA, View{p.out_sizes, p.out_strides}, p.out_dtype);
    gpu::CopyDeviceStrided(fn, dst, *self, stream);
  } else if (!p.empty) {
    const Cufft& cf = CufftTable(fn);  // loads libcufft.so.12 on the first FFT, or throws the named error
    for (const Step& s : p.steps) {
      const DType in_dtype = s.real_input ? p.in_dtype : p.out_dtype;
      const Tensor permuted =
          s.in == kSelf
              ? Tensor(self->storage(), s.permuted_input.sizes, s.permuted_input.strides, self->storage_offset(),
                       in_dtype)
              : view_of(s.in, s.permuted_input, in_dtype);
      void* in = permuted.data_ptr();
      // cuFFT reads a real input as if it were complex: torch asks for the complex type's alignment.
      const uintptr_t align = static_cast<uintptr_t>(ElementSize(p.out_dtype));
      std::unique_ptr<Tensor> packed;
      if (!s.input_packed || reinterpret_cast<uintptr_t>(in) % align != 0) {
        packed.reset(gpu::NewDeviceTensor(fn, dev, in_dtype, s.permuted_input.sizes,
                                          ContiguousStrides(s.permuted_input.sizes)));
        gpu::CopyDeviceStrided(fn, *packed, permuted, stream);
        in = packed->data_ptr();
      }
      RunStep(fn, cf, PlanCache::Process(), dev, stream, s, is_double, in, bufs[s.out]->data_ptr(), p.forward);
    }
    if (p.scale != 1.0) {
      const int rc = LaunchScale(MakeView(bufs[p.scale_buf]->data_ptr(), p.scale_view, is_double), p.scale, stream);
      AOTIRT_CHECK(rc == 0, fn, "the normalization kernel failed to launch (CUDA error ", rc, ")");
    }
    if (p.expand) {
      const Buffer to = p.expand_from == kBufA ? kBufB : kBufA;
      Tensor dst = view_of(to, p.expand_dst, p.out_dtype);
      const Tensor src = view_of(p.expand_from, p.expand_src, p.out_dtype);
      gpu::CopyDeviceStrided(fn, dst, src, stream);
    }
    if (p.fill_conjugate) {
      uint32_t mask = 0;
      for (int64_t d : p.dims) mask |= 1u << d;
      const int rc = LaunchConjugateFill(MakeView(bufs[p.out_buf]->data_ptr(), View{p.out_sizes, p.out_strides},
                                                  is_double),
                                         static_cast<int32_t>(p.last_dim), mask, stream);
      AOTIRT_CHECK(rc == 0, fn, "the conjugate-symmetry kernel failed to launch (CUDA error ", rc, ")");
    }
  }
  *ret0 = ToHandle(new Tensor(bufs[p.out_buf]->storage(), p.out_sizes, p.out_strides, 0, p.out_dtype));
}

std::vector<int64_t> Dims(const char* fn, const int64_t* dim, int64_t dim_len) {
  AOTIRT_CHECK(dim_len >= 0 && (dim != nullptr || dim_len == 0), fn, "dim is null with dim_len_ ", dim_len);
  return std::vector<int64_t>(dim, dim + dim_len);
}

}  // namespace
}  // namespace fft
}  // namespace aotirt

extern "C" {

AOTITorchError aoti_torch_cuda__fft_r2c(AtenTensorHandle self, const int64_t* dim, int64_t dim_len_,
                                        int64_t normalization, int32_t onesided, AtenTensorHandle* ret0) {
  static const char* fn = "aoti_torch_cuda__fft_r2c";
  AOTIRT_SHIM_BOUNDARY(fn, {
    using namespace aotirt;
    AOTIRT_CHECK(ret0 != nullptr, fn, "the return pointer is null");
    TensorMeta m;
    const Tensor* t = FromHandleMeta(self, fn, "self", &m);
    const fft::FftPlan p = fft::PlanR2C(fn, m, fft::Dims(fn, dim, dim_len_), normalization, onesided != 0);
    fft::Run(fn, t, p, ret0);
  })
}

AOTITorchError aoti_torch_cuda__fft_c2c(AtenTensorHandle self, const int64_t* dim, int64_t dim_len_,
                                        int64_t normalization, int32_t forward, AtenTensorHandle* ret0) {
  static const char* fn = "aoti_torch_cuda__fft_c2c";
  AOTIRT_SHIM_BOUNDARY(fn, {
    using namespace aotirt;
    AOTIRT_CHECK(ret0 != nullptr, fn, "the return pointer is null");
    TensorMeta m;
    const Tensor* t = FromHandleMeta(self, fn, "self", &m);
    const fft::FftPlan p = fft::PlanC2C(fn, m, fft::Dims(fn, dim, dim_len_), normalization, forward != 0);
    fft::Run(fn, t, p, ret0);
  })
}

AOTITorchError aotirt_cufft_add_search_dir(const char* dir) {
  AOTIRT_SHIM_BOUNDARY("aotirt_cufft_add_search_dir", {
    AOTIRT_CHECK(dir != nullptr, "aotirt_cufft_add_search_dir", "dir is null");
    aotirt::fft::AddCufftSearchDir(dir);
  })
}

}  // extern "C"
