#include "backends/cuda/python/dlpack_bridge.h"

#include <string>
#include <vector>

#include "backends/cuda/runtime/runtime.h"

namespace aotirt {
namespace {

constexpr uint8_t kDLBoolCode = 6;  // DLPack >= 0.8 (kDLBool); Debian ships 0.6 headers.

int32_t ToC10(DLDataType t) {
  if (t.lanes != 1) throw RuntimeError("DLPack tensors with lanes != 1 are not supported");
  if (t.code == kDLFloat && t.bits == 32) return 6;
  if (t.code == kDLFloat && t.bits == 16) return 5;
  if (t.code == kDLFloat && t.bits == 64) return 7;
  if (t.code == kDLBfloat && t.bits == 16) return 15;
  if (t.code == kDLInt && t.bits == 8) return 1;
  if (t.code == kDLInt && t.bits == 16) return 2;
  if (t.code == kDLInt && t.bits == 32) return 3;
  if (t.code == kDLInt && t.bits == 64) return 4;
  if (t.code == kDLUInt && t.bits == 8) return 0;
  if (t.code == kDLBoolCode && t.bits == 8) return 11;
  if (t.code == kDLComplex && t.bits == 64) return 9;
  if (t.code == kDLComplex && t.bits == 128) return 10;
  throw RuntimeError("unsupported DLPack dtype (code " + std::to_string(t.code) + ", bits " + std::to_string(t.bits) +
                     ")");
}

DLDataType FromC10(int32_t code) {
  switch (code) {
    case 6: return {kDLFloat, 32, 1};
    case 5: return {kDLFloat, 16, 1};
    case 7: return {kDLFloat, 64, 1};
    case 15: return {kDLBfloat, 16, 1};
    case 1: return {kDLInt, 8, 1};
    case 2: return {kDLInt, 16, 1};
    case 3: return {kDLInt, 32, 1};
    case 4: return {kDLInt, 64, 1};
    case 0: return {kDLUInt, 8, 1};
    case 11: return {kDLBoolCode, 8, 1};
    case 9: return {kDLComplex, 64, 1};
    case 10: return {kDLComplex, 128, 1};
  }
  throw RuntimeError("dtype code " + std::to_string(code) + " has no DLPack equivalent");
}

void DeleteManaged(void* ctx) {
  auto* m = static_cast<DLManagedTensor*>(ctx);
  if (m->deleter) m->deleter(m);
}

struct Exported {
  DLManagedTensor managed;
  AtenTensorHandle handle;
  std::vector<int64_t> shape, strides;
};

void DeleteExported(DLManagedTensor* m) {
  auto* e = static_cast<Exported*>(m->manager_ctx);
  (void)aoti_torch_delete_tensor_object(e->handle);
  delete e;
}

}  // namespace

AtenTensorHandle FromDLPack(DLManagedTensor* managed) {
  const DLTensor& t = managed->dl_tensor;
  int32_t dtype = ToC10(t.dtype);
  int32_t device_type;
  if (t.device.device_type == kDLCUDA) device_type = aoti_torch_device_type_cuda();
  else if (t.device.device_type == kDLCPU) device_type = aoti_torch_device_type_cpu();
  else throw RuntimeError("unsupported DLPack device type " + std::to_string(t.device.device_type) + " (CPU or CUDA only)");
  std::vector<int64_t> shape(t.shape, t.shape + t.ndim), strides(t.ndim);
  if (t.strides) {
    strides.assign(t.strides, t.strides + t.ndim);
  } else {  // compact row-major
    int64_t s = 1;
    for (int d = t.ndim - 1; d >= 0; --d) {
      strides[d] = s;
      s *= shape[d];
    }
  }
  int64_t elem = (t.dtype.bits + 7) / 8;
  if (t.byte_offset % elem != 0) throw RuntimeError("DLPack byte_offset is not a multiple of the element size");
  char* base = static_cast<char*>(t.data) + t.byte_offset;
  AtenTensorHandle h = nullptr;
  CheckShim(aotirt_create_tensor_from_blob_with_deleter(base, t.ndim, shape.data(), strides.data(), 0, dtype,
                                                        device_type, t.device.device_id, &DeleteManaged, managed, &h),
            "importing a DLPack tensor");
  return h;
}

DLManagedTensor* ToDLPack(AtenTensorHandle handle) {
  auto e = std::make_unique<Exported>();
  e->handle = handle;
  int64_t dim = 0, *sizes = nullptr, *strides = nullptr;
  int32_t dtype = 0, dev_type = 0, dev_index = 0;
  void* data = nullptr;
  CheckShim(aoti_torch_get_dim(handle, &dim), "exporting an output");
  CheckShim(aoti_torch_get_sizes(handle, &sizes), "exporting an output");
  CheckShim(aoti_torch_get_strides(handle, &strides), "exporting an output");
  CheckShim(aoti_torch_get_dtype(handle, &dtype), "exporting an output");
  CheckShim(aoti_torch_get_device_type(handle, &dev_type), "exporting an output");
  CheckShim(aoti_torch_get_device_index(handle, &dev_index), "exporting an output");
  CheckShim(aoti_torch_get_data_ptr(handle, &data), "exporting an output");
  e->shape.assign(sizes, sizes + dim);
  e->strides.assign(strides, strides + dim);
  DLTensor& t = e->managed.dl_tensor;
  t.data = data;
  const bool cuda = dev_type == aoti_torch_device_type_cuda();
  t.device = {cuda ? kDLCUDA : kDLCPU, cuda ? dev_index : 0};  // DLPack's CPU device is 0; the shims say -1
  t.ndim = static_cast<int32_t>(dim);
  t.dtype = FromC10(dtype);
  t.shape = e->shape.data();
  t.strides = e->strides.data();
  t.byte_offset = 0;
  e->managed.manager_ctx = e.get();
  e->managed.deleter = &DeleteExported;
  return &e.release()->managed;
}

}  // namespace aotirt
