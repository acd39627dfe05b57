"""`kafkalog wire-adapter`: drive a Kafka-compatible broker as an adapter (specs/wire.md)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click

#: The families a wire run cycles through: the check's mix without LogAppendTime (its batches
#: carry the broker's wall clock) and without time_roll, whose 1 s segment.ms a broker applies
#: on its wall clock to a segment whose first batch has no timestamp, and whose jitter it draws
#: at random (KL-WIRE-5; `--family time_roll_no_jitter` runs it anyway); the producer family
#: (KL-WIRE-11) and the transaction family in the configs a coordinator's markers leave
#: comparable (KL-WIRE-12).
WIRE_MIX: tuple[str, ...] = ("tiny", "producers", "index_full", "transactions_wire",
                             "size_retention", "hw_retention", "producers", "roomy",
                             "transactions_wire")
#: The actions a wire adapter may answer (black_box.py); `--exclude-action` takes these.
WIRE_ACTIONS: tuple[str, ...] = ("append_as_leader", "append_marker", "read",
                                 "update_high_watermark",
                                 "maybe_increment_log_start_offset", "fetch_offset_by_timestamp",
                                 "end_offset_for_epoch")


def wire_adapter_command(bootstrap: str, topic_prefix: str = "kafkalog-",
                         broker_log: Path | None = None, exclude: tuple[str, ...] = (),
                         options: tuple[str, ...] = ()) -> str:
    """The command line `check --wire` starts: this interpreter running `wire-adapter`
    (`options`: further wire-adapter options, e.g. a registered broker's)."""
    argv = [sys.executable, "-c", "from kafkalog.cli.main import main; main()", "wire-adapter",
            "--bootstrap", bootstrap, "--topic-prefix", topic_prefix, *options]
    if broker_log is not None:
        argv += ["--broker-log", str(broker_log)]
    for action in exclude:
        argv += ["--exclude-action", action]
    return shlex.join(argv)


@click.command(name="wire-adapter")
@click.option("--bootstrap", required=True, metavar="HOST:PORT",
              help="A broker of the cluster to check (its partition leaders are found from it).")
@click.option("--topic-prefix", default="kafkalog-", show_default=True,
              help="Each run creates a fresh one-partition topic named PREFIX<random>.")
@click.option("--broker-log", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="The broker's log file, quoted when the broker crashes or drops a request.")
@click.option("--exclude-action", "exclude", multiple=True, type=click.Choice(WIRE_ACTIONS),
              help="Answer this action `unsupported` (repeatable): looks past a known finding.")
@click.option("--segment-bytes-config", "segment_key", default="segment.bytes",
              show_default=True,
              help="The topic config carrying the run's segment size (Kafka 4.1+: "
                   "internal.segment.bytes, since segment.bytes must be at least 1 MiB).")
def wire_adapter(bootstrap: str, topic_prefix: str, broker_log: Path | None,
                 exclude: tuple[str, ...], segment_key: str) -> None:
    """Serve the adapter protocol on stdin/stdout against a broker over Kafka's protocol."""
    try:
        from kafkalog.conformance.broker.adapter import serve_broker
    except ModuleNotFoundError as error:
        raise click.ClickException(
            f"{error.name} is missing: install the broker extra (pip install -e '.[broker]')"
        ) from None

    sys.exit(serve_broker(bootstrap, topic_prefix=topic_prefix, broker_log=broker_log,
                          exclude=frozenset(exclude), segment_key=segment_key))
