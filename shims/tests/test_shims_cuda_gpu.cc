// GPU cases of the shims (tag "gpu"): device allocation on the current stream, stream/device guards, copies
// H2D/D2H/D2D with dtype conversion and strided layouts against the host copy as reference, clone_preserve_strides,
// zero_ and item_bool on the device. Every test skips with the reason where no GPU is usable.
// Standalone: `bazel build //shims/tests:test_shims_cuda_gpu`, copy the binary to the GPU machine, run it.
#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include "shims/tests/shim_test_util.h"

namespace {

using namespace shimtest;

class CudaShims : public ShimTest {
 protected:
  void SetUp() override {
    ShimTest::SetUp();
  }
  AtenTensorHandle Cuda(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, int32_t dtype) {
    AtenTensorHandle h = nullptr;
    EXPECT_SHIM_OK(aoti_torch_empty_strided(static_cast<int64_t>(sizes.size()), sizes.data(), strides.data(), dtype,
                                            kCUDA, 0, &h));
    return Own(h);
  }
  // Whole storage of a tensor, brought to the host.
  static std::vector<unsigned char> StorageBytes(AtenTensorHandle t) {
    int64_t nbytes = 0, offset = 0;
    int32_t dtype = 0;
    EXPECT_SHIM_OK(aoti_torch_get_storage_size(t, &nbytes));
    EXPECT_SHIM_OK(aoti_torch_get_storage_offset(t, &offset));
    EXPECT_SHIM_OK(aoti_torch_get_dtype(t, &dtype));
    char* p = Data<char>(t) - offset * ElementSize(dtype);
    std::vector<unsigned char> out(static_cast<size_t>(nbytes));
    EXPECT_EQ(cudaMemcpy(out.data(), p, nbytes, cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }
  static int64_t ElementSize(int32_t code) {
    switch (code) {
      case kU8: case kI8: case kBool: return 1;
      case kI16: case kF16: case kBF16: return 2;
      case kI32: case kF32: return 4;
      default: return 8;
    }
  }
  // Fills a host tensor's elements (contiguous) with values every dtype holds approximately the same way.
  void FillHost(AtenTensorHandle t) {
    int64_t n = 0;
    EXPECT_SHIM_OK(aoti_torch_get_numel(t, &n));
    AtenTensorHandle f = MakeEmpty({n}, kF32);
    for (int64_t i = 0; i < n; ++i) Data<float>(f)[i] = static_cast<float>((i * 37) % 100) * 0.37f;
    AtenTensorHandle flat = nullptr;
    int64_t one = 1;
    EXPECT_SHIM_OK(aoti_torch__reinterpret_tensor(t, 1, &n, &one, 0, &flat));
    EXPECT_SHIM_OK(aoti_torch_copy_(flat, f, 0));
    EXPECT_SHIM_OK(aoti_torch_delete_tensor_object(flat));
  }
  void ExpectSameHost(AtenTensorHandle a, AtenTensorHandle b, int64_t nbytes, const std::string& what) {
    EXPECT_EQ(std::memcmp(Data<void>(a), Data<void>(b), static_cast<size_t>(nbytes)), 0) << what;
  }
};

TEST_F(CudaShims, EmptyStridedAllocatesDeviceMemory) {
  AOTIRT_REQUIRE_GPU();
  AtenTensorHandle t = Cuda({4, 5}, {5, 1}, kBF16);
  int32_t dev = -1, idx = -1;
  EXPECT_SHIM_OK(aoti_torch_get_device_type(t, &dev));
  EXPECT_SHIM_OK(aoti_torch_get_device_index(t, &idx));
  EXPECT_EQ(dev, kCUDA);
  EXPECT_EQ(idx, 0);
  cudaPointerAttributes attr{};
  ASSERT_EQ(cudaPointerGetAttributes(&attr, Data<void>(t)), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeDevice);
  EXPECT_EQ(attr.device, 0);
  AtenTensorHandle e = Cuda({0, 3}, {3, 1}, kF32);
  int64_t nbytes = -1;
  EXPECT_SHIM_OK(aoti_torch_get_storage_size(e, &nbytes));
  EXPECT_EQ(nbytes, 0);
  int64_t sizes[] = {2}, strides[] = {1};
  AtenTensorHandle bad = nullptr;
  EXPECT_SHIM_ERROR(aoti_torch_empty_strided(1, sizes, strides, kF32, kCUDA, 99, &bad), "aoti_torch_empty_strided",
                    "out of range");
  EXPECT_EQ(bad, nullptr);
}

TEST_F(CudaShims, StreamGuardSetsAndRestoresTheCurrentStream) {
  AOTIRT_REQUIRE_GPU();
  cudaStream_t s1 = nullptr, s2 = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking), cudaSuccess);
  void* cur = reinterpret_cast<void*>(0x1);
  EXPECT_SHIM_OK(aoti_torch_get_current_cuda_stream(0, &cur));
  EXPECT_EQ(cur, nullptr);
  CUDAStreamGuardHandle g1 = nullptr, g2 = nullptr;
  ASSERT_SHIM_OK(aoti_torch_create_cuda_stream_guard(s1, 0, &g1));
  EXPECT_SHIM_OK(aoti_torch_get_current_cuda_stream(0, &cur));
  EXPECT_EQ(cur, s1);
  {
    // Allocation is stream-ordered on the current stream: memory is usable by work queued on s1.
    AtenTensorHandle t = Cuda({256}, {1}, kF32);
    ASSERT_SHIM_OK(aoti_torch_zero_(t));
    bool v = true;
    AtenTensorHandle first = nullptr;
    int64_t one = 1;
    ASSERT_SHIM_OK(aoti_torch__reinterpret_tensor(t, 1, &one, &one, 255, &first));
    EXPECT_SHIM_OK(aoti_torch_item_bool(first, &v));
    EXPECT_FALSE(v);
    EXPECT_SHIM_OK(aoti_torch_delete_tensor_object(first));
  }
  ASSERT_SHIM_OK(aoti_torch_create_cuda_stream_guard(s2, 0, &g2));  // nested
  EXPECT_SHIM_OK(aoti_torch_get_current_cuda_stream(0, &cur));
  EXPECT_EQ(cur, s2);
  // Another thread has its own current stream.
  void* other = reinterpret_cast<void*>(0x1);
  std::thread([&] { (void)aoti_torch_get_current_cuda_stream(0, &other); }).join();
  EXPECT_EQ(other, nullptr);
  ASSERT_SHIM_OK(aoti_torch_delete_cuda_stream_guard(g2));
  EXPECT_SHIM_OK(aoti_torch_get_current_cuda_stream(0, &cur));
  EXPECT_EQ(cur, s1);
  DeleteOwned();  // frees on s1, before it is destroyed
  ASSERT_SHIM_OK(aoti_torch_delete_cuda_stream_guard(g1));
  EXPECT_SHIM_OK(aoti_torch_get_current_cuda_stream(0, &cur));
  EXPECT_EQ(cur, nullptr);
  EXPECT_EQ(cudaStreamSynchronize(s1), cudaSuccess);
  cudaStreamDestroy(s1);
  cudaStreamDestroy(s2);
}

TEST_F(CudaShims, DeviceGuardCreateSetIndexDelete) {
  AOTIRT_REQUIRE_GPU();
  CUDAGuardHandle g = nullptr;
  ASSERT_SHIM_OK(aoti_torch_create_cuda_guard(0, &g));
  int d = -1;
  EXPECT_EQ(cudaGetDevice(&d), cudaSuccess);
  EXPECT_EQ(d, 0);
  EXPECT_SHIM_OK(aoti_torch_cuda_guard_set_index(g, 0));
  EXPECT_SHIM_ERROR(aoti_torch_cuda_guard_set_index(g, 99), "aoti_torch_cuda_guard_set_index", "out of range");
  EXPECT_SHIM_OK(aoti_torch_delete_cuda_guard(g));
  CUDAGuardHandle bad = nullptr;
  EXPECT_SHIM_ERROR(aoti_torch_create_cuda_guard(99, &bad), "aoti_torch_create_cuda_guard", "out of range");
  CUDAStreamGuardHandle bad_s = nullptr;
  EXPECT_SHIM_ERROR(aoti_torch_create_cuda_stream_guard(nullptr, 99, &bad_s), "aoti_torch_create_cuda_stream_guard",
                    "out of range");
  EXPECT_EQ(bad, nullptr);
  EXPECT_EQ(bad_s, nullptr);
}

// For each dtype pair and layout pair: the device path (H2D, D2D with conversion, D2H; and the direct H2D / D2H
// conversions) must give the same bytes as the host copy, which the CPU tests pin against torch.
TEST_F(CudaShims, CopiesWithConversionAndLayoutsMatchTheHostReference) {
  AOTIRT_REQUIRE_GPU();
  const int32_t dtypes[] = {kU8, kI8, kI32, kI64, kF16, kF32, kF64, kBool, kBF16};
  struct Layout {
    std::vector<int64_t> sizes, strides;
  };
  // Same logical shape 3x5: contiguous, column-major, padded rows.
  const Layout layouts[] = {{{3, 5}, {5, 1}}, {{3, 5}, {1, 3}}, {{3, 5}, {8, 1}}};
  for (int32_t sd : dtypes) {
    for (int32_t dd : dtypes) {
      for (const Layout& la : layouts) {
        for (const Layout& lb : layouts) {
          SCOPED_TRACE("src dtype " + std::to_string(sd) + " -> dst dtype " + std::to_string(dd) + ", strides " +
                       ::testing::PrintToString(la.strides) + " -> " + ::testing::PrintToString(lb.strides));
          AtenTensorHandle h_src = MakeStrided(la.sizes, la.strides, sd);
          {
            AtenTensorHandle dense = MakeEmpty({3, 5}, sd);
            FillHost(dense);
            ASSERT_SHIM_OK(aoti_torch_copy_(h_src, dense, 0));
          }
          AtenTensorHandle ref = MakeEmpty({3, 5}, dd);
          ASSERT_SHIM_OK(aoti_torch_copy_(ref, h_src, 0));
          const int64_t nbytes = 15 * ElementSize(dd);
          // H2D same dtype (strided), D2D with conversion (the kernel), D2H.
          AtenTensorHandle d_src = Cuda(la.sizes, la.strides, sd);
          AtenTensorHandle d_dst = Cuda(lb.sizes, lb.strides, dd);
          ASSERT_SHIM_OK(aoti_torch_copy_(d_src, h_src, 0));
          ASSERT_SHIM_OK(aoti_torch_copy_(d_dst, d_src, 0));
          AtenTensorHandle out1 = MakeEmpty({3, 5}, dd);
          ASSERT_SHIM_OK(aoti_torch_copy_(out1, d_dst, 0));
          ExpectSameHost(out1, ref, nbytes, "H2D, D2D convert, D2H");
          // H2D with conversion straight into a strided device tensor.
          AtenTensorHandle d_dst2 = Cuda(lb.sizes, lb.strides, dd);
          ASSERT_SHIM_OK(aoti_torch_copy_(d_dst2, h_src, 0));
          AtenTensorHandle out2 = MakeEmpty({3, 5}, dd);
          ASSERT_SHIM_OK(aoti_torch_copy_(out2, d_dst2, 0));
          ExpectSameHost(out2, ref, nbytes, "H2D convert");
          // D2H with conversion from a strided device tensor into a strided host tensor.
          AtenTensorHandle out3 = MakeStrided(lb.sizes, lb.strides, dd);
          ASSERT_SHIM_OK(aoti_torch_copy_(out3, d_src, 0));
          AtenTensorHandle out3d = MakeEmpty({3, 5}, dd);
          ASSERT_SHIM_OK(aoti_torch_copy_(out3d, out3, 0));
          ExpectSameHost(out3d, ref, nbytes, "D2H convert");
          DeleteOwned();
        }
      }
    }
  }
}

TEST_F(CudaShims, DeviceInt64ToFloatRoundsOnceLikeTorch) {
  AOTIRT_REQUIRE_GPU();
  int64_t v = (int64_t{1} << 54) + (int64_t{1} << 30) + 1;
  AtenTensorHandle h = MakeBlob(&v, {1}, {1}, kI64);
  AtenTensorHandle d = Cuda({1}, {1}, kI64), df = Cuda({1}, {1}, kF32);
  ASSERT_SHIM_OK(aoti_torch_copy_(d, h, 0));
  ASSERT_SHIM_OK(aoti_torch_copy_(df, d, 0));  // D2D conversion runs the kernel
  float out = 0;
  AtenTensorHandle ho = MakeBlob(&out, {1}, {1}, kF32);
  ASSERT_SHIM_OK(aoti_torch_copy_(ho, df, 0));
  EXPECT_EQ(out, std::ldexp(1.0f, 54) + std::ldexp(1.0f, 31));
}

TEST_F(CudaShims, DeviceCopyShapeMismatchFails) {
  AOTIRT_REQUIRE_GPU();
  AtenTensorHandle a = Cuda({2, 3}, {3, 1}, kF32), b = Cuda({3, 2}, {1, 3}, kF16), c = Cuda({5}, {1}, kF32);
  EXPECT_SHIM_ERROR(aoti_torch_copy_(a, b, 0), "aoti_torch_copy_", "shapes differ");
  EXPECT_SHIM_ERROR(aoti_torch_copy_(a, c, 0), "aoti_torch_copy_", "element counts differ");
}

TEST_F(CudaShims, ClonePreserveStridesOnDevice) {
  AOTIRT_REQUIRE_GPU();
  AtenTensorHandle h = MakeEmpty({12}, kF32);
  for (int i = 0; i < 12; ++i) Data<float>(h)[i] = static_cast<float>(i);
  AtenTensorHandle d = Cuda({12}, {1}, kF32);
  ASSERT_SHIM_OK(aoti_torch_copy_(d, h, 0));
  int64_t sizes[] = {2, 3}, strides[] = {4, 1};
  AtenTensorHandle v = nullptr, c = nullptr, cc = nullptr;
  ASSERT_SHIM_OK(aoti_torch__reinterpret_tensor(d, 2, sizes, strides, 2, &v));
  Own(v);
  ASSERT_SHIM_OK(aoti_torch_clone_preserve_strides(v, &c));
  Own(c);
  EXPECT_EQ(Strides(c), (std::vector<int64_t>{4, 1}));
  int32_t dev = -1;
  EXPECT_SHIM_OK(aoti_torch_get_device_type(c, &dev));
  EXPECT_EQ(dev, kCUDA);
  EXPECT_NE(Data<void>(c), Data<void>(v));
  std::vector<unsigned char> bytes = StorageBytes(c);
  ASSERT_EQ(bytes.size(), 7u * 4);
  const float* f = reinterpret_cast<const float*>(bytes.data());
  for (int r = 0; r < 2; ++r)
    for (int k = 0; k < 3; ++k) EXPECT_EQ(f[r * 4 + k], 2 + r * 4 + k);
  // And clone (contiguous) of the same view.
  ASSERT_SHIM_OK(aoti_torch_clone(v, &cc));
  Own(cc);
  EXPECT_EQ(Strides(cc), (std::vector<int64_t>{3, 1}));
  AtenTensorHandle back = MakeEmpty({2, 3}, kF32);
  ASSERT_SHIM_OK(aoti_torch_copy_(back, cc, 0));
  for (int r = 0; r < 2; ++r)
    for (int k = 0; k < 3; ++k) EXPECT_EQ(Data<float>(back)[r * 3 + k], 2 + r * 4 + k);
}

TEST_F(CudaShims, ZeroOfNonContiguousDeviceViewLeavesGaps) {
  AOTIRT_REQUIRE_GPU();
  AtenTensorHandle h = MakeEmpty({20}, kBF16);
  for (int i = 0; i < 20; ++i) Data<uint16_t>(h)[i] = 0x3f80;  // 1.0
  AtenTensorHandle d = Cuda({20}, {1}, kBF16);
  ASSERT_SHIM_OK(aoti_torch_copy_(d, h, 0));
  int64_t sizes[] = {3, 3}, strides[] = {5, 2};
  AtenTensorHandle v = nullptr;
  ASSERT_SHIM_OK(aoti_torch__reinterpret_tensor(d, 2, sizes, strides, 5, &v));
  Own(v);
  ASSERT_SHIM_OK(aoti_torch_zero_(v));
  ASSERT_SHIM_OK(aoti_torch_zero_(Cuda({0}, {1}, kF32)));
  std::vector<unsigned char> bytes = StorageBytes(d);
  const uint16_t* p = reinterpret_cast<const uint16_t*>(bytes.data());
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 5; ++c)
      EXPECT_EQ(p[r * 5 + c], (r >= 1 && c % 2 == 0) ? 0 : 0x3f80) << r << "," << c;
  // Contiguous zero_ (the zero-fill kernel path).
  ASSERT_SHIM_OK(aoti_torch_zero_(d));
  bytes = StorageBytes(d);
  for (unsigned char b : bytes) EXPECT_EQ(b, 0);
}

// Contiguous zero_ is a kernel (copy_kernel.h's LaunchZeroFill): 16-byte stores over the aligned body, byte stores
// for an unaligned head and the tail. Every offset of a byte view 0..17 and sizes around the 16-byte edges: exactly
// [offset, offset + n) becomes 0, the bytes around keep their 0xAB; and captured, zero_ is a kernel node, not a
// memset node (which costs host and GPU time on each replay: benchmarks/graph_launch.py).
TEST_F(CudaShims, ContiguousZeroIsAKernelThatWritesExactlyItsBytes) {
  AOTIRT_REQUIRE_GPU();
  constexpr int64_t kBytes = 70000;
  AtenTensorHandle d = Cuda({kBytes}, {1}, kU8);
  for (int64_t offset : {0, 1, 3, 8, 15, 16, 17}) {
    for (int64_t n : {1, 2, 15, 16, 17, 31, 33, 48, 1000, 65537}) {
      ASSERT_EQ(cudaMemset(Data<char>(d), 0xAB, kBytes), cudaSuccess);
      AtenTensorHandle v = nullptr;
      int64_t one = 1;
      ASSERT_SHIM_OK(aoti_torch__reinterpret_tensor(d, 1, &n, &one, offset, &v));
      Own(v);
      ASSERT_SHIM_OK(aoti_torch_zero_(v));
      std::vector<unsigned char> bytes = StorageBytes(d);
      int64_t wrong = 0;
      for (int64_t i = 0; i < kBytes; ++i) wrong += bytes[i] != ((i >= offset && i < offset + n) ? 0 : 0xAB);
      EXPECT_EQ(wrong, 0) << "offset " << offset << ", " << n << " bytes";
    }
  }
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  CUDAStreamGuardHandle guard = nullptr;
  ASSERT_SHIM_OK(aoti_torch_create_cuda_stream_guard(s, 0, &guard));
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  const AOTITorchError rc = aoti_torch_zero_(d);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  ASSERT_SHIM_OK(rc);
  size_t count = 0;
  ASSERT_EQ(cudaGraphGetNodes(graph, nullptr, &count), cudaSuccess);
  std::vector<cudaGraphNode_t> nodes(count);
  ASSERT_EQ(cudaGraphGetNodes(graph, nodes.data(), &count), cudaSuccess);
  ASSERT_EQ(count, 1u);
  cudaGraphNodeType type{};
  ASSERT_EQ(cudaGraphNodeGetType(nodes[0], &type), cudaSuccess);
  EXPECT_EQ(type, cudaGraphNodeTypeKernel);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaMemset(Data<char>(d), 0xAB, kBytes), cudaSuccess);
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  for (unsigned char b : StorageBytes(d)) ASSERT_EQ(b, 0);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  ASSERT_SHIM_OK(aoti_torch_delete_cuda_stream_guard(guard));
  cudaStreamDestroy(s);
}

TEST_F(CudaShims, ItemBoolOnDevice) {
  AOTIRT_REQUIRE_GPU();
  const std::pair<float, bool> cases[] = {{0.0f, false}, {-0.0f, false}, {0.25f, true}, {std::nanf(""), true}};
  for (auto [value, want] : cases) {
    float v = value;
    AtenTensorHandle h = MakeBlob(&v, {}, {}, kF32);
    AtenTensorHandle d = nullptr;
    ASSERT_SHIM_OK(aoti_torch_empty_strided(0, nullptr, nullptr, kF32, kCUDA, 0, &d));
    Own(d);
    ASSERT_SHIM_OK(aoti_torch_copy_(d, h, 0));
    bool got = !want;
    ASSERT_SHIM_OK(aoti_torch_item_bool(d, &got));
    EXPECT_EQ(got, want) << value;
  }
  // A one-element strided view inside a larger device tensor, of an integer dtype.
  int32_t vals[4] = {0, 0, 7, 0};
  AtenTensorHandle h = MakeBlob(vals, {4}, {1}, kI32);
  AtenTensorHandle d = Cuda({4}, {1}, kI32);
  ASSERT_SHIM_OK(aoti_torch_copy_(d, h, 0));
  int64_t one = 1;
  AtenTensorHandle at2 = nullptr, at3 = nullptr;
  ASSERT_SHIM_OK(aoti_torch__reinterpret_tensor(d, 1, &one, &one, 2, &at2));
  Own(at2);
  ASSERT_SHIM_OK(aoti_torch__reinterpret_tensor(d, 1, &one, &one, 3, &at3));
  Own(at3);
  bool b2 = false, b3 = true;
  EXPECT_SHIM_OK(aoti_torch_item_bool(at2, &b2));
  EXPECT_SHIM_OK(aoti_torch_item_bool(at3, &b3));
  EXPECT_TRUE(b2);
  EXPECT_FALSE(b3);
  bool unused;
  EXPECT_SHIM_ERROR(aoti_torch_item_bool(d, &unused), "aoti_torch_item_bool", "needs a one-element tensor");
}

// What a stream capture holds besides kernels: memory nodes from stream-ordered allocations made while capturing.
struct NodeCounts {
  int allocs = 0, frees = 0, memcpys = 0, memsets = 0, kernels = 0;
};
NodeCounts CountNodes(cudaGraph_t g) {
  size_t n = 0;
  EXPECT_EQ(cudaGraphGetNodes(g, nullptr, &n), cudaSuccess);
  std::vector<cudaGraphNode_t> nodes(n);
  if (n > 0) EXPECT_EQ(cudaGraphGetNodes(g, nodes.data(), &n), cudaSuccess);
  NodeCounts c;
  for (auto node : nodes) {
    cudaGraphNodeType t;
    EXPECT_EQ(cudaGraphNodeGetType(node, &t), cudaSuccess);
    c.allocs += t == cudaGraphNodeTypeMemAlloc;
    c.frees += t == cudaGraphNodeTypeMemFree;
    c.memcpys += t == cudaGraphNodeTypeMemcpy;
    c.memsets += t == cudaGraphNodeTypeMemset;
    c.kernels += t == cudaGraphNodeTypeKernel;
  }
  return c;
}

// A capture that allocates a tensor, copies into it, and allocates/zeroes/frees a temporary, then allocates again.
// With a capture pool the graph holds the memcpy and the zero-fill kernel only, replays write the pool block, the freed
// temporary's block is reused, and the output block outlives the pool's release until its tensor is deleted.
// Without one the same capture holds memory nodes (what the pool removes).
TEST_F(CudaShims, CapturePoolKeepsTheShimsAllocationsOutOfTheGraph) {
  AOTIRT_REQUIRE_GPU();
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  CUDAStreamGuardHandle guard = nullptr;
  ASSERT_SHIM_OK(aoti_torch_create_cuda_stream_guard(s, 0, &guard));
  const int64_t n = 1024;
  AtenTensorHandle x = Cuda({n}, {1}, kF32);
  std::vector<float> host(n);
  for (int pooled = 1; pooled >= 0; --pooled) {
    int64_t pool = 0;
    if (pooled) ASSERT_SHIM_OK(aotirt_capture_pool_begin(0, s, &pool));
    ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed), cudaSuccess);
    AtenTensorHandle out = nullptr, tmp = nullptr, again = nullptr;
    int64_t sizes[] = {n}, strides[] = {1};
    ASSERT_SHIM_OK(aoti_torch_empty_strided(1, sizes, strides, kF32, kCUDA, 0, &out));
    ASSERT_SHIM_OK(aoti_torch_copy_(out, x, 0));
    ASSERT_SHIM_OK(aoti_torch_empty_strided(1, sizes, strides, kF32, kCUDA, 0, &tmp));
    ASSERT_SHIM_OK(aoti_torch_zero_(tmp));
    void* tmp_ptr = Data<void>(tmp);
    ASSERT_SHIM_OK(aoti_torch_delete_tensor_object(tmp));
    int64_t smaller[] = {n - 10};
    ASSERT_SHIM_OK(aoti_torch_empty_strided(1, smaller, strides, kF32, kCUDA, 0, &again));
    void* again_ptr = Data<void>(again);
    ASSERT_SHIM_OK(aoti_torch_delete_tensor_object(again));
    cudaGraph_t graph = nullptr;
    ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
    NodeCounts c = CountNodes(graph);
    EXPECT_EQ(c.memcpys, 1);
    EXPECT_EQ(c.memsets, 0);  // zero_ is a kernel (a memset node costs host time per replay)
    EXPECT_EQ(c.kernels, 1);
    if (pooled) {
      ASSERT_SHIM_OK(aotirt_capture_pool_end(pool));
      EXPECT_EQ(c.allocs, 0);
      EXPECT_EQ(c.frees, 0);
      EXPECT_EQ(again_ptr, tmp_ptr);  // the freed temporary's block, reused within the capture
      int64_t st[6] = {};
      int32_t count = 0;
      ASSERT_SHIM_OK(aotirt_capture_pool_stats(pool, st, 6, &count));
      EXPECT_EQ(count, 6);
      EXPECT_EQ(st[0], 2);      // blocks: out, tmp
      EXPECT_EQ(st[1], 2 * n * 4);
      EXPECT_EQ(st[2], 1);      // live: out
      EXPECT_EQ(st[3], 3);      // allocations
      EXPECT_EQ(st[4], 1);      // reuses
      EXPECT_EQ(st[5], 0);      // retained: no cuDNN call was captured
    } else {
      EXPECT_GE(c.allocs, 2);  // what the pool removes (the test would pass vacuously without this contrast)
    }
    cudaGraphExec_t exec = nullptr;
    ASSERT_EQ(cudaGraphInstantiateWithFlags(&exec, graph, cudaGraphInstantiateFlagAutoFreeOnLaunch), cudaSuccess);
    for (int round = 0; round < 3; ++round) {
      for (int64_t i = 0; i < n; ++i) host[i] = static_cast<float>(round * 1000 + i);
      ASSERT_EQ(cudaMemcpyAsync(Data<void>(x), host.data(), n * 4, cudaMemcpyHostToDevice, s), cudaSuccess);
      ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
      std::vector<float> got(n);
      ASSERT_EQ(cudaMemcpyAsync(got.data(), Data<void>(out), n * 4, cudaMemcpyDeviceToHost, s), cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
      EXPECT_EQ(got, host) << "round " << round << (pooled ? " (pooled)" : "");
    }
    ASSERT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
    ASSERT_EQ(cudaGraphDestroy(graph), cudaSuccess);
    if (pooled) {
      ASSERT_SHIM_OK(aotirt_capture_pool_release(pool));
      int64_t st[5] = {};
      int32_t count = 0;
      ASSERT_SHIM_OK(aotirt_capture_pool_stats(pool, st, 5, &count));  // `out` is still alive
      EXPECT_EQ(st[0], 1);
      EXPECT_SHIM_ERROR(aotirt_capture_pool_release(pool), "aotirt_capture_pool_release", "already released");
      ASSERT_SHIM_OK(aoti_torch_delete_tensor_object(out));
      EXPECT_SHIM_ERROR(aotirt_capture_pool_stats(pool, st, 5, &count), "aotirt_capture_pool_stats",
                        "no capture pool");
    } else {
      ASSERT_SHIM_OK(aoti_torch_delete_tensor_object(out));
    }
  }
  // Refused calls.
  int64_t pool = 0;
  EXPECT_SHIM_ERROR(aotirt_capture_pool_begin(0, nullptr, &pool), "aotirt_capture_pool_begin", "stream is null");
  EXPECT_SHIM_ERROR(aotirt_capture_pool_begin(99, s, &pool), "aotirt_capture_pool_begin", "out of range");
  ASSERT_SHIM_OK(aotirt_capture_pool_begin(0, s, &pool));
  int64_t other = 0;
  EXPECT_SHIM_ERROR(aotirt_capture_pool_begin(0, s, &other), "aotirt_capture_pool_begin", "already served");
  ASSERT_SHIM_OK(aotirt_capture_pool_release(pool));
  EXPECT_SHIM_ERROR(aotirt_capture_pool_end(pool), "aotirt_capture_pool_end", "no capture pool");
  DeleteOwned();
  ASSERT_SHIM_OK(aoti_torch_delete_cuda_stream_guard(guard));
  EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  cudaStreamDestroy(s);
}

}  // namespace
