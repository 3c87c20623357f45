// The cuDNN loader on a CPU machine: dlopen by full path works without a GPU, so this checks that the real
// libcudnn.so.9 of the nvidia-cudnn-cu13 wheel is accepted with its version, that missing libraries and libraries
// that are not cuDNN are reported with every place tried, and that the search order honours the environment.
#include "shims/cudnn/cudnn_loader.h"

#include <gtest/gtest.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>

namespace aotirt {
namespace cudnn {
namespace {

std::string g_cudnn;  // argv[1]: the build's libcudnn.so.9 (a link into the wheel)

std::string RealCudnn() {
  char buf[PATH_MAX];
  if (g_cudnn.empty() || realpath(g_cudnn.c_str(), buf) == nullptr) return "";
  return access(buf, R_OK) == 0 ? std::string(buf) : "";
}

TEST(CudnnLoader, LoadsTheRealLibraryWithItsVersion) {
  const std::string path = RealCudnn();
  ASSERT_FALSE(path.empty()) << "no libcudnn.so.9 at " << g_cudnn << " (tools/setup.sh installs nvidia-cudnn-cu13)";
  CudnnLoadResult r = LoadCudnn({"/nonexistent/libcudnn.so.9", path});
  ASSERT_NE(r.handle, nullptr) << r.error;
  EXPECT_EQ(r.path, path);
  EXPECT_EQ(r.version, 91900u);  // tools/requirements-cuda.txt pins nvidia-cudnn-cu13==9.19.0.56
}

TEST(CudnnLoader, NothingLoadsNamesEveryPlaceTried) {
  CudnnLoadResult r = LoadCudnn({"/nonexistent/a/libcudnn.so.9", "/nonexistent/b/libcudnn.so.9"});
  EXPECT_EQ(r.handle, nullptr);
  for (const char* s : {"cuDNN (libcudnn.so.9) could not be loaded", "/nonexistent/a/libcudnn.so.9",
                        "/nonexistent/b/libcudnn.so.9", "AOTIRT_CUDNN", "nvidia-cudnn-cu13"})
    EXPECT_NE(r.error.find(s), std::string::npos) << s << " in " << r.error;
}

TEST(CudnnLoader, ALibraryThatIsNotCudnnIsRefused) {
  CudnnLoadResult r = LoadCudnn({"libc.so.6"});
  EXPECT_EQ(r.handle, nullptr);
  EXPECT_NE(r.error.find("libc.so.6: loaded, but it has no cudnnGetVersion"), std::string::npos) << r.error;
}

TEST(CudnnLoader, CandidatesFollowTheSearchOrder) {
  setenv("AOTIRT_CUDNN", "/opt/x/libcudnn.so.9", 1);
  unsetenv("AOTIRT_CUDNN_NO_DEFAULT_SEARCH");
  AddCudnnSearchDir("/opt/wheel/nvidia/cudnn/lib");
  auto c = CudnnCandidates();
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0], "/opt/x/libcudnn.so.9");
  EXPECT_EQ(c[1], "libcudnn.so.9");
  EXPECT_EQ(c[2], "/opt/wheel/nvidia/cudnn/lib/libcudnn.so.9");
  setenv("AOTIRT_CUDNN_NO_DEFAULT_SEARCH", "1", 1);
  c = CudnnCandidates();
  ASSERT_EQ(c.size(), 1u);
  unsetenv("AOTIRT_CUDNN");
  EXPECT_TRUE(CudnnCandidates().empty());
  CudnnLoadResult r = LoadCudnn(CudnnCandidates());
  EXPECT_NE(r.error.find("AOTIRT_CUDNN is unset and AOTIRT_CUDNN_NO_DEFAULT_SEARCH=1"), std::string::npos) << r.error;
  unsetenv("AOTIRT_CUDNN_NO_DEFAULT_SEARCH");
}

}  // namespace
}  // namespace cudnn
}  // namespace aotirt

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc > 1) aotirt::cudnn::g_cudnn = argv[1];
  return RUN_ALL_TESTS();
}
