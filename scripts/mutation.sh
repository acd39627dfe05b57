#!/usr/bin/env bash
# Mutation testing of impl/ modules, a benchmark-style job, never CI.
#
#   bash scripts/mutation.sh log_retention epoch_cache     # modules of impl/, default: both
#   SAMPLE=25 bash scripts/mutation.sh producer_state      # a seeded sample of 25 mutants
#
# cosmic-ray mutates files in place, so it works on a copy of the committed tree (git archive
# HEAD) under $SANDBOX, imported ahead of the editable install through PYTHONPATH; the worktree
# is never touched. The only killing test is default `kafkalog check` (benchmarks/mutation.py).
# Results: $SANDBOX/<module>.sqlite, summarised by cr-report at the end.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="$ROOT/.venv/bin/python"
BIN="$ROOT/.venv/bin"
SANDBOX="${SANDBOX:-/dev/shm/kafkalog-mutation}"
MODULES=("${@:-log_retention epoch_cache}")
rm -rf "$SANDBOX" && mkdir -p "$SANDBOX/src" "$SANDBOX/pkg/kafkalog"
git -C "$ROOT" archive HEAD | tar -x -C "$SANDBOX/src"
for entry in "$SANDBOX/src/kafkalog/"*; do ln -s "$entry" "$SANDBOX/pkg/kafkalog/"; done
for part in model impl conformance benchmarks; do ln -s "$SANDBOX/src/$part" "$SANDBOX/pkg/kafkalog/$part"; done
# The editable install's import hook would still map kafkalog.* to the worktree: drop it.
cat > "$SANDBOX/pkg/sitecustomize.py" <<'PY'
import sys
sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]
PY
cd "$SANDBOX"  # not src/: its kafkalog/ would shadow pkg/kafkalog on sys.path
export PYTHONPATH="$SANDBOX/pkg"
"$PY" -c "import kafkalog.impl, sys; assert kafkalog.impl.__file__.startswith('$SANDBOX'), kafkalog.impl.__file__"
for module in ${MODULES[@]}; do
  config="$SANDBOX/$module.toml"
  sed -e "s#^test-command = \".venv/bin/python #test-command = \"$PY #" \
    -e "s#^module-path = \"#module-path = \"$SANDBOX/src/#" \
    "src/benchmarks/cosmic-ray-$module.toml" > "$config"
  "$BIN/cosmic-ray" init "$config" "$SANDBOX/$module.sqlite"
  "$BIN/cr-filter-operators" "$SANDBOX/$module.sqlite" "$config"
  if [ -n "${SAMPLE:-}" ]; then
    "$PY" -m kafkalog.benchmarks.mutation_sample "$SANDBOX/$module.sqlite" "$SAMPLE" "${SAMPLE_SEED:-0}"
  fi
  "$BIN/cosmic-ray" exec "$config" "$SANDBOX/$module.sqlite"
  "$PY" -m kafkalog.benchmarks.mutation_report "$SANDBOX/$module.sqlite" "$SANDBOX/src"
done
