#!/usr/bin/env bash
# Two "hosts" on one machine: two network namespaces joined by a veth pair (as
# tests/test_mpi.c's `hosts` tests make them), one rank in each, Open MPI's TCP transport
# between them; mpirun reaches the second namespace through an rsh agent that runs
# `ip netns exec` instead of ssh. Prints the LSTM-256 data-parallel run of scripts/bench/ddp.sh
# (2 ranks: samples/s and the allreduce time per step) on the two hosts and, for comparison,
# on one (shared memory), then bench-allreduce both ways. Best of 3 runs. Needs root (it makes
# namespaces) and removes them on exit.
# Usage: sudo scripts/bench/mpi-hosts.sh
set -euo pipefail

# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "$0")/lib.sh"

if [ "$(id -u)" -ne 0 ]; then
    echo "mpi-hosts.sh: needs root (ip netns add)" >&2
    exit 2
fi
build=$(bench_build tsrnn-worker bench-allreduce)
work=$(mktemp -d)
ns=(tsrnn-bench-$$-0 tsrnn-bench-$$-1)
veth=(tsb$$-0 tsb$$-1)
addr=(10.231.9.1 10.231.9.2)
subnet=10.231.9.0/24
cleanup() {
    for n in "${ns[@]}"; do
        ip netns pids "$n" 2>/dev/null | xargs -r kill -9
        ip netns del "$n" 2>/dev/null || true
    done
    rm -rf "$work"
}
trap cleanup EXIT

ip link add "${veth[0]}" type veth peer name "${veth[1]}"
for h in 0 1; do
    ip netns add "${ns[$h]}"
    ip link set "${veth[$h]}" netns "${ns[$h]}"
    ip -n "${ns[$h]}" addr add "${addr[$h]}/24" dev "${veth[$h]}"
    ip -n "${ns[$h]}" link set lo up
    ip -n "${ns[$h]}" link set "${veth[$h]}" up
done
printf '%s slots=1\n%s slots=1\n' "${addr[0]}" "${addr[1]}" >"$work/hosts"
cat >"$work/agent" <<AGENT
#!/bin/sh
host=\$1; shift
case \$host in
${addr[0]}) ns=${ns[0]} ;;
${addr[1]}) ns=${ns[1]} ;;
*) exit 255 ;;
esac
exec ip netns exec "\$ns" /bin/sh -c "\$*"
AGENT
chmod +x "$work/agent"

awk -f "$bench_root/bench/synthetic.awk" -v n=100000 >"$work/synthetic.csv"
cp "$bench_root/bench/lstm256.ini" "$work/lstm256.ini"

two_hosts=(ip netns exec "${ns[0]}" mpirun --allow-run-as-root --hostfile "$work/hosts"
    --mca plm_rsh_agent "$work/agent" --mca oob_tcp_if_include "$subnet"
    --mca btl_tcp_if_include "$subnet" --mca btl self,tcp --mca pml ob1)
one_host=(mpirun --allow-run-as-root)

# train MPIRUN...: "samples/s ms-per-step" of rank 0's summary.
train() {
    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 "$@" -np 2 "$build/tsrnn-worker" \
        --set trainer.accelerator=cpu --set trainer.num_threads=1 --progress=none \
        "$work/lstm256.ini" | training_rate
}

cd "$work"
t=$(best_of3 train "${two_hosts[@]}")
o=$(best_of3 train "${one_host[@]}")
echo "LSTM-256, batch 64 per rank, T 64, 2 ranks, 30 steps, best of 3:"
echo
echo "| ranks on | samples/s | allreduce ms/step |"
echo "|---|---:|---:|"
echo "| two hosts (namespaces, TCP over veth) | ${t%% *} | ${t##* } |"
echo "| one host (shared memory) | ${o%% *} | ${o##* } |"
echo
echo "two hosts:"
"${two_hosts[@]}" -np 2 "$build/bench-allreduce"
echo "one host:"
"${one_host[@]}" -np 2 "$build/bench-allreduce"
