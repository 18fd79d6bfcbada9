#!/usr/bin/env bash
# Runs the libFuzzer targets of tests/fuzz (one per parser of untrusted input, each a
# fuzz_*.cpp there: the files are the list) for FUZZ_SECONDS (default 30) seconds each; fails
# when any target crashes, leaks, hangs or breaks a property it checks. A failing input is
# written to tests/fuzz/corpus/<target>/: fix the bug and commit the input, and every later run
# replays it first.
#   scripts/fuzz.sh                    every target
#   scripts/fuzz.sh fuzz_duration ...  only these
#   FUZZ_SECONDS=300 FUZZ_JOBS=1 scripts/fuzz.sh
# The targets are built with clang (ASan + UBSan) in FUZZ_BUILD (default build-fuzz/, only what
# they link; a tree configured with GPUREAP_FUZZ and the tests has them too, linked to the
# suite's library). Seeds are made at run time from tests/fixtures, deploy/ and docs/
# ($FUZZ_BUILD/seeds); what a run learns is kept in $FUZZ_BUILD/corpus for the next run on
# this machine, never committed.
# Needs clang and libFuzzer (Debian: clang, libclang-rt-14-dev): scripts/install-deps.sh --ci.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-30}
jobs=${FUZZ_JOBS:-$(nproc)}
build=${FUZZ_BUILD:-build-fuzz}

mapfile -t all_targets < <(cd tests/fuzz && ls fuzz_*.cpp | sed 's/\.cpp$//')
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")

if ! command -v clang++ >/dev/null; then
  echo "gpureap: fuzzing needs clang++ and libFuzzer; run scripts/install-deps.sh --ci as root" >&2
  exit 1
fi
# No NDEBUG: assert() and libraries' own checks (nlohmann::json) fail like sanitizer errors.
if ! grep -qs '^GPUREAP_FUZZ:BOOL=ON' "$build/CMakeCache.txt"; then
  cmake -S . -B "$build" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1" \
        -DGPUREAP_FUZZ=ON -DBUILD_TESTING=OFF >/dev/null
fi
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"

# --- seeds -------------------------------------------------------------------------------
seeds=$build/seeds
rm -rf "$seeds"
mkdir -p "$seeds"
copy_fixtures() {  # target, file name under tests/fixtures/proc/*/...
  local target=$1 name=$2 n=0 f
  mkdir -p "$seeds/$target"
  while IFS= read -r f; do
    n=$((n + 1))
    cp "$f" "$seeds/$target/$name-$n"
  done < <(find tests/fixtures -type f -name "$name" | sort)
}
literal_seeds() {  # target, texts...
  local target=$1 n=0
  shift
  mkdir -p "$seeds/$target"
  for text in "$@"; do
    n=$((n + 1))
    printf '%b' "$text" >"$seeds/$target/literal-$n"
  done
}
copy_fixtures fuzz_proc_stat stat
copy_fixtures fuzz_proc_status status
copy_fixtures fuzz_proc_status cmdline
copy_fixtures fuzz_proc_status wchan
copy_fixtures fuzz_proc_status stat  # /proc/stat's btime
copy_fixtures fuzz_proc_cgroup cgroup
copy_fixtures fuzz_proc_devices devices
# DRM fdinfo: each driver's text as it prints it (tests/fixtures/drm-fdinfo/*.txt).
mkdir -p "$seeds/fuzz_drm_fdinfo"
for f in tests/fixtures/drm-fdinfo/*.txt; do cp "$f" "$seeds/fuzz_drm_fdinfo/$(basename "$f" .txt)"; done
# The kernel log: the unit tests' kmsg records and Xid lines of every driver generation, each
# behind a first byte that picks where the fuzz target cuts the text.
mkdir -p "$seeds/fuzz_kmsg"
n=0
while IFS= read -r line; do
  n=$((n + 1))
  printf '\x07%s\n SUBSYSTEM=pci\n' "$line" >"$seeds/fuzz_kmsg/xid-$n"
done < <(grep -ho '"NVRM: Xid[^"]*"' tests/unit/test_kernel_xid.cpp | tr -d '"' | sed 's/^/4,1,2,-;/')
literal_seeds fuzz_kmsg '\x0c6,1,10,-;first\n SUBSYSTEM=pci\n DEVICE=+pci:0000:3b:00.0\n6,2,20,c;x\n' \
  '\x00 ORPHAN=1\ngarbage\n4,7,100,-,caller=T1;NVRM: Xid (PCI:0000:3b:00): 79, pid=<unknown>, name=<unknown>, GPU has fallen off the bus.'
# The daemon config: the shipped one, the documentation's examples and the unit tests' texts.
mkdir -p "$seeds/fuzz_daemon_config"
cp deploy/config.toml "$seeds/fuzz_daemon_config/deploy"
awk -v dir="$seeds/fuzz_daemon_config" '
  /^```toml/ { n++; out = dir "/docs-" n; next }
  /^```/     { out = ""; next }
  out != ""  { print > out }' docs/config.md
for f in tests/unit/test_daemon_config*.cpp; do
  awk -v dir="$seeds/fuzz_daemon_config" -v base="$(basename "$f" .cpp)" '
    out == "" && index($0, "R\"(") { n++; out = dir "/" base "-" n; $0 = substr($0, index($0, "R\"(") + 3) }
    out != "" { end = index($0, ")\""); if (end) { printf "%s\n", substr($0, 1, end - 1) > out; close(out); out = ""; next }
                print > out }' "$f"
done
literal_seeds fuzz_duration 500ms 30s 5m 1h 2d 1.5s 90 0 10min
literal_seeds fuzz_byte_size 512MiB 1GiB 1.5G 1000000 '4 KB' 0B 2TiB ' 64mib '
literal_seeds fuzz_drm_fdinfo 'drm-driver:\txe\ndrm-total-cycles-rcs:\t1\ndrm-engine-capacity-ccs:\t4\n' \
  'drm-driver: amdgpu\ndrm-resident-vram: 7\ndrm-memory-vram: 100 KiB\ndrm-engine-gfx: 5 ns\n' \
  'drm-driver: i915\ndrm-total-local0: 17592186044415 MiB\ndrm-client-id: 18446744073709551615\n' \
  'pdev:\t0000:03:00.0\npasid:\t32771\nvram mem:\t18014398509481983 kB\ngfx0:\t0.5%\nenc_10:\t99.99 %\n' \
  'pos:\t0\npdev:\t0000:03:00.0\ngtt mem:\t4 kB\ncompute0:\t1.100%\ndrm-memory-gtt: 7\n' \
  'pdev: x\ncpu mem: 0 kB\nsdma1: 18446744073709551615.99%\n'
literal_seeds fuzz_http_query 10m 1700000000 1700000000.25 2024-05-01T12:00:00Z \
  '2024-05-01T12:00:00.5+02:00' \
  'GET /api/v1/history?gpu=0&since=10m HTTP/1.1\r\nHost: node\r\nAuthorization: Bearer s3cret-token\r\n\r\n' \
  'GET /metrics HTTP/1.0\n\n' \
  'HEAD /api/v1/history?since=2024-05-01T12%3A00%3A00Z&gpu=1 HTTP/1.1\r\nX-Echo: a+b\r\n\r\n'
# The snapshot wire form: JSON is decoded as it is; other bytes edit a valid document (see the
# target): walk down by bytes below 0xc0, then replace (or, with 0xf0 and above, erase).
literal_seeds fuzz_snapshot_wire '{"wire":1}' '{"wire":2,"proc":{}}' '[]' \
  '\x04\x00\x00\x00\x02\x00' '\x04\x01\x00\x01\x00\x05' '\x03\x00\xf5' '\x04\x00\x01\x00\x00\x0b' \
  '\x03\x01\x00\x00\x00\x00\x00\x01\x05\x04\x00\x00\x01\x00\x02'
# Prometheus's answers as `gpureap cluster` reads them (an instant query's, a range query's).
literal_seeds fuzz_prom_answer \
  '{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"up","instance":"n:9842","job":"gpureap"},"value":[1800000000,"1"]},{"metric":{"__name__":"gpureap_problem_process_memory_bytes","instance":"n:9842","gpu":"0","pid":"4242","problem":"ghost","keepers":"4250,+2","comm":"python"},"value":[1800000000,"8589934592"]},{"metric":{"__name__":"gpureap_gpu_memory_unattributed_bytes","instance":"n:9842","gpu":"0"},"value":[1800000000,"3e9"]}]}}' \
  '{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"instance":"a"},"values":[[1,"1"],[2,"NaN"]]}]}}' \
  '{"status":"error","errorType":"bad_data","error":"x"}'
# NVML: header (version, count, flags, total memory, pid_max; fuzz_nvml_records.cpp), then records.
v2_record='\xd2\x04\x00\x00\x00\x00\x00\x00\x00\x00\x10\x00\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff'
literal_seeds fuzz_nvml_records \
  "\x02\x02\x03\x00\x00\x00\x00\x14\x00\x00\x00\xff\xff\x3f\x00$v2_record$v2_record" \
  "\x02\x01\x03\x00\x00\x00\x00\x14\x00\x00\x00\xff\xff\x3f\x00$v2_record\x00\x00\x00\x00\x00\x00\x00\x00" \
  "\x00\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff\x3f\x00\xd2\x04\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff" \
  "\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff\x3f\x00$v2_record"

# --- runs --------------------------------------------------------------------------------
logs=$build/logs
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
mkdir -p "$logs"
run_one() {
  local target=$1 regressions=tests/fuzz/corpus/$1 start rc
  mkdir -p "$build/corpus/$target" "$regressions" "$seeds/$target"
  start=$(date +%s)
  # The first folder collects what this run learns; the others are only read. Crash, leak and
  # timeout inputs go to the regression folder.
  set +e
  "$build/tests/fuzz/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$regressions/" \
    "$build/corpus/$target" "$seeds/$target" "$regressions" >"$logs/$target.log" 2>&1
  rc=$?
  set -e
  local execs
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$logs/$target.log" | tail -1)
  if [ $rc -eq 0 ]; then
    echo "fuzz: $target ok in $(( $(date +%s) - start ))s (${execs:-?} runs)"
  else
    echo "fuzz: $target FAILED (exit $rc) after $(( $(date +%s) - start ))s; log $logs/$target.log:" >&2
    grep -E "ERROR|runtime error|property violated|Test unit written|SUMMARY" "$logs/$target.log" | head -20 >&2
    return 1
  fi
}

export -f run_one
export build seeds logs seconds
failed=0
printf '%s\n' "${targets[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one "$@"' _ {} || failed=1
if [ $failed -ne 0 ]; then
  echo "fuzz: a target failed; its input is in tests/fuzz/corpus/<target>/ (commit it with the fix)" >&2
  exit 1
fi
echo "fuzz: all ${#targets[@]} targets ran ${seconds}s each without a failure"
