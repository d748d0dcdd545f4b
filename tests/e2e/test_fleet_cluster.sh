#!/usr/bin/env bash
# test_fleet.sh against a real Redis Cluster (3 masters, a replica each):
# the fleet's accuracy unchanged, and the cluster's failures (failover,
# resharding, a majority lost) in place of a single server's.
REDIS=cluster exec bash "$(dirname "${BASH_SOURCE[0]}")/test_fleet.sh" "$@"
