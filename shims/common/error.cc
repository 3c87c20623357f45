#include "shims/common/error.h"

namespace aotirt {
namespace {
thread_local std::string t_last_error;
}

void SetLastError(const std::string& message) { t_last_error = message; }
const std::string& LastError() { return t_last_error; }

}  // namespace aotirt

extern "C" {
AOTIRT_EXPORT const char* aotirt_last_error(void) { return aotirt::LastError().c_str(); }
AOTIRT_EXPORT void aotirt_clear_last_error(void) { aotirt::SetLastError(""); }
AOTIRT_EXPORT const char* aotirt_shims_version(void) { return "aotirt-shims 0.1.0"; }
}
