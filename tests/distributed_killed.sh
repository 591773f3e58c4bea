#!/bin/sh
# A rank killed in the middle of DDP training: the job must end (non-zero, with mpirun's report or
# dl's timeout error on the survivors) well before the time limit, never hang.
# usage: distributed_killed.sh MPIRUN TEST_DISTRIBUTED_FAILURE [mpirun options...]
mpirun=$1
exe=$2
shift 2
start=$(date +%s)
out=$(timeout 120 "$mpirun" "$@" -np 2 "$exe" killed 2>&1)
rc=$?
end=$(date +%s)
echo "$out"
echo "exit status $rc after $((end - start)) s"
if [ "$rc" -eq 124 ]; then echo "FAIL: the job hung (killed by timeout after 120 s)"; exit 1; fi
if [ "$rc" -eq 0 ]; then echo "FAIL: the job reported success"; exit 1; fi
if [ $((end - start)) -ge 60 ]; then echo "FAIL: the job took $((end - start)) s to end"; exit 1; fi
if ! echo "$out" | grep -q -e "signal 9" -e "did not complete within" -e "Killed"; then
  echo "FAIL: neither mpirun nor dl said why the job ended"; exit 1
fi
echo "PASS"
