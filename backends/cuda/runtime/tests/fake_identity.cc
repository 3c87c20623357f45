// A stand-in wrapper library for the loader's identity tests: it says which one it is, and can pin itself the way
// generated wrappers do (a thread_local with a destructor, registered on first use, keeps glibc from unloading the
// object until that thread exits).
#ifndef FAKE_ID
#error "build with -DFAKE_ID=\"name\""
#endif

namespace {
struct Pin {
  int touched = 0;
  ~Pin() { touched = -1; }
};
}  // namespace

extern "C" __attribute__((visibility("default"))) const char* fake_identity() { return FAKE_ID; }

extern "C" __attribute__((visibility("default"))) int fake_pin() {
  thread_local Pin pin;
  return ++pin.touched;
}
