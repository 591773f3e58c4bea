#!/bin/bash
# A busy machine (issue 27): runs dl's training programs quiet and with one core held by another
# process (`yes > /dev/null`), round by round, and prints the medians and the slowdown.
#   bash bench/busy_machine.sh <build dir> [rounds]        (bench=true and samples=true builds)
# Programs: samples/fashion_mnist_cnn (img/s of one epoch on 20000 images, DataLoader with two
# workers) and bench/bench_train_step (ms per step of the MLP and LeNet-5, dl only).
# Compare two builds by running this script on each, alternately, on a quiet machine.
set -u
build=$(cd "${1:?usage: busy_machine.sh <build dir> [rounds]}" && pwd)
rounds=${2:-5}
res=$(mktemp)
trap 'rm -f "$res"; kill $hog 2>/dev/null' EXIT
hog=
for r in $(seq 1 "$rounds"); do
  for load in quiet busy; do
    if [ $load = busy ]; then yes > /dev/null & hog=$!; sleep 0.2; fi
    cnn=$("$build/samples/fashion_mnist_cnn" --epochs 1 --limit 20000 | sed -n 's/.*, \([0-9]*\) img\/s).*/\1/p' | tail -1)
    steps=$("$build/bench/bench_train_step" 3 --no-torch 2>&1)
    mlp=$(echo "$steps" | awk '/\(module\)/{for(i=1;i<=NF;i++) if ($i ~ /^[0-9]+\.[0-9]+$/) {print $i; exit}}')
    lenet=$(echo "$steps" | awk '/^LeNet/{for(i=1;i<=NF;i++) if ($i ~ /^[0-9]+\.[0-9]+$/) {print $i; exit}}')
    if [ $load = busy ]; then kill $hog; wait $hog 2>/dev/null; hog=; fi
    echo "$load $cnn $mlp $lenet" >> "$res"
  done
done
python3 - "$res" <<'PY'
import statistics, sys
rows = {"quiet": [], "busy": []}
for line in open(sys.argv[1]):
    load, *v = line.split()
    rows[load].append([float(x) for x in v])
med = {k: [statistics.median(col) for col in zip(*v)] for k, v in rows.items()}
print(f"{len(rows['quiet'])} rounds; busy = one of the cores held by `yes`")
print(f"{'program':38s} {'quiet':>10s} {'busy':>10s} {'slowdown':>9s}")
for i, (name, unit, higher) in enumerate([("fashion_mnist_cnn (img/s)", "", True),
                                          ("bench_train_step MLP (ms/step)", "", False),
                                          ("bench_train_step LeNet-5 (ms/step)", "", False)]):
    q, b = med["quiet"][i], med["busy"][i]
    print(f"{name:38s} {q:10.3f} {b:10.3f} {(q / b if higher else b / q):8.2f}x")
PY
