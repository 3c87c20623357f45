// The tensor object behind an AtenTensorHandle: int64 sizes and strides, dtype, device, storage offset (elements)
// and a reference-counted storage that either owns its memory (freed through its deleter: stream-ordered for
// device memory) or borrows it (a blob: the creator keeps it alive). Each handle is one Tensor; several handles
// may share one Storage (views, new_tensor_handle), which lives until the last of them is deleted.
#ifndef AOTIRT_TENSOR_TENSOR_H_
#define AOTIRT_TENSOR_TENSOR_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "shims/common/error.h"
#include "shims/tensor/dtype.h"

namespace aotirt {

struct Storage {
  void* data = nullptr;
  int64_t nbytes = 0;
  int32_t device_type = kDeviceCPU;
  int32_t device_index = 0;
  std::function<void(void*)> deleter;  // empty: borrowed memory
  // Borrowed blobs: nbytes is only the extent the creating tensor reaches; views past it are the creator's call.
  bool borrowed = false;

  Storage() = default;
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage() {
    if (deleter) deleter(data);  // deleters accept null (empty tensors)
  }
};

class Tensor {
 public:
  static constexpr uint64_t kMagic = 0x41544F4954454E53ull;  // "ATOITENS": catches stale or foreign handles

  Tensor(std::shared_ptr<Storage> storage, std::vector<int64_t> sizes, std::vector<int64_t> strides,
         int64_t storage_offset, DType dtype);
  ~Tensor();
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  int64_t dim() const { return static_cast<int64_t>(sizes_.size()); }
  const std::vector<int64_t>& sizes() const { return sizes_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  int64_t* sizes_data() { return sizes_.data(); }
  int64_t* strides_data() { return strides_.data(); }
  int64_t storage_offset() const { return offset_; }
  DType dtype() const { return dtype_; }
  int64_t element_size() const { return ElementSize(dtype_); }
  int64_t numel() const;
  bool is_contiguous() const;
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  int32_t device_type() const { return storage_->device_type; }
  int32_t device_index() const { return storage_->device_index; }
  bool is_cuda() const { return storage_->device_type == kDeviceCUDA; }
  void* data_ptr() const;
  std::string Describe() const;  // "float32[4, 8] strides [8, 1] on cuda:0"
  bool valid() const { return magic_ == kMagic; }

  static int64_t LiveCount() { return live_.load(std::memory_order_relaxed); }

 private:
  uint64_t magic_ = kMagic;
  std::shared_ptr<Storage> storage_;
  std::vector<int64_t> sizes_;
  std::vector<int64_t> strides_;
  int64_t offset_ = 0;
  DType dtype_;
  static std::atomic<int64_t> live_;
};

// Handle conversion with validation: the message names fn and the argument.
Tensor* FromHandle(AtenTensorHandle h, const char* fn, const char* arg);
// The planners' view of a tensor (dtype.h), and FromHandle that also fills it.
TensorMeta MetaOf(const Tensor& t);
const Tensor* FromHandleMeta(AtenTensorHandle h, const char* fn, const char* arg, TensorMeta* meta);
// Every operand (nulls skipped) on a CUDA device, all on the first one's; returns that device index. Throws ShimError:
// "an operand is on cpu; this shim takes CUDA tensors", "the operands are on different GPUs (0 and 1)".
int32_t CheckCudaOperands(const char* fn, std::initializer_list<const Tensor*> operands);
inline AtenTensorHandle ToHandle(Tensor* t) { return reinterpret_cast<AtenTensorHandle>(t); }

// Validates ndim/sizes/strides (non-negative, no int64 overflow) and returns the number of elements a storage must
// hold past storage_offset (0 if any size is 0). fn names the caller for messages.
int64_t RequiredStorageElements(const char* fn, int64_t ndim, const int64_t* sizes, const int64_t* strides);
std::vector<int64_t> ContiguousStrides(const std::vector<int64_t>& sizes);
// c10's is_contiguous: size-1 dims ignored, a tensor with a size-0 dim contiguous whatever its strides.
bool IsContiguous(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides);
// "[2, 3, 4]": sizes or strides in messages.
std::string DimsString(const std::vector<int64_t>& v);
// ATen's infer_dense_strides and c10's is_non_overlapping_and_dense (the layouts ATen's outputs follow).
std::vector<int64_t> InferDenseStrides(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides);
bool IsNonOverlappingAndDense(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides);
// Checks a dtype code and returns it as a DType.
DType CheckedDType(const char* fn, int32_t code);
// c10's maybe_wrap_dim: d in [-ndim, ndim) (a 0-d tensor takes 0 and -1), else ShimError "Dimension out of range".
int64_t WrapDim(const char* fn, int64_t d, int64_t ndim);
// ATen's infer_size for view/reshape: at most one -1, the product must be numel (torch's messages).
std::vector<int64_t> InferViewSize(const char* fn, const std::vector<int64_t>& shape, int64_t numel);
// ATen's computeStride: the strides of `new_sizes` as a view of (sizes, strides), or false when no view exists.
bool ComputeViewStrides(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                        const std::vector<int64_t>& new_sizes, std::vector<int64_t>* new_strides);

}  // namespace aotirt
#endif  // AOTIRT_TENSOR_TENSOR_H_
