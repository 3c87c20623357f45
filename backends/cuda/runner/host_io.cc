#include "backends/cuda/runner/host_io.h"

#include <algorithm>

namespace aotirt {

std::vector<int64_t> ContiguousStridesOf(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> st(sizes.size());
  int64_t s = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    st[d] = s;
    s *= std::max<int64_t>(sizes[d], 1);
  }
  return st;
}

TensorPtr ToDevice(HostTensor& t, int device) {
  auto st = ContiguousStridesOf(t.shape);
  AtenTensorHandle host = nullptr, dev = nullptr;
  CheckShim(aoti_torch_create_tensor_from_blob(t.data.data(), static_cast<int64_t>(t.shape.size()), t.shape.data(),
                                                       st.data(), 0, t.dtype, aoti_torch_device_type_cpu(), 0, &host),
                    "input '" + t.name + "'");
  TensorPtr host_ptr(host);
  CheckShim(aoti_torch_empty_strided(static_cast<int64_t>(t.shape.size()), t.shape.data(), st.data(), t.dtype,
                                             aoti_torch_device_type_cuda(), device, &dev),
                    "input '" + t.name + "'");
  TensorPtr dev_ptr(dev);
  CheckShim(aoti_torch_copy_(dev, host, 0), "input '" + t.name + "'");
  return dev_ptr;
}

HostTensor ToHost(AtenTensorHandle h, const std::string& name) {
  HostTensor t;
  t.name = name;
  int64_t dim = 0, *sizes = nullptr;
  CheckShim(aoti_torch_get_dim(h, &dim), "output " + name);
  CheckShim(aoti_torch_get_sizes(h, &sizes), "output " + name);
  CheckShim(aoti_torch_get_dtype(h, &t.dtype), "output " + name);
  t.shape.assign(sizes, sizes + dim);
  int64_t numel = 1;
  for (auto s : t.shape) numel *= s;
  t.data.resize(static_cast<size_t>(numel * DTypeSize(t.dtype)));
  auto st = ContiguousStridesOf(t.shape);
  AtenTensorHandle host = nullptr;
  CheckShim(aoti_torch_create_tensor_from_blob(t.data.data(), dim, t.shape.data(), st.data(), 0, t.dtype,
                                                       aoti_torch_device_type_cpu(), 0, &host),
                    "output " + name);
  TensorPtr host_ptr(host);
  CheckShim(aoti_torch_copy_(host, h, 0), "output " + name);
  return t;
}

}  // namespace aotirt
