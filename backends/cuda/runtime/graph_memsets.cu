#include "backends/cuda/runtime/graph_memsets.h"

#include <vector>

#include "shims/cuda/fill_bytes.h"

namespace aotirt {
namespace {

constexpr unsigned kThreads = 256;

// One memset node's fill: `height` rows of `row_bytes` bytes, row r at dst + r * pitch. Rows start element-aligned,
// so the byte at address a is byte a % 4 of `pattern` (the element value repeated over 4 bytes, little-endian).
__global__ void MemsetNodeKernel(unsigned char* dst, uint32_t pattern, size_t row_bytes, size_t height,
                                 size_t pitch) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (size_t r = blockIdx.y; r < height; r += gridDim.y)
    gpu::FillBytes(dst + r * pitch, row_bytes, pattern, first, stride);
}

bool DefaultEdges(const std::vector<cudaGraphEdgeData>& edges) {
  for (const cudaGraphEdgeData& e : edges)
    if (e.from_port != 0 || e.to_port != 0 || e.type != cudaGraphDependencyTypeDefault) return false;
  return true;
}

// The kernel node's parameters for memset `m`; false where the node is not one this kernel reproduces (an element
// size other than 1, 2, 4, or a destination or pitch not aligned to it).
bool KernelFor(const cudaMemsetParams& m, unsigned char** dst, uint32_t* pattern, size_t* row_bytes, size_t* height,
               size_t* pitch, dim3* grid) {
  const unsigned e = m.elementSize;
  if (e != 1 && e != 2 && e != 4) return false;
  const uintptr_t addr = reinterpret_cast<uintptr_t>(m.dst);
  if (addr % e != 0 || (m.height > 1 && m.pitch % e != 0)) return false;
  const uint32_t v = m.value;
  *pattern = e == 1 ? (v & 0xffu) * 0x01010101u : e == 2 ? (v & 0xffffu) * 0x00010001u : v;
  *dst = static_cast<unsigned char*>(m.dst);
  *row_bytes = m.width * e;
  *height = m.height;
  *pitch = m.height > 1 ? m.pitch : 0;
  size_t per_row = *row_bytes / 16 + 32;  // body stores, or head + tail bytes (< 32)
  size_t bx = (per_row + kThreads - 1) / kThreads;
  if (bx > 1024) bx = 1024;
  size_t by = *height == 0 ? 1 : *height;
  if (by > 65535) by = 65535;
  *grid = dim3(static_cast<unsigned>(bx), static_cast<unsigned>(by), 1);
  return true;
}

}  // namespace

cudaError_t ReplaceMemsetNodes(cudaGraph_t graph, int64_t* replaced) {
  *replaced = 0;
  size_t n = 0;
  cudaError_t e = cudaGraphGetNodes(graph, nullptr, &n);
  if (e != cudaSuccess || n == 0) return e;
  std::vector<cudaGraphNode_t> nodes(n);
  e = cudaGraphGetNodes(graph, nodes.data(), &n);
  if (e != cudaSuccess) return e;
  nodes.resize(n);
  // CUDA refuses to edit a graph that holds memory nodes (cudaErrorNotSupported, seen on an H100 with
  // AOTIRT_CAPTURE_POOL=0): such a graph keeps its memsets.
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type;
    if ((e = cudaGraphNodeGetType(node, &type)) != cudaSuccess) return e;
    if (type == cudaGraphNodeTypeMemAlloc || type == cudaGraphNodeTypeMemFree) return cudaSuccess;
  }
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type;
    if ((e = cudaGraphNodeGetType(node, &type)) != cudaSuccess) return e;
    if (type != cudaGraphNodeTypeMemset) continue;
    cudaMemsetParams m = {};
    if ((e = cudaGraphMemsetNodeGetParams(node, &m)) != cudaSuccess) return e;
    unsigned char* dst = nullptr;
    uint32_t pattern = 0;
    size_t row_bytes = 0, height = 0, pitch = 0;
    dim3 grid;
    if (!KernelFor(m, &dst, &pattern, &row_bytes, &height, &pitch, &grid)) continue;

    size_t n_in = 0, n_out = 0;
    if ((e = cudaGraphNodeGetDependencies(node, nullptr, nullptr, &n_in)) != cudaSuccess) return e;
    if ((e = cudaGraphNodeGetDependentNodes(node, nullptr, nullptr, &n_out)) != cudaSuccess) return e;
    std::vector<cudaGraphNode_t> in(n_in), out(n_out);
    std::vector<cudaGraphEdgeData> in_edges(n_in), out_edges(n_out);
    if (n_in > 0 && (e = cudaGraphNodeGetDependencies(node, in.data(), in_edges.data(), &n_in)) != cudaSuccess)
      return e;
    if (n_out > 0 &&
        (e = cudaGraphNodeGetDependentNodes(node, out.data(), out_edges.data(), &n_out)) != cudaSuccess)
      return e;
    if (!DefaultEdges(in_edges) || !DefaultEdges(out_edges)) continue;

    cudaKernelNodeParams k = {};
    void* args[] = {&dst, &pattern, &row_bytes, &height, &pitch};
    k.func = reinterpret_cast<void*>(&MemsetNodeKernel);
    k.gridDim = grid;
    k.blockDim = dim3(kThreads, 1, 1);
    k.sharedMemBytes = 0;
    k.kernelParams = args;
    k.extra = nullptr;
    cudaGraphNode_t fill = nullptr;
    if ((e = cudaGraphAddKernelNode(&fill, graph, in.data(), n_in, &k)) != cudaSuccess) return e;
    if (n_out > 0) {
      std::vector<cudaGraphNode_t> from(n_out, fill);
      if ((e = cudaGraphAddDependencies(graph, from.data(), out.data(), nullptr, n_out)) != cudaSuccess) return e;
    }
    // Only now, with the kernel node ordered as the memset was: destroying a node removes its edges.
    if ((e = cudaGraphDestroyNode(node)) != cudaSuccess) return e;
    ++*replaced;
  }
  return cudaSuccess;
}

}  // namespace aotirt
