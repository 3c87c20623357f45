// The cuFFT loader on a CPU machine: dlopen by full path works without a GPU, so this checks that the real
// libcufft.so.12 of the nvidia-cufft wheel is accepted with its version, that missing libraries and libraries that
// are not cuFFT are reported with every place tried, and that the search order honours the environment.
#include "shims/fft/cufft_loader.h"

#include <gtest/gtest.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>

namespace aotirt {
namespace fft {
namespace {

std::string g_cufft;  // argv[1]: the build's libcufft.so.12 (a link into the wheel)

std::string RealCufft() {
  char buf[PATH_MAX];
  if (g_cufft.empty() || realpath(g_cufft.c_str(), buf) == nullptr) return "";
  return access(buf, R_OK) == 0 ? std::string(buf) : "";
}

TEST(CufftLoader, LoadsTheRealLibraryWithItsVersion) {
  const std::string path = RealCufft();
  ASSERT_FALSE(path.empty()) << "no libcufft.so.12 at " << g_cufft << " (tools/setup.sh installs nvidia-cufft)";
  CufftLoadResult r = LoadCufft({"/nonexistent/libcufft.so.12", path});
  ASSERT_NE(r.table, nullptr) << r.error;
  EXPECT_EQ(r.table->path, path);
  EXPECT_EQ(r.table->version / 1000, 12) << r.table->version;  // tools/requirements-cuda.txt: nvidia-cufft 12.0
  EXPECT_NE(r.table->cufftMakePlanMany64, nullptr);
  EXPECT_NE(r.table->cufftExecZ2Z, nullptr);
}

TEST(CufftLoader, NothingLoadsNamesEveryPlaceTried) {
  CufftLoadResult r = LoadCufft({"/nonexistent/a/libcufft.so.12", "/nonexistent/b/libcufft.so.12"});
  EXPECT_EQ(r.table, nullptr);
  for (const char* s : {"cuFFT (libcufft.so.12) could not be loaded", "/nonexistent/a/libcufft.so.12",
                        "/nonexistent/b/libcufft.so.12", "AOTIRT_CUFFT", "nvidia-cufft"})
    EXPECT_NE(r.error.find(s), std::string::npos) << s << " in " << r.error;
}

TEST(CufftLoader, ALibraryThatIsNotCufftIsRefused) {
  CufftLoadResult r = LoadCufft({"libc.so.6"});
  EXPECT_EQ(r.table, nullptr);
  EXPECT_NE(r.error.find("libc.so.6: loaded, but symbols are missing: cufftGetVersion"), std::string::npos)
      << r.error;
}

TEST(CufftLoader, CandidatesFollowTheSearchOrder) {
  setenv("AOTIRT_CUFFT", "/opt/x/libcufft.so.12", 1);
  unsetenv("AOTIRT_CUFFT_NO_DEFAULT_SEARCH");
  AddCufftSearchDir("/opt/wheel/nvidia/cu13/lib");
  auto c = CufftCandidates();
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0], "/opt/x/libcufft.so.12");
  EXPECT_EQ(c[1], "libcufft.so.12");
  EXPECT_EQ(c[2], "/opt/wheel/nvidia/cu13/lib/libcufft.so.12");
  setenv("AOTIRT_CUFFT_NO_DEFAULT_SEARCH", "1", 1);
  c = CufftCandidates();
  ASSERT_EQ(c.size(), 1u);
  unsetenv("AOTIRT_CUFFT");
  EXPECT_TRUE(CufftCandidates().empty());
  unsetenv("AOTIRT_CUFFT_NO_DEFAULT_SEARCH");
}

TEST(CufftLoader, ResultCodesAreNamed) {
  EXPECT_EQ(CufftResultName(CUFFT_INVALID_SIZE), "CUFFT_INVALID_SIZE (8)");
  EXPECT_EQ(CufftResultName(99), "unknown cufftResult (99)");
}

}  // namespace
}  // namespace fft
}  // namespace aotirt

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc > 1) aotirt::fft::g_cufft = argv[1];
  return RUN_ALL_TESTS();
}
