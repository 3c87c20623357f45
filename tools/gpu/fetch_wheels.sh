#!/usr/bin/env bash
# Fills .whl/ (ignored by git; carried to the GPU machine with `carry: [".whl", ...]`) with the Python packages the
# GPU machine lacks: ExecuTorch 1.2.0 (the release built against its torch 2.11; CI uses 1.5.1 with torch 2.13) and
# its requirements, for tests/gpu/test_lowering_gpu.py::test_executorch_pte_end_to_end. tools/gpu/run.sh installs
# whatever .whl/ holds. Needs network access here (PyPI); about 28 MiB.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
D="$ROOT/.whl"
mkdir -p "$D"
grep -qxF '/.whl/' "$ROOT/.git/info/exclude" 2>/dev/null || echo '/.whl/' >> "$ROOT/.git/info/exclude"
PKGS=(executorch==1.2.0 torchao==0.17.0 coremltools==9.0 pytorch_tokenizers==1.2.0 ruamel.yaml.clib==0.2.15
      ruamel.yaml==0.18.17 hydra-core==1.3.2 omegaconf==2.3.0 kgb==7.3 pytest-xdist==3.8.0 execnet==2.1.2
      parameterized==0.9.0 pytest-rerunfailures==15.1 pytest-json-report==1.5.0 pytest-metadata==3.1.1
      expecttest==0.3.0)
PLAT=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64 manylinux_2_17_x86_64 \
         manylinux2014_x86_64 manylinux1_x86_64; do PLAT+=(--platform "$p"); done
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp "${PLAT[@]}" \
  -d "$D" "${PKGS[@]}"
# PyPI has only a source archive of antlr4-python3-runtime (hydra's requirement): build its pure-Python wheel.
ls "$D"/antlr4_python3_runtime-4.9.3-*.whl > /dev/null 2>&1 || python3 -m pip wheel -q --no-deps -w "$D" antlr4-python3-runtime==4.9.3
ls -1 "$D"
du -sh "$D"
