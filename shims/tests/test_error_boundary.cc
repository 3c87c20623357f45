// The error boundary: every failing entry point returns AOTI_TORCH_FAILURE and leaves a per-thread message that
// starts with its own name; aotirt_clear_last_error clears it. Also the diagnostics shims (check, warn, grad mode).
#include <stdexcept>
#include <string>
#include <thread>

#include "shims/tests/shim_test_util.h"

namespace {

using namespace shimtest;
using ErrorBoundary = ShimTest;

TEST_F(ErrorBoundary, MessageStartsWithTheFailingFunctionsName) {
  // One failing call per entry point that returns AOTITorchError (the GEMMs have their own tests).
  const std::pair<std::string, AOTITorchError (*)()> calls[] = {
      {"aoti_torch_delete_tensor_object", [] { return aoti_torch_delete_tensor_object(nullptr); }},
      {"aoti_torch_get_data_ptr", [] { return aoti_torch_get_data_ptr(nullptr, nullptr); }},
      {"aoti_torch_get_storage_size", [] { return aoti_torch_get_storage_size(nullptr, nullptr); }},
      {"aoti_torch_get_storage_offset", [] { return aoti_torch_get_storage_offset(nullptr, nullptr); }},
      {"aoti_torch_get_sizes", [] { return aoti_torch_get_sizes(nullptr, nullptr); }},
      {"aoti_torch_get_strides", [] { return aoti_torch_get_strides(nullptr, nullptr); }},
      {"aoti_torch_get_size", [] { return aoti_torch_get_size(nullptr, 0, nullptr); }},
      {"aoti_torch_get_stride", [] { return aoti_torch_get_stride(nullptr, 0, nullptr); }},
      {"aoti_torch_get_dim", [] { return aoti_torch_get_dim(nullptr, nullptr); }},
      {"aoti_torch_get_numel", [] { return aoti_torch_get_numel(nullptr, nullptr); }},
      {"aoti_torch_get_dtype", [] { return aoti_torch_get_dtype(nullptr, nullptr); }},
      {"aoti_torch_get_device_type", [] { return aoti_torch_get_device_type(nullptr, nullptr); }},
      {"aoti_torch_get_device_index", [] { return aoti_torch_get_device_index(nullptr, nullptr); }},
      {"aoti_torch_get_layout", [] { return aoti_torch_get_layout(nullptr, nullptr); }},
      {"aoti_torch_is_contiguous", [] { return aoti_torch_is_contiguous(nullptr, nullptr); }},
      {"aoti_torch_empty_strided",
       [] { return aoti_torch_empty_strided(0, nullptr, nullptr, 6, 0, 0, nullptr); }},
      {"aoti_torch_create_tensor_from_blob",
       [] { return aoti_torch_create_tensor_from_blob(nullptr, 0, nullptr, nullptr, 0, 6, 0, 0, nullptr); }},
      {"aoti_torch_create_tensor_from_blob_v2",
       [] {
         return aoti_torch_create_tensor_from_blob_v2(nullptr, 0, nullptr, nullptr, 0, 6, 0, 0, nullptr, 0, nullptr,
                                                      0);
       }},
      {"aoti_torch__reinterpret_tensor",
       [] { return aoti_torch__reinterpret_tensor(nullptr, 0, nullptr, nullptr, 0, nullptr); }},
      {"aoti_torch_new_tensor_handle", [] { return aoti_torch_new_tensor_handle(nullptr, nullptr); }},
      {"aoti_torch_assign_tensors_out", [] { return aoti_torch_assign_tensors_out(nullptr, nullptr); }},
      {"aoti_torch_copy_", [] { return aoti_torch_copy_(nullptr, nullptr, 0); }},
      {"aoti_torch_clone", [] { return aoti_torch_clone(nullptr, nullptr); }},
      {"aoti_torch_clone_preserve_strides", [] { return aoti_torch_clone_preserve_strides(nullptr, nullptr); }},
      {"aoti_torch_zero_", [] { return aoti_torch_zero_(nullptr); }},
      {"aoti_torch_item_bool", [] { return aoti_torch_item_bool(nullptr, nullptr); }},
      {"aoti_torch_create_cuda_stream_guard",
       [] { return aoti_torch_create_cuda_stream_guard(nullptr, 0, nullptr); }},
      {"aoti_torch_delete_cuda_stream_guard", [] { return aoti_torch_delete_cuda_stream_guard(nullptr); }},
      {"aoti_torch_create_cuda_guard", [] { return aoti_torch_create_cuda_guard(0, nullptr); }},
      {"aoti_torch_delete_cuda_guard", [] { return aoti_torch_delete_cuda_guard(nullptr); }},
      {"aoti_torch_cuda_guard_set_index", [] { return aoti_torch_cuda_guard_set_index(nullptr, 0); }},
      {"aoti_torch_get_current_cuda_stream", [] { return aoti_torch_get_current_cuda_stream(0, nullptr); }},
      {"aotirt_create_tensor_from_blob_with_deleter",
       [] {
         return aotirt_create_tensor_from_blob_with_deleter(nullptr, 0, nullptr, nullptr, 0, 6, 0, 0, nullptr,
                                                            nullptr, nullptr);
       }},
  };
  for (const auto& [fn, call] : calls) EXPECT_SHIM_ERROR(call(), fn, "");
}

TEST_F(ErrorBoundary, ClearEmptiesTheMessageAndSuccessKeepsTheLastFailure) {
  aotirt_clear_last_error();
  EXPECT_STREQ(aotirt_last_error(), "");
  EXPECT_EQ(aoti_torch_zero_(nullptr), AOTI_TORCH_FAILURE);
  const std::string msg = aotirt_last_error();
  EXPECT_EQ(msg.rfind("aoti_torch_zero_: ", 0), 0u) << msg;
  // A successful call does not erase why the last failure happened.
  AtenTensorHandle t = MakeEmpty({1}, kF32);
  EXPECT_SHIM_OK(aoti_torch_zero_(t));
  EXPECT_EQ(msg, aotirt_last_error());
  aotirt_clear_last_error();
  EXPECT_STREQ(aotirt_last_error(), "");
  // The next failure replaces the message.
  EXPECT_EQ(aoti_torch_clone(nullptr, nullptr), AOTI_TORCH_FAILURE);
  EXPECT_EQ(std::string(aotirt_last_error()).rfind("aoti_torch_clone: ", 0), 0u);
}

TEST_F(ErrorBoundary, LastErrorIsPerThread) {
  aotirt_clear_last_error();
  std::string other_thread_msg, other_thread_before;
  std::thread([&] {
    other_thread_before = aotirt_last_error();
    (void)aoti_torch_get_dim(nullptr, nullptr);
    other_thread_msg = aotirt_last_error();
  }).join();
  EXPECT_EQ(other_thread_before, "");
  EXPECT_EQ(other_thread_msg.rfind("aoti_torch_get_dim: ", 0), 0u) << other_thread_msg;
  EXPECT_STREQ(aotirt_last_error(), "") << "another thread's failure leaked into this thread";
}

TEST_F(ErrorBoundary, VersionStringIsSet) {
  const std::string v = aotirt_shims_version();
  EXPECT_EQ(v.rfind("aotirt-shims ", 0), 0u) << v;
}

TEST_F(ErrorBoundary, CheckThrowsForGeneratedCodeToConvert) {
  EXPECT_NO_THROW(aoti_torch_check(true, "f", "file.cpp", 1, "fine"));
  try {
    aoti_torch_check(false, "my_kernel", "model.cpp", 42, "shape mismatch");
    ADD_FAILURE() << "aoti_torch_check(false, ...) did not throw";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("my_kernel"), std::string::npos) << what;
    EXPECT_NE(what.find("model.cpp:42"), std::string::npos) << what;
    EXPECT_NE(what.find("shape mismatch"), std::string::npos) << what;
  }
  EXPECT_THROW(aoti_torch_check(false, nullptr, nullptr, 0, nullptr), std::runtime_error);
}

TEST_F(ErrorBoundary, WarnPrintsAndToleratesNulls) {
  ::testing::internal::CaptureStderr();
  aoti_torch_warn("fn_name", "file.cpp", 7, "watch out");
  aoti_torch_warn(nullptr, nullptr, 0, nullptr);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("fn_name"), std::string::npos) << err;
  EXPECT_NE(err.find("watch out"), std::string::npos) << err;
}

TEST_F(ErrorBoundary, GradModeIsRememberedPerThread) {
  EXPECT_FALSE(aoti_torch_grad_mode_is_enabled()) << "inference runtime: off by default";
  aoti_torch_grad_mode_set_enabled(true);
  EXPECT_TRUE(aoti_torch_grad_mode_is_enabled());
  bool other = true;
  std::thread([&] { other = aoti_torch_grad_mode_is_enabled(); }).join();
  EXPECT_FALSE(other);
  aoti_torch_grad_mode_set_enabled(false);
  EXPECT_FALSE(aoti_torch_grad_mode_is_enabled());
}

}  // namespace
