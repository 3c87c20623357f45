// Reading a .pt2 (a zip written by torch's PT2 archive writer) with minizip: the entry list, the wrapper .so, the
// constants blob and the wrapper's metadata JSON.
#include <minizip/unzip.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "backends/cuda/runtime/runtime.h"

namespace aotirt {
namespace {

struct ZipCloser {
  void operator()(void* z) const {
    if (z) unzClose(z);
  }
};
using ZipPtr = std::unique_ptr<void, ZipCloser>;

ZipPtr OpenZip(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw RuntimeError("cannot open package '" + path + "': " + std::strerror(errno));
  std::fclose(f);
  unzFile z = unzOpen64(path.c_str());
  if (!z) throw RuntimeError("'" + path + "' is not a readable zip archive, so not an AOTInductor package (.pt2)");
  return ZipPtr(z);
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::shared_ptr<Package> Package::Open(const std::string& path, const std::string& model_name) {
  auto pkg = std::shared_ptr<Package>(new Package());
  PackageContents& c = pkg->contents_;
  c.path = path;
  c.model_name = model_name;
  ZipPtr zip = OpenZip(path);
  for (int rc = unzGoToFirstFile(zip.get()); rc == UNZ_OK; rc = unzGoToNextFile(zip.get())) {
    char name[4096];
    unz_file_info64 info;
    if (unzGetCurrentFileInfo64(zip.get(), &info, name, sizeof(name), nullptr, 0, nullptr, 0) != UNZ_OK) {
      throw RuntimeError("package '" + path + "': corrupt zip directory");
    }
    if (info.size_filename >= sizeof(name))
      throw RuntimeError("package '" + path + "': an entry name is " + std::to_string(info.size_filename) +
                         " bytes long, more than this loader reads (" + std::to_string(sizeof(name) - 1) + ")");
    // Remember where each entry is: minizip's unzLocateFile refuses names of 256 bytes or more, and torch names a
    // package's entries after its file, so a long package name would make its own wrapper unreadable.
    unz64_file_pos pos;
    if (unzGetFilePos64(zip.get(), &pos) != UNZ_OK)
      throw RuntimeError("package '" + path + "': corrupt zip directory");
    pkg->positions_[name] = {pos.pos_in_zip_directory, pos.num_of_file};
    c.entries.emplace_back(name);
  }
  if (c.entries.empty()) throw RuntimeError("package '" + path + "' is an empty or corrupt zip archive");
  // torch writes <archive>/data/aotinductor/<model_name>/<hash>.wrapper.so (+ _weights.blob, _metadata.json).
  const std::string marker = "/data/aotinductor/" + model_name + "/";
  std::vector<std::string> models;
  for (const auto& e : c.entries) {
    auto pos = e.find("/data/aotinductor/");
    if (pos != std::string::npos) {
      auto rest = e.substr(pos + 18);
      auto slash = rest.find('/');
      if (slash != std::string::npos) models.push_back(rest.substr(0, slash));
    }
    if (e.find(marker) == std::string::npos) continue;
    if (EndsWith(e, ".so")) {
      if (!c.wrapper_entry.empty())
        throw RuntimeError("package '" + path + "': two wrapper libraries for model '" + model_name + "'");
      c.wrapper_entry = e;
    } else if (EndsWith(e, ".blob")) {
      c.weights_entry = e;
    }
  }
  if (c.wrapper_entry.empty()) {
    std::sort(models.begin(), models.end());
    models.erase(std::unique(models.begin(), models.end()), models.end());
    std::string have;
    for (auto& m : models) have += (have.empty() ? "" : ", ") + m;
    throw RuntimeError("package '" + path + "' has no compiled wrapper library for model '" + model_name + "'" +
                       (models.empty() ? std::string(" (no data/aotinductor/ folder: not an AOTInductor package)")
                                       : " (models in it: " + have + ")"));
  }
  // The metadata JSON sits next to the wrapper: <hash>.wrapper_metadata.json.
  std::string meta = c.wrapper_entry.substr(0, c.wrapper_entry.size() - 3) + "_metadata.json";
  if (std::find(c.entries.begin(), c.entries.end(), meta) != c.entries.end()) {
    auto bytes = pkg->Read(meta);
    auto j = nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object())
      throw RuntimeError("package '" + path + "': metadata '" + meta + "' is not a JSON object");
    for (auto it = j.begin(); it != j.end(); ++it)
      c.metadata[it.key()] = it.value().is_string() ? it.value().get<std::string>() : it.value().dump();
  }
  return pkg;
}

std::vector<uint8_t> Package::Read(const std::string& entry) const {
  ZipPtr zip = OpenZip(contents_.path);
  auto at = positions_.find(entry);
  if (at == positions_.end())
    throw RuntimeError("package '" + contents_.path + "' has no entry '" + entry + "'");
  unz64_file_pos pos;
  pos.pos_in_zip_directory = at->second.first;
  pos.num_of_file = at->second.second;
  if (unzGoToFilePos64(zip.get(), &pos) != UNZ_OK)
    throw RuntimeError("package '" + contents_.path + "': cannot find entry '" + entry + "' (changed on disk?)");
  unz_file_info64 info;
  if (unzGetCurrentFileInfo64(zip.get(), &info, nullptr, 0, nullptr, 0, nullptr, 0) != UNZ_OK ||
      unzOpenCurrentFile(zip.get()) != UNZ_OK)
    throw RuntimeError("package '" + contents_.path + "': cannot open entry '" + entry + "'");
  std::vector<uint8_t> out(static_cast<size_t>(info.uncompressed_size));
  size_t done = 0;
  while (done < out.size()) {
    unsigned chunk = static_cast<unsigned>(std::min<size_t>(out.size() - done, 1u << 30));
    int n = unzReadCurrentFile(zip.get(), out.data() + done, chunk);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  int close_rc = unzCloseCurrentFile(zip.get());  // checks the CRC
  if (done != out.size() || close_rc != UNZ_OK)
    throw RuntimeError("package '" + contents_.path + "': entry '" + entry + "' is truncated or corrupt (read " +
                       std::to_string(done) + " of " + std::to_string(out.size()) + " bytes)");
  return out;
}

void CheckShim(AOTITorchError err, const std::string& what) {
  if (err != AOTI_TORCH_SUCCESS) throw RuntimeError(what + ": " + aotirt_last_error());
}

}  // namespace aotirt
