#include "shims/tensor/tensor.h"

#include <algorithm>
#include <limits>
#include <sstream>

namespace aotirt {

std::atomic<int64_t> Tensor::live_{0};

Tensor::Tensor(std::shared_ptr<Storage> storage, std::vector<int64_t> sizes, std::vector<int64_t> strides,
               int64_t storage_offset, DType dtype)
    : storage_(std::move(storage)),
      sizes_(std::move(sizes)),
      strides_(std::move(strides)),
      offset_(storage_offset),
      dtype_(dtype) {
  live_.fetch_add(1, std::memory_order_relaxed);
}

Tensor::~Tensor() {
  magic_ = 0;
  live_.fetch_sub(1, std::memory_order_relaxed);
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t s : sizes_) n *= s;
  return n;
}

bool Tensor::is_contiguous() const { return IsContiguous(sizes_, strides_); }

bool IsContiguous(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  // As torch: an empty tensor is contiguous whatever its strides (a size-0 dim anywhere, not only innermost).
  for (int64_t s : sizes)
    if (s == 0) return true;
  int64_t expected = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    if (sizes[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

void* Tensor::data_ptr() const {
  if (storage_->data == nullptr) return nullptr;
  return static_cast<char*>(storage_->data) + offset_ * element_size();
}

std::string DimsString(const std::vector<int64_t>& v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << "]";
  return os.str();
}

std::string Tensor::Describe() const {
  return StrCat(DTypeName(static_cast<int32_t>(dtype_)), DimsString(sizes_), " strides ", DimsString(strides_), " on ",
                DeviceName(device_type(), device_index()));
}

Tensor* FromHandle(AtenTensorHandle h, const char* fn, const char* arg) {
  AOTIRT_CHECK(h != nullptr, fn, arg, " is a null tensor handle");
  auto* t = reinterpret_cast<Tensor*>(h);
  AOTIRT_CHECK(t->valid(), fn, arg, " is not a live tensor handle (deleted, or not made by this library)");
  return t;
}

TensorMeta MetaOf(const Tensor& t) {
  TensorMeta m;
  m.dtype = t.dtype();
  m.sizes = t.sizes();
  m.strides = t.strides();
  return m;
}

const Tensor* FromHandleMeta(AtenTensorHandle h, const char* fn, const char* arg, TensorMeta* meta) {
  const Tensor* t = FromHandle(h, fn, arg);
  *meta = MetaOf(*t);
  return t;
}

int32_t CheckCudaOperands(const char* fn, std::initializer_list<const Tensor*> operands) {
  const Tensor* first = nullptr;
  for (const Tensor* t : operands) {
    if (t == nullptr) continue;
    AOTIRT_CHECK(t->is_cuda(), fn, "an operand is on ", DeviceName(t->device_type(), t->device_index()),
                 "; this shim takes CUDA tensors");
    if (first == nullptr) first = t;
    AOTIRT_CHECK(t->device_index() == first->device_index(), fn, "the operands are on different GPUs (",
                 first->device_index(), " and ", t->device_index(), ")");
  }
  return first != nullptr ? first->device_index() : 0;
}

int64_t RequiredStorageElements(const char* fn, int64_t ndim, const int64_t* sizes, const int64_t* strides) {
  AOTIRT_CHECK(ndim >= 0 && ndim <= 64, fn, "ndim must be in [0, 64], got ", ndim);
  AOTIRT_CHECK(ndim == 0 || sizes != nullptr, fn, "sizes_ptr is null for ndim ", ndim);
  AOTIRT_CHECK(ndim == 0 || strides != nullptr, fn, "strides_ptr is null for ndim ", ndim);
  int64_t extent = 0;  // largest reachable element index
  for (int64_t d = 0; d < ndim; ++d) {
    AOTIRT_CHECK(sizes[d] >= 0, fn, "size of dim ", d, " is negative (", sizes[d], ")");
    AOTIRT_CHECK(strides[d] >= 0, fn, "stride of dim ", d, " is negative (", strides[d], ")");
    if (sizes[d] == 0) return 0;
  }
  // numel itself must fit too (stride-0 dims reach few elements but still count): as torch's safe_compute_numel.
  int64_t numel = 1;
  for (int64_t d = 0; d < ndim; ++d) {
    AOTIRT_CHECK(!__builtin_mul_overflow(numel, sizes[d], &numel), fn, "number of elements overflows int64");
  }
  for (int64_t d = 0; d < ndim; ++d) {
    int64_t term = 0;
    AOTIRT_CHECK(!__builtin_mul_overflow(sizes[d] - 1, strides[d], &term) &&
                     !__builtin_add_overflow(extent, term, &extent),
                 fn, "sizes and strides overflow int64");
  }
  return extent + 1;
}

std::vector<int64_t> ContiguousStrides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> strides(sizes.size());
  int64_t s = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    strides[d] = s;
    s *= std::max<int64_t>(sizes[d], 1);
  }
  return strides;
}

// ATen's infer_dense_strides (TensorUtils.cpp): dims ordered by stride (ties: the larger size outer), 0 strides
// keep their place.
std::vector<int64_t> InferDenseStrides(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  const int ndim = static_cast<int>(sizes.size());
  if (ndim == 0) return {};
  if (ndim == 1) return {1};
  std::vector<int> perm(ndim);
  for (int i = 0; i < ndim; ++i) perm[i] = ndim - 1 - i;  // n-1, ..., 0 (ATen's TensorUtils.cpp)
  auto should_swap = [&](int d0, int d1) {
    const int64_t s0 = strides[d0], s1 = strides[d1];
    if (s0 == 0 || s1 == 0) return 0;
    if (s0 < s1) return -1;
    if (s0 > s1) return 1;
    if (sizes[d0] > sizes[d1]) return 1;
    return 0;
  };
  for (int i = 1; i < ndim; ++i) {
    int dim1 = i;
    for (int dim0 = i - 1; dim0 >= 0; --dim0) {
      const int c = should_swap(perm[dim0], perm[dim1]);
      if (c > 0) {
        std::swap(perm[dim0], perm[dim1]);
        dim1 = dim0;
      } else if (c < 0) {
        break;
      }
    }
  }
  std::vector<int64_t> out(ndim);
  int64_t curr = 1;
  for (int i = 0; i < ndim; ++i) {
    out[perm[i]] = curr;
    if (sizes[perm[i]] > 1) curr *= sizes[perm[i]];
  }
  return out;
}

// c10's compute_non_overlapping_and_dense.
bool IsNonOverlappingAndDense(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  const size_t ndim = sizes.size();
  if (ndim == 0) return true;
  for (int64_t s : sizes)
    if (s == 0) return true;  // c10: an empty tensor is contiguous, hence non-overlapping and dense
  if (ndim == 1) return sizes[0] < 2 || strides[0] == 1;
  std::vector<size_t> perm(ndim);
  for (size_t i = 0; i < ndim; ++i) perm[i] = i;
  std::sort(perm.begin(), perm.end(), [&](size_t a, size_t b) {
    if (sizes[a] < 2) return false;
    if (sizes[b] < 2) return true;
    return strides[a] < strides[b];
  });
  int64_t require = 1;
  for (size_t i = 0; i < ndim; ++i) {
    const int64_t size = sizes[perm[i]];
    if (size < 2) return true;
    if (strides[perm[i]] != require) return false;
    require *= size;
  }
  return true;
}

DType CheckedDType(const char* fn, int32_t code) {
  AOTIRT_CHECK(IsSupportedDType(code), fn, "unsupported dtype code ", code,
               " (supported: uint8=0 int8=1 int16=2 int32=3 int64=4 float16=5 float32=6 float64=7 complex64=9 "
               "complex128=10 bool=11 bfloat16=15)");
  return static_cast<DType>(code);
}

int64_t WrapDim(const char* fn, int64_t d, int64_t ndim) {
  const int64_t n = ndim > 0 ? ndim : 1;  // a 0-d tensor wraps like a 1-d one
  AOTIRT_CHECK(d >= -n && d < n, fn, "Dimension out of range (expected to be in range of [", -n, ", ", n - 1,
               "], but got ", d, ")");
  return d < 0 ? d + n : d;
}

std::vector<int64_t> InferViewSize(const char* fn, const std::vector<int64_t>& shape, int64_t numel) {
  std::vector<int64_t> out = shape;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      AOTIRT_CHECK(infer < 0, fn, "only one dimension can be inferred");
      infer = static_cast<int64_t>(i);
    } else {
      AOTIRT_CHECK(shape[i] >= 0, fn, "invalid shape dimension ", shape[i]);
      AOTIRT_CHECK(!__builtin_mul_overflow(known, shape[i], &known), fn, "shape ", DimsString(shape),
                   " overflows int64");
    }
  }
  if (numel == known || (infer >= 0 && known > 0 && numel % known == 0)) {
    if (infer >= 0) {
      AOTIRT_CHECK(known != 0, fn, "cannot reshape tensor of 0 elements into shape ", DimsString(shape),
                   " because the unspecified dimension size -1 can be any value and is ambiguous");
      out[infer] = numel / known;
    }
    return out;
  }
  AOTIRT_CHECK(false, fn, "shape '", DimsString(shape), "' is invalid for input of size ", numel);
  return out;
}

bool ComputeViewStrides(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                        const std::vector<int64_t>& new_sizes, std::vector<int64_t>* new_strides) {
  const int64_t nd = static_cast<int64_t>(new_sizes.size());
  new_strides->assign(static_cast<size_t>(nd), 1);
  if (sizes.empty()) return true;
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  if (numel == 0 && sizes == new_sizes) {
    *new_strides = strides;
    return true;
  }
  if (numel == 0) {
    for (int64_t d = nd - 1; d >= 0; --d)
      (*new_strides)[d] = d == nd - 1 ? 1 : std::max<int64_t>(new_sizes[d + 1], 1) * (*new_strides)[d + 1];
    return true;
  }
  int64_t view_d = nd - 1;
  int64_t chunk_base_stride = strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t tensor_d = static_cast<int64_t>(sizes.size()) - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= sizes[tensor_d];
    if (tensor_d == 0 ||
        (sizes[tensor_d - 1] != 1 && strides[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[view_d] == 1)) {
        (*new_strides)[view_d] = view_numel * chunk_base_stride;
        view_numel *= new_sizes[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (tensor_d > 0) {
        chunk_base_stride = strides[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

}  // namespace aotirt
