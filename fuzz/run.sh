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
status=0
for name in "${names[@]}"; do
  work="$out/$name"
  mkdir -p "$work/corpus"
  cp -n "$here/corpus/$name/"* "$work/corpus/" 2>/dev/null || true
  echo "== fuzz_$name $limit"
  # -rss_limit_mb: a reader must not allocate what the input merely claims; -timeout: nor hang.
  if ! "$build/fuzz/fuzz_$name" "$limit" -rss_limit_mb=2048 -timeout=10 -max_len=65536 -print_final_stats=1 \
      -artifact_prefix="$work/" "$work/corpus" > "$work/log" 2>&1; then
    status=1
    tail -40 "$work/log"
    echo "fuzz_$name: FINDING (artifacts in $work)"
  else
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb|Done [0-9]+ runs" "$work/log" | tr '\n' ' '
    echo
  fi
done
exit $status
