"""Errors of the conformance harness itself: adapters, the adapter protocol and trace files.

None of these is ever compared as an action's result. An `AdapterError` means the system under
test could not be driven (a malformed or missing reply, an unknown action, a timeout, a crashed
process), so a run that meets one ends as `adapter_error`, never as a divergence of the log.
"""

from __future__ import annotations

from kafkalog.model.errors import KafkalogError


class AdapterError(KafkalogError):
    """The adapter could not be driven; `where` names the adapter and the request."""


class ProtocolError(AdapterError):
    """A message that breaks specs/adapter-protocol.md: bad JSON, a missing field, a wrong id."""


class UnknownActionError(AdapterError):
    """A request or reply naming an action that the protocol does not define."""


class AdapterTimeoutError(AdapterError):
    """The adapter did not answer a request within the timeout."""


class AdapterCrashedError(AdapterError):
    """The adapter process exited or closed its stdout before answering."""


class BrokerUnavailableError(AdapterError):
    """A broker that cannot be used at all: not installed, not started, not reachable, or
    without an API every wire run needs (`check --wire` ends with one line and exit 2)."""


class WireFormatError(KafkalogError):
    """A JSON value that does not decode into the value type it should (path inside the value)."""


class TraceFormatError(KafkalogError):
    """A trace file that breaks specs/trace-format.md; `where` names the file and line."""


class UnknownConfigFamilyError(KafkalogError):
    """A config family name that is not in `runner.CONFIG_FAMILIES`."""


class UnknownBrokenImplError(KafkalogError):
    """A broken-implementation name that is not in `broken.BROKEN`."""


class StaleBrokenImplError(UnknownBrokenImplError):
    """A broken implementation that no longer applies to the implementation: the attribute it
    patches is gone, or a text its declared diff replaces is not in the current source."""


class UnexpectedException(KafkalogError):
    """An untyped exception inside the implementation, reported over the protocol as a result.

    It is a result (never equal to the model's), not an adapter failure: the adapter worked and
    the log under test broke its contract of raising only the typed errors of specs/errors.md.
    """
