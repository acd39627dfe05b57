"""`make_machine`: the conformance machine class for one run's session.

The plain families get `LogMachine` (machine.py), the producer families `ProducerLogMachine`
(producers.py), the transaction family `TxnLogMachine` (transactions.py) and the compaction
family `CompactLogMachine` (compaction.py). The factory sits
above all three so the subclasses can import their base without the base importing them back.
"""

from __future__ import annotations

from typing import Any

from hypothesis.stateful import RuleBasedStateMachine
from kafkalog.conformance.check.session import Session
from kafkalog.conformance.gen.compaction import CompactLogMachine, is_compact_config
from kafkalog.conformance.gen.machine import LogMachine, crash_rule
from kafkalog.conformance.gen.producers import ProducerLogMachine, is_producer_config
from kafkalog.conformance.gen.swarm import without_rules
from kafkalog.conformance.gen.transactions import TxnLogMachine, is_txn_config


def make_machine(session: Session) -> type[RuleBasedStateMachine]:
    """A machine class bound to `session` (a class per run, so runs never share state).

    The producer families get the machine with producer actors (conformance/gen/producers.py); the
    rules this run leaves out (swarm.py) are plain methods in either. `session.crash_weight`
    copies of the crash rule are added (0 = no crashes).
    """
    extra: dict[str, Any] = {f"crash_{n}": crash_rule(n) for n in range(1, session.crash_weight)}
    if session.crash_weight == 0:
        extra["crash"] = None  # not even drawn: runs without crashes generate as before them
    if {"producer_state", "transactions"} <= session.features and is_compact_config(
            session.config):
        machine = type("CompactLogMachine", (CompactLogMachine,), {"session": session, **extra})
    elif {"producer_state", "transactions"} <= session.features and is_txn_config(
            session.config):
        machine = type("TxnLogMachine", (TxnLogMachine,), {"session": session, **extra})
    elif "producer_state" in session.features and is_producer_config(session.config):
        machine = type("ProducerLogMachine", (ProducerLogMachine,), {"session": session, **extra})
    else:
        machine = type("LogMachine", (LogMachine,), {"session": session, **extra})
    return without_rules(machine, session.swarm_off)
