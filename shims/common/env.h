// On/off settings read from the environment once and overridable in-process (tests, embedders).
#ifndef AOTIRT_COMMON_ENV_H_
#define AOTIRT_COMMON_ENV_H_

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace aotirt {

// false for 0/off/no/false/n in either case (as torch's env flags), true for anything else; `unset` when absent.
inline bool EnvFlag(const char* name, bool unset) {
  const char* v = std::getenv(name);
  if (v == nullptr) return unset;
  for (const char* no : {"0", "off", "OFF", "no", "NO", "false", "FALSE", "n", "N"})
    if (std::strcmp(v, no) == 0) return false;
  return true;
}

// A switch that defaults to the environment variable `name` (`default_on` when unset) until Set(0/1); Set(-1) goes
// back.
class EnvSwitch {
 public:
  explicit EnvSwitch(const char* name, bool default_on = true) : name_(name), default_on_(default_on) {}
  bool On() {
    int v = v_.load(std::memory_order_relaxed);
    if (v < 0) {
      int expected = -1;
      v_.compare_exchange_strong(expected, EnvFlag(name_, default_on_) ? 1 : 0, std::memory_order_relaxed);
      v = v_.load(std::memory_order_relaxed);
    }
    return v != 0;
  }
  void Set(int mode) { v_.store(mode < 0 ? -1 : (mode != 0), std::memory_order_relaxed); }

 private:
  const char* name_;
  bool default_on_;
  std::atomic<int> v_{-1};
};

}  // namespace aotirt
#endif  // AOTIRT_COMMON_ENV_H_
