// For the shim entries' CPU error tests: a contiguous CPU tensor over bytes it owns (zeros), as a shim handle, and
// Refused (a call that must fail cleanly).
#ifndef AOTIRT_TESTS_UTIL_HOST_BLOB_H_
#define AOTIRT_TESTS_UTIL_HOST_BLOB_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "shims/include/aotirt/shim.h"

namespace aotirt_testing {

struct HostBlob {
  std::vector<unsigned char> data;
  AtenTensorHandle h = nullptr;
  // elem: bytes per element of dtype (a c10 dtype code)
  HostBlob(std::vector<int64_t> sizes, int32_t dtype, int64_t elem) {
    std::vector<int64_t> strides(sizes.size());
    int64_t s = 1, n = 1;
    for (size_t i = sizes.size(); i-- > 0;) {
      strides[i] = s;
      s *= sizes[i];
    }
    for (int64_t x : sizes) n *= x;
    data.resize(static_cast<size_t>(n * elem) + 16);
    EXPECT_EQ(aoti_torch_create_tensor_from_blob(data.data(), static_cast<int64_t>(sizes.size()), sizes.data(),
                                                 strides.data(), 0, dtype, aoti_torch_device_type_cpu(), 0, &h),
              AOTI_TORCH_SUCCESS);
  }
  ~HostBlob() { aoti_torch_delete_tensor_object(h); }
  HostBlob(const HostBlob&) = delete;
  HostBlob& operator=(const HostBlob&) = delete;
};

// Runs a shim call that must be refused: AOTI_TORCH_FAILURE and no tensor left behind. Returns the message.
template <class Call>
std::string Refused(Call call) {
  const int64_t live = aotirt_live_tensor_count();
  EXPECT_EQ(call(), AOTI_TORCH_FAILURE);
  EXPECT_EQ(aotirt_live_tensor_count(), live) << "a refused call left tensors behind";
  return aotirt_last_error();
}

}  // namespace aotirt_testing
#endif  // AOTIRT_TESTS_UTIL_HOST_BLOB_H_
