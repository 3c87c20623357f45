"""The footprint benchmark (benchmarks/footprint.py, issue 12) without a GPU: flags, the /proc/<pid>/status, memory-line
and nvidia-smi CSV parsers ("[N/A]" / "Not Supported" rows), which GPU reading a row gets, the breakdown
arithmetic, the Markdown table, the package zip readers, the live-process measurement against a fake child and a
fake nvidia-smi, a whole run with a fake aotirt_run (the GPU children fail and are recorded as such), the clear
refusal where there is no GPU, the fallback model, and aotirt_run's --report-memory/--hold flags."""
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import zipfile

import pytest

import bench_script


SCRIPT, fp = bench_script.load("footprint")


def _env(**extra):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    env.update(extra)
    return env


# ------------------------------------------------------------------------------------------------------ flags

def test_defaults_and_flags(monkeypatch):
    monkeypatch.setenv("AOTIRT_RUN", "/bundle/bin/aotirt_run")
    a = fp.parse_args([])
    assert a.out.endswith(os.path.join("benchmarks", "results", "footprint.json"))
    assert a.iters == 20 and a.aotirt_run == "/bundle/bin/aotirt_run" and a.package == "" and a.skip == ()
    assert a.model == "gpt2" and a.child is None
    a = fp.parse_args(["--out", "/tmp/o", "--iters", "5", "--aotirt-run", "/x/aotirt_run", "--package", "p.pt2",
                       "--skip", "torch_eager, python_cupy,torch_eager", "--model", "mlp"])
    assert (a.out, a.iters, a.aotirt_run, a.package, a.model) == ("/tmp/o", 5, "/x/aotirt_run", "p.pt2", "mlp")
    assert a.skip == ("torch_eager", "python_cupy")
    monkeypatch.delenv("AOTIRT_RUN")
    assert fp.parse_args([]).aotirt_run == ""


@pytest.mark.parametrize("argv, why", [(["--iters", "0"], "must be >= 1"), (["--iters", "x"], "not an integer"),
                                       (["--skip", "bogus"], "unknown row"), (["--model", "bert"], "invalid choice")])
def test_bad_flags_are_usage_errors(argv, why, capsys):
    with pytest.raises(SystemExit) as e:
        fp.parse_args(argv)
    assert e.value.code == 2
    assert why in capsys.readouterr().err


def test_out_paths():
    assert fp.out_paths("/r/footprint.json") == {"json": "/r/footprint.json", "md": "/r/footprint.md"}
    assert fp.out_paths("/r/run7.json") == {"json": "/r/run7.json", "md": "/r/run7.md"}
    assert fp.out_paths("/out") == {"json": "/out/footprint.json", "md": "/out/footprint.md"}  # run.sh passes $OUT


def test_importing_and_parsing_never_imports_torch():
    code = (f"import importlib.util, sys; s = importlib.util.spec_from_file_location('f', {SCRIPT!r}); "
            f"m = importlib.util.module_from_spec(s); s.loader.exec_module(m); m.parse_args([]); "
            f"print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


# ------------------------------------------------------------------------------------------------------ parsers

STATUS = """Name:\taotirt_run
Umask:\t0022
State:\tS (sleeping)
Pid:\t4242
VmPeak:\t 9876543 kB
VmSize:\t 9000000 kB
VmHWM:\t  812344 kB
VmRSS:\t  500120 kB
RssAnon:\t  200000 kB
Threads:\t12
voluntary_ctxt_switches:\t10
"""


def test_proc_status_parser():
    st = fp.parse_proc_status(STATUS)
    assert st["VmRSS"] == 500120 and st["VmHWM"] == 812344 and st["VmPeak"] == 9876543 and st["RssAnon"] == 200000
    assert "Threads" not in st and "Pid" not in st and "Name" not in st  # not "N kB" fields
    assert fp.parse_proc_status("") == {}
    with open("/proc/self/status") as f:  # the real file of this process
        real = fp.parse_proc_status(f.read())
    assert real["VmRSS"] > 0 and real["VmHWM"] >= real["VmRSS"]


def test_last_line():
    assert fp.last_line("Traceback (most recent call last):\n  File x\nModuleNotFoundError: no cupy\n\n") == \
        "ModuleNotFoundError: no cupy"
    assert fp.last_line("") == "" and len(fp.last_line("x" * 1000)) == 400


def test_memory_line_parser():
    m = fp.parse_memory_line("memory: rss_kib=500120 hwm_kib=812344 gpu_used_mib=1234.5 pool_reserved_mib=72.0 "
                             "pool_used_mib=-1.0\n")
    assert m == {"rss_kib": 500120, "hwm_kib": 812344, "gpu_used_mib": 1234.5, "pool_reserved_mib": 72.0,
                 "pool_used_mib": None}
    assert isinstance(m["rss_kib"], int)
    assert fp.parse_memory_line("memory: rss_kib=-1 hwm_kib=x gpu_used_mib=nan") == {
        "rss_kib": None, "hwm_kib": None, "gpu_used_mib": None}
    assert fp.parse_memory_line("latency over 20 runs: median 0.1 ms") is None
    assert fp.parse_memory_line("info: {}") is None


APPS = """4242, 1234
4243, [N/A]
4244, Not Supported
[Not Supported], [Not Supported]
No running processes found

  4245 ,  96
"""


def test_compute_apps_parser():
    assert fp.parse_compute_apps(APPS) == [(4242, 1234), (4243, None), (4244, None), (4245, 96)]
    assert fp.parse_compute_apps("No running processes found\n") == []
    assert fp.parse_compute_apps("") == []


def test_gpu_query_parser():
    q = fp.parse_gpu_query("NVIDIA H200, 580.159, 143771, 4, 143254\nNVIDIA H200, 580.159, 143771, 0, 143254\n")
    assert q == {"name": "NVIDIA H200", "driver": "580.159", "total_mib": 143771, "used_mib": 4, "free_mib": 143254}
    assert fp.smi_device_used(q) == 143771 - 143254
    q = fp.parse_gpu_query("NVIDIA A100-SXM4-80GB, 550.54, [N/A], 10, [N/A]")
    assert q["total_mib"] is None and q["used_mib"] == 10 and fp.smi_device_used(q) == 10
    assert fp.parse_gpu_query("") is None and fp.parse_gpu_query("garbage") is None
    assert fp.smi_device_used(None) is None


def test_gpu_reading_prefers_nvml_by_pid_then_the_only_new_app_then_device_wide():
    assert fp.choose_gpu_reading(7, [(7, 600), (8, 50)], [], 900, 500, 1200.0) == (600, "nvml-pid", "")
    # Another PID namespace: the child is not listed, one app is new since idle.
    mib, method, note = fp.choose_gpu_reading(7, [(3, 50), (99, 610)], [(3, 50)], 900, 500, 1200.0)
    assert (mib, method) == (610, "nvml-only-app") and "PID 99, not 7" in note
    # Two new apps: cannot tell which is ours -> device-wide from nvidia-smi.
    mib, method, note = fp.choose_gpu_reading(7, [(98, 1), (99, 2)], [], 900, 500, 1200.0)
    assert (mib, method) == (400, "device-smi") and "minus idle 500" in note and "PID 7 not among" in note
    # Listed with "[N/A]" memory.
    mib, method, note = fp.choose_gpu_reading(7, [(7, None)], [], 900, 500, None)
    assert (mib, method) == (400, "device-smi") and "without a memory figure" in note
    # No nvidia-smi reading now: the child's cudaMemGetInfo minus the idle baseline, or raw.
    assert fp.choose_gpu_reading(7, [], [], None, 500, 1200.0)[:2] == (700.0, "device-cuda")
    mib, method, note = fp.choose_gpu_reading(7, [], [], None, None, 1200.0)
    assert (mib, method) == (1200.0, "device-cuda-raw") and "no idle baseline" in note
    assert fp.choose_gpu_reading(7, [], [], None, None, None)[:2] == (None, "none")


def _pkg(tmp_path, blob=b"\0" * 3000, meta=None):
    path = tmp_path / "m.pt2"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("m/data/aotinductor/model/abc.wrapper.so", b"ELF")
        z.writestr("m/data/aotinductor/model/abc.wrapper_metadata.json",
                   json.dumps(meta or {"AOTI_DEVICE_KEY": "cuda"}))
        if blob is not None:
            z.writestr("m/data/aotinductor/model/abc_weights.blob", blob, compress_type=zipfile.ZIP_DEFLATED)
        z.writestr("m/data/constants/other.blob.txt", b"x")
    return str(path)


def test_package_readers(tmp_path):
    path = _pkg(tmp_path, meta={"AOTI_DEVICE_KEY": "cuda", "footprint_model": "mlp"})
    size, entry = fp.weights_blob_bytes(path)
    assert size == 3000 and entry == "m/data/aotinductor/model/abc_weights.blob"  # uncompressed size
    assert fp.package_metadata(path)["footprint_model"] == "mlp"
    empty = tmp_path / "e"
    empty.mkdir()
    assert fp.weights_blob_bytes(_pkg(empty, blob=None)) == (None, "")
    bad = tmp_path / "bad.pt2"
    bad.write_text("not a zip")
    assert fp.package_metadata(str(bad)) == {}


# ------------------------------------------------------------------------------------------------ breakdown, table

def _rows(**gpu):
    rows = {n: {"name": n, "gpu_mib": v, "gpu_method": "nvml-pid"} for n, v in gpu.items()}
    if "aotirt_run" in rows:
        rows["aotirt_run"]["child"] = {"pool_reserved_mib": 40.0, "pool_used_mib": 34.5}
    return rows


def test_breakdown_arithmetic():
    b = fp.breakdown(_rows(cuda_context=500, cublaslt=530, aotirt_run=700, aotirt_run_plain=650), 36.2)
    assert b["context_mib"] == 500 and b["cublaslt_over_context_mib"] == 30
    assert b["rest_mib"] == pytest.approx(700 - 530 - 36.2) and b["rest_base"] == "cublaslt"
    assert b["pool_kept_free_mib"] == pytest.approx(5.5)
    assert b["other_mib"] == pytest.approx(700 - 530 - 36.2 - 40.0)
    assert b["tuning_and_gemm_graphs_mib"] == 50 and b["lt_workspace_mib"] == 32 and b["methods"] == ["nvml-pid"]
    # Without (b): the rest is over the bare context.
    b = fp.breakdown(_rows(cuda_context=500, aotirt_run=700), 36.0)
    assert b["rest_mib"] == pytest.approx(164.0) and b["rest_base"] == "cuda_context"
    assert b["cublaslt_over_context_mib"] is None and b["tuning_and_gemm_graphs_mib"] is None
    # A failed row counts as missing; no weights size -> no rest.
    rows = _rows(cuda_context=500, cublaslt=530, aotirt_run=700)
    rows["cublaslt"]["error"] = "exit 1"
    assert fp.breakdown(rows, 36.0)["rest_base"] == "cuda_context"
    assert fp.breakdown(_rows(cuda_context=500, aotirt_run=700), None)["rest_mib"] is None
    assert fp.breakdown({}, 36.0)["rest_mib"] is None


def test_derived_rows_say_what_the_rest_is_and_mixed_methods():
    rows = _rows(cuda_context=500, cublaslt=530, aotirt_run=700, aotirt_run_plain=650)
    rows["cuda_context"]["gpu_method"] = "device-smi"
    w, rest = fp.derived_rows(fp.breakdown(rows, 36.2), "m/data/aotinductor/model/abc_weights.blob")
    assert w["name"] == "weights" and w["gpu_mib"] == 36.2 and "abc_weights.blob" in w["notes"]
    assert rest["name"] == "aotirt_run_rest" and rest["gpu_method"] == "derived"
    assert rest["gpu_mib"] == pytest.approx(133.8)
    for part in ("aotirt_run 700 - (b) - (c)", "pool holds 40.0 MiB", "in use 34.5", "32 MiB cuBLASLt workspace",
                 "kept 5.5", "other 93.8 MiB", "GEMM tuning + GEMM graphs: 50", "mixed GPU methods"):
        assert part in rest["notes"], (part, rest["notes"])


def test_markdown_table():
    result = {"machine": {"gpu": "NVIDIA H200", "driver": "580.159"}, "torch": "2.11.0+cu130", "cupy": "13.6.0",
              "commit": "abc1234", "iters": 20, "warmup": 3,
              "model": {"description": "GPT-2-like"}, "package": {"size_mib": 40.25, "weights_mib": 36.2},
              "rows": [{"name": "aotirt_run", "label": "aotirt_run (C++)", "gpu_mib": 700, "gpu_method": "nvml-pid",
                        "rss_mib": 210.44, "hwm_mib": 260.0, "notes": "pool a|b"},
                       {"name": "python_cupy", "label": "python", "gpu_mib": None, "gpu_method": None,
                        "rss_mib": None, "hwm_mib": None, "notes": "", "error": "exit 1: no cupy"},
                       {"name": "weights", "label": "(c) weights", "gpu_mib": 36.2, "gpu_method": "package zip",
                        "rss_mib": None, "hwm_mib": None, "notes": "blob"}]}
    md = fp.markdown(result)
    lines = md.splitlines()
    assert "NVIDIA H200 (driver 580.159), torch 2.11.0+cu130, CuPy 13.6.0, commit `abc1234`" in lines[0]
    assert "package 40.2 MiB, weights blob 36.2 MiB" in lines[0] and "3 warm-up + 20 runs" in lines[0]
    assert lines[2] == "| row | GPU MiB | GPU method | RSS MiB | peak RSS MiB | notes |"
    assert lines[3] == "|---|---|---|---|---|---|"
    assert lines[4] == "| aotirt_run (C++) | 700 | nvml-pid | 210 | 260 | pool a/b |"
    assert lines[5] == "| python | — | — | — | — | ERROR: exit 1: no cupy |"
    assert lines[6] == "| (c) weights | 36.2 | package zip | — | — | blob |"
    assert all(ln.count("|") == 7 for ln in lines[2:7])
    assert "nvml-pid = NVML per-process" in md
    assert fp.markdown({"rows": []}).count("\n| row |") == 1  # empty result still renders


# ------------------------------------------------------------------------------------------ live processes (fakes)

FAKE_SMI = r"""#!{python}
# A fake nvidia-smi: one H200; each process whose command line names FAKE_FOOTPRINT_CHILD is a compute app of 321 MiB
# ({apps_mode}: "pid" = listed by PID, "na" = memory [N/A], "none" = no processes listed).
import os, sys
args = " ".join(sys.argv[1:])
if "--query-gpu" in args:
    print("NVIDIA H200, 580.159, 143771, 900, 142000")
elif "--query-compute-apps" in args:
    mode = "{apps_mode}"
    if mode == "none":
        print("No running processes found")
    for pid in os.listdir("/proc"):
        try:
            cmd = open(f"/proc/{{pid}}/cmdline", "rb").read()
        except OSError:
            continue
        if pid.isdigit() and b"FAKE_FOOTPRINT_CHILD" in cmd and mode != "none":
            print(f"{{pid}}, {{'[N/A]' if mode == 'na' else 321}}")
else:
    sys.exit(9)
"""

FAKE_CHILD = r"""#!{python}
# A fake aotirt_run (its file name holds FAKE_FOOTPRINT_CHILD): prints the --report-memory line after its "runs",
# waits for a line on stdin, exits 0.
import sys
print("memory-stage: stage=context rss_kib=102400 hwm_kib=102400 gpu_used_mib=1000.0 pool_reserved_mib=0.0 "
      "pool_used_mib=0.0 stack_kib=1")
print("loaded x in 1.0 ms: 1 inputs, 1 outputs, device cuda:0")
print("memory-stage: stage=loaded rss_kib=153600 hwm_kib=153600 gpu_used_mib=1032.5 pool_reserved_mib=-1 "
      "pool_used_mib=0.0 stack_kib=1")
print("latency over 20 runs: median 0.1 ms, min 0.1 ms, max 0.1 ms")
print("memory: rss_kib=204800 hwm_kib=307200 gpu_used_mib=1500.0 pool_reserved_mib=40.0 pool_used_mib=34.5",
      flush=True)
line = sys.stdin.readline()
print("released" if line == "\n" else f"unexpected {{line!r}}")
print("libtorch mapped: no")
"""


def _fake(tmp_path, name, text, **fmt):
    p = tmp_path / name
    p.write_text(text.format(python=sys.executable, **fmt))
    p.chmod(0o755)
    return str(p)


@pytest.mark.parametrize("mode, method, gpu", [("pid", "nvml-pid", 321), ("na", "device-smi", 143771 - 142000 - 500),
                                               ("none", "device-smi", 143771 - 142000 - 500)])
def test_measure_reads_the_live_child_then_releases_it(tmp_path, mode, method, gpu):
    smi = fp.Smi(exe=_fake(tmp_path, "nvidia-smi", FAKE_SMI, apps_mode=mode))
    child = _fake(tmp_path, "FAKE_FOOTPRINT_CHILD_aotirt_run", FAKE_CHILD)
    idle = {"apps": [], "device_used_mib": 500}
    row = fp.measure("aotirt_run", [child], smi, idle, settle_s=0.05)
    assert not row.get("error"), row
    assert (row["gpu_mib"], row["gpu_method"]) == (gpu, method)
    assert row["rss_mib"] == 200.0 and row["hwm_mib"] == 300.0 and row["memgetinfo_used_mib"] == 1500.0
    assert row["child"] == {"pool_reserved_mib": 40.0, "pool_used_mib": 34.5}
    # The step lines before the memory line: each step's device memory and what it added (-1: not read -> None).
    assert [st["stage"] for st in row["stages"]] == ["context", "loaded"]
    steps = fp.stage_rows(row)
    assert [(st["stage"], st["gpu_mib"], st["delta_mib"]) for st in steps] == [
        ("context", 1000.0, None), ("loaded", 1032.5, 32.5), ("runs", 1500.0, 467.5)]
    assert steps[1]["pool_reserved_mib"] is None and steps[1]["rss_mib"] == 150.0 and steps[2]["rss_mib"] == 200.0
    md = fp.markdown({"rows": [row]})
    assert "step by step" in md and "| + Model::Load (wrapper .so, shims, weights) | 1032 | 32.5 | 150 | — | 1 |" in md
    assert row["parent_saw_rss_kib"] and row["rc"] == 0
    assert "released" in row["stdout_tail"]  # the child got the line only after the reading
    assert row["device_delta_mib"] == 143771 - 142000 - 500
    fp._row_notes(row)
    assert "runtime pool 40.0 MiB (in use 34.5)" in row["notes"] and "libtorch mapped: no" in row["notes"]
    assert ("device-wide +1271 MiB over idle" in row["notes"]) == (method == "nvml-pid")


def test_measure_records_a_child_that_dies_or_never_reports(tmp_path):
    smi = fp.Smi(exe="")
    dies = _fake(tmp_path, "dies",
                 "#!{python}\nimport sys\nprint('Traceback: no cupy', file=sys.stderr)\nsys.exit(3)\n")
    row = fp.measure("python_cupy", [dies], smi, {})
    assert row["rc"] == 3 and row["error"] == "exit 3: Traceback: no cupy" and row["gpu_mib"] is None
    assert row["elapsed_s"] < 4  # no waiting for output after the child ended
    quiet = _fake(tmp_path, "quiet", "#!{python}\nimport sys\nsys.stdin.readline()\n")
    row = fp.measure("python_cupy", [quiet], smi, {}, timeout=1)
    assert "no memory line within 1 s" in row["error"] and row["rc"] != 0  # killed
    row = fp.measure("x", [str(tmp_path / "missing")], smi, {})
    assert "cannot start" in row["error"]


def test_a_whole_run_with_a_fake_runner_and_no_gpu_children(tmp_path):
    """run() end to end: the fake nvidia-smi makes it go on, the fake aotirt_run reports, the Python children find
    no GPU (or no CuPy) and are recorded as failed rows; JSON and Markdown are written, exit 1."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    _fake(bindir, "nvidia-smi", FAKE_SMI, apps_mode="pid")
    runner = _fake(tmp_path, "FAKE_FOOTPRINT_CHILD_aotirt_run", FAKE_CHILD)
    pkg = _pkg(tmp_path, blob=b"\1" * (3 * (1 << 20)), meta={"footprint_model": "mlp"})
    out = tmp_path / "res" / "fp.json"
    p = subprocess.run([sys.executable, SCRIPT, "--out", str(out), "--iters", "2", "--aotirt-run", runner,
                        "--package", pkg, "--skip", "torch_eager,cublaslt"],
                       capture_output=True, text=True, timeout=300,
                       env=_env(PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}", CUDA_VISIBLE_DEVICES=""))
    assert p.returncode == 1, p.stdout + p.stderr
    res = json.loads(out.read_text())
    names = [r["name"] for r in res["rows"]]
    assert names == ["aotirt_run", "python_cupy", "cuda_context", "weights", "aotirt_run_rest", "aotirt_run_plain"]
    rows = {r["name"]: r for r in res["rows"]}
    assert (rows["aotirt_run"]["gpu_mib"], rows["aotirt_run"]["gpu_method"]) == (321, "nvml-pid")
    assert rows["aotirt_run"]["rss_mib"] == 200.0 and not rows["aotirt_run"].get("error")
    assert rows["aotirt_run_plain"]["gpu_mib"] == 321 and "AOTIRT_GEMM_TUNE=0" in rows["aotirt_run_plain"]["notes"]
    assert rows["python_cupy"]["error"] and rows["cuda_context"]["error"]
    assert rows["weights"]["gpu_mib"] == 3.0
    assert res["skipped"] == ["torch_eager", "cublaslt"] and res["model"]["kind"] == "mlp"
    assert res["machine"]["gpu"] == "NVIDIA H200" and res["package"]["reused"] is True
    assert res["breakdown"]["tuning_and_gemm_graphs_mib"] == 0 and res["breakdown"]["rest_mib"] is None
    assert res["idle"]["start"]["device_used_mib"] == 143771 - 142000
    assert "--report-memory --hold" in rows["aotirt_run"]["cmd"]
    md = (tmp_path / "res" / "fp.md").read_text()
    assert "| aotirt_run (C++ runner, no Python) | 321 | nvml-pid | 200 | 300 |" in md
    assert md in p.stdout and "FAILED rows" in p.stderr


def test_an_aotirt_run_without_the_flag_is_named(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    _fake(bindir, "nvidia-smi", FAKE_SMI, apps_mode="pid")
    old = _fake(tmp_path, "aotirt_run", "#!{python}\nimport sys\n"
                "print(\"error: unknown argument '--report-memory'\", file=sys.stderr)\nsys.exit(2)\n")
    out = tmp_path / "fp.json"
    p = subprocess.run([sys.executable, SCRIPT, "--out", str(out), "--aotirt-run", old, "--package", _pkg(tmp_path),
                        "--skip", "aotirt_run_plain,python_cupy,torch_eager,cuda_context,cublaslt"],
                       capture_output=True, text=True, timeout=120,
                       env=_env(PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"))
    assert p.returncode == 1, p.stdout + p.stderr
    row = json.loads(out.read_text())["rows"][0]
    assert row["name"] == "aotirt_run" and row["rc"] == 2
    assert "unknown argument '--report-memory'" in row["error"] and "rebuild the bundle" in row["error"]


def test_no_gpu_is_a_clear_error(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    _fake(bindir, "nvidia-smi", "#!{python}\nimport sys\nsys.exit(9)\n")  # nvidia-smi that finds nothing
    out = tmp_path / "fp.json"
    p = subprocess.run([sys.executable, SCRIPT, "--out", str(out)], capture_output=True, text=True, timeout=120,
                       env=_env(PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}", CUDA_VISIBLE_DEVICES=""))
    assert p.returncode == 1, p.stdout + p.stderr
    assert "footprint: no GPU here (nvidia-smi: lists no GPU 0; CUDA runtime" in p.stderr
    assert "run it on a GPU machine" in p.stderr and not out.exists()


def test_missing_package_is_an_error(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    _fake(bindir, "nvidia-smi", FAKE_SMI, apps_mode="pid")
    p = subprocess.run([sys.executable, SCRIPT, "--out", str(tmp_path), "--package", str(tmp_path / "no.pt2")],
                       capture_output=True, text=True, timeout=120,
                       env=_env(PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"))
    assert p.returncode == 2 and "no such file" in p.stderr


# ------------------------------------------------------------------------------------------------------ models

def _gpt2_params():
    c = fp.GPT2
    d, v, pos, n = c["n_embd"], c["vocab_size"], c["n_positions"], c["n_layer"]
    block = 2 * 2 * d + (d * 3 * d + 3 * d) + (d * d + d) + (d * 4 * d + 4 * d) + (4 * d * d + d)
    return v * d + pos * d + n * block + 2 * d  # LM head tied to the token embedding


def test_fallback_model_is_of_similar_size_and_exports():
    torch = pytest.importorskip("torch")
    m = fp.build_model("mlp", torch)
    n = sum(p.numel() for p in m.parameters())
    assert abs(n - _gpt2_params()) / _gpt2_params() < 0.05, (n, _gpt2_params())
    x = torch.from_numpy(fp.make_input_ids())
    assert tuple(x.shape) == (1, fp.SEQ) and x.dtype == torch.int64 and int(x.max()) < fp.GPT2["vocab_size"]
    assert (x == torch.from_numpy(fp.make_input_ids())).all()  # seeded: every row gets the same ids
    with torch.no_grad():
        y = m(x)
        ep = torch.export.export(m, (x,))
    assert tuple(y.shape) == (1, fp.SEQ, fp.GPT2["vocab_size"])
    assert any(nd.op == "call_function" for nd in ep.graph.nodes)
    with pytest.raises(ValueError, match="unknown model"):
        fp.build_model("bert", torch)


def test_gpt2_model_when_transformers_is_installed():
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    m = fp.build_model("gpt2", torch)
    assert sum(p.numel() for p in m.parameters()) == _gpt2_params()
    with torch.no_grad():
        y = m(torch.from_numpy(fp.make_input_ids()))
    assert tuple(y.shape) == (1, fp.SEQ, fp.GPT2["vocab_size"])


# ------------------------------------------------------------------------------------------------ aotirt_run flags

def _aotirt_run():
    path = os.environ.get("AOTIRT_RUN", "")
    if not path:
        pytest.skip("AOTIRT_RUN not set (the Bazel target sets it)")
    return path


def test_stage_lines_parse_and_other_lines_do_not():
    st = fp.parse_stage_line("memory-stage: stage=first_run rss_kib=5 hwm_kib=6 gpu_used_mib=7.5 pool_reserved_mib=-1")
    assert st == {"stage": "first_run", "rss_kib": 5, "hwm_kib": 6, "gpu_used_mib": 7.5, "pool_reserved_mib": None}
    assert fp.parse_stage_line("memory: rss_kib=1") is None and fp.parse_memory_line("memory-stage: stage=x") is None
    assert fp.parse_stage_line("memory-stage: rss_kib=1") is None  # no stage name
    assert fp.stage_rows({"name": "x"}) == []


def test_aotirt_run_accepts_report_memory_and_hold():
    run = _aotirt_run()
    p = subprocess.run([run, "--help"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "[--report-memory [--hold]]" in p.stderr
    p = subprocess.run([run, "--package", "m.pt2", "--inputs", "i", "--hold"], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2 and "--hold needs --report-memory" in p.stderr and "usage: aotirt_run" in p.stderr
    # Accepted by the parser: the run then fails on the package, not on the flags.
    p = subprocess.run([run, "--package", "/nonexistent.pt2", "--inputs", "i", "--report-memory", "--hold"],
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert p.returncode == 1 and "cannot open package" in p.stderr and "usage:" not in p.stderr
    assert "memory-stage: stage=context" in p.stdout  # the context step comes before the load (no GPU here: -1s)
