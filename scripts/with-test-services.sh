#!/usr/bin/env bash
# Start the real servers the suite runs against (from ../shared/recipes), run "$@", stop them.
# Without the recipes folder the command runs alone and tests that need a server skip,
# except under CI=true, where the suite refuses to skip them (see tests/conftest.py).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
recipes=${TICKETHUB_RECIPES:-$here/../shared/recipes}
services=${TICKETHUB_TEST_SERVICES:-postgresql imap-smtp chromium matrix-synapse}

if [ ! -d "$recipes" ] || [ "${TICKETHUB_TEST_SERVICES-}" = "none" ]; then
  echo "with-test-services: no recipes at $recipes; running without outside servers" >&2
  exec "$@"
fi

work=$(mktemp -d)
stop_all() {
  for s in $services; do bash "$recipes/$s.sh" stop "$work/$s" >/dev/null 2>&1 || true; done
}
trap stop_all EXIT
for s in $services; do
  echo "with-test-services: installing and starting $s" >&2
  bash "$recipes/$s.sh" install >"$work/$s.install.log" 2>&1 || { cat "$work/$s.install.log" >&2; exit 1; }
  bash "$recipes/$s.sh" start "$work/$s" >"$work/$s.env" 2>"$work/$s.start.log" || { cat "$work/$s.start.log" >&2; exit 1; }
done
set -a
for s in $services; do . "$work/$s.env"; done
set +a
"$@"
