#!/bin/sh
# The DDP sample on two processes for one epoch: it must finish, print both ranks' throughput and
# reach a test accuracy a trained MLP reaches (> 80% after one epoch). Skipped (77) without the dataset.
# usage: check_ddp.sh MPIRUN DDP_FASHION_MNIST
root=/usr/share/datasets/fashion-mnist
[ -d "$root" ] || { echo "no $root: skipped"; exit 77; }
out=$(timeout 240 "$1" --allow-run-as-root --oversubscribe -np 2 "$2" "$root" 1 2>&1)
rc=$?
echo "$out"
[ "$rc" -eq 0 ] || { echo "FAIL: exit status $rc"; exit 1; }
echo "$out" | grep -q "rank 1  epoch 1" || { echo "FAIL: rank 1 did not report"; exit 1; }
acc=$(echo "$out" | sed -n 's/.*test accuracy \([0-9.]*\)%.*/\1/p' | tail -1)
[ -n "$acc" ] || { echo "FAIL: no accuracy line"; exit 1; }
awk "BEGIN { exit !($acc > 80) }" || { echo "FAIL: accuracy $acc% after one epoch"; exit 1; }
echo "PASS: test accuracy $acc% after one epoch on 2 processes"
