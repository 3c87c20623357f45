"""Device-memory readings for the GPU tests, without torch (the CuPy-only subprocesses use them too)."""
import ctypes
import os
import subprocess


def process_gpu_bytes(pid=None):
    """Device memory of process `pid` (default: this one) as nvidia-smi reports it, or None (no nvidia-smi, or PIDs of
    another namespace)."""
    pid = os.getpid() if pid is None else pid
    try:
        out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2 and parts[0] == str(pid) and parts[1].isdigit():
            return int(parts[1]) << 20
    return None


def loaded_cudart():
    """The libcudart already mapped into this process (ctypes, RTLD_NOLOAD), or None; never loads one."""
    with open("/proc/self/maps") as f:
        paths = sorted({line.split()[-1] for line in f if "/libcudart.so" in line})
    for path in paths:
        try:
            return ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_NOLOAD)
        except OSError:
            pass
    return None


def trim_runtime_pool(device=0):
    """Returns the runtime's stream-ordered pool's free blocks to the driver (it keeps them: release threshold max), so
    what stays is memory still in use. torch's and CuPy's own pools are not this pool."""
    lib = loaded_cudart()
    if lib is None:
        return
    pool = ctypes.c_void_p()
    if lib.cudaDeviceGetDefaultMemPool(ctypes.byref(pool), ctypes.c_int(device)) == 0:
        lib.cudaMemPoolTrimTo(pool, ctypes.c_size_t(0))
