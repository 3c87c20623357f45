// The tensor library's internal checks that the C ABI tests cannot reach on a machine without a GPU: operands on
// two GPUs (tensors over CUDA storage are made here without allocating), c10's dim wrapping, ATen's view-size
// inference and computeStride corner cases, and the complex dtype helpers.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "shims/common/error.h"
#include "shims/tests/shim_test_util.h"
#include "shims/tensor/tensor.h"

namespace aotirt {
namespace {

// A tensor that claims CUDA memory on `device` (never dereferenced: the checks only read metadata).
std::unique_ptr<Tensor> OnDevice(int32_t device_type, int32_t index) {
  auto s = std::make_shared<Storage>();
  s->data = reinterpret_cast<void*>(uintptr_t{0x1000});
  s->nbytes = 64;
  s->device_type = device_type;
  s->device_index = index;
  s->borrowed = true;
  return std::make_unique<Tensor>(s, std::vector<int64_t>{4}, std::vector<int64_t>{1}, 0, DType::kFloat32);
}


TEST(CheckCudaOperands, OperandsOnTwoGpusAreRefusedNamingBoth) {
  auto a = OnDevice(kDeviceCUDA, 0), b = OnDevice(kDeviceCUDA, 1), c = OnDevice(kDeviceCPU, 0);
  EXPECT_EQ(shimtest::ThrownMessage([&] { CheckCudaOperands("f", {a.get(), b.get()}); }),
            "f: the operands are on different GPUs (0 and 1)");
  EXPECT_EQ(shimtest::ThrownMessage([&] { CheckCudaOperands("f", {b.get(), nullptr, a.get()}); }),
            "f: the operands are on different GPUs (1 and 0)");
  EXPECT_EQ(shimtest::ThrownMessage([&] { CheckCudaOperands("f", {a.get(), c.get()}); }),
            "f: an operand is on cpu; this shim takes CUDA tensors");
  EXPECT_EQ(CheckCudaOperands("f", {b.get(), nullptr, b.get()}), 1);
  EXPECT_EQ(CheckCudaOperands("f", {nullptr}), 0);
}

TEST(WrapDim, FollowsC10) {
  EXPECT_EQ(WrapDim("f", -1, 3), 2);
  EXPECT_EQ(WrapDim("f", 0, 0), 0);   // a 0-d tensor takes 0 and -1
  EXPECT_EQ(WrapDim("f", -1, 0), 0);
  EXPECT_EQ(shimtest::ThrownMessage([&] { WrapDim("f", 3, 3); }),
            "f: Dimension out of range (expected to be in range of [-3, 2], but got 3)");
  EXPECT_EQ(shimtest::ThrownMessage([&] { WrapDim("f", 1, 0); }),
            "f: Dimension out of range (expected to be in range of [-1, 0], but got 1)");
}

TEST(InferViewSize, OneInferredDimAndTorchsMessages) {
  EXPECT_EQ(InferViewSize("f", {2, -1}, 12), (std::vector<int64_t>{2, 6}));
  EXPECT_EQ(InferViewSize("f", {}, 1), (std::vector<int64_t>{}));
  EXPECT_EQ(InferViewSize("f", {0, 3}, 0), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(shimtest::ThrownMessage([&] { InferViewSize("f", {}, 2); }), "f: shape '[]' is invalid for input of size 2");
  EXPECT_EQ(shimtest::ThrownMessage([&] { InferViewSize("f", {-1, 0}, 0); }),
            "f: cannot reshape tensor of 0 elements into shape [-1, 0] because the unspecified dimension size -1 "
            "can be any value and is ambiguous");
  EXPECT_NE(shimtest::ThrownMessage([&] { InferViewSize("f", {1LL << 62, 8}, 8); }).find("overflows int64"), std::string::npos);
}

TEST(ComputeViewStrides, ViewsAndTheirAbsence) {
  std::vector<int64_t> st;
  // a transposed [3, 4] cannot be flattened; its rows can be split
  EXPECT_FALSE(ComputeViewStrides({3, 4}, {1, 3}, {12}, &st));
  EXPECT_TRUE(ComputeViewStrides({3, 4}, {1, 3}, {3, 2, 2}, &st));
  EXPECT_EQ(st, (std::vector<int64_t>{1, 6, 3}));
  // size-1 dims anywhere, and a 0-d source
  EXPECT_TRUE(ComputeViewStrides({2, 1, 3}, {3, 100, 1}, {1, 6, 1}, &st));
  EXPECT_EQ(st, (std::vector<int64_t>{6, 1, 1}));
  EXPECT_TRUE(ComputeViewStrides({}, {}, {1, 1}, &st));
  EXPECT_EQ(st, (std::vector<int64_t>{1, 1}));
  // empty tensors: the same shape keeps its strides, another gets contiguous ones
  EXPECT_TRUE(ComputeViewStrides({0, 3}, {7, 2}, {0, 3}, &st));
  EXPECT_EQ(st, (std::vector<int64_t>{7, 2}));
  EXPECT_TRUE(ComputeViewStrides({0, 3}, {7, 2}, {3, 0, 2}, &st));
  EXPECT_EQ(st, (std::vector<int64_t>{2, 2, 1}));
}

TEST(ComplexDtypes, SizesNamesAndTheirRealTypes) {
  EXPECT_EQ(ElementSize(DType::kComplex64), 8);
  EXPECT_EQ(ElementSize(DType::kComplex128), 16);
  EXPECT_STREQ(DTypeName(9), "complex64");
  EXPECT_STREQ(DTypeName(10), "complex128");
  EXPECT_EQ(RealOfComplex(DType::kComplex128), DType::kFloat64);
  EXPECT_EQ(ComplexOfReal(DType::kFloat32), DType::kComplex64);
  EXPECT_EQ(ComplexOfReal(DType::kFloat16), DType::kBool);  // complex32: not stored
  EXPECT_FALSE(IsSupportedDType(8));                        // complex32
  EXPECT_TRUE(IsComplex(DType::kComplex64) && !IsComplex(DType::kFloat64));
}

}  // namespace
}  // namespace aotirt
