// The cuBLASLt loader on a CPU machine: dlopen by full path works without a GPU, so this checks that every symbol
// resolves from the real library, that missing libraries and missing symbols are reported with every place tried,
// and that the search order honours the environment.
#include "shims/gemm/cublaslt_loader.h"

#include <gtest/gtest.h>
#include <limits.h>
#include <stdlib.h>

#include <string>

namespace aotirt {
namespace gemm {
namespace {

std::string g_cudart;  // argv[1]: the build's libcudart.so.13; libcublasLt.so.13 lives beside it in the NVIDIA wheel

std::string RealCublasLt() {
  char buf[PATH_MAX];
  if (g_cudart.empty() || realpath(g_cudart.c_str(), buf) == nullptr) return "";
  std::string dir(buf);
  dir = dir.substr(0, dir.rfind('/'));
  std::string p = dir + "/libcublasLt.so.13";
  return access(p.c_str(), R_OK) == 0 ? p : "";
}

TEST(CublasLtLoader, ResolvesEverySymbolFromTheRealLibrary) {
  const std::string path = RealCublasLt();
  if (path.empty()) GTEST_SKIP() << "no libcublasLt.so.13 next to " << g_cudart;
  LoadResult r = LoadCublasLt({"/nonexistent/libcublasLt.so.13", path});
  ASSERT_TRUE(r.table) << r.error;
  EXPECT_EQ(r.table->path, path);
  EXPECT_GE(r.table->version, 130000u);
#define AOTIRT_CHECK_SYMBOL(name) EXPECT_NE(r.table->name, nullptr) << #name;
  AOTIRT_CUBLASLT_SYMBOLS(AOTIRT_CHECK_SYMBOL)
#undef AOTIRT_CHECK_SYMBOL
  const char* ok = r.table->cublasLtGetStatusString(CUBLAS_STATUS_SUCCESS);  // a call through the table works
  ASSERT_NE(ok, nullptr);
  EXPECT_NE(std::string(ok), "");
}

TEST(CublasLtLoader, NothingLoadsNamesEveryPlaceTried) {
  LoadResult r = LoadCublasLt({"/nonexistent/a/libcublasLt.so.13", "/nonexistent/b/libcublasLt.so.13"});
  EXPECT_FALSE(r.table);
  EXPECT_NE(r.error.find("libcublasLt.so.13"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("/nonexistent/a/libcublasLt.so.13"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("/nonexistent/b/libcublasLt.so.13"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("AOTIRT_CUBLASLT"), std::string::npos) << r.error;
}

TEST(CublasLtLoader, LibraryWithoutTheSymbolsIsRefused) {
  // libc loads fine but is not cuBLASLt.
  LoadResult r = LoadCublasLt({"libc.so.6"});
  EXPECT_FALSE(r.table);
  EXPECT_NE(r.error.find("symbols are missing: cublasLtGetVersion"), std::string::npos) << r.error;
}

TEST(CublasLtLoader, CandidatesFollowTheSearchOrder) {
  setenv("AOTIRT_CUBLASLT", "/opt/x/libcublasLt.so.13", 1);
  unsetenv("AOTIRT_CUBLASLT_NO_DEFAULT_SEARCH");
  AddCublasLtSearchDir("/wheel/nvidia/cu13/lib");
  auto c = CublasLtCandidates();
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0], "/opt/x/libcublasLt.so.13");
  EXPECT_EQ(c[1], "libcublasLt.so.13");
  EXPECT_EQ(c[2], "/wheel/nvidia/cu13/lib/libcublasLt.so.13");
  setenv("AOTIRT_CUBLASLT_NO_DEFAULT_SEARCH", "1", 1);
  c = CublasLtCandidates();
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0], "/opt/x/libcublasLt.so.13");
  // The one env-flag rule (common/env.h, as torch's): "off", "0", "false", "no" mean off (this loader used to read
  // "off" as on).
  for (const char* off : {"off", "0", "false", "no"}) {
    setenv("AOTIRT_CUBLASLT_NO_DEFAULT_SEARCH", off, 1);
    EXPECT_EQ(CublasLtCandidates().size(), 3u) << off;
  }
  setenv("AOTIRT_CUBLASLT_NO_DEFAULT_SEARCH", "on", 1);
  EXPECT_EQ(CublasLtCandidates().size(), 1u);
}

TEST(CublasLtLoader, ProcessWideLoadFailsFastAndRepeatsTheMessage) {
  setenv("AOTIRT_CUBLASLT", "/nonexistent/libcublasLt.so.13", 1);
  setenv("AOTIRT_CUBLASLT_NO_DEFAULT_SEARCH", "1", 1);
  std::string first, second;
  try {
    Lt("aoti_torch_cuda_mm_out");
  } catch (const std::exception& e) {
    first = e.what();
  }
  try {
    Lt("aoti_torch_cuda_bmm_out");
  } catch (const std::exception& e) {
    second = e.what();
  }
  EXPECT_EQ(first.rfind("aoti_torch_cuda_mm_out: cuBLASLt (libcublasLt.so.13) could not be loaded", 0), 0u) << first;
  EXPECT_NE(first.find("/nonexistent/libcublasLt.so.13"), std::string::npos) << first;
  EXPECT_EQ(second.substr(second.find(':')), first.substr(first.find(':')));
}

}  // namespace
}  // namespace gemm
}  // namespace aotirt

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  if (argc > 1) aotirt::gemm::g_cudart = argv[1];
  return RUN_ALL_TESTS();
}
