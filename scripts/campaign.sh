#!/usr/bin/env bash
# The README's main job: set up (if needed), then a conformance campaign against the built-in log.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup.sh"
cd "$ROOT"
exec kafkalog campaign --runs "${RUNS:-1000}" --steps "${STEPS:-60}" --out "${OUT:-out/campaigns}" "$@"
