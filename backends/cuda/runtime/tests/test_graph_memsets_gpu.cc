// ReplaceMemsetNodes (graph_memsets.h) on a GPU: every memset node of a graph becomes a kernel node that writes the
// same bytes (1-, 2- and 4-byte elements, unaligned heads and tails, pitched 2-D fills, overlapping fills whose
// order decides the result), with the same edges; the rewritten graph's output equals the kept graph's and the
// bytes worked out on the host.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <vector>

#include "backends/cuda/runtime/graph_memsets.h"

namespace aotirt {
namespace {

#define CK(x) ASSERT_EQ((x), cudaSuccess) << #x << ": " << cudaGetErrorString(x)

std::map<cudaGraphNodeType, int> NodeTypes(cudaGraph_t g) {
  size_t n = 0;
  std::map<cudaGraphNodeType, int> types;
  if (cudaGraphGetNodes(g, nullptr, &n) != cudaSuccess) return types;
  std::vector<cudaGraphNode_t> nodes(n);
  if (n > 0 && cudaGraphGetNodes(g, nodes.data(), &n) != cudaSuccess) return types;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType t;
    if (cudaGraphNodeGetType(node, &t) == cudaSuccess) ++types[t];
  }
  return types;
}

size_t EdgeCount(cudaGraph_t g) {
  size_t n = 0;
  return cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &n) == cudaSuccess ? n : ~size_t{0};
}

// Host model of a memset node's bytes.
void HostFill(std::vector<uint8_t>& buf, size_t off, uint32_t value, unsigned elem, size_t width, size_t height,
              size_t pitch) {
  for (size_t r = 0; r < height; ++r)
    for (size_t i = 0; i < width; ++i)
      for (unsigned b = 0; b < elem; ++b) buf[off + r * pitch + i * elem + b] = static_cast<uint8_t>(value >> (8 * b));
}

class GraphMemsets : public ::testing::Test {
 protected:
  void SetUp() override {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) GTEST_SKIP() << "no CUDA device";
  }
};

// A chain memset -> memset -> memset (2-D) -> memset -> memcpy to a second buffer over one 8 KiB buffer, built
// twice: kept as it is and rewritten. Fills overlap, so a lost edge could change bytes; the edges are also counted.
TEST_F(GraphMemsets, EveryMemsetNodeBecomesAKernelThatWritesTheSameBytesInTheSameOrder) {
  constexpr size_t kBytes = 8192;
  uint8_t *buf = nullptr, *out_kept = nullptr, *out_new = nullptr;
  CK(cudaMalloc(&buf, kBytes));
  CK(cudaMalloc(&out_kept, kBytes));
  CK(cudaMalloc(&out_new, kBytes));
  struct Fill {
    size_t off;
    uint32_t value;
    unsigned elem;
    size_t width, height, pitch;
  };
  const Fill fills[] = {
      {3, 0xAB, 1, 1000, 1, 0},              // unaligned head and tail
      {1000, 0x12345678u, 4, 300, 1, 0},     // overlaps the first's last bytes: order matters
      {2402, 0xBEEF, 2, 30, 10, 100},        // pitched 2-D, 2-byte elements, rows not 16-aligned
      {1004, 0x5A, 1, 7, 1, 0},              // inside the 4-byte fill: must come after it
      {4096, 0xCAFEF00Du, 4, 1024, 1, 0},    // aligned body of 16-byte stores
  };
  std::vector<uint8_t> want(kBytes, 0x11);
  for (const Fill& f : fills) HostFill(want, f.off, f.value, f.elem, f.width, f.height, f.pitch);

  auto build = [&](uint8_t* out, cudaGraph_t* g) {
    CK(cudaGraphCreate(g, 0));
    cudaGraphNode_t prev = nullptr;
    for (const Fill& f : fills) {
      cudaMemsetParams m = {};
      m.dst = buf + f.off;
      m.value = f.value;
      m.elementSize = f.elem;
      m.width = f.width;
      m.height = f.height;
      m.pitch = f.pitch;
      cudaGraphNode_t node = nullptr;
      CK(cudaGraphAddMemsetNode(&node, *g, prev ? &prev : nullptr, prev ? 1 : 0, &m));
      prev = node;
    }
    cudaGraphNode_t copy = nullptr;
    CK(cudaGraphAddMemcpyNode1D(&copy, *g, &prev, 1, out, buf, kBytes, cudaMemcpyDeviceToDevice));
  };
  cudaGraph_t kept = nullptr, rewritten = nullptr;
  build(out_kept, &kept);
  build(out_new, &rewritten);
  const size_t edges = EdgeCount(rewritten);
  ASSERT_EQ(edges, 5u);
  int64_t replaced = -1;
  CK(ReplaceMemsetNodes(rewritten, &replaced));
  EXPECT_EQ(replaced, 5);
  std::map<cudaGraphNodeType, int> types = NodeTypes(rewritten);
  EXPECT_EQ(types[cudaGraphNodeTypeMemset], 0);
  EXPECT_EQ(types[cudaGraphNodeTypeKernel], 5);
  EXPECT_EQ(types[cudaGraphNodeTypeMemcpy], 1);
  EXPECT_EQ(EdgeCount(rewritten), edges);  // still one chain: every fill ordered after the one before it
  EXPECT_EQ(NodeTypes(kept)[cudaGraphNodeTypeMemset], 5);

  cudaStream_t s = nullptr;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (cudaGraph_t g : {kept, rewritten}) {
    cudaGraphExec_t exec = nullptr;
    CK(cudaGraphInstantiate(&exec, g, 0));
    for (int rep = 0; rep < 3; ++rep) {  // the same bytes on every launch
      CK(cudaMemsetAsync(buf, 0x11, kBytes, s));
      CK(cudaGraphLaunch(exec, s));
    }
    CK(cudaStreamSynchronize(s));
    CK(cudaGraphExecDestroy(exec));
  }
  std::vector<uint8_t> got_kept(kBytes), got_new(kBytes);
  CK(cudaMemcpy(got_kept.data(), out_kept, kBytes, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(got_new.data(), out_new, kBytes, cudaMemcpyDeviceToHost));
  EXPECT_EQ(got_kept, want);  // the host model is right
  for (size_t i = 0; i < kBytes; ++i) ASSERT_EQ(got_new[i], want[i]) << "byte " << i;
  CK(cudaGraphDestroy(kept));
  CK(cudaGraphDestroy(rewritten));
  CK(cudaStreamDestroy(s));
  CK(cudaFree(buf));
  CK(cudaFree(out_kept));
  CK(cudaFree(out_new));
}

// What stream capture makes of cudaMemsetAsync, among copies, on a buffer larger than the fill kernel's grid covers
// in one pass (5 MiB + 5 bytes from an odd address), with a fork to a second stream and back.
TEST_F(GraphMemsets, ACapturedMemsetOnTwoStreamsIsRewrittenAndKeepsItsForkAndJoin) {
  constexpr size_t kBytes = (5u << 20) + 5;
  uint8_t *buf = nullptr, *out = nullptr, *side = nullptr;
  CK(cudaMalloc(&buf, kBytes + 1));
  CK(cudaMalloc(&out, kBytes + 1));
  CK(cudaMalloc(&side, 4096));
  cudaStream_t s = nullptr, t = nullptr;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&t, cudaStreamNonBlocking));
  cudaEvent_t fork = nullptr, join = nullptr;
  CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  CK(cudaMemset(buf, 0x22, kBytes + 1));
  CK(cudaMemset(side, 0, 4096));

  cudaGraph_t g = nullptr;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  CK(cudaMemsetAsync(buf + 1, 0x7E, kBytes, s));
  CK(cudaEventRecord(fork, s));
  CK(cudaStreamWaitEvent(t, fork, 0));
  CK(cudaMemsetAsync(side, 0x33, 4096, t));                                    // on the side stream
  CK(cudaMemcpyAsync(side + 8, buf + 1, 16, cudaMemcpyDeviceToDevice, t));     // after both memsets
  CK(cudaEventRecord(join, t));
  CK(cudaStreamWaitEvent(s, join, 0));
  CK(cudaMemcpyAsync(out, buf, kBytes + 1, cudaMemcpyDeviceToDevice, s));
  CK(cudaStreamEndCapture(s, &g));
  const size_t edges = EdgeCount(g);
  int64_t replaced = -1;
  CK(ReplaceMemsetNodes(g, &replaced));
  EXPECT_EQ(replaced, 2);
  EXPECT_EQ(NodeTypes(g)[cudaGraphNodeTypeMemset], 0);
  EXPECT_EQ(EdgeCount(g), edges);
  cudaGraphExec_t exec = nullptr;
  CK(cudaGraphInstantiate(&exec, g, 0));
  CK(cudaGraphLaunch(exec, s));
  CK(cudaStreamSynchronize(s));
  std::vector<uint8_t> got(kBytes + 1), got_side(4096);
  CK(cudaMemcpy(got.data(), out, kBytes + 1, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(got_side.data(), side, 4096, cudaMemcpyDeviceToHost));
  EXPECT_EQ(got[0], 0x22);
  for (size_t i = 1; i <= kBytes; ++i) ASSERT_EQ(got[i], 0x7E) << "byte " << i;
  for (size_t i = 0; i < 4096; ++i) ASSERT_EQ(got_side[i], i >= 8 && i < 24 ? 0x7E : 0x33) << "side byte " << i;
  CK(cudaGraphExecDestroy(exec));
  CK(cudaGraphDestroy(g));
  CK(cudaEventDestroy(fork));
  CK(cudaEventDestroy(join));
  CK(cudaStreamDestroy(s));
  CK(cudaStreamDestroy(t));
  CK(cudaFree(buf));
  CK(cudaFree(out));
  CK(cudaFree(side));
}

TEST_F(GraphMemsets, AGraphWithoutMemsetsIsLeftAsItIs) {
  cudaGraph_t g = nullptr;
  CK(cudaGraphCreate(&g, 0));
  int64_t replaced = -1;
  CK(ReplaceMemsetNodes(g, &replaced));  // empty
  EXPECT_EQ(replaced, 0);
  cudaGraphNode_t a = nullptr, b = nullptr;
  CK(cudaGraphAddEmptyNode(&a, g, nullptr, 0));
  CK(cudaGraphAddEmptyNode(&b, g, &a, 1));
  CK(ReplaceMemsetNodes(g, &replaced));
  EXPECT_EQ(replaced, 0);
  EXPECT_EQ(NodeTypes(g)[cudaGraphNodeTypeEmpty], 2);
  EXPECT_EQ(EdgeCount(g), 1u);
  CK(cudaGraphDestroy(g));
}

}  // namespace
}  // namespace aotirt
