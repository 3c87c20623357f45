// Error handling at the C boundary: C++ code below the boundary throws aotirt::ShimError (or anything derived from
// std::exception); AOTIRT_SHIM_BOUNDARY turns it into AOTI_TORCH_FAILURE and keeps the message per thread.
#ifndef AOTIRT_COMMON_ERROR_H_
#define AOTIRT_COMMON_ERROR_H_

#include <sstream>
#include <stdexcept>
#include <string>

#include "shims/include/aotirt/shim.h"

namespace aotirt {

class ShimError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Raised where a capability is absent (e.g. a shape cuBLASLt cannot take): callers may tell it apart.
class NotSupportedError : public ShimError {
 public:
  using ShimError::ShimError;
};

void SetLastError(const std::string& message);
const std::string& LastError();

namespace detail {
inline void Append(std::ostringstream&) {}
template <typename T, typename... Rest>
void Append(std::ostringstream& os, const T& v, const Rest&... rest) {
  os << v;
  Append(os, rest...);
}
}  // namespace detail

template <typename... Args>
std::string StrCat(const Args&... args) {
  std::ostringstream os;
  detail::Append(os, args...);
  return os.str();
}

}  // namespace aotirt

// Precondition check: the message names the function (fn) and what was wrong.
#define AOTIRT_CHECK(cond, fn, ...)                                                  \
  do {                                                                               \
    if (!(cond)) throw ::aotirt::ShimError(::aotirt::StrCat(fn, ": ", __VA_ARGS__)); \
  } while (0)

// The same for arguments that are valid for ATen but outside what this library runs (NotSupportedError).
#define AOTIRT_CHECK_NOT_SUPPORTED(cond, fn, ...)                                            \
  do {                                                                                       \
    if (!(cond)) throw ::aotirt::NotSupportedError(::aotirt::StrCat(fn, ": ", __VA_ARGS__)); \
  } while (0)

#define AOTIRT_CHECK_NOT_NULL(ptr, fn) AOTIRT_CHECK((ptr) != nullptr, fn, #ptr " is null")

// Wraps the body of every extern "C" entry point.
#define AOTIRT_SHIM_BOUNDARY(fn, ...)                                        \
  try {                                                                      \
    __VA_ARGS__                                                              \
  } catch (const std::exception& e) {                                        \
    ::aotirt::SetLastError(e.what());                                        \
    return AOTI_TORCH_FAILURE;                                               \
  } catch (...) {                                                            \
    ::aotirt::SetLastError(::aotirt::StrCat(fn, ": unknown C++ exception")); \
    return AOTI_TORCH_FAILURE;                                               \
  }                                                                          \
  return AOTI_TORCH_SUCCESS;

#endif  // AOTIRT_COMMON_ERROR_H_
