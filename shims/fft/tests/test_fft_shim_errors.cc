// The FFT entries and view_as_real / view_as_complex on a CPU machine. FFT refusals that need no device return
// AOTI_TORCH_FAILURE with a message naming the function and the reason (fft_plan.h) and leave nothing allocated; a
// valid CPU operand is refused for the device after planning, before cuFFT is loaded. The views are metadata only,
// so they run here in full: sizes, strides, offsets, dtypes and the storage they share, with torch's checks.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "shims/include/aotirt/shim.h"
#include "tests/util/host_blob.h"

namespace {

using Blob = aotirt_testing::HostBlob;
using aotirt_testing::Refused;
const std::string kR2C = "aoti_torch_cuda__fft_r2c: ";
const std::string kC2C = "aoti_torch_cuda__fft_c2c: ";

std::string R2C(AtenTensorHandle self, std::vector<int64_t> dim, int64_t norm = 0, int32_t onesided = 1) {
  AtenTensorHandle out = nullptr;
  std::string msg = Refused([&] {
    return aoti_torch_cuda__fft_r2c(self, dim.data(), static_cast<int64_t>(dim.size()), norm, onesided, &out);
  });
  EXPECT_EQ(out, nullptr);
  return msg;
}

std::string C2C(AtenTensorHandle self, std::vector<int64_t> dim, int64_t norm = 0) {
  AtenTensorHandle out = nullptr;
  std::string msg = Refused([&] {
    return aoti_torch_cuda__fft_c2c(self, dim.data(), static_cast<int64_t>(dim.size()), norm, 1, &out);
  });
  EXPECT_EQ(out, nullptr);
  return msg;
}

std::vector<int64_t> Get(AtenTensorHandle h, AOTITorchError (*f)(AtenTensorHandle, int64_t**)) {
  int64_t dim = 0, *p = nullptr;
  EXPECT_EQ(aoti_torch_get_dim(h, &dim), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(f(h, &p), AOTI_TORCH_SUCCESS);
  return std::vector<int64_t>(p, p + dim);
}

TEST(FftShimErrors, ValidCpuOperandsAreRefusedForTheDevice) {
  Blob x({4, 8}, aoti_torch_dtype_float32(), 4), z({4, 8}, aoti_torch_dtype_complex64(), 8);
  EXPECT_EQ(R2C(x.h, {1}), kR2C + "an operand is on cpu; this shim takes CUDA tensors");
  EXPECT_EQ(R2C(x.h, {0, 1}, 2, 0), kR2C + "an operand is on cpu; this shim takes CUDA tensors");
  EXPECT_EQ(C2C(z.h, {0, 1}, 1), kC2C + "an operand is on cpu; this shim takes CUDA tensors");
  int64_t d = 1;
  EXPECT_EQ(Refused([&] { return aoti_torch_cuda__fft_r2c(x.h, &d, 1, 0, 1, nullptr); }),
            kR2C + "the return pointer is null");
  AtenTensorHandle out = nullptr;
  EXPECT_EQ(Refused([&] { return aoti_torch_cuda__fft_c2c(z.h, nullptr, 2, 0, 1, &out); }),
            kC2C + "dim is null with dim_len_ 2");
  EXPECT_NE(R2C(nullptr, {0}).find(kR2C), std::string::npos);
}

TEST(FftShimErrors, RefusalsNameTheReason) {
  Blob x({4, 8}, aoti_torch_dtype_float32(), 4), h({8}, aoti_torch_dtype_float16(), 2),
      i({8}, aoti_torch_dtype_int64(), 8), z({4, 8}, aoti_torch_dtype_complex64(), 8), e({4, 0}, 6, 4);
  EXPECT_EQ(R2C(h.h, {0}), kR2C + "self is float16; this shim's FFTs take float32 and float64 (cast the input to "
                                  "float32 first)");
  EXPECT_EQ(R2C(i.h, {0}), kR2C + "a real-to-complex FFT takes a floating-point tensor, got int64");
  EXPECT_EQ(R2C(z.h, {0}), kR2C + "a real-to-complex FFT takes a floating-point tensor, got complex64");
  EXPECT_EQ(C2C(x.h, {0}), kC2C + "a complex-to-complex FFT takes a complex tensor, got float32");
  EXPECT_EQ(R2C(x.h, {2}), kR2C + "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  EXPECT_EQ(R2C(x.h, {}), kR2C + "dim is empty: a real-to-complex FFT transforms at least one dim");
  EXPECT_EQ(R2C(x.h, {1, -1}), kR2C + "dim 1 appears multiple times in the list of dims");
  EXPECT_EQ(C2C(z.h, {1}, 5), kC2C + "normalization is 5; torch's modes are 0 (none), 1 (by_root_n) and 2 (by_n)");
  EXPECT_EQ(R2C(e.h, {1}), kR2C + "Invalid number of data points (0) specified");
}

TEST(ViewAsRealAndComplex, ShareTheStorageWithTorchsLayouts) {
  Blob z({3, 4}, aoti_torch_dtype_complex64(), 8);
  // A transposed view at an offset: view_as_real doubles strides and offset, adds [2] / [1].
  const int64_t sizes[] = {4, 2}, strides[] = {1, 4};
  AtenTensorHandle zt = nullptr, r = nullptr, c = nullptr;
  ASSERT_EQ(aoti_torch__reinterpret_tensor(z.h, 2, sizes, strides, 1, &zt), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_cuda_view_as_real(zt, &r), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(Get(r, aoti_torch_get_sizes), (std::vector<int64_t>{4, 2, 2}));
  EXPECT_EQ(Get(r, aoti_torch_get_strides), (std::vector<int64_t>{2, 8, 1}));
  int64_t off = -1;
  int32_t dtype = -1;
  ASSERT_EQ(aoti_torch_get_storage_offset(r, &off), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_get_dtype(r, &dtype), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(off, 2);
  EXPECT_EQ(dtype, aoti_torch_dtype_float32());
  void *pz = nullptr, *pr = nullptr;
  ASSERT_EQ(aoti_torch_get_data_ptr(zt, &pz), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_get_data_ptr(r, &pr), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(pz, pr);
  // ... and view_as_complex takes it back.
  ASSERT_EQ(aoti_torch_cuda_view_as_complex(r, &c), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(Get(c, aoti_torch_get_sizes), (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(Get(c, aoti_torch_get_strides), (std::vector<int64_t>{1, 4}));
  ASSERT_EQ(aoti_torch_get_storage_offset(c, &off), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_get_dtype(c, &dtype), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(off, 1);
  EXPECT_EQ(dtype, aoti_torch_dtype_complex64());
  // complex128 <-> float64
  Blob w({5}, aoti_torch_dtype_complex128(), 16);
  AtenTensorHandle wr = nullptr;
  ASSERT_EQ(aoti_torch_cuda_view_as_real(w.h, &wr), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_get_dtype(wr, &dtype), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(dtype, aoti_torch_dtype_float64());
  EXPECT_EQ(Get(wr, aoti_torch_get_sizes), (std::vector<int64_t>{5, 2}));
  for (AtenTensorHandle t : {zt, r, c, wr}) EXPECT_EQ(aoti_torch_delete_tensor_object(t), AOTI_TORCH_SUCCESS);
}

TEST(ViewAsRealAndComplex, RefuseWhatTorchRefuses) {
  const std::string kReal = "aoti_torch_cuda_view_as_real: ", kCx = "aoti_torch_cuda_view_as_complex: ";
  Blob x({3, 4}, aoti_torch_dtype_float32(), 4), pair({3, 2}, aoti_torch_dtype_float32(), 4),
      h({3, 2}, aoti_torch_dtype_float16(), 2), i({3, 2}, aoti_torch_dtype_int32(), 4);
  AtenTensorHandle out = nullptr;
  auto real = [&](AtenTensorHandle t) { return Refused([&] { return aoti_torch_cuda_view_as_real(t, &out); }); };
  auto cx = [&](AtenTensorHandle t) { return Refused([&] { return aoti_torch_cuda_view_as_complex(t, &out); }); };
  EXPECT_EQ(real(x.h).rfind(kReal + "view_as_real is only supported for complex tensors", 0), 0u);
  EXPECT_EQ(cx(x.h), kCx + "Tensor must have a last dimension of size 2");
  EXPECT_EQ(cx(h.h), kCx + "view_as_complex of a float16 tensor makes complex32, which this library does not store");
  EXPECT_EQ(cx(i.h), kCx + "view_as_complex is only supported for float, double and half tensors, but got a tensor "
                           "of scalar type: int32");
  // a [3, 2] view with last stride 3
  const int64_t ts[] = {3, 2}, tst[] = {1, 3}, odd_st[] = {3, 1}, sz1[] = {1, 2}, st1[] = {2, 1};
  AtenTensorHandle t = nullptr, odd = nullptr, offs = nullptr;
  ASSERT_EQ(aoti_torch__reinterpret_tensor(pair.h, 2, ts, tst, 0, &t), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(cx(t), kCx + "Tensor must have a last dimension with stride 1");
  const int64_t s2[] = {2, 2};
  ASSERT_EQ(aoti_torch__reinterpret_tensor(pair.h, 2, s2, odd_st, 0, &odd), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(cx(odd), kCx + "Tensor must have a stride divisible by 2 for all but last dimension");
  ASSERT_EQ(aoti_torch__reinterpret_tensor(pair.h, 2, sz1, st1, 1, &offs), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(cx(offs), kCx + "Tensor must have a storage_offset divisible by 2");
  EXPECT_EQ(Refused([&] { return aoti_torch_cuda_view_as_real(x.h, nullptr); }), kReal + "ret0 is null");
  for (AtenTensorHandle v : {t, odd, offs}) EXPECT_EQ(aoti_torch_delete_tensor_object(v), AOTI_TORCH_SUCCESS);
}

}  // namespace
