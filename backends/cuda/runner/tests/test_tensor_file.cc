// The runner's safetensors reader/writer: round trips, numeric input order, and every malformed-file error.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "backends/cuda/runner/tensor_file.h"

namespace aotirt {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

void WriteRaw(const std::string& path, const std::string& header, const std::string& data) {
  std::ofstream f(path, std::ios::binary);
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) f.put(static_cast<char>((n >> (8 * i)) & 0xff));
  f << header << data;
}

std::string ErrorOf(const std::string& path) {
  try {
    ReadTensorFile(path);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(TensorFile, RoundTripKeepsDtypesShapesAndBytes) {
  HostTensor a{"1", 15, {2, 3}, std::vector<uint8_t>(12)};
  HostTensor b{"0", 11, {}, {1}};
  HostTensor c{"2", 4, {0, 5}, {}};
  for (size_t i = 0; i < a.data.size(); ++i) a.data[i] = static_cast<uint8_t>(i * 7);
  const std::string path = TempPath("roundtrip.safetensors");
  WriteTensorFile(path, {a, b, c});
  auto got = ReadTensorFile(path);
  ASSERT_EQ(got.size(), 3u);
  // All-numeric names come back in numeric order, whatever the file order.
  EXPECT_EQ(got[0].name, "0");
  EXPECT_EQ(got[1].name, "1");
  EXPECT_EQ(got[2].name, "2");
  EXPECT_EQ(got[1].dtype, 15);
  EXPECT_EQ(got[1].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(got[1].data, a.data);
  EXPECT_EQ(got[0].dtype, 11);
  EXPECT_TRUE(got[0].shape.empty());
  EXPECT_EQ(got[2].shape, (std::vector<int64_t>{0, 5}));
}

TEST(TensorFile, DtypeNamesMapBothWays) {
  for (const char* n : {"U8", "I8", "I16", "I32", "I64", "F16", "F32", "F64", "BOOL", "BF16"})
    EXPECT_EQ(DTypeToSafetensors(DTypeFromSafetensors(n)), n);
  EXPECT_THROW(DTypeFromSafetensors("C64"), std::runtime_error);
  EXPECT_THROW(DTypeToSafetensors(9), std::runtime_error);
}

TEST(TensorFile, MalformedFilesAreClearErrors) {
  EXPECT_NE(ErrorOf(TempPath("does_not_exist.safetensors")).find("cannot open"), std::string::npos);
  {
    std::ofstream(TempPath("short.safetensors"), std::ios::binary) << "abc";
    EXPECT_NE(ErrorOf(TempPath("short.safetensors")).find("too short"), std::string::npos);
  }
  {
    std::ofstream f(TempPath("hugeheader.safetensors"), std::ios::binary);
    for (int i = 0; i < 8; ++i) f.put(static_cast<char>(0x7f));
    f.close();
    EXPECT_NE(ErrorOf(TempPath("hugeheader.safetensors")).find("header length exceeds"), std::string::npos);
  }
  WriteRaw(TempPath("notjson.safetensors"), "{not json", "");
  EXPECT_NE(ErrorOf(TempPath("notjson.safetensors")).find("not a JSON object"), std::string::npos);
  WriteRaw(TempPath("range.safetensors"), R"({"0":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", "1234");
  EXPECT_NE(ErrorOf(TempPath("range.safetensors")).find("data_offsets out of range"), std::string::npos);
  WriteRaw(TempPath("mismatch.safetensors"), R"({"0":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})",
           "12345678");
  EXPECT_NE(ErrorOf(TempPath("mismatch.safetensors")).find("do not match the byte range"), std::string::npos);
  WriteRaw(TempPath("dtype.safetensors"), R"({"0":{"dtype":"C64","shape":[1],"data_offsets":[0,8]}})",
           "12345678");
  EXPECT_NE(ErrorOf(TempPath("dtype.safetensors")).find("unsupported safetensors dtype 'C64'"), std::string::npos);
  WriteRaw(TempPath("neg.safetensors"), R"({"0":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}})", "");
  EXPECT_NE(ErrorOf(TempPath("neg.safetensors")).find("negative dimension"), std::string::npos);
}

}  // namespace
}  // namespace aotirt
