"""An adapter that breaks the protocol on purpose, one way per mode (argv[1]).

It answers the handshake correctly (except in mode `no_core`) and misbehaves on the first
request after it, so tests can check that each kind of breakage is an adapter error.
"""

from __future__ import annotations

import json
import sys
import time

MODE = sys.argv[1]
FEATURES = ["core"] if MODE != "no_core" else ["timestamps"]


def reply(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    request = json.loads(line)
    ident = request["id"]
    if request["action"] == "handshake":
        reply({"id": ident, "ok": {"protocol_version": 1, "implementation": f"misbehaving {MODE}",
                                   "features": FEATURES}})
        continue
    if MODE == "crash":
        print("adapter going down", file=sys.stderr)
        sys.exit(3)
    if MODE == "garbage":
        sys.stdout.write("hello, I am not JSON\n")
    elif MODE == "wrong_id":
        reply({"id": ident + 100, "ok": None})
    elif MODE == "hang":
        time.sleep(30)
    elif MODE == "bad_result":
        is_open = request["action"] == "open"
        reply({"id": ident, "ok": None} if is_open else {"id": ident, "ok": "x"})
    elif MODE == "unknown_action":
        reply({"id": ident, "error": {"code": "UnknownActionError", "message": "what?"}})
    sys.stdout.flush()
