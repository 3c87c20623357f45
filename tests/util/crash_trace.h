// GPU test binaries print a native backtrace on a fatal signal (SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL), so a
// crash on the GPU machine (no debugger there) comes back with the frames that caused it: symbol+offset for
// exported symbols, library+offset otherwise (resolve with addr2line against the same binary). Include it in one
// translation unit of a test binary; it installs itself before main.
#ifndef AOTIRT_TESTS_UTIL_CRASH_TRACE_H_
#define AOTIRT_TESTS_UTIL_CRASH_TRACE_H_

#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace aotirt_test {

inline void CrashTraceHandler(int sig, siginfo_t* info, void*) {
  char head[160];
  const int n = std::snprintf(head, sizeof(head), "\n*** fatal signal %d (%s) at address %p in thread %ld ***\n",
                              sig, strsignal(sig), info ? info->si_addr : nullptr, static_cast<long>(gettid()));
  if (n > 0) (void)!write(STDERR_FILENO, head, static_cast<size_t>(n));
  void* frames[64];
  const int count = backtrace(frames, 64);
  backtrace_symbols_fd(frames, count, STDERR_FILENO);
  // The mapped libraries, so library-relative offsets can be computed from the absolute frames.
  const int maps = open("/proc/self/maps", O_RDONLY);
  if (maps >= 0) {
    char buf[4096];
    ssize_t r;
    while ((r = read(maps, buf, sizeof(buf))) > 0) (void)!write(STDERR_FILENO, buf, static_cast<size_t>(r));
    close(maps);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

inline bool InstallCrashTrace() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = CrashTraceHandler;
  sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
  for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL}) sigaction(sig, &sa, nullptr);
  return true;
}

inline const bool kCrashTraceInstalled = InstallCrashTrace();

}  // namespace aotirt_test
#endif  // AOTIRT_TESTS_UTIL_CRASH_TRACE_H_
