"""A Windows (x86_64-pc-windows-msvc) object links against aoti_cuda_shims.lib only if it calls shims the DLL has."""
import subprocess

from platforms_util import data, tool

COMMON = r'''
#include <stdint.h>
#define IMP extern "C" __declspec(dllimport)
typedef struct AtenTensorOpaque* AtenTensorHandle;
IMP int32_t aoti_torch_device_type_cuda(void);
IMP int32_t aoti_torch_get_dim(AtenTensorHandle, int64_t*);
IMP const char* aotirt_shims_version(void);
'''
GEMM = "IMP int32_t aoti_torch_cuda_mm_out(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle);\n"


def _compile_and_link(tmp_path, source: str):
    src, obj, exe = tmp_path / "m.cc", tmp_path / "m.obj", tmp_path / "m.exe"
    src.write_text(source)
    subprocess.run([tool("clang++-14"), "--target=x86_64-pc-windows-msvc", "-O1", "-c", str(src), "-o", str(obj)],
                   check=True, capture_output=True, text=True)
    return subprocess.run([tool("lld-link-14"), "/nodefaultlib", "/entry:entry", "/subsystem:console",
                           f"/out:{exe}", str(obj), data("AOTIRT_WINDOWS_LIB")], capture_output=True, text=True), exe


def test_common_shims_link(tmp_path):
    res, exe = _compile_and_link(tmp_path, COMMON + r'''
extern "C" int entry() {
  int64_t d = 0;
  return aoti_torch_device_type_cuda() + aoti_torch_get_dim(nullptr, &d) + (aotirt_shims_version() != nullptr);
}''')
    assert res.returncode == 0, res.stdout + res.stderr
    assert exe.read_bytes()[:2] == b"MZ"
    assert b"aoti_cuda_shims" in exe.read_bytes(), "the import table does not name the DLL"


def test_gemm_shim_fails_to_link_naming_it(tmp_path):
    res, _ = _compile_and_link(tmp_path, COMMON + GEMM + r'''
extern "C" int entry() { return aoti_torch_cuda_mm_out(nullptr, nullptr, nullptr) + aoti_torch_device_type_cuda(); }''')
    out = res.stdout + res.stderr
    assert res.returncode != 0, out
    assert "undefined symbol: __declspec(dllimport) aoti_torch_cuda_mm_out" in out, out
    assert "aoti_torch_device_type_cuda" not in out, out
