#!/usr/bin/env bash
# Runs a test in a fresh network namespace with nothing but loopback (`unshare -n`) and with
# TPU_SKIP_MDS_QUERY=1: how every test that loads libtpu runs, so that libtpu's search for a
# cloud metadata server never leaves the machine. Exit 77 (skipped) where a network
# namespace cannot be made (no privilege for it).
set -u
if ! unshare -n true 2>/dev/null; then
    echo "# cannot make a network namespace (unshare -n): the libtpu test is skipped"
    exit 77
fi
exec unshare -n env TPU_SKIP_MDS_QUERY=1 "$@"
