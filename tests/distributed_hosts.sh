#!/bin/sh
# Several hosts on one machine: two network namespaces joined by a veth pair stand for two machines
# (10.77.0.1 and 10.77.0.2). mpirun runs in the first with a hostfile naming both; it reaches the
# second through a launch agent (in place of ssh) that enters the other namespace, and the ranks
# talk over TCP between the namespaces only (--mca btl tcp,self, btl_tcp_if_include), the path a
# multi-machine run takes. The distributed test suite (DDP equivalence included) runs there.
# Exits 77 (skipped) where namespaces cannot be made (no root, no CAP_NET_ADMIN, no iproute2).
# usage: distributed_hosts.sh MPIRUN TEST_DISTRIBUTED
mpirun=$1
exe=$2
ns_a=dl_host_a_$$
ns_b=dl_host_b_$$
veth_a=dlva$$
veth_b=dlvb$$
command -v ip > /dev/null || { echo "no iproute2: skipped"; exit 77; }
cleanup() {
  ip netns del "$ns_a" 2> /dev/null
  ip netns del "$ns_b" 2> /dev/null
  rm -rf "$tmp"
}
tmp=$(mktemp -d)
trap cleanup EXIT
if ! ip netns add "$ns_a" 2> /dev/null || ! ip netns add "$ns_b" 2> /dev/null; then
  echo "cannot create network namespaces here (needs root / CAP_NET_ADMIN): skipped"
  exit 77
fi
set -e
ip link add "$veth_a" type veth peer name "$veth_b"
ip link set "$veth_a" netns "$ns_a"
ip link set "$veth_b" netns "$ns_b"
ip -n "$ns_a" addr add 10.77.0.1/24 dev "$veth_a"
ip -n "$ns_b" addr add 10.77.0.2/24 dev "$veth_b"
for ns in "$ns_a" "$ns_b"; do ip -n "$ns" link set lo up; done
ip -n "$ns_a" link set "$veth_a" up
ip -n "$ns_b" link set "$veth_b" up

# The launch agent mpirun calls as "agent HOST COMMAND...": the command runs in the second host's namespace.
cat > "$tmp/agent" << EOF
#!/bin/sh
shift
exec ip netns exec $ns_b sh -c "\$*"
EOF
chmod +x "$tmp/agent"
printf '10.77.0.1 slots=1\n10.77.0.2 slots=1\n' > "$tmp/hosts"
env_args="-x PATH"
[ -n "$LD_LIBRARY_PATH" ] && env_args="$env_args -x LD_LIBRARY_PATH"
run() {
  ip netns exec "$ns_a" timeout 240 "$mpirun" --allow-run-as-root --hostfile "$tmp/hosts" -np 2 \
    --mca plm_rsh_agent "$tmp/agent" --mca btl tcp,self --mca btl_tcp_if_include 10.77.0.0/24 \
    --mca oob_tcp_if_include 10.77.0.0/24 $env_args "$@"
}
# The two ranks really live in two network namespaces.
where=$(run sh -c 'echo "rank $OMPI_COMM_WORLD_RANK in $(readlink /proc/self/ns/net)"')
echo "$where"
[ "$(echo "$where" | sed 's/.* in //' | sort -u | wc -l)" -eq 2 ] || { echo "FAIL: the ranks share a namespace"; exit 1; }
set +e
run "$exe"
rc=$?
echo "exit status $rc (ranks on 10.77.0.1 and 10.77.0.2, TCP between namespaces)"
exit $rc
