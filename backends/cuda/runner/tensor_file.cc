#include "backends/cuda/runner/tensor_file.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace aotirt {
namespace {
const std::map<std::string, int32_t>& Names() {
  static const std::map<std::string, int32_t> m = {{"U8", 0},  {"I8", 1},  {"I16", 2},   {"I32", 3},
                                                   {"I64", 4}, {"F16", 5}, {"F32", 6},   {"F64", 7},
                                                   {"BOOL", 11}, {"BF16", 15}};
  return m;
}
bool AllDigits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}
}  // namespace

int32_t DTypeFromSafetensors(const std::string& name) {
  auto it = Names().find(name);
  if (it == Names().end()) throw std::runtime_error("unsupported safetensors dtype '" + name + "'");
  return it->second;
}

std::string DTypeToSafetensors(int32_t code) {
  for (const auto& kv : Names())
    if (kv.second == code) return kv.first;
  throw std::runtime_error("dtype code " + std::to_string(code) + " has no safetensors name");
}

int64_t DTypeSize(int32_t code) {
  switch (code) {
    case 0: case 1: case 11: return 1;
    case 2: case 5: case 15: return 2;
    case 3: case 6: return 4;
    case 4: case 7: return 8;
  }
  throw std::runtime_error("unsupported dtype code " + std::to_string(code));
}

std::vector<HostTensor> ReadTensorFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open tensor file '" + path + "'");
  f.seekg(0, std::ios::end);
  const uint64_t file_size = static_cast<uint64_t>(f.tellg());
  f.seekg(0);
  uint8_t len_bytes[8];
  if (file_size < 8 || !f.read(reinterpret_cast<char*>(len_bytes), 8))
    throw std::runtime_error("'" + path + "' is too short to be a safetensors file");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | len_bytes[i];
  if (header_len > file_size - 8) throw std::runtime_error("'" + path + "': header length exceeds the file");
  std::string header(header_len, '\0');
  f.read(&header[0], static_cast<std::streamsize>(header_len));
  auto j = nlohmann::json::parse(header, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw std::runtime_error("'" + path + "': header is not a JSON object");
  const uint64_t data_start = 8 + header_len, data_size = file_size - data_start;
  std::vector<std::pair<uint64_t, HostTensor>> items;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    const auto& v = it.value();
    HostTensor t;
    t.name = it.key();
    try {
      t.dtype = DTypeFromSafetensors(v.at("dtype").get<std::string>());
      t.shape = v.at("shape").get<std::vector<int64_t>>();
      auto offs = v.at("data_offsets").get<std::vector<uint64_t>>();
      if (offs.size() != 2 || offs[0] > offs[1] || offs[1] > data_size)
        throw std::runtime_error("data_offsets out of range");
      int64_t numel = 1;
      for (int64_t s : t.shape) {
        if (s < 0) throw std::runtime_error("negative dimension");
        numel *= s;
      }
      if (static_cast<uint64_t>(numel * DTypeSize(t.dtype)) != offs[1] - offs[0])
        throw std::runtime_error("shape and dtype do not match the byte range");
      t.data.resize(offs[1] - offs[0]);
      f.seekg(static_cast<std::streamoff>(data_start + offs[0]));
      if (!t.data.empty() && !f.read(reinterpret_cast<char*>(t.data.data()), static_cast<std::streamsize>(t.data.size())))
        throw std::runtime_error("data truncated");
      items.emplace_back(offs[0], std::move(t));
    } catch (const std::exception& e) {
      throw std::runtime_error("'" + path + "': tensor '" + it.key() + "': " + e.what());
    }
  }
  bool numeric = std::all_of(items.begin(), items.end(), [](const auto& p) { return AllDigits(p.second.name); });
  std::sort(items.begin(), items.end(), [numeric](const auto& a, const auto& b) {
    return numeric ? std::stoll(a.second.name) < std::stoll(b.second.name) : a.first < b.first;
  });
  std::vector<HostTensor> out;
  for (auto& p : items) out.push_back(std::move(p.second));
  return out;
}

void WriteTensorFile(const std::string& path, const std::vector<HostTensor>& tensors) {
  nlohmann::json j = nlohmann::json::object();
  uint64_t off = 0;
  for (const auto& t : tensors) {
    j[t.name] = {{"dtype", DTypeToSafetensors(t.dtype)}, {"shape", t.shape}, {"data_offsets", {off, off + t.data.size()}}};
    off += t.data.size();
  }
  std::string header = j.dump();
  while ((8 + header.size()) % 8) header.push_back(' ');  // align the data section, as the reference writer does
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw std::runtime_error("cannot write tensor file '" + path + "'");
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) f.put(static_cast<char>((n >> (8 * i)) & 0xff));
  f.write(header.data(), static_cast<std::streamsize>(header.size()));
  for (const auto& t : tensors) f.write(reinterpret_cast<const char*>(t.data.data()), static_cast<std::streamsize>(t.data.size()));
  if (!f) throw std::runtime_error("writing '" + path + "' failed");
}

}  // namespace aotirt
