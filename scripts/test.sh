#!/usr/bin/env bash
# The README's test command: set up (if needed), then the whole suite, Spark tests included.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup.sh"
cd "$ROOT"
exec python -m pytest -q "$@"
