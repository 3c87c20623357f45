// Memset nodes of a captured CUDA graph rewritten as kernel nodes that do the same fill.
//
// Why: a memset node costs ~9.4 us of host time and ~3.9 us of GPU time at every launch of the graph, where a kernel
// node costs what its kernel does (benchmarks/graph_launch.py, RESULTS.md "Graph launch run 1", H100). Our shims fill
// with kernels (shims/cuda/copy_kernel.h), but vendor libraries memset inside their own calls while we capture (the
// 24-layer prefill graph held 24 memset nodes with no zero fill of ours in it: decode runs 5 and 6).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace aotirt {

// Replaces every memset node of `graph` (1-, 2- or 4-byte elements, 1-D or pitched 2-D) by a kernel node writing the
// same bytes, with the same incoming and outgoing edges; the memset node is destroyed once the kernel node has all
// of them. A node whose edges carry non-default edge data (ports, programmatic types) is left as it is, and so is
// every node of a graph that holds memory nodes (CUDA does not let one edit those: AOTIRT_CAPTURE_POOL=0). Sets
// *replaced to the number of nodes rewritten. On a CUDA error returns it at once: the graph may then be half
// rewritten (a kernel node beside its memset node, with some of its edges), so the caller must destroy it.
cudaError_t ReplaceMemsetNodes(cudaGraph_t graph, int64_t* replaced);

}  // namespace aotirt
