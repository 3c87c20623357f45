// Helpers for the shim tests. Tests see the shims only through the public C ABI (shims/include/aotirt/shim.h).
#ifndef AOTIRT_SHIMS_TESTS_SHIM_TEST_UTIL_H_
#define AOTIRT_SHIMS_TESTS_SHIM_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "shims/include/aotirt/shim.h"
#include "tests/util/gpu_test_util.h"

namespace shimtest {

// The message of the exception f throws ("" when it throws none): the internal C++ checks, which throw ShimError.
inline std::string ThrownMessage(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// c10 codes, spelled out so a shim returning a wrong code cannot hide behind itself.
constexpr int32_t kU8 = 0, kI8 = 1, kI16 = 2, kI32 = 3, kI64 = 4, kF16 = 5, kF32 = 6, kF64 = 7, kBool = 11,
                  kBF16 = 15;
constexpr int32_t kQInt8 = 12, kBadDtype = 99;  // a c10 code this library does not store, and no code at all
constexpr int32_t kCPU = 0, kCUDA = 1, kBadDevice = 99;

inline std::vector<int64_t> Contiguous(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> st(sizes.size());
  int64_t s = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    st[d] = s;
    s *= sizes[d] > 1 ? sizes[d] : 1;
  }
  return st;
}

// Succeeds when `err` is a failure whose message starts with "fn: " and contains `needle`.
inline ::testing::AssertionResult IsShimError(AOTITorchError err, const std::string& fn,
                                              const std::string& needle = "") {
  const std::string msg = aotirt_last_error();
  if (err != AOTI_TORCH_FAILURE)
    return ::testing::AssertionFailure() << "expected AOTI_TORCH_FAILURE, got " << err << " (last error: '" << msg
                                         << "')";
  if (msg.rfind(fn + ": ", 0) != 0)
    return ::testing::AssertionFailure() << "message does not start with '" << fn << ": ': '" << msg << "'";
  if (msg.find(needle) == std::string::npos)
    return ::testing::AssertionFailure() << "message lacks '" << needle << "': '" << msg << "'";
  return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult IsShimOk(AOTITorchError err) {
  if (err == AOTI_TORCH_SUCCESS) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "shim failed (" << err << "): " << aotirt_last_error();
}

}  // namespace shimtest

// Clears the last error first, so a stale message from an earlier call cannot satisfy the check.
#define EXPECT_SHIM_ERROR(call, fn, needle) \
  do {                                      \
    aotirt_clear_last_error();              \
    AOTITorchError err_ = (call);           \
    EXPECT_TRUE(::shimtest::IsShimError(err_, fn, needle)) << #call; \
  } while (0)
#define EXPECT_SHIM_OK(call) EXPECT_TRUE(::shimtest::IsShimOk(call)) << #call
#define ASSERT_SHIM_OK(call) ASSERT_TRUE(::shimtest::IsShimOk(call)) << #call

// Tests that need the CUDA runtime to fail (this CI machine has no GPU); on a GPU machine they skip.
#define AOTIRT_REQUIRE_NO_GPU()                                                           \
  do {                                                                                    \
    if (::aotirt_test::NoGpuReason().empty()) GTEST_SKIP() << "a GPU is usable here";     \
  } while (0)

namespace shimtest {

// Every test starts and ends with the same number of live tensors: each test doubles as a leak check.
class ShimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    aotirt_clear_last_error();
    baseline_ = aotirt_live_tensor_count();
  }
  void TearDown() override {
    DeleteOwned();
    EXPECT_EQ(aotirt_live_tensor_count(), baseline_) << "tensor handles leaked (or deleted twice) by this test";
  }

  // A new CPU tensor; deleted (and checked) at the end of the test unless released.
  AtenTensorHandle MakeEmpty(const std::vector<int64_t>& sizes, int32_t dtype = kF32,
                         const std::vector<int64_t>* strides = nullptr) {
    std::vector<int64_t> st = strides ? *strides : Contiguous(sizes);
    AtenTensorHandle h = nullptr;
    EXPECT_SHIM_OK(aoti_torch_empty_strided(static_cast<int64_t>(sizes.size()), sizes.data(), st.data(), dtype,
                                            kCPU, 0, &h));
    return Own(h);
  }
  AtenTensorHandle MakeStrided(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                                int32_t dtype = kF32) {
    return MakeEmpty(sizes, dtype, &strides);
  }
  // A borrowed CPU tensor over `data`.
  AtenTensorHandle MakeBlob(void* data, const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                        int32_t dtype, int64_t offset = 0) {
    AtenTensorHandle h = nullptr;
    EXPECT_SHIM_OK(aoti_torch_create_tensor_from_blob(data, static_cast<int64_t>(sizes.size()), sizes.data(),
                                                      strides.data(), offset, dtype, kCPU, 0, &h));
    return Own(h);
  }
  AtenTensorHandle Own(AtenTensorHandle h) {
    if (h) owned_.push_back(h);
    return h;
  }
  void DeleteOwned() {
    for (AtenTensorHandle h : owned_) EXPECT_SHIM_OK(aoti_torch_delete_tensor_object(h));
    owned_.clear();
  }

  template <typename T>
  static T* Data(AtenTensorHandle h) {
    void* p = nullptr;
    EXPECT_SHIM_OK(aoti_torch_get_data_ptr(h, &p));
    return static_cast<T*>(p);
  }
  static std::vector<int64_t> Sizes(AtenTensorHandle h) {
    int64_t dim = -1, *p = nullptr;
    EXPECT_SHIM_OK(aoti_torch_get_dim(h, &dim));
    EXPECT_SHIM_OK(aoti_torch_get_sizes(h, &p));
    return dim > 0 ? std::vector<int64_t>(p, p + dim) : std::vector<int64_t>{};
  }
  static std::vector<int64_t> Strides(AtenTensorHandle h) {
    int64_t dim = -1, *p = nullptr;
    EXPECT_SHIM_OK(aoti_torch_get_dim(h, &dim));
    EXPECT_SHIM_OK(aoti_torch_get_strides(h, &p));
    return dim > 0 ? std::vector<int64_t>(p, p + dim) : std::vector<int64_t>{};
  }

  int64_t baseline_ = 0;
  std::vector<AtenTensorHandle> owned_;
};

// A buffer that looks like a handle but was never made by the library (zeroed, so its magic is wrong): what a
// deleted handle or a foreign pointer looks like, without a use-after-free in the test itself.
struct ForeignHandle {
  alignas(64) unsigned char bytes[512];
  explicit ForeignHandle(unsigned char fill = 0) { std::memset(bytes, fill, sizeof(bytes)); }
  AtenTensorHandle get() { return reinterpret_cast<AtenTensorHandle>(bytes); }
};

}  // namespace shimtest

#endif  // AOTIRT_SHIMS_TESTS_SHIM_TEST_UTIL_H_
