# one device call: compile every (model, lowering variant) in parallel processes, then time them all in one process
set -u
python3 -m pip install -q --no-deps --no-index --target /tmp/site gpu_bundle/aotirt-*.whl
export PYTHONPATH=/tmp/site AOTIRT_SHIM_LIB=/tmp/site/aotirt/lib/libaoti_cuda_shims.so
export AOTIRT_BENCH_CACHE=$PWD/.gpucache/models TORCHINDUCTOR_CACHE_DIR=$PWD/.gpucache/inductor
mkdir -p $OUT/m .gpucache
V=lowerings
for m in gpt2 gpt2_t128 vit_b16 resnet50 siglip; do
  timeout ${CT:-330} python3 benchmarks/models.py --compile-only --models $m --variants $V --budget-s ${CB:-320} --compile-reserve-s 20 > $OUT/m/compile_$m.log 2>&1 &
done
wait
grep -h "compiled\|compile only\|Error" $OUT/m/compile_*.log | tail -40
timeout ${TT:-240} python3 benchmarks/models.py --models gpt2,gpt2_t128,vit_b16,resnet50,siglip --variants $V --budget-s ${TB:-230} --compile-reserve-s 60 --out $OUT/m/models_lowerings.json > $OUT/m/time.log 2>&1
echo "time rc=$?"; grep "^\[" $OUT/m/time.log | tail -60
