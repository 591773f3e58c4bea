#!/usr/bin/env bash
# Runs each libFuzzer harness over its seed corpus (fuzz/corpus/<name>), for a number of runs or
# seconds. Findings are written to $out/<name>/ and make the script fail.
#   usage: fuzz/run.sh BUILD_DIR [-runs=N | -max_total_time=S] [harness ...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$1
limit=${2:--max_total_time=20}
shift $(( $# >= 2 ? 2 : 1 ))
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(idx cifar safetensors pth)
out=${FUZZ_OUT:-$(mktemp -d)}
# One harness: its corpus copy, the run, and a one-line summary or its finding.
run_one() {
  local name=$1 work="$out/$1"
  mkdir -p "$work/corpus"
  cp -n "$here/corpus/$name/"* "$work/corpus/" 2>/dev/null || true
  # -rss_limit_mb: a reader must not allocate what the input merely claims; -timeout: nor hang.
  if ! "$build/fuzz/fuzz_$name" "$limit" -rss_limit_mb=2048 -timeout=10 -max_len=65536 -print_final_stats=1 \
      -artifact_prefix="$work/" "$work/corpus" > "$work/log" 2>&1; then
    echo "== fuzz_$name $limit"
    tail -40 "$work/log"
    echo "fuzz_$name: FINDING (artifacts in $work)"
    return 1
  fi
  echo "== fuzz_$name $limit: $(grep -E "stat::number_of_executed_units|stat::peak_rss_mb|Done [0-9]+ runs" "$work/log" | tr '\n' ' ')"
}
# As many harnesses at once as there are cores (each fuzzes for the full time given).
jobs=${FUZZ_JOBS:-$(nproc)}
status=0
pids=()
for name in "${names[@]}"; do
  run_one "$name" &
  pids+=($!)
  if (( ${#pids[@]} >= jobs )); then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || status=1; done
exit $status
