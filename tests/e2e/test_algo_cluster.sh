#!/usr/bin/env bash
# test_algo.sh's fleet cases (the literature's 30 requests over two hosts,
# every algorithm with --global) against a real Redis Cluster.
REDIS=cluster exec bash "$(dirname "${BASH_SOURCE[0]}")/test_algo.sh" "$@"
