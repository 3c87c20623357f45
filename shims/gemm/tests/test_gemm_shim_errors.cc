// Preconditions of the extern "C" GEMM entries. They fail before any device work, so this runs without a GPU:
// tensors are blobs with a fake device address (never dereferenced).
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "shims/gemm/executor.h"
#include "shims/include/aotirt/shim.h"

namespace {

void* const kFakeDevicePtr = reinterpret_cast<void*>(0x10000);

AtenTensorHandle Make(std::vector<int64_t> sizes, int32_t dtype, int32_t device_type = 1, int32_t device = 0) {
  std::vector<int64_t> st(sizes.size(), 1);
  for (int i = static_cast<int>(sizes.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * sizes[i + 1];
  static std::vector<char> host(1 << 16);
  AtenTensorHandle h = nullptr;
  void* data = device_type == 0 ? static_cast<void*>(host.data()) : kFakeDevicePtr;
  EXPECT_EQ(aoti_torch_create_tensor_from_blob(data, static_cast<int64_t>(sizes.size()), sizes.data(), st.data(), 0,
                                               dtype, device_type, device, &h),
            AOTI_TORCH_SUCCESS)
      << aotirt_last_error();
  return h;
}

std::string Err(AOTITorchError e) {
  EXPECT_EQ(e, AOTI_TORCH_FAILURE);
  return aotirt_last_error();
}

const int32_t f32 = 6, f16 = 5, f64 = 7, i8 = 1, i32 = 3;

TEST(GemmShimErrors, NullHandles) {
  AtenTensorHandle a = Make({4, 3}, f32), b = Make({3, 5}, f32), o = Make({4, 5}, f32);
  std::string m = Err(aoti_torch_cuda_mm_out(nullptr, a, b));
  EXPECT_EQ(m.rfind("aoti_torch_cuda_mm_out: ", 0), 0u) << m;
  EXPECT_NE(m.find("out"), std::string::npos) << m;
  m = Err(aoti_torch_cuda_addmm_out(o, nullptr, a, b, 1.0, 1.0));
  EXPECT_EQ(m.rfind("aoti_torch_cuda_addmm_out: ", 0), 0u) << m;
  EXPECT_NE(m.find("self"), std::string::npos) << m;
  m = Err(aoti_torch_cuda_bmm_out(o, a, nullptr));
  EXPECT_EQ(m.rfind("aoti_torch_cuda_bmm_out: ", 0), 0u) << m;
  m = Err(aoti_torch_cuda_baddbmm_out(o, a, nullptr, b, 1.0, 1.0));
  EXPECT_EQ(m.rfind("aoti_torch_cuda_baddbmm_out: ", 0), 0u) << m;
  m = Err(aoti_torch_cuda__int_mm_out(o, nullptr, b));
  EXPECT_EQ(m.rfind("aoti_torch_cuda__int_mm_out: ", 0), 0u) << m;
  for (auto h : {a, b, o}) aoti_torch_delete_tensor_object(h);
}

TEST(GemmShimErrors, CpuTensorAndOtherDevice) {
  AtenTensorHandle a = Make({4, 3}, f32), b_cpu = Make({3, 5}, f32, 0), o = Make({4, 5}, f32);
  std::string m = Err(aoti_torch_cuda_mm_out(o, a, b_cpu));
  EXPECT_NE(m.find("aoti_torch_cuda_mm_out: mat2 is on cpu"), std::string::npos) << m;
  EXPECT_NE(m.find("cuda:0"), std::string::npos) << m;
  AtenTensorHandle b1 = Make({3, 5}, f32, 1, 1);
  m = Err(aoti_torch_cuda_mm_out(o, a, b1));
  EXPECT_NE(m.find("mat2 is on cuda:1 but out is on cuda:0"), std::string::npos) << m;
  for (auto h : {a, b_cpu, o, b1}) aoti_torch_delete_tensor_object(h);
}

TEST(GemmShimErrors, DtypesAndShapes) {
  AtenTensorHandle a = Make({4, 3}, f32), b16 = Make({3, 5}, f16), o = Make({4, 5}, f32);
  std::string m = Err(aoti_torch_cuda_mm_out(o, a, b16));
  EXPECT_NE(m.find("aoti_torch_cuda_mm_out: mm: expected all operands to have the same dtype"), std::string::npos)
      << m;
  AtenTensorHandle a64 = Make({4, 3}, f64), b64 = Make({3, 5}, f64), o64 = Make({4, 5}, f64);
  m = Err(aoti_torch_cuda_mm_out(o64, a64, b64));
  EXPECT_NE(m.find("float64 is not supported"), std::string::npos) << m;
  AtenTensorHandle b = Make({4, 5}, f32);
  m = Err(aoti_torch_cuda_mm_out(o, a, b));
  EXPECT_NE(m.find("shapes cannot be multiplied (4x3 and 4x5)"), std::string::npos) << m;
  AtenTensorHandle bias = Make({3}, f32), b35 = Make({3, 5}, f32);
  m = Err(aoti_torch_cuda_addmm_out(o, bias, a, b35, 1.0, 1.0));
  EXPECT_NE(m.find("self of shape 3 does not broadcast to the result shape 4x5"), std::string::npos) << m;
  AtenTensorHandle x = Make({32, 12}, i8), y = Make({12, 8}, i8), z = Make({32, 8}, i32);
  m = Err(aoti_torch_cuda__int_mm_out(z, x, y));
  EXPECT_NE(m.find("multiple of 8, but got 12"), std::string::npos) << m;
  for (auto h : {a, b16, o, a64, b64, o64, b, bias, b35, x, y, z}) aoti_torch_delete_tensor_object(h);
}

TEST(GemmShimErrors, NoLeaks) { EXPECT_EQ(aotirt_live_tensor_count(), 0); }

}  // namespace

namespace {

std::vector<std::string> SplitNames(const char* s) {
  std::vector<std::string> out(1);
  for (; *s; ++s) {
    if (*s == ',') out.emplace_back();
    else out.back().push_back(*s);
  }
  return out;
}

TEST(GemmStatsExport, NamesEveryCounterInOrderAndCopiesAtMostCapacity) {
  const std::vector<std::string> names = SplitNames(aotirt_gemm_stat_names());
  const int32_t n = aotirt_gemm_stats(nullptr, 0);
  ASSERT_EQ(static_cast<int32_t>(names.size()), n);
  EXPECT_EQ(names[2], "calls");
  EXPECT_EQ(names[11], "graph_replays");
  EXPECT_EQ(names.back(), "graph_evictions");
  std::vector<int64_t> all(n + 2, -7);
  EXPECT_EQ(aotirt_gemm_stats(all.data(), n + 2), n);
  for (int32_t i = 0; i < n; ++i) EXPECT_GE(all[i], 0) << names[i];
  EXPECT_EQ(all[n], -7);  // nothing written past the counters
  std::vector<int64_t> two(3, -7);
  EXPECT_EQ(aotirt_gemm_stats(two.data(), 2), n);
  EXPECT_EQ(two[2], -7);
  EXPECT_EQ(aotirt_gemm_stats(nullptr, 5), n);  // null values: only the count
}

}  // namespace

// The runtime's own GEMM entries (not torch's ABI): settings the runtime and the Python module use.
namespace {

TEST(GemmRuntimeEntries, AddCublasLtSearchDirRefusesNullAndEmpty) {
  EXPECT_NE(Err(aotirt_gemm_add_cublaslt_search_dir(nullptr)).find("aotirt_gemm_add_cublaslt_search_dir: dir is null"),
            std::string::npos);
  EXPECT_NE(Err(aotirt_gemm_add_cublaslt_search_dir("")).find("dir is null or empty"), std::string::npos);
  EXPECT_EQ(aotirt_gemm_add_cublaslt_search_dir("/opt/wheel/nvidia/cu13/lib"), AOTI_TORCH_SUCCESS);
}

TEST(GemmRuntimeEntries, Tf32SettingsProcessWideAndPerThread) {
  aotirt_gemm_set_allow_tf32(true);
  EXPECT_TRUE(aotirt::gemm::AllowTf32());
  aotirt_gemm_set_thread_allow_tf32(0);  // this thread: full fp32, whatever the process says
  EXPECT_FALSE(aotirt::gemm::AllowTf32());
  bool other_thread = false;
  std::thread([&] { other_thread = aotirt::gemm::AllowTf32(); }).join();
  EXPECT_TRUE(other_thread);  // the override is this thread's only
  aotirt_gemm_set_thread_allow_tf32(-1);
  EXPECT_TRUE(aotirt::gemm::AllowTf32());
  aotirt_gemm_set_allow_tf32(false);
  EXPECT_FALSE(aotirt::gemm::AllowTf32());
}

}  // namespace
