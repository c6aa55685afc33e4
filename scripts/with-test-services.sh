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
start() {
  bash "$recipes/$1.sh" start "$work/$1" >"$work/$1.env" 2>"$work/$1.start.log" || { cat "$work/$1.start.log" >&2; exit 1; }
}
for s in $services; do
  echo "with-test-services: installing and starting $s" >&2
  bash "$recipes/$s.sh" install >"$work/$s.install.log" 2>&1 || { cat "$work/$s.install.log" >&2; exit 1; }
  start "$s"
  if [ "$s" = matrix-synapse ]; then
    # The recipe relaxes Synapse's rate limits but not room creation (10 rooms, then one
    # a minute per user): the Matrix tests make a room each and would wait minutes.
    # Its homeserver.yaml is written at the first start and kept: add the relaxation
    # there and start again.
    config="$work/$s/homeserver.yaml"
    if ! grep -q '^rc_room_creation:' "$config"; then
      bash "$recipes/$s.sh" stop "$work/$s" >/dev/null 2>&1
      # (the generated file ends without a newline)
      printf '\nrc_room_creation: {per_second: 10000, burst_count: 10000}\n' >>"$config"
      start "$s"
    fi
  fi
done
set -a
for s in $services; do . "$work/$s.env"; done
set +a
"$@"
