#!/bin/sh
# Starts one node of a job whose "hosts" are network namespaces, for tests/net/hosts_test.cc.
# Usage (as the program of `lmdx run`): in_host.sh NAMESPACE_PREFIX SUBNET PROGRAM [ARGS...]
# Rank r lives on host r / 2: network namespace NAMESPACE_PREFIX<host>, host name host<host>,
# address SUBNET.<host + 1>, where its TCP transport listens. Each step execs, so the launcher
# still watches the node's own process.
set -e
prefix=$1
subnet=$2
shift 2
host=$((LMDX_RANK / 2))
export LMDX_BIND_HOST="$subnet.$((host + 1))"
exec ip netns exec "$prefix$host" unshare --uts /bin/sh -c 'hostname "$0" && exec "$@"' \
  "host$host" "$@"
