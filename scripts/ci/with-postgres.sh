#!/usr/bin/env bash
# Runs COMMAND with CUSTODY_TEST_POSTGRES_URL naming a throwaway PostgreSQL cluster
# (scripts/test-postgres.sh), started in a temporary directory for it and stopped and deleted
# after it, whatever the outcome. COMMAND's status is this script's.
set -uo pipefail
postgres=$(mktemp -d /tmp/custody-test-postgres.XXXXXX)
trap 'scripts/test-postgres.sh stop "$postgres"' EXIT
CUSTODY_TEST_POSTGRES_URL=$(scripts/test-postgres.sh start "$postgres") || exit 1
export CUSTODY_TEST_POSTGRES_URL
echo "PostgreSQL for the tests: $CUSTODY_TEST_POSTGRES_URL"
"$@"
