// extern "C" aoti_torch_cuda_sort, aoti_torch_cuda_sort_stable and aoti_torch_cuda_topk with PyTorch's c_shim_cuda.h
// signatures: handle -> plan from metadata (sort_plan.h: every refusal, before any device work) -> the outputs with
// ATen's layouts -> the rows of self (`dim` last; copied to a packed buffer when they are not already) sorted by
// sort_kernel.cu (CUB) straight into the outputs when their rows are packed, else into buffers copied into them.
// Stream-ordered workspace on the current stream: nothing synchronizes, so the calls are capturable.
#include <memory>
#include <vector>

#include "shims/common/error.h"
#include "shims/cuda/device.h"
#include "shims/include/aotirt/shim.h"
#include "shims/sort/sort_kernel.h"
#include "shims/sort/sort_plan.h"
#include "shims/tensor/tensor.h"

namespace aotirt {
namespace sort {
namespace {

// Device memory freed on the stream when the scope ends (also when a launch fails).
class Workspace {
 public:
  Workspace(const char* fn, int32_t device, int64_t nbytes, void* stream)
      : device_(device), stream_(stream), ptr_(gpu::Allocate(fn, device, nbytes, stream)) {}
  ~Workspace() { gpu::Free(device_, ptr_, stream_); }
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  void* get() const { return ptr_; }

 private:
  int32_t device_;
  void* stream_;
  void* ptr_;
};

const Tensor* Self(const char* fn, AtenTensorHandle self, Meta* m) { return FromHandleMeta(self, fn, "self", m); }

// After planning (every argument refusal first, as on a CPU machine), before any allocation.
void Run(const char* fn, const Tensor& x, const SortPlan& p, AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  AOTIRT_CHECK(x.is_cuda(), fn, "self is on ", DeviceName(x.device_type(), x.device_index()),
               "; this shim takes CUDA tensors");
  const int32_t dev = x.device_index();
  gpu::DeviceGuard guard(fn, dev);
  std::unique_ptr<Tensor> values(gpu::NewDeviceTensor(fn, dev, p.dtype, p.out_sizes, p.out_strides));
  std::unique_ptr<Tensor> indices(gpu::NewDeviceTensor(fn, dev, DType::kInt64, p.out_sizes, p.out_strides));
  if (!p.empty) {
    void* stream = gpu::CurrentStream(dev);
    Tensor self_rows(x.storage(), p.row_sizes, p.self_row_strides, x.storage_offset(), x.dtype());
    std::unique_ptr<Tensor> packed_in;
    if (!self_rows.is_contiguous()) {
      packed_in.reset(gpu::NewDeviceTensor(fn, dev, p.dtype, p.row_sizes, ContiguousStrides(p.row_sizes)));
      gpu::CopyDeviceStrided(fn, *packed_in, self_rows, stream);
    }
    Tensor value_rows(values->storage(), p.out_row_sizes, p.out_row_strides, 0, p.dtype);
    Tensor index_rows(indices->storage(), p.out_row_sizes, p.out_row_strides, 0, DType::kInt64);
    const bool direct = value_rows.is_contiguous();
    std::unique_ptr<Tensor> value_buf, index_buf;
    if (!direct) {
      const std::vector<int64_t> packed = ContiguousStrides(p.out_row_sizes);
      value_buf.reset(gpu::NewDeviceTensor(fn, dev, p.dtype, p.out_row_sizes, packed));
      index_buf.reset(gpu::NewDeviceTensor(fn, dev, DType::kInt64, p.out_row_sizes, packed));
    }
    SortRowsParams sp;
    sp.dtype = static_cast<int32_t>(p.dtype);
    sp.rows = p.rows;
    sp.n = p.n;
    sp.k = p.k;
    sp.descending = p.descending;
    sp.in = packed_in ? packed_in->data_ptr() : self_rows.data_ptr();
    sp.values = direct ? values->data_ptr() : value_buf->data_ptr();
    sp.indices = static_cast<int64_t*>(direct ? indices->data_ptr() : index_buf->data_ptr());
    int error = 0;
    const size_t bytes = SortRowsWorkspaceBytes(sp, &error);
    AOTIRT_CHECK(error == 0, fn, "CUB could not size the sort's workspace (CUDA error ", error, ")");
    {
      Workspace ws(fn, dev, static_cast<int64_t>(bytes), stream);
      sp.workspace = ws.get();
      const int rc = LaunchSortRows(sp, stream);
      AOTIRT_CHECK(rc == 0, fn, "the sort kernels failed to launch (CUDA error ", rc, ")");
    }
    if (!direct) {
      gpu::CopyDeviceStrided(fn, value_rows, *value_buf, stream);
      gpu::CopyDeviceStrided(fn, index_rows, *index_buf, stream);
    }
  }
  *ret0 = ToHandle(values.release());
  *ret1 = ToHandle(indices.release());
}

void Sort(const char* fn, AtenTensorHandle self, int64_t dim, int32_t descending, AtenTensorHandle* ret0,
          AtenTensorHandle* ret1) {
  AOTIRT_CHECK(ret0 != nullptr && ret1 != nullptr, fn, "a return pointer is null");
  Meta m;
  const Tensor* x = Self(fn, self, &m);
  Run(fn, *x, PlanSort(fn, m, dim, descending != 0), ret0, ret1);
}

}  // namespace
}  // namespace sort
}  // namespace aotirt

extern "C" AOTITorchError aoti_torch_cuda_sort(AtenTensorHandle self, int64_t dim, int32_t descending,
                                               AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  static const char* fn = "aoti_torch_cuda_sort";
  AOTIRT_SHIM_BOUNDARY(fn, { aotirt::sort::Sort(fn, self, dim, descending, ret0, ret1); })
}

// stable: null (None) or a value; the sort is stable either way (torch allows a stable result for stable=False).
extern "C" AOTITorchError aoti_torch_cuda_sort_stable(AtenTensorHandle self, int32_t* stable, int64_t dim,
                                                      int32_t descending, AtenTensorHandle* ret0,
                                                      AtenTensorHandle* ret1) {
  static const char* fn = "aoti_torch_cuda_sort_stable";
  (void)stable;
  AOTIRT_SHIM_BOUNDARY(fn, { aotirt::sort::Sort(fn, self, dim, descending, ret0, ret1); })
}

// sorted=False allows any order: the values come sorted either way.
extern "C" AOTITorchError aoti_torch_cuda_topk(AtenTensorHandle self, int64_t k, int64_t dim, int32_t largest,
                                               int32_t sorted, AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  static const char* fn = "aoti_torch_cuda_topk";
  (void)sorted;
  AOTIRT_SHIM_BOUNDARY(fn, {
    AOTIRT_CHECK(ret0 != nullptr && ret1 != nullptr, fn, "a return pointer is null");
    aotirt::sort::Meta m;
    const aotirt::Tensor* x = aotirt::sort::Self(fn, self, &m);
    aotirt::sort::Run(fn, *x, aotirt::sort::PlanTopk(fn, m, k, dim, largest != 0), ret0, ret1);
  })
}
