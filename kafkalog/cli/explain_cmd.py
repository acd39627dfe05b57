"""`kafkalog explain kip-101|kip-279`: replay the counterexamples the replication search found.

`kafkalog explain ID` prints what a cited ID means instead: a source ID from specs/sources.md
(`REC-10`, `BUG-C5`, `KAFKA-6361`) or a rule from the specs (`KL-APPEND-7`).

The shrunk scenarios live in `specs/counterexamples/` as trace files (specs/trace-format.md): the
header line says which truncation policy broke (`broken`), which invariant (`outcome`) and which
published scenario it reproduces (`signature`); each step line is one `replication.<action>`.
This module also writes and reads those files, for the tests that regenerate and replay them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kafkalog.conformance.errors import TraceFormatError
from kafkalog.conformance.traces.trace import (
    TRACE_FORMAT_VERSION,
    Trace,
    TraceHeader,
    TraceStep,
    dumps_trace,
    git_commit,
)
from kafkalog.model.errors import KafkalogError
from kafkalog.model.replication import log as rlog
from kafkalog.model.replication.log import Entry
from kafkalog.model.replication.policies import policy_named
from kafkalog.model.replication.replication import ReplicationState
from kafkalog.model.replication.steps import Outcome, Step, check_step, replay
from kafkalog.model.values import LogConfig
from kafkalog.resources import specs_dir

COUNTEREXAMPLES = specs_dir() / "counterexamples"  # the checkout's specs/, or the wheel's
ACTION_PREFIX = "replication."
FAMILY_PREFIX = "replication-"

# A definition line of specs/sources.md, and the bold head of a rule in specs/*.md.
SOURCE_LINE = re.compile(r"^- \*\*(?P<id>[A-Z]{2,6}(?:-C\d+|-\d+[a-z]?))\*\* ")
RULE_HEAD = re.compile(r"^- \*\*(?P<id>KL-[A-Z]+-\d+[a-z]?)\b")

# Which saved files each `explain` topic replays, in order.
TOPICS: dict[str, tuple[str, ...]] = {
    "kip-101": ("kip-101-scenario-1-data-loss.jsonl", "kip-101-scenario-2-divergence.jsonl"),
    "kip-279": ("kip-279-kafka-6361-divergence.jsonl",),
}


@dataclass(frozen=True)
class Counterexample:
    """A saved scenario: the policy it breaks, the invariant, the published name, the steps."""

    policy: str
    replica_count: int
    invariant: str
    scenario: str
    steps: tuple[Step, ...]


def _result_json(result: Any) -> Any:
    return result.label() if isinstance(result, Entry) else result


def to_trace(example: Counterexample, seed: int = 0) -> Trace:
    """The counterexample as a trace; the step that breaks the invariant carries `divergence`."""
    outcomes = replay(example.steps, example.policy, example.replica_count)
    steps = tuple(
        TraceStep(
            action=ACTION_PREFIX + o.step.action,
            args=dict(o.step.args),
            model={"ok": _result_json(o.result)},
            impl=None,
            divergence=f"broke {', '.join(o.violated)}" if o.violated else None,
        )
        for o in outcomes
    )
    header = TraceHeader(
        config=LogConfig(),
        seed=seed,
        config_family=f"{FAMILY_PREFIX}{example.replica_count}",
        adapter="model",
        broken=example.policy,
        outcome=example.invariant,
        signature=example.scenario,
        commit=git_commit(),
    )
    return Trace(header, steps)


def write_counterexample(example: Counterexample, path: Path) -> Path:
    """Write `example` as a trace file at `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps_trace(to_trace(example)), encoding="utf-8")
    return path


def read_counterexample(path: Path) -> Counterexample:
    """Read a saved counterexample; raises TraceFormatError naming the file and line."""
    try:
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except (OSError, UnicodeDecodeError) as error:
        raise TraceFormatError(f"cannot read counterexample: {error}", where=str(path)) from None
    if not lines:
        raise TraceFormatError("empty trace: a header line is required", where=str(path))
    header = _json_object(lines[0], f"{path}:1")
    family = header.get("config_family")
    if header.get("kafkalog_trace") != TRACE_FORMAT_VERSION or not (
        isinstance(family, str) and family.startswith(FAMILY_PREFIX) and family[-1].isdigit()
    ):
        raise TraceFormatError("not a replication trace header", where=f"{path}:1")
    for key in ("broken", "outcome", "signature"):
        if not isinstance(header.get(key), str):
            raise TraceFormatError(f"header field {key!r} must be a string", where=f"{path}:1")
    steps = tuple(_step(line, f"{path}:{n}", n - 1) for n, line in enumerate(lines[1:], start=2))
    return Counterexample(header["broken"], int(family[len(FAMILY_PREFIX):]), header["outcome"],
                          header["signature"], steps)


def _json_object(line: str, where: str) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as error:
        raise TraceFormatError(f"not JSON: {error.msg}", where=where) from None
    if not isinstance(value, dict):
        raise TraceFormatError("each line must be a JSON object", where=where)
    return value


def _step(line: str, where: str, expected: int) -> Step:
    data = _json_object(line, where)
    action = data.get("action")
    if data.get("step") != expected:
        raise TraceFormatError(f"step number {data.get('step')!r}, expected {expected}",
                               where=where)
    if not isinstance(action, str) or not action.startswith(ACTION_PREFIX):
        raise TraceFormatError(f"not a replication action: {action!r}", where=where)
    args = data.get("args", {})
    if not isinstance(args, dict):
        raise TraceFormatError("args must be an object", where=where)
    step = Step(action[len(ACTION_PREFIX):], args)
    try:
        check_step(step, where=where)
    except KafkalogError as error:
        raise TraceFormatError(error.message, where=where) from None
    return step


def _replica_cell(s: ReplicationState, r: int) -> str:
    log = s.replicas[r]
    if r not in s.up:
        role = "[red]down[/red]"
    elif r == s.leader:
        role = f"[bold green]leader e{s.leader_epoch}[/bold green]"
    elif r in s.pending_truncation:
        role = "[yellow]follower, must truncate[/yellow]"
    else:
        role = "follower"
    role += "" if r in s.isr else " (not in ISR)"
    hw = rlog.high_watermark(log)
    records = [e.label() for e in rlog.entries(log)]
    records.insert(hw, "|HW")
    epochs = " ".join(f"({e.epoch},{e.start_offset})" for e in rlog.epoch_entries(log))
    shown = escape("[" + " ".join(records) + "]")  # brackets are rich markup otherwise
    return (f"{role}\n{shown}\nHW {hw}  LEO {rlog.log_end_offset(log)}  "
            f"RP {log.recovery_point}\nepochs {epochs or '-'}")


def scenario_table(example: Counterexample, outcomes: list[Outcome]) -> Table:
    """One row per step: the action, its result, every replica afterwards, what broke."""
    table = Table(title=f"{example.scenario}: {example.policy} breaks {example.invariant}",
                  show_lines=True)
    table.add_column("#", justify="right")
    table.add_column("step")
    table.add_column("result")
    for r in range(example.replica_count):
        table.add_column(f"replica {r}")
    table.add_column("committed / broken")
    for n, o in enumerate(outcomes, start=1):
        committed = " ".join(e.label() for e in o.state.committed) or "-"
        broken = "\n[bold red]" + "\n".join(o.violated) + "[/bold red]" if o.violated else ""
        table.add_row(str(n), o.step.describe(), str(_result_json(o.result)),
                      *(_replica_cell(o.state, r) for r in range(example.replica_count)),
                      committed + broken)
    return table


def source_definition(ident: str, sources_md: str) -> list[str]:
    """The lines of sources.md that define `ident`: its own line, else (for a Kafka ticket or
    KIP described inside another definition) every definition line that names it."""
    lines = sources_md.splitlines()
    own = [line for line in lines if (m := SOURCE_LINE.match(line)) and m.group("id") == ident]
    if own or not ident.startswith(("KAFKA-", "KIP-")):
        return own
    named = re.compile(rf"(?<![\w-]){re.escape(ident)}(?!\d)")
    return [line for line in lines if SOURCE_LINE.match(line) and named.search(line)]


def rule_definition(ident: str, spec_texts: dict[str, str]) -> list[str]:
    """The bullet of the spec that defines rule `ident`, with the spec's name first."""
    for name, text in spec_texts.items():
        lines = text.splitlines()
        for i, line in enumerate(lines):
            if (m := RULE_HEAD.match(line)) and m.group("id") == ident:
                end = i + 1
                while end < len(lines) and lines[end].startswith("  "):
                    end += 1
                return [f"specs/{name}:", *lines[i:end]]
    return []


def explain_id(ident: str, specs: Path) -> list[str]:
    """What `ident` (a source ID or a KL-* rule) means, or [] if the specs do not define it."""
    if ident.startswith("KL-"):
        return rule_definition(ident, {p.name: p.read_text(encoding="utf-8")
                                       for p in sorted(specs.glob("*.md"))})
    sources = specs / "sources.md"
    if not sources.is_file():
        return []
    return source_definition(ident, sources.read_text(encoding="utf-8"))


@click.command()
@click.argument("topic")
@click.option("--dir", "directory", type=click.Path(path_type=Path), default=COUNTEREXAMPLES,
              show_default=True, help="Where the saved counterexamples are.")
@click.option("--policy", default=None,
              help="Replay the same steps under another truncation policy.")
def explain(topic: str, directory: Path, policy: str | None) -> None:
    """Replay the KIP-101 / KIP-279 counterexamples step by step, one table per scenario;
    or print what a source ID (REC-10, see specs/sources.md) or a rule (KL-APPEND-7) says."""
    if topic.lower() not in TOPICS:
        definition = explain_id(topic.upper(), specs_dir())
        if not definition:
            raise click.BadParameter(f"{topic!r} is neither {' nor '.join(sorted(TOPICS))} nor an "
                                     "ID defined in specs/sources.md or a KL-* rule of the specs",
                                     param_hint="TOPIC")
        if not definition[0].startswith("specs/"):
            definition = [SOURCE_LINE.sub(lambda m: f"{m.group('id')}  ", line)
                          for line in definition]
            definition.append("(specs/sources.md; its table expands S/, UL, LL, R/, ...)")
        click.echo("\n".join(definition))
        return
    topic = topic.lower()
    console = Console()
    if policy is not None:
        policy_named(policy)  # an unknown name fails here, before any table is printed
    for name in TOPICS[topic]:
        example = read_counterexample(directory / name)
        if policy is not None:
            example = Counterexample(policy, example.replica_count, example.invariant,
                                     example.scenario, example.steps)
        outcomes = replay(example.steps, example.policy, example.replica_count)
        console.print(scenario_table(example, outcomes))
        broken = [o for o in outcomes if o.violated]
        verdict = (f"first broken at step {outcomes.index(broken[0]) + 1}: "
                   f"{', '.join(broken[0].violated)}" if broken else "no invariant broken")
        console.print(f"{name}: {len(outcomes)} steps; {verdict}\n")
