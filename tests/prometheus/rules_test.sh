#!/usr/bin/env bash
# promtool on deploy/prometheus: the rules load, and their unit tests pass.
#   rules_test.sh DEPLOY_PROMETHEUS_DIR
# Exit 0 pass, 1 fail, 77 skipped (promtool not installed: apt-get install prometheus).
set -uo pipefail
DIR=${1:?usage: rules_test.sh DEPLOY_PROMETHEUS_DIR}
if ! command -v promtool >/dev/null; then
  echo "SKIP: promtool is not installed (apt-get install prometheus)"
  exit 77
fi
cd "$DIR" || exit 1
promtool check rules alerts.yml || exit 1
promtool test rules alerts_test.yml || exit 1
