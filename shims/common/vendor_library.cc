#include "shims/common/vendor_library.h"

#include <dlfcn.h>

#include <cstdlib>

#include "shims/common/env.h"
#include "shims/common/error.h"

namespace aotirt {

void SearchDirs::Add(const std::string& dir) {
  std::lock_guard<std::mutex> lock(mu_);
  dirs_.push_back(dir);
}

std::vector<std::string> SearchDirs::List() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dirs_;
}

std::vector<std::string> VendorCandidates(const VendorLibrary& lib, const SearchDirs& dirs) {
  std::vector<std::string> out;
  const char* env = std::getenv(lib.env_path);
  if (env != nullptr && env[0] != '\0') out.push_back(env);
  if (EnvFlag(lib.env_no_default, false)) return out;  // the one env-flag rule (common/env.h)
  out.push_back(lib.soname);  // bare name: the dynamic loader's search (LD_LIBRARY_PATH, ldconfig, RUNPATH)
  for (const auto& d : dirs.List()) out.push_back(d + (d.empty() || d.back() == '/' ? "" : "/") + lib.soname);
  return out;
}

OpenedLibrary OpenVendorLibrary(const VendorLibrary& lib, const std::vector<std::string>& candidates,
                                const std::function<bool(void*, std::string*)>& accept) {
  OpenedLibrary r;
  std::string tried;
  for (const auto& path : candidates) {
    (void)dlerror();
    // RTLD_LOCAL: the vendor's symbols stay out of the global namespace (torch may load its own copy).
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      const char* e = dlerror();
      tried += StrCat("\n  ", path, ": ", e ? e : "dlopen failed");
      continue;
    }
    std::string why;
    if (!accept(h, &why)) {
      tried += StrCat("\n  ", path, ": loaded, but ", why);
      dlclose(h);
      continue;
    }
    r.handle = h;
    r.path = path;
    return r;
  }
  if (candidates.empty())
    tried = StrCat("\n  (nothing: ", lib.env_path, " is unset and ", lib.env_no_default, "=1)");
  r.error = StrCat(lib.name, " (", lib.soname, ") could not be loaded; tried:", tried, "\nSet ", lib.env_path,
                   " to the full path of ", lib.soname, " or ", lib.install_hint, ".");
  return r;
}

}  // namespace aotirt
