// Package identity (backends/cuda/runtime/wrapper_library.h) on a CPU: every load answers with its own wrapper's
// code, also after a pinned wrapper was dropped, when another object holds the name a memfd would get, over
// hundreds of load/drop cycles in random order and from four threads at once; dropped wrappers are unloaded (memfd
// closed) or parked and reused, so the process's memfds stay bounded.
#include <dirent.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backends/cuda/runtime/wrapper_library.h"

namespace aotirt {
namespace {

std::vector<std::vector<uint8_t>> g_wrappers;  // a, b, c (argv)
const char* const kIds[] = {"a", "b", "c"};

std::string Explain(const std::string& pkg, const char* dlerr) { return pkg + ": " + (dlerr ? dlerr : "?"); }

std::shared_ptr<WrapperLibrary> Load(int which) {
  return WrapperLibrary::Acquire(g_wrappers[which], &Explain, std::string("fake_") + kIds[which]);
}

std::string IdOf(const WrapperLibrary& lib) {
  auto fn = reinterpret_cast<const char* (*)()>(dlsym(lib.handle(), "fake_identity"));
  return fn ? fn() : "<no fake_identity>";
}

void Pin(const WrapperLibrary& lib) {
  auto fn = reinterpret_cast<int (*)()>(dlsym(lib.handle(), "fake_pin"));
  ASSERT_NE(fn, nullptr);
  fn();
}

int OpenFds() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d) != nullptr) ++n;
    closedir(d);
  }
  return n;
}

TEST(WrapperLibrary, TheWrappersUnderTestHaveTheSameSize) {
  // The case that used to run the wrong code silently: a second package whose wrapper is just as large.
  ASSERT_EQ(g_wrappers.size(), 3u);
  EXPECT_EQ(g_wrappers[0].size(), g_wrappers[1].size());
  EXPECT_NE(g_wrappers[0], g_wrappers[1]);
}

TEST(WrapperLibrary, ADroppedPinnedWrapperNeverAnswersForAnother) {
  auto a = Load(0);
  ASSERT_EQ(IdOf(*a), "a");
  Pin(*a);  // as a run does: the object cannot be unloaded while this thread lives
  const std::string a_name = a->name();
  const auto before = GetWrapperLibraryStats();
  a.reset();
  EXPECT_EQ(GetWrapperLibraryStats().parked, before.parked + 1);
  auto b = Load(1);
  EXPECT_EQ(IdOf(*b), "b");
  EXPECT_NE(b->name(), a_name);
  EXPECT_FALSE(b->reused());
  // The same bytes again: the parked object is taken over (its state and modules are already there).
  auto a2 = Load(0);
  EXPECT_EQ(IdOf(*a2), "a");
  EXPECT_TRUE(a2->reused());
  EXPECT_EQ(a2->name(), a_name);
  // A second live holder of the same bytes gets its own copy, never the one in use.
  auto a3 = Load(0);
  EXPECT_EQ(IdOf(*a3), "a");
  EXPECT_FALSE(a3->reused());
  EXPECT_NE(a3->name(), a2->name());
}

TEST(WrapperLibrary, AnUnpinnedWrapperIsUnloadedAndItsMemfdClosed) {
  const int fds = OpenFds();
  const auto before = GetWrapperLibraryStats();
  {
    auto c = Load(2);
    EXPECT_EQ(IdOf(*c), "c");
    EXPECT_EQ(OpenFds(), fds + 1);
  }
  const auto after = GetWrapperLibraryStats();
  EXPECT_EQ(after.unloaded, before.unloaded + 1);
  EXPECT_EQ(after.parked, before.parked);
  EXPECT_EQ(OpenFds(), fds);
}

TEST(WrapperLibrary, ANameLeftTakenByAnotherObjectIsNotUsed) {
  // What the runtime used to do: dlopen a memfd, pin the object, dlclose it and close the memfd. The object stays
  // loaded under /proc/self/fd/N while N is free again, and the next memfd gets N.
  const int fd = memfd_create("outsider", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, g_wrappers[2].data(), g_wrappers[2].size()), static_cast<ssize_t>(g_wrappers[2].size()));
  const std::string name = "/proc/self/fd/" + std::to_string(fd);
  void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  reinterpret_cast<int (*)()>(dlsym(h, "fake_pin"))();
  dlclose(h);
  close(fd);
  ASSERT_NE(dlopen(name.c_str(), RTLD_LAZY | RTLD_NOLOAD), nullptr) << "the outsider should still be mapped";
  const auto before = GetWrapperLibraryStats();
  auto b = Load(1);
  EXPECT_EQ(IdOf(*b), "b");  // the old loader returned "c" here
  EXPECT_NE(b->name(), name);
  EXPECT_GE(GetWrapperLibraryStats().name_conflicts, before.name_conflicts + 1);
}

TEST(WrapperLibrary, TheIdentityCheckTellsAnotherObjectApart) {
  auto a = Load(0);
  EXPECT_EQ(WrapperIdentityError(a->handle(), -1, a->name()).substr(0, 12), "fstat failed");
  // Another memfd holding other bytes: the object loaded as a's name is not that file.
  const int fd = memfd_create("other", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, g_wrappers[1].data(), g_wrappers[1].size()), static_cast<ssize_t>(g_wrappers[1].size()));
  const std::string wrong = WrapperIdentityError(a->handle(), fd, a->name());
  EXPECT_NE(wrong.find("the package's wrapper is inode"), std::string::npos) << wrong;
  EXPECT_NE(WrapperIdentityError(a->handle(), fd, "/proc/self/fd/999999").find("it is loaded as"), std::string::npos);
  close(fd);
}

TEST(WrapperLibrary, ThreeHundredCyclesInRandomOrder) {
  std::mt19937 rng(12);
  const int fds = OpenFds();
  for (int i = 0; i < 300; ++i) {
    const int w = static_cast<int>(rng() % 3);
    auto lib = Load(w);
    ASSERT_EQ(IdOf(*lib), kIds[w]) << "cycle " << i;
    if (rng() % 2) Pin(*lib);
  }
  // At most one parked copy per distinct wrapper (a, b, c) beyond what earlier tests left.
  EXPECT_LE(OpenFds(), fds + 3);
  const auto s = GetWrapperLibraryStats();
  EXPECT_EQ(s.live, 0);
  std::printf("after the churn: %lld loaded, %lld reused, %lld unloaded, %lld parked\n",
              static_cast<long long>(s.loaded), static_cast<long long>(s.reused),
              static_cast<long long>(s.unloaded), static_cast<long long>(s.parked));
}

TEST(WrapperLibrary, FourThreadsLoadRunAndDropAtOnce) {
  std::vector<std::string> errors(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &errors] {
      std::mt19937 rng(100 + t);
      std::vector<std::shared_ptr<WrapperLibrary>> held;
      for (int i = 0; i < 150 && errors[t].empty(); ++i) {
        const int w = static_cast<int>(rng() % 3);
        auto lib = Load(w);
        if (IdOf(*lib) != kIds[w]) errors[t] = "cycle " + std::to_string(i) + ": wanted " + kIds[w] + ", got " + IdOf(*lib);
        if (rng() % 2) reinterpret_cast<int (*)()>(dlsym(lib->handle(), "fake_pin"))();
        if (rng() % 4 == 0) held.push_back(lib);  // some stay alive a while: several live copies at once
        if (held.size() > 3) held.erase(held.begin());
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(errors[t], "") << "thread " << t;
  EXPECT_EQ(GetWrapperLibraryStats().live, 0);
}

}  // namespace
}  // namespace aotirt

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) {
    std::ifstream f(argv[i], std::ios::binary);
    aotirt::g_wrappers.emplace_back(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  if (aotirt::g_wrappers.size() != 3 || aotirt::g_wrappers[0].empty()) {
    std::fprintf(stderr, "usage: test_wrapper_library fake_identity_a.so fake_identity_b.so fake_identity_c.so\n");
    return 2;
  }
  return RUN_ALL_TESTS();
}
