#!/usr/bin/env bash
# Runs a test in a fresh network namespace with nothing but loopback (`unshare -n`) and with
# TPU_SKIP_MDS_QUERY=1: how every test that loads libtpu runs, so that libtpu's search for a
# cloud metadata server never leaves the machine. Exit 77 (skipped) where a network
# namespace cannot be made (no privilege for it). ALLOW_MULTIPLE_LIBTPU_LOAD=1: libtpu otherwise
# takes a machine-wide lock (/tmp/libtpu_lockfile) for its process, so two test runs side by
# side (two CI jobs, or a build's tests while another build's run) failed each other; these
# tests only compile for TPUs or find none, and never hold a TPU.
set -u
if ! unshare -n true 2>/dev/null; then
    echo "# cannot make a network namespace (unshare -n): the libtpu test is skipped"
    exit 77
fi
exec unshare -n env TPU_SKIP_MDS_QUERY=1 ALLOW_MULTIPLE_LIBTPU_LOAD=1 "$@"
