# shellcheck shell=bash
# Shared by the scripts of scripts/bench/ (sourced, prints nothing itself):
#   bench_build TARGET...  builds the release tree build-bench (configured once, Gloo on) and
#                          the given ninja targets with the comm modules; prints the build
#                          folder's path;
#   torch_blas_dir         prints the folder whose libblas.so.3 PyTorch should load through
#                          LD_LIBRARY_PATH (empty: leave torch's BLAS alone);
#   training_rate          filters a tsrnn worker's or tsrnn-launch's report into "X M":
#                          samples/s of the whole job and collective ms per step (0 alone);
#   best_of3 COMMAND...    runs COMMAND (which prints "samples/s ...") three times and prints
#                          the line with the most samples/s;
#   have_mpi               true when mpirun and the build's mpi comm backend are there;
#   mpi_train N INI [ARG]...  trains INI in N tsrnn-worker ranks started by mpirun (one thread
#                          each), filtered by training_rate;
#   ratio A B, scaling A2 A1  A / B as "1.5x"; A2 / (2 A1) as "80%" (2 workers against 1);
#                          "-" without numbers.
# Debian's python3-torch calls whatever libblas.so.3 the loader finds: netlib's reference BLAS
# (~6 GFLOP/s) unless the alternatives point elsewhere. The baseline
# (../shared/reference/pytorch-baseline.md) ran it on OpenBLAS's OpenMP build, which shares
# torch's OpenMP runtime; the pthread build starts its own threads, which fight torch's
# spinning OpenMP threads at 2 threads (PyTorch then runs slower on 2 threads than on 1).

bench_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

bench_build() {
    local build="$bench_root/build-bench"
    bash "$bench_root/scripts/install-deps.sh" >&2
    # A folder configured before libgloo-dev was installed: configure it afresh (meson keeps
    # failed header checks).
    if grep -qs 'TSRNN_HAVE_GLOO 0\|TSRNN_HAVE_MPI_BACKEND 0' "$build/include/tsrnn_build.h"; then
        rm -rf "$build"
    fi
    if [ ! -f "$build/build.ninja" ]; then
        meson setup "$build" "$bench_root" --buildtype=release -Dtests=false -Dgloo=enabled \
            -Dmpi=enabled >&2
    fi
    # The comm modules beside the programs: the Gloo and MPI workers load them (this folder
    # always has both).
    ninja -C "$build" "$@" tsrnn-comm-gloo.so tsrnn-comm-mpi.so >/dev/null
    echo "$build"
}

# The OpenMP OpenBLAS: installed (libopenblas0-openmp), or unpacked from its .deb into
# build-bench/torch-openblas (apt-get download + dpkg-deb -x, nothing installed; once, needs
# the Debian mirror), else the pthread OpenBLAS the system has, else nothing.
torch_blas_dir() {
    local arch unpacked deb
    arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
    if [ -e "/usr/lib/$arch/openblas-openmp/libblas.so.3" ]; then
        echo "/usr/lib/$arch/openblas-openmp"
        return
    fi
    unpacked="$bench_root/build-bench/torch-openblas"
    if [ ! -e "$unpacked/usr/lib/$arch/openblas-openmp/libblas.so.3" ] &&
        [ -z "${TSRNN_BENCH_OFFLINE:-}" ]; then
        mkdir -p "$unpacked"
        if (cd "$unpacked" && apt-get download -qq libopenblas0-openmp) >/dev/null 2>&1; then
            for deb in "$unpacked"/libopenblas0-openmp_*.deb; do
                dpkg-deb -x "$deb" "$unpacked" && rm -f "$deb"
            done
        fi
    fi
    if [ -e "$unpacked/usr/lib/$arch/openblas-openmp/libblas.so.3" ]; then
        echo "$unpacked/usr/lib/$arch/openblas-openmp"
    elif [ -e "/usr/lib/$arch/openblas-pthread/libblas.so.3" ]; then
        echo "bench: no OpenMP OpenBLAS for PyTorch (apt-get install libopenblas0-openmp);" \
            "using the pthread one, whose 2-thread PyTorch numbers are too low" >&2
        echo "/usr/lib/$arch/openblas-pthread"
    fi
}

# Rank 0's "N ranks (gloo): X samples/s in all; collectives S s (M ms per step)" when N > 1,
# else its "Trained ... Y samples/s" line.
training_rate() {
    awk '/ranks \(/ { for (i = 1; i <= NF; i++) { if ($(i+1) == "samples/s") x = $i;
                                                if ($i == "ms") m = substr($(i-1), 2) } }
         /steps\/s, / && !x1 { for (i = 1; i <= NF; i++) if ($(i+1) == "samples/s") x1 = $i }
         END { if (x) print x, m; else print x1, 0 }'
}

# The VMs these run on are noisy: a figure is the best of three runs.
best_of3() {
    local best="0 0" v
    for _ in 1 2 3; do
        v=$("$@")
        if awk -v a="${v%% *}" -v b="${best%% *}" 'BEGIN { exit !(a > b) }'; then best=$v; fi
    done
    echo "$best"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 > 0 && a + 0 > 0) printf "%.1fx", a / b; else print "-" }'; }
scaling() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.0f%%", 100 * a / (2 * b); else print "-" }'; }

# Open MPI refuses root unless told; these benchmarks run their own jobs, so they tell it.
mpirun_root=()
if [ "$(id -u)" -eq 0 ]; then
    mpirun_root=(--allow-run-as-root)
fi

have_mpi() {
    command -v mpirun >/dev/null && grep -qs 'TSRNN_HAVE_MPI_BACKEND 1' "$build/include/tsrnn_build.h"
}

mpi_train() {
    local n=$1
    shift
    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 mpirun "${mpirun_root[@]}" -np "$n" \
        "$build/tsrnn-worker" --set trainer.accelerator=cpu --set trainer.num_threads=1 \
        --progress=none "$@" | training_rate
}
