// The capture pool registry (shims/common/capture_pool.h) over a host-memory backend that records every allocation
// and free: which allocations a pool serves, reuse within a capture, what End and Release give back and on which
// stream, refused calls, and threads. The GPU side (no memory nodes in a captured model's graph) is
// tests/gpu/test_graphs_gpu.py and test_shims_cuda_gpu.cc.
#include <gtest/gtest.h>

#include <cstdlib>
#include <chrono>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "shims/common/capture_pool.h"
#include "shims/common/error.h"
#include "shims/tests/shim_test_util.h"

namespace aotirt {
namespace {

struct FakeDevice {
  std::mutex mu;
  std::map<void*, size_t> live;           // allocated and not freed
  std::vector<std::pair<void*, void*>> frees;  // (ptr, stream) in order
  int64_t allocs = 0;
  bool fail_next = false;
  std::function<void()> during_alloc;  // runs inside the next allocation (the backend waiting for its stream)
};
FakeDevice g_dev;

void* FakeAlloc(const char* fn, int32_t, size_t nbytes) {
  std::function<void()> hook;
  {
    std::lock_guard<std::mutex> lock(g_dev.mu);
    hook.swap(g_dev.during_alloc);
  }
  if (hook) hook();
  std::lock_guard<std::mutex> lock(g_dev.mu);
  if (g_dev.fail_next) {
    g_dev.fail_next = false;
    throw ShimError(StrCat(fn, ": out of device memory"));
  }
  void* p = std::malloc(nbytes);
  g_dev.live[p] = nbytes;
  ++g_dev.allocs;
  return p;
}

void FakeFree(int32_t, void* ptr, void* stream) noexcept {
  std::lock_guard<std::mutex> lock(g_dev.mu);
  EXPECT_EQ(g_dev.live.erase(ptr), 1u) << "freed a pointer the backend did not allocate (or twice)";
  g_dev.frees.emplace_back(ptr, stream);
  std::free(ptr);
}

class CapturePoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::lock_guard<std::mutex> lock(g_dev.mu);
    g_dev.live.clear();
    g_dev.frees.clear();
    g_dev.allocs = 0;
    g_dev.fail_next = false;
    g_dev.during_alloc = nullptr;
  }
  void TearDown() override {
    std::lock_guard<std::mutex> lock(g_dev.mu);
    EXPECT_TRUE(g_dev.live.empty()) << g_dev.live.size() << " block(s) never given back";
  }
  CapturePoolRegistry reg{&FakeAlloc, &FakeFree};
  void* const s1 = reinterpret_cast<void*>(uintptr_t{0x11});
  void* const s2 = reinterpret_cast<void*>(uintptr_t{0x22});
};


TEST_F(CapturePoolTest, NothingIsServedWithoutAPool) {
  EXPECT_FALSE(reg.Serving());
  EXPECT_FALSE(reg.HoldsBlocks());
  EXPECT_EQ(reg.Allocate("f", 0, s1, 64), nullptr);
  int x = 0;
  EXPECT_FALSE(reg.Free(&x, s1));
  EXPECT_EQ(g_dev.allocs, 0);
}

TEST_F(CapturePoolTest, ServesOnlyItsStreamAndDeviceInAlignedBlocks) {
  const int64_t id = reg.Begin("f", 0, s1);
  EXPECT_TRUE(reg.Serving());
  EXPECT_EQ(reg.Allocate("f", 0, s2, 64), nullptr);  // another stream: the shim's own allocation
  EXPECT_EQ(reg.Allocate("f", 1, s1, 64), nullptr);  // another device
  void* a = reg.Allocate("f", 0, s1, 1000);
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(reg.HoldsBlocks());
  EXPECT_EQ(g_dev.live.at(a), 1024u);
  CapturePoolStats st = reg.Stats("f", id);
  EXPECT_EQ(st.blocks, 1);
  EXPECT_EQ(st.bytes, 1024);
  EXPECT_EQ(st.live, 1);
  EXPECT_EQ(st.allocations, 1);
  EXPECT_TRUE(reg.Free(a, s1));
  reg.End("f", id);
  EXPECT_FALSE(reg.Serving());
  reg.Release("f", id);
  EXPECT_FALSE(reg.HoldsBlocks());
}

TEST_F(CapturePoolTest, ABlockFreedDuringTheCaptureIsReusedBySizeButNotByAMuchSmallerOne) {
  const int64_t id = reg.Begin("f", 0, s1);
  void* big = reg.Allocate("f", 0, s1, 1 << 20);
  void* a = reg.Allocate("f", 0, s1, 4096);
  ASSERT_TRUE(reg.Free(a, s1));
  ASSERT_TRUE(reg.Free(big, s1));
  EXPECT_EQ(reg.Allocate("f", 0, s1, 3000), a);       // fits, at most twice its size: reused
  void* small = reg.Allocate("f", 0, s1, 100);          // the idle 1 MiB block is far too large: a new block
  EXPECT_NE(small, big);
  EXPECT_EQ(reg.Allocate("f", 0, s1, (1 << 20) - 7), big);
  CapturePoolStats st = reg.Stats("f", id);
  EXPECT_EQ(st.blocks, 3);
  EXPECT_EQ(st.allocations, 5);
  EXPECT_EQ(st.reuses, 2);
  EXPECT_EQ(st.live, 3);
  for (void* p : {a, small, big}) reg.Free(p, s1);
  reg.End("f", id);
  reg.Release("f", id);
}

TEST_F(CapturePoolTest, AfterEndFreedBlocksStayUntilReleaseAndLiveOnesUntilTheirLastFree) {
  const int64_t id = reg.Begin("f", 0, s1);
  void* tmp = reg.Allocate("f", 0, s1, 512);
  void* out = reg.Allocate("f", 0, s1, 512);
  reg.Free(tmp, s1);
  reg.End("f", id);
  // The graph still uses both blocks at every replay: nothing goes back to the device before Release.
  void* late = reg.Allocate("f", 0, s1, 512);
  EXPECT_EQ(late, nullptr);
  EXPECT_TRUE(g_dev.frees.empty());
  reg.Release("f", id);
  ASSERT_EQ(g_dev.frees.size(), 1u);  // the idle block, on the backend's own stream
  EXPECT_EQ(g_dev.frees[0], std::make_pair(tmp, static_cast<void*>(nullptr)));
  EXPECT_TRUE(reg.HoldsBlocks());  // `out` is held by a caller's tensor
  EXPECT_EQ(reg.Stats("f", id).live, 1);
  EXPECT_TRUE(reg.Free(out, s2));  // freed by its last tensor, stream-ordered on the stream it names
  ASSERT_EQ(g_dev.frees.size(), 2u);
  EXPECT_EQ(g_dev.frees[1], std::make_pair(out, s2));
  EXPECT_FALSE(reg.HoldsBlocks());
  EXPECT_NE(shimtest::ThrownMessage([&] { reg.Stats("f", id); }).find("no capture pool"), std::string::npos);
  EXPECT_FALSE(reg.Free(out, s2));  // no longer ours
}

TEST_F(CapturePoolTest, AFreeAfterEndButBeforeReleaseIsGivenBackAtRelease) {
  const int64_t id = reg.Begin("f", 0, s1);
  void* ws = reg.Allocate("f", 0, s1, 512);  // e.g. a cached workspace dropped after the capture
  reg.End("f", id);
  EXPECT_TRUE(reg.Free(ws, s1));
  EXPECT_TRUE(g_dev.frees.empty());
  EXPECT_TRUE(reg.Free(ws, s1));  // a second free of the same block changes nothing
  reg.Release("f", id);
  EXPECT_EQ(g_dev.frees.size(), 1u);
  EXPECT_FALSE(reg.HoldsBlocks());
}

TEST_F(CapturePoolTest, ReleaseWithoutEndEndsTheServing) {
  const int64_t id = reg.Begin("f", 0, s1);
  void* a = reg.Allocate("f", 0, s1, 8);
  reg.Free(a, s1);
  reg.Release("f", id);  // a failed capture's path
  EXPECT_FALSE(reg.Serving());
  EXPECT_EQ(reg.Allocate("f", 0, s1, 8), nullptr);
  EXPECT_EQ(g_dev.frees.size(), 1u);
  // The stream can be served again by a new pool.
  const int64_t id2 = reg.Begin("f", 0, s1);
  EXPECT_NE(id2, id);
  reg.Release("f", id2);
}

TEST_F(CapturePoolTest, RetainedObjectsLiveUntilReleaseEvenPastEnd) {
  // What a capture keeps alive beyond memory (the cuDNN shims: the execution plans whose kernels the graph launches)
  // lives until Release, after the graph's last replay, and only a served stream of that device keeps anything.
  auto plan = std::make_shared<int>(7);
  std::weak_ptr<int> watch = plan;
  EXPECT_FALSE(reg.Retain(0, s1, plan));  // no pool serves s1 yet
  const int64_t id = reg.Begin("f", 0, s1);
  EXPECT_FALSE(reg.Retain(1, s1, plan));  // another device's work on that stream: not this pool's
  EXPECT_FALSE(reg.Retain(0, s2, plan));
  EXPECT_TRUE(reg.Retain(0, s1, plan));
  EXPECT_TRUE(reg.Retain(0, s1, plan));  // each execute during the capture: kept once more, freed together
  EXPECT_EQ(reg.Stats("f", id).retained, 2);
  void* out = reg.Allocate("f", 0, s1, 64);  // an output the caller keeps past Release
  plan.reset();
  reg.End("f", id);
  EXPECT_FALSE(watch.expired()) << "the graph may still be replayed after End";
  EXPECT_FALSE(reg.Retain(0, s1, std::make_shared<int>(1)));  // no longer served
  reg.Release("f", id);
  EXPECT_TRUE(watch.expired()) << "Release (after the last replay) drops what the pool kept";
  reg.Free(out, s1);
}

TEST_F(CapturePoolTest, RefusedCallsNameTheProblem) {
  const int64_t id = reg.Begin("aotirt_capture_pool_begin", 0, s1);
  EXPECT_NE(shimtest::ThrownMessage([&] { reg.Begin("aotirt_capture_pool_begin", 0, s1); }).find("is already served by capture pool"),
            std::string::npos);
  EXPECT_NE(shimtest::ThrownMessage([&] { reg.End("aotirt_capture_pool_end", id + 100); })
                .find("aotirt_capture_pool_end: no capture pool"),
            std::string::npos);
  reg.End("f", id);
  EXPECT_NE(shimtest::ThrownMessage([&] { reg.End("f", id); }).find("already ended"), std::string::npos);
  void* keep = nullptr;
  reg.Release("f", id);
  EXPECT_NE(shimtest::ThrownMessage([&] { reg.Release("f", id); }).find("no capture pool"), std::string::npos);
  // A released pool that still has a live block refuses a second release as released.
  const int64_t id3 = reg.Begin("f", 0, s2);
  keep = reg.Allocate("f", 0, s2, 64);
  reg.Release("f", id3);
  EXPECT_NE(shimtest::ThrownMessage([&] { reg.Release("f", id3); }).find("was already released"), std::string::npos);
  EXPECT_NE(shimtest::ThrownMessage([&] { reg.End("f", id3); }).find("was already released"), std::string::npos);
  reg.Free(keep, s2);
}

TEST_F(CapturePoolTest, AFailedDeviceAllocationLeavesThePoolAsItWas) {
  const int64_t id = reg.Begin("f", 0, s1);
  g_dev.fail_next = true;
  EXPECT_NE(shimtest::ThrownMessage([&] { reg.Allocate("aoti_torch_empty_strided", 0, s1, 64); })
                .find("aoti_torch_empty_strided: out of device memory"),
            std::string::npos);
  EXPECT_EQ(reg.Stats("f", id).blocks, 0);
  EXPECT_FALSE(reg.HoldsBlocks());
  void* a = reg.Allocate("f", 0, s1, 64);
  EXPECT_NE(a, nullptr);
  reg.Free(a, s1);
  reg.Release("f", id);
}

// The device allocation of a new block waits for the backend's stream; other threads' frees and captures must not
// wait for it (the registry's lock is not held across it).
TEST_F(CapturePoolTest, OtherThreadsFreeAndAllocateWhileANewBlockIsMade) {
  const int64_t id1 = reg.Begin("f", 0, s1);
  const int64_t id2 = reg.Begin("f", 0, s2);
  void* other = reg.Allocate("f", 0, s2, 64);
  std::thread helper;
  std::promise<void> done;
  std::future<void> finished = done.get_future();
  bool in_time = false;
  void* during = nullptr;
  g_dev.during_alloc = [&] {
    helper = std::thread([&] {
      reg.Free(other, s2);
      during = reg.Allocate("f", 0, s2, 64);  // reuses `other`'s block
      done.set_value();
    });
    in_time = finished.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  };
  void* a = reg.Allocate("f", 0, s1, 4096);
  helper.join();
  EXPECT_TRUE(in_time) << "another thread's Free/Allocate waited for this thread's device allocation";
  EXPECT_NE(a, nullptr);
  EXPECT_EQ(during, other);
  EXPECT_EQ(reg.Stats("f", id1).blocks, 1);
  EXPECT_EQ(reg.Stats("f", id2).reuses, 1);
  reg.Free(a, s1);
  reg.Free(during, s2);
  reg.Release("f", id1);
  reg.Release("f", id2);
}

// A Release from another thread while the owner's capture makes a block (a misuse): the new block goes back and the
// allocation fails with a clear error; nothing leaks.
TEST_F(CapturePoolTest, APoolReleasedDuringItsAllocationGivesTheBlockBack) {
  const int64_t id = reg.Begin("f", 0, s1);
  g_dev.during_alloc = [&] { std::thread([&] { reg.Release("f", id); }).join(); };
  EXPECT_NE(shimtest::ThrownMessage([&] { reg.Allocate("aoti_torch_empty_strided", 0, s1, 64); })
                .find("was released while it allocated 512 bytes"),
            std::string::npos);
  EXPECT_FALSE(reg.HoldsBlocks());
  EXPECT_FALSE(reg.Serving());
  // Released while one of its blocks is still live (an output a caller holds): the pool is kept for that block,
  // but the new one still goes back.
  const int64_t kept = reg.Begin("f", 0, s1);
  void* out = reg.Allocate("f", 0, s1, 64);
  g_dev.during_alloc = [&] { std::thread([&] { reg.Release("f", kept); }).join(); };
  EXPECT_NE(shimtest::ThrownMessage([&] { reg.Allocate("f", 0, s1, 1024); }).find("was released while it allocated"),
            std::string::npos);
  EXPECT_EQ(reg.Stats("f", kept).blocks, 1);
  EXPECT_TRUE(reg.Free(out, s1));
  EXPECT_FALSE(reg.HoldsBlocks());
}

TEST_F(CapturePoolTest, ConcurrentCapturesOnTheirOwnStreamsAndEagerFreesElsewhere) {
  for (int round = 0; round < 5; ++round) {
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([this, t] {
        void* stream = reinterpret_cast<void*>(uintptr_t{0x1000} + t);
        const int64_t id = reg.Begin("f", 0, stream);
        std::vector<void*> live;
        for (int i = 0; i < 400; ++i) {
          void* p = reg.Allocate("f", 0, stream, 64 + (i % 7) * 512);
          ASSERT_NE(p, nullptr);
          live.push_back(p);
          if (i % 3 == 2) {
            EXPECT_TRUE(reg.Free(live.front(), stream));
            live.erase(live.begin());
          }
          int not_ours = 0;
          EXPECT_FALSE(reg.Free(&not_ours, stream));  // an eager free of memory the pools never made
        }
        reg.End("f", id);
        void* out = live.back();
        live.pop_back();
        for (void* p : live) reg.Free(p, stream);
        reg.Release("f", id);
        EXPECT_TRUE(reg.Free(out, stream));  // the caller's output, after the owner is gone
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_FALSE(reg.Serving());
    EXPECT_FALSE(reg.HoldsBlocks());
  }
}

// The C ABI's argument checks and unknown pools, which need no GPU (they fail before any device call).
TEST(CapturePoolAbi, RefusesBadArgumentsAndUnknownPoolsWithAClearError) {
  int64_t pool = 0;
  void* stream = reinterpret_cast<void*>(uintptr_t{0x33});
  EXPECT_SHIM_ERROR(aotirt_capture_pool_begin(0, stream, nullptr), "aotirt_capture_pool_begin", "ret_pool is null");
  EXPECT_SHIM_ERROR(aotirt_capture_pool_begin(0, nullptr, &pool), "aotirt_capture_pool_begin", "stream is null");
  EXPECT_SHIM_ERROR(aotirt_capture_pool_end(987654), "aotirt_capture_pool_end", "no capture pool 987654");
  EXPECT_SHIM_ERROR(aotirt_capture_pool_release(987654), "aotirt_capture_pool_release", "no capture pool 987654");
  int64_t v[5];
  int32_t n = -1;
  EXPECT_SHIM_ERROR(aotirt_capture_pool_stats(987654, v, 5, nullptr), "aotirt_capture_pool_stats",
                    "ret_count is null");
  EXPECT_SHIM_ERROR(aotirt_capture_pool_stats(987654, nullptr, 5, &n), "aotirt_capture_pool_stats",
                    "values is null or capacity < 0");
  EXPECT_SHIM_ERROR(aotirt_capture_pool_stats(987654, v, -1, &n), "aotirt_capture_pool_stats",
                    "values is null or capacity < 0");
  EXPECT_SHIM_ERROR(aotirt_capture_pool_stats(987654, v, 5, &n), "aotirt_capture_pool_stats", "no capture pool");
  EXPECT_EQ(n, -1);
}

}  // namespace
}  // namespace aotirt
