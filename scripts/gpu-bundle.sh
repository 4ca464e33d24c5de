#!/usr/bin/env bash
# Builds tsrnn's GPU programs as a bundle that travels to a GPU node without a network or a
# package manager (docs/gpu.md "GPU nodes without a network"): build here, on a machine with
# the CUDA toolkit, cuDNN 9 and NCCL's header (a login node), copy the folder, run there.
#
#   bash scripts/gpu-bundle.sh [--out DIR] [--build-dir DIR]      # build and collect
#   bash scripts/gpu-bundle.sh --selftest [--out DIR] [--build-dir DIR]
#
# The bundle (default .gpu-bundle/, git-ignored):
#   bin/    tsrnn-worker, tsrnn-launch, tsrnn-predict, tsrnn-comm-gloo.so (CUDA, NCCL, Gloo)
#   tests/  the GPU test programs (test_backend_ops, test_gpu, test_nccl_gpu, test_cuda_libs,
#           test_nccl_lib, test_cudnn_args), run by scripts/gpu-check.sh --bundle DIR
#   lib/    every shared library they need that is not glibc, libstdc++, libgcc_s, zlib or an
#           NVIDIA library (libinih, libjansson, libcmocka, libgloo and its own)
#   env.sh  `source DIR/env.sh`: puts lib/ and NVIDIA's libraries (cuBLAS, cuDNN, NCCL) on
#           LD_LIBRARY_PATH, from NVIDIA's pip wheels of python3 (the ones PyTorch loads) or a
#           CUDA toolkit, and bin/ on PATH; says what it found
#   MANIFEST what was built, from which commit, against which libraries
# The CUDA runtime is linked statically (a program starts without libcudart.so); cuBLAS,
# cuDNN and NCCL are loaded with dlopen when used. Target: at most 16 MiB, glibc >= 2.34.
#
# --selftest simulates the GPU node on this machine (no GPU needed): it downloads the four
# NVIDIA wheels the node's PyTorch 2.11 pins (sha256 checked, cached in
# $TSRNN_GPU_WHEELS_CACHE, default ~/.cache/tsrnn/gpu-wheels, never in the source tree), and
# runs the bundle in a private mount namespace where the CUDA toolkit and every Debian
# library the bundle carries (and cairo, OpenBLAS) are hidden behind empty files, so that a
# load that misses the bundle fails loudly. It checks: every library resolves to the bundle,
# the wheels or glibc; the library-loading tests pass from the wheels; two CPU workers train
# over Gloo from the bundle; every GPU row of gpu-check.sh fails for "no GPU" and for no
# other reason; and a source build configured against the wheels alone finds cuDNN and NCCL
# there. Needs root (mount namespaces); prints the bundle's size and the self-test's time.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=$root/.gpu-bundle
build=$root/build-bundle
selftest=false
while [ $# -gt 0 ]; do
    case $1 in
    --out) out=$(realpath -m "$2"); shift 2 ;;
    --build-dir) build=$(realpath -m "$2"); shift 2 ;;
    --selftest) selftest=true; shift ;;
    -h | --help) sed -n '2,33p' "$0"; exit 0 ;;
    *) echo "gpu-bundle: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
start_s=$SECONDS
say() { echo "== gpu-bundle: $* ($((SECONDS - start_s)) s)"; }
die() { echo "gpu-bundle: $*" >&2; exit 1; }

# The libraries a bundle may assume on any glibc >= 2.34 Linux, and NVIDIA's (the driver's and
# the ones env.sh finds): never carried.
system_lib='^(linux-vdso\.so|ld-linux-x86-64\.so|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libutil\.so|libstdc\+\+\.so|libgcc_s\.so|libz\.so)'
nvidia_lib='^(libcuda\.so|libnvidia-|libcudart\.so|libcublas|libcudnn|libnccl)'

build_bundle() {
    say "build ($build: CUDA, NCCL and Gloo; no MPI, no PJRT)"
    bash scripts/install-deps.sh --test >/dev/null
    local opts=(-Dcuda=enabled -Dnccl=enabled -Dgloo=enabled -Dmpi=disabled -Dpjrt=disabled
        -Dtests=true -Dwerror=true)
    local log=$build.setup.log
    if [ -f "$build/build.ninja" ]; then
        meson setup --reconfigure "$build" "${opts[@]}" >"$log" 2>&1 ||
            { cat "$log"; die "meson setup failed (above)"; }
    else
        meson setup "$build" --buildtype=release "${opts[@]}" >"$log" 2>&1 ||
            { cat "$log"; die "meson setup failed (above)"; }
    fi
    meson compile -C "$build" >"$build.compile.log" 2>&1 ||
        { tail -40 "$build.compile.log"; die "the build failed (above; $build.compile.log)"; }

    say "collect into $out"
    rm -rf "$out.part"
    mkdir -p "$out.part/bin" "$out.part/tests" "$out.part/lib"
    cp "$build"/tsrnn-worker "$build"/tsrnn-launch "$build"/tsrnn-predict \
        "$build"/tsrnn-comm-gloo.so "$out.part/bin/"
    local t
    for t in backend_ops gpu nccl_gpu cuda_libs nccl_lib cudnn_args cuda_plan; do
        [ -f "$build/tests/test_$t" ] || die "$build/tests/test_$t was not built"
        cp "$build/tests/test_$t" "$out.part/tests/"
    done
    # Every library ldd resolves that is neither the system's nor NVIDIA's, under its soname.
    local elf name path
    for elf in "$out.part"/bin/* "$out.part"/tests/*; do
        while read -r name _ path _; do
            [[ $name =~ $system_lib || $name =~ $nvidia_lib ]] && continue
            [ -n "$path" ] && [ -f "$path" ] || die "$elf needs $name, which is not found here"
            [ -f "$out.part/lib/$name" ] || cp -L "$path" "$out.part/lib/$name"
        done < <(ldd "$elf" | grep '=>')
    done
    strip --strip-unneeded "$out.part"/bin/* "$out.part"/tests/* "$out.part"/lib/*
    write_env "$out.part/env.sh"
    # The newest glibc symbol any file needs: the bundle promises 2.34.
    local newest=GLIBC_2.0 f v
    for f in "$out.part"/bin/* "$out.part"/tests/* "$out.part"/lib/*; do
        v=$(objdump -T "$f" | grep -o 'GLIBC_2\.[0-9]*' | sort -uV | tail -1)
        newest=$(printf '%s\n%s\n' "$newest" "${v:-GLIBC_2.0}" | sort -V | tail -1)
    done
    [ "$(printf '%s\nGLIBC_2.34\n' "$newest" | sort -V | tail -1)" = GLIBC_2.34 ] ||
        die "a file of the bundle needs $newest, newer than the glibc 2.34 it promises"
    {
        echo "tsrnn GPU bundle $(git describe --always --dirty 2>/dev/null || echo '?'), built $(date -u +%FT%TZ) on $(uname -n)"
        echo "needs: glibc >= ${newest#GLIBC_} (newest symbol), an NVIDIA driver for CUDA $(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
        sed -n '/^  Found/,/^$/p' "$log" | sed 's/^ */  /'
        echo "files:"
        (cd "$out.part" && find . -type f ! -name MANIFEST -printf '  %p %s\n' | sort)
    } >"$out.part/MANIFEST"
    rm -rf "$out"
    mv "$out.part" "$out"
    echo "bundle: $out, $(du -sb "$out" | cut -f1) bytes ($(du -sh "$out" | cut -f1)); newest glibc symbol ${newest}"
    [ "$(du -sb "$out" | cut -f1)" -le $((16 * 1024 * 1024)) ] || die "the bundle is over 16 MiB"
}

write_env() { # path
    cat >"$1" <<'ENV'
# tsrnn GPU bundle: `source` this file (bash). Puts the bundle's programs on PATH, its
# libraries and NVIDIA's (cuBLAS, cuDNN, NCCL) on LD_LIBRARY_PATH, and says what it found.
# NVIDIA's libraries come from the first of: $TSRNN_NVIDIA_LIBDIRS (folders, ':'-separated),
# the NVIDIA pip wheels of ${TSRNN_PYTHON:-python3} (the ones its PyTorch loads), a CUDA
# toolkit ($CUDA_HOME, nvcc's, /usr/local/cuda), the system's folders.
TSRNN_BUNDLE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export TSRNN_BUNDLE
tsrnn_env_dirs=()
if [ -n "${TSRNN_NVIDIA_LIBDIRS:-}" ]; then
    IFS=: read -r -a tsrnn_env_dirs <<<"$TSRNN_NVIDIA_LIBDIRS"
fi
while read -r tsrnn_env_root; do
    [ -n "$tsrnn_env_root" ] || continue
    for tsrnn_env_sub in cu13 cublas cudnn nccl cuda_runtime; do
        tsrnn_env_dirs+=("$tsrnn_env_root/$tsrnn_env_sub/lib")
    done
done < <("${TSRNN_PYTHON:-python3}" -c 'import nvidia; print(*nvidia.__path__, sep="\n")' 2>/dev/null)
for tsrnn_env_root in "${CUDA_HOME:-}" "$(dirname "$(dirname "$(command -v nvcc 2>/dev/null || echo /x/x)")")" /usr/local/cuda; do
    [ -n "$tsrnn_env_root" ] && tsrnn_env_dirs+=("$tsrnn_env_root/lib64" "$tsrnn_env_root/lib")
done
tsrnn_env_dirs+=(/usr/lib/x86_64-linux-gnu /usr/lib64)
tsrnn_env_path=$TSRNN_BUNDLE/lib
for tsrnn_env_lib in libcublas.so.13 libcublasLt.so.13 libcudnn.so.9 libnccl.so.2; do
    tsrnn_env_found=
    for tsrnn_env_dir in "${tsrnn_env_dirs[@]}"; do
        if [ -s "$tsrnn_env_dir/$tsrnn_env_lib" ]; then
            tsrnn_env_found=$tsrnn_env_dir
            break
        fi
    done
    if [ -z "$tsrnn_env_found" ]; then
        echo "tsrnn env: $tsrnn_env_lib not found (pip install nvidia-cublas nvidia-cudnn-cu13 nvidia-nccl-cu13, or a CUDA toolkit with cuDNN 9 and NCCL): the GPU cannot be used" >&2
        continue
    fi
    echo "tsrnn env: $tsrnn_env_lib from $tsrnn_env_found" >&2
    case ":$tsrnn_env_path:" in *":$tsrnn_env_found:"*) ;; *) tsrnn_env_path=$tsrnn_env_path:$tsrnn_env_found ;; esac
done
export LD_LIBRARY_PATH=$tsrnn_env_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$TSRNN_BUNDLE/bin:$PATH
# The test programs' in-process comm backends (gloo) are beside the programs.
export TSRNN_MODULE_DIR=$TSRNN_BUNDLE/bin
unset tsrnn_env_dirs tsrnn_env_root tsrnn_env_sub tsrnn_env_path tsrnn_env_lib tsrnn_env_found tsrnn_env_dir
ENV
}

# --- the GPU node, simulated ---------------------------------------------------------------

wheels_cache=${TSRNN_GPU_WHEELS_CACHE:-$HOME/.cache/tsrnn/gpu-wheels}
# What PyTorch 2.11 (CUDA 13.0) pins, as the GPU image has them: name, file, sha256.
wheels=(
    "nvidia-cuda-runtime==13.0.96 nvidia_cuda_runtime-13.0.96-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl 7f82250d7782aa23b6cfe765ecc7db554bd3c2870c43f3d1821f1d18aebf0548"
    "nvidia-cublas==13.1.0.3 nvidia_cublas-13.1.0.3-py3-none-manylinux_2_27_x86_64.whl ee8722c1f0145ab246bccb9e452153b5e0515fd094c3678df50b2a0888b8b171"
    "nvidia-cudnn-cu13==9.19.0.56 nvidia_cudnn_cu13-9.19.0.56-py3-none-manylinux_2_27_x86_64.whl d20e1734305e9d68889a96e3f35094d733ff1f83932ebe462753973e53a572bf"
    "nvidia-nccl-cu13==2.28.9 nvidia_nccl_cu13-2.28.9-py3-none-manylinux_2_18_x86_64.whl e4553a30f34195f3fa1da02a6da3d6337d28f2003943aa0a3d247bbc25fefc42"
)

fetch_wheels() {
    say "NVIDIA's wheels ($wheels_cache)"
    mkdir -p "$wheels_cache"
    local w spec file sum
    for w in "${wheels[@]}"; do
        read -r spec file sum <<<"$w"
        if [ ! -f "$wheels_cache/$file" ]; then
            python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
                --implementation cp --platform manylinux_2_27_x86_64 \
                --platform manylinux_2_18_x86_64 --platform manylinux_2_17_x86_64 \
                --platform manylinux2014_x86_64 -d "$wheels_cache" "$spec" ||
                die "cannot download $spec (pip above)"
        fi
        echo "$sum  $wheels_cache/$file" | sha256sum -c --quiet - ||
            { rm -f "$wheels_cache/$file"; die "$file does not have the pinned sha256; removed"; }
    done
    # Unpacked once, as pip would install them: site/nvidia/{cu13,cudnn,nccl}/...
    if [ ! -f "$wheels_cache/site/.complete" ]; then
        rm -rf "$wheels_cache/site"
        for w in "${wheels[@]}"; do
            read -r spec file sum <<<"$w"
            python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
                "$wheels_cache/$file" "$wheels_cache/site"
        done
        touch "$wheels_cache/site/.complete"
    fi
}

selftest() {
    [ "$(id -u)" = 0 ] || die "--selftest needs root (it hides libraries in a mount namespace)"
    command -v unshare >/dev/null || die "--selftest needs unshare (util-linux)"
    fetch_wheels
    local work
    work=$(mktemp -d "${TMPDIR:-/tmp}/tsrnn-gpu-node-XXXXXX")
    # What the node lacks: the toolkit (nvcc's folder, resolved), and every file behind a
    # library the bundle carries, cairo, fontconfig and OpenBLAS.
    local toolkit hide=() name file
    toolkit=$(realpath "$(dirname "$(dirname "$(command -v nvcc)")")")
    for name in "$out"/lib/* libcairo.so.2 libfontconfig.so.1 libopenblas.so.0; do
        name=$(basename "$name")
        for file in $(ldconfig -p | awk -v n="$name" '$1 == n {print $NF}') /lib/"$name"; do
            [ -e "$file" ] && hide+=("$(realpath "$file")")
        done
    done
    printf '%s\n' "${hide[@]}" | sort -u >"$work/hidden"
    say "the node: a mount namespace without $toolkit and $(wc -l <"$work/hidden") library files"
    local rc=0
    unshare -m --propagation private env TOOLKIT="$toolkit" WORK="$work" OUT="$out" \
        SITE="$wheels_cache/site" ROOT="$root" BUILD="$build" bash -c "$(declare -f node_checks); node_checks" ||
        rc=$?
    echo "bundle: $(du -sb "$out" | cut -f1) bytes ($(du -sh "$out" | cut -f1)); self-test: $((SECONDS - start_s)) s in all"
    if [ $rc -eq 0 ]; then
        echo "gpu-bundle --selftest: ok"
        rm -rf "$work"
    else
        echo "gpu-bundle --selftest: FAILED (logs in $work)"
    fi
    return $rc
}

# Runs inside the namespace (bash -c: a function of its own, no outer variables but the
# environment's).
node_checks() {
    set -uo pipefail
    local failed=0 empty=$WORK/empty f
    : >"$empty"
    mount -t tmpfs tmpfs "$TOOLKIT"
    while read -r f; do mount --bind "$empty" "$f"; done <"$WORK/hidden"
    check() { # name, verdict (0 ok), detail
        printf '%-44s %s\n' "$1" "$([ "$2" = 0 ] && echo ok || echo FAILED): $3"
        [ "$2" = 0 ] || failed=1
    }
    if nvcc --version >/dev/null 2>&1; then
        check "toolkit hidden" 1 "nvcc still runs"
    else
        check "toolkit hidden" 0 "$TOOLKIT is empty, nvcc does not run"
    fi

    export PYTHONPATH=$SITE
    # shellcheck disable=SC1091
    source "$OUT/env.sh" 2>"$WORK/env.log"
    local env_ok=0
    grep -q "not found" "$WORK/env.log" && env_ok=1
    check "env.sh finds NVIDIA's libraries" $env_ok "$(tr '\n' ';' <"$WORK/env.log" | sed 's/tsrnn env: //g')"

    # 1. Every library of every file resolves to the bundle, the wheels or the system's
    # glibc, libstdc++, libgcc_s, zlib.
    local bad="" elf line
    for elf in "$OUT"/bin/* "$OUT"/tests/* "$OUT"/lib/*; do
        while read -r line; do
            case $line in
            *"not found"* | *"file too short"* | *"error"*) bad="$bad $(basename "$elf"): $line;" ;;
            *"=> $OUT/lib/"* | *"=> $SITE/"*) ;;
            *"=> /"*)
                echo "$line" | grep -Eq '^(linux-vdso|ld-linux-x86-64|libc|libm|libdl|libpthread|librt|libutil|libstdc\+\+|libgcc_s|libz)\.so' ||
                    bad="$bad $(basename "$elf"): $line;" ;;
            esac
        done < <(ldd "$elf" 2>&1 | sed 's/^[[:space:]]*//; s/ (0x[0-9a-f]*)$//')
    done
    check "every library from the bundle, wheels, glibc" "$([ -z "$bad" ] && echo 0 || echo 1)" "${bad:-$(ls "$OUT/lib" | tr '\n' ' ')}"

    # 2. The library-loading tests, from the wheels.
    local t loaded
    for t in cuda_libs nccl_lib cudnn_args; do
        CMOCKA_MESSAGE_OUTPUT=STDOUT TSRNN_SOURCE_ROOT=$ROOT "$OUT/tests/test_$t" >"$WORK/$t.log" 2>&1
        local code=$?
        loaded=$(sed -n 's/^# loaded: //p; s/^# cudnn_args: //p' "$WORK/$t.log" | head -2 | tr '\n' ' ')
        [ $code -eq 0 ] && ! echo "$loaded" | grep -q "$TOOLKIT" && code=0
        [ $code -eq 0 ] && [ -n "$loaded" ] && ! echo "$loaded" | grep -qv "$SITE" || code=1
        check "test_$t from the wheels" $code "${loaded:-see $WORK/$t.log}"
    done

    # 3. Two CPU workers over Gloo, from the bundle (cairo is hidden: the picture is skipped
    # with a warning, not the run).
    local air="$WORK/air.log"
    (cd "$WORK" && TSRNN_SOURCE_ROOT=$ROOT timeout 120 "$OUT/bin/tsrnn-launch" --accelerator cpu \
        --devices 2 "$ROOT/examples/air_passengers.ini" --set training.n_epochs=30 \
        --set output.work_dir="$WORK/runs" --set output.model_name=gloo2 >"$air" 2>&1)
    local code=$? val
    val=$(sed -n 's/^val_loss \([0-9.e-]*\) .*/\1/p' "$air" | tail -1)
    grep -q "Launching 2 worker processes (cpu, gloo)" "$air" || code=1
    grep -q "warning: forecast.png is not drawn: cannot load libcairo.so.2" "$air" || code=1
    [ -f "$WORK/runs/gloo2/forecast.csv" ] || code=1
    check "2 CPU workers over Gloo (30 epochs)" $code "exit status and files as expected, val_loss ${val:-?} ($air)"

    # 4. gpu-check.sh from the bundle: the rows that need a GPU fail for "no GPU" and for
    # nothing else; those that do not (the libraries, cuDNN's argument checks) pass; a row
    # whose tool the machine lacks says so.
    bash "$ROOT/scripts/gpu-check.sh" --bundle "$OUT" --logs "$WORK/gpu-check" >"$WORK/gpu-check.out" 2>&1
    local rows others
    rows=$(sed -n '/^== gpu-check: /,$p' "$WORK/gpu-check.out" | tail -n +4)
    others=$(echo "$rows" | grep -v '^$' | grep -v 'FAILED: no GPU (' | grep -v ' skipped: ' |
        grep -Ev '^(cuBLAS \+ cuDNN load|NCCL loads|cuDNN argument checks|the whole check) .* ok' || true)
    check "gpu-check rows fail only for no GPU" "$([ -n "$rows" ] && [ -z "$others" ] && echo 0 || echo 1)" \
        "$(echo "$rows" | grep -c 'no GPU') of $(echo "$rows" | grep -c .) rows for no GPU; other: ${others:-none} ($WORK/gpu-check.out)"
    [ -f "$WORK/gpu-check.tar.gz" ] || check "gpu-check packs its logs" 1 "no $WORK/gpu-check.tar.gz"

    # 5. A build from source that finds cuDNN and NCCL in the wheels only: the toolkit is back
    # (nvcc, cuBLAS) without its cuDNN and NCCL, as a CUDA toolkit comes (each of its include
    # and library folders replaced by one of links to what it holds but those); the system's
    # libraries as they are (a build machine has them).
    umount "$TOOLKIT"
    while read -r f; do umount "$f"; done <"$WORK/hidden"
    for dir in include lib64; do
        mkdir -p "$WORK/toolkit-$dir" "$WORK/orig-$dir"
        mount --bind "$TOOLKIT/$dir" "$WORK/orig-$dir"
        for f in "$WORK/orig-$dir"/*; do
            case $(basename "$f") in cudnn* | libcudnn* | nccl* | libnccl*) continue ;; esac
            ln -s "$f" "$WORK/toolkit-$dir/$(basename "$f")"
        done
        mount --bind "$WORK/toolkit-$dir" "$TOOLKIT/$dir"
    done
    local src_build=$WORK/wheel-build
    (cd "$ROOT" && meson setup "$src_build" -Dcuda=enabled -Dnccl=enabled -Dtests=false -Dgloo=disabled \
        -Dmpi=disabled -Dpjrt=disabled >"$WORK/wheel-build.log" 2>&1)
    code=$?
    local found
    found=$(sed -n '/^  Found/,/^$/p' "$WORK/wheel-build.log" | grep -E 'cuDNN|NCCL' | tr -s ' ' | tr '\n' ';')
    echo "$found" | grep -q "cuDNN : $SITE/nvidia/cudnn/lib" || code=1
    echo "$found" | grep -q "NCCL : $SITE/nvidia/nccl/lib" || code=1
    if [ $code -eq 0 ]; then
        meson compile -C "$src_build" tsrnn-worker >>"$WORK/wheel-build.log" 2>&1 || code=1
    fi
    check "a source build finds cuDNN, NCCL in wheels" $code "${found:-see $WORK/wheel-build.log}"
    return $failed
}

build_bundle
if $selftest; then
    selftest
fi
