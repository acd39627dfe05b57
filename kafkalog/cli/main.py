"""The `kafkalog` command line.

Each subcommand lives in its own module under `kafkalog/cli/` and is imported only when it runs,
so `kafkalog dump` never pays for Spark or Hypothesis imports. A user's mistake (a typed
`KafkalogError`, or a bad argument caught by click) prints one line and exits 2; a traceback
means a bug in kafkalog.
"""

from __future__ import annotations

import importlib
import logging
import signal
import sys
import threading
from typing import Any

import click

from kafkalog.model.errors import KafkalogError

# name -> (module, attribute, one-line help). Modules are imported lazily by LazyGroup.
SUBCOMMANDS: dict[str, tuple[str, str, str]] = {
    "dump": ("kafkalog.cli.inspect_cmds", "dump", "Print a segment, index or checkpoint file."),
    "verify": ("kafkalog.cli.inspect_cmds", "verify", "Check a log directory read-only."),
    "check": ("kafkalog.cli.conformance_cmds", "check", "Run the conformance state machine."),
    "replay": ("kafkalog.cli.conformance_cmds", "replay", "Replay a trace step by step."),
    "serve-adapter": (
        "kafkalog.cli.conformance_cmds",
        "serve_adapter",
        "Serve the built-in log over the JSON-lines adapter protocol.",
    ),
    "wire-adapter": (
        "kafkalog.cli.wire_cmds",
        "wire_adapter",
        "Serve the adapter protocol against a Kafka-compatible broker.",
    ),
    "vectors": ("kafkalog.cli.vectors_cmds", "vectors", "Export or run the conformance vectors."),
    "campaign": ("kafkalog.cli.campaign_cmds", "campaign", "Run a conformance campaign on Spark."),
    "report": ("kafkalog.cli.campaign_cmds", "report", "Rebuild a campaign's report from Parquet."),
    "audit": ("kafkalog.cli.campaign_cmds", "audit", "Verify many Kafka log directories on Spark."),
    "bench": ("kafkalog.cli.bench_cmd", "bench", "Measure the log against raw-I/O baselines."),
    "explain": ("kafkalog.cli.explain_cmd", "explain", "Replay a KIP-101/KIP-279 counterexample."),
    "fuzz": ("kafkalog.cli.fuzz_cmd", "fuzz", "Run the hostile-input fuzz suite."),
}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name in SUBCOMMANDS if self._load(name) is not None)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return self._load(cmd_name)

    def _load(self, name: str) -> click.Command | None:
        entry = SUBCOMMANDS.get(name)
        if entry is None:
            return None
        module_name, attribute, _ = entry
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name == module_name:
                return None  # that command has not been built yet
            raise
        command = getattr(module, attribute)
        assert isinstance(command, click.Command)
        return command


@click.group(cls=LazyGroup)
@click.version_option(package_name="kafkalog")
def cli() -> None:
    """Kafka's partition log: a model, a real implementation and a conformance checker."""
    # The log's own warnings (e.g. what a recovery cut) would reach stderr through Python's
    # last-resort handler, once per load: a crash sweep loads thousands of images, and its
    # findings are reported by the checker, not by those lines. Campaign workers do the same.
    logging.getLogger("kafkalog").addHandler(logging.NullHandler())


def unwind_on_sigterm() -> Any:
    """Make SIGTERM raise KeyboardInterrupt in the main thread; the handler it replaced.

    SIGTERM's default action ends the interpreter without unwinding, so no `finally` or
    `scratch_scope` would remove the run's scratch directories (or stop a broker it started). As
    a KeyboardInterrupt it unwinds like Ctrl-C, which every run lets through (a SystemExit would be
    caught as one run's harness error). A SIGTERM the parent chose to ignore stays ignored; outside
    the main thread Python cannot set handlers, and None is returned.
    """
    if threading.current_thread() is not threading.main_thread():
        return None
    previous = signal.getsignal(signal.SIGTERM)
    if previous is not signal.SIG_IGN:
        signal.signal(signal.SIGTERM, signal.default_int_handler)
    return previous


def main() -> None:
    """Entry point: typed errors become one line on stderr and exit status 2; SIGTERM, like
    Ctrl-C, unwinds the command and prints `kafkalog: aborted` (exit status 130)."""
    previous = unwind_on_sigterm()
    try:
        _main()
    finally:
        if previous is not None:  # an in-process caller (a test) gets its own handler back
            signal.signal(signal.SIGTERM, previous)


def _main() -> None:
    try:
        # The name is fixed so `python -m kafkalog` (the launchers) prints the same usage lines.
        status = cli(standalone_mode=False, prog_name="kafkalog")
    except click.exceptions.Abort:
        click.echo("kafkalog: aborted", err=True)
        sys.exit(130)
    except click.ClickException as error:
        error.show()
        sys.exit(error.exit_code)
    except click.exceptions.Exit as done:
        sys.exit(done.exit_code)
    except KafkalogError as error:
        click.echo(f"kafkalog: {error.code}: {error}", err=True)
        sys.exit(2)
    except OSError as error:
        # A path the user named that cannot be opened: still their input, still one line.
        click.echo(f"kafkalog: {type(error).__name__}: {error}", err=True)
        sys.exit(2)
    # In non-standalone mode click hands back what the command returned: an int is the exit status.
    sys.exit(status if isinstance(status, int) else 0)
