"""JSON encoding of every value type, action and error (specs/adapter-protocol.md, "Values").

One codec serves the adapter protocol and the trace files, so a trace line and a protocol message
spell the same value the same way:

- a dataclass of `kafkalog.model.values` is a JSON object with exactly its fields (properties such
  as `BatchSpec.last_offset` are never sent);
- `bytes` are standard base64 with padding (`b"test"` -> `"dGVzdA=="`); `None` is `null`;
- tuples are arrays; enums are their string value (`"CreateTime"`, `"high_watermark"`);
- an error is `{"code": <class name in kafkalog.model.errors>, "message": str}`, plus
  `first_offset`/`last_offset` for `UnexpectedAppendOffsetError`.

Decoding is strict: a missing or unknown field, or a value of the wrong JSON type, raises
`WireFormatError` naming the path inside the value (`args.records[2].timestamp`).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import enum
import types
import typing
from dataclasses import dataclass
from typing import Any

from kafkalog.conformance.errors import UnknownActionError, WireFormatError
from kafkalog.model import values as v
from kafkalog.model.errors import (
    ACTION_ERRORS,
    KafkalogError,
    UnexpectedAppendOffsetError,
)

Json = Any  # a value made of dict, list, str, int, bool and None only


REQUIRED: Any = object()  # the `default` of a parameter that must be given


@dataclass(frozen=True)
class Param:
    """One argument of an action: its name, its type and its default (REQUIRED if none)."""

    name: str
    type: Any
    default: Any = REQUIRED
    # Sent only when not the default, so adapters without the feature never see it.
    omit_default: bool = False


@dataclass(frozen=True)
class ActionSpec:
    """An action of the vocabulary (docs/design.md): its arguments, result type and feature."""

    name: str
    params: tuple[Param, ...]
    result: Any
    feature: str  # the handshake feature an adapter must list to be asked this action


_RECORDS = tuple[v.Record, ...]
_BATCHES = tuple[v.BatchSpec, ...]

#: The action vocabulary with its JSON types, in the order of docs/design.md.
ACTIONS: dict[str, ActionSpec] = {
    spec.name: spec
    for spec in (
        ActionSpec(
            "append_as_leader",
            (
                Param("records", _RECORDS),
                Param("leader_epoch", int),
                # feature `producer_state` (specs/adapter-protocol.md); -1 = not idempotent
                Param("producer_id", int, -1, omit_default=True),
                Param("producer_epoch", int, -1, omit_default=True),
                Param("base_sequence", int, -1, omit_default=True),
                Param("is_transactional", bool, False, omit_default=True),  # transactions
            ),
            v.LogAppendInfo,
            "core",
        ),
        ActionSpec(
            "append_marker",
            (
                Param("producer_id", int),
                Param("producer_epoch", int),
                Param("commit", bool),
                Param("coordinator_epoch", int),
                Param("leader_epoch", int),
            ),
            v.LogAppendInfo,
            "transactions",
        ),
        ActionSpec(
            "append_as_follower",
            (Param("batches", _BATCHES), Param("leader_epoch", int | None, None)),
            v.LogAppendInfo,
            "follower_append",
        ),
        ActionSpec(
            "read",
            (
                Param("start_offset", int),
                Param("max_bytes", int),
                Param("isolation", v.Isolation),
                Param("min_one_message", bool),
            ),
            v.FetchDataInfo,
            "core",
        ),
        ActionSpec("update_high_watermark", (Param("offset", int),), int, "core"),
        ActionSpec(
            "maybe_increment_high_watermark",
            (Param("hw", v.LogOffsetMetadata),),
            v.LogOffsetMetadata | None,
            "hw_metadata",
        ),
        ActionSpec("maybe_increment_log_start_offset", (Param("offset", int),), bool, "core"),
        ActionSpec("delete_old_segments", (), int, "core"),
        ActionSpec("roll", (Param("expected_next_offset", int | None, None),), int, "core"),
        ActionSpec("truncate_to", (Param("offset", int),), bool, "core"),
        ActionSpec("truncate_fully_and_start_at", (Param("offset", int),), type(None), "core"),
        ActionSpec("flush", (Param("offset", int | None, None),), int, "core"),
        ActionSpec(
            "assign_epoch",
            (Param("epoch", int), Param("start_offset", int)),
            type(None),
            "leader_epochs",
        ),
        ActionSpec(
            "end_offset_for_epoch",
            (Param("epoch", int),),
            v.EpochEndOffset | None,
            "leader_epochs",
        ),
        ActionSpec(
            "fetch_offset_by_timestamp",
            (Param("timestamp", int),),
            v.TimestampAndOffset | None,
            "timestamps",
        ),
        ActionSpec("advance_clock", (Param("ms", int),), int, "core"),
        ActionSpec("close_and_reopen", (), type(None), "reopen"),
        # Feature `clean` (specs/adapter-protocol.md, "Compaction"): one cleaning pass.
        ActionSpec("clean", (), v.CleanResult | None, "clean"),
        # Protocol version 2 (specs/adapter-protocol.md, "Crashes"): crash after `point`
        # operations of the last action under `fault`, then load; answers the operations lost.
        # `idempotence` (trace only, never sent: the checker strips it and drives the second
        # crash itself): after the load, crash again right after it and load again; the state
        # must not change (specs/log.md KL-CRASH-7, specs/trace-format.md).
        # `in_load` ("point:fault:seed", trace only, ImplSut only; other adapters answer
        # unsupported): crash inside the load itself, load again; the state must be the
        # uninterrupted load's (KL-CRASH-14).
        ActionSpec("crash", (Param("point", int), Param("fault", str), Param("seed", int),
                             Param("leftover", str, "none"),
                             Param("idempotence", bool, False, omit_default=True),
                             Param("in_load", str, "", omit_default=True)), int, "crash"),
    )
}

#: Session requests that are not log actions (specs/adapter-protocol.md, "Session").
SESSION_ACTIONS: frozenset[str] = frozenset(
    {"handshake", "open", "state", "check", "verify", "close"}
)

#: Optional features an adapter may list in its handshake; `core` is always required.
FEATURES: tuple[str, ...] = (
    "core",
    "follower_append",
    "hw_metadata",
    "leader_epochs",
    "timestamps",
    "reopen",
    "check",
    "verify",
    "producer_state",
    "transactions",
    "black_box",  # replaces `core` for a log reached through a broker's API (black_box.py)
    "crash",  # protocol 2: `crash` honours point, fault and seed
    "crash_kill",  # protocol 2: `crash` is a kill and reopen only (a process crash at the end)
    "clean",  # log compaction: the `clean` action and compacted batches in reads
)
#: Features only an adapter around another implementation lists (the checker's own servers never
#: do): `kafka_loader` is the `load_image` request of the Kafka adapter (conformance/crash/
#: kafka_loader.py).
ADAPTER_FEATURES: tuple[str, ...] = ("kafka_loader",)

#: Fault models of the `crash` action (model/crash/crash.py FaultModel,
#: conformance/crash/fault_fs.py).
CRASH_FAULTS: tuple[str, ...] = (
    "process_crash", "power_loss", "power_loss_prefix", "power_loss_torn",
)

#: What a `crash` may plant in the crash image before the load (specs/log.md KL-CRASH-9).
CRASH_LEFTOVERS: tuple[str, ...] = (
    "none", "orphan_index", "deleted", "cleaned_swap", "zero_index", "garbage_index",
    "missing_index", "torn_tail", "stale_tmp", "offsets_back", "swap_completed",
)

#: Fields of value types that belong to a feature: encoded only when not their default, so a
#: message to or from an adapter without that feature looks exactly as before (protocol 1).
OMIT_WHEN_DEFAULT: dict[type, frozenset[str]] = {
    v.BatchSpec: frozenset({"producer_id", "producer_epoch", "base_sequence", "is_transactional",
                            "is_control"}),
    v.LogConfig: frozenset({"producer_id_expiration_ms",
                            "producer_id_expiration_check_interval_ms", "cleanup_policy",
                            "min_cleanable_dirty_ratio", "min_compaction_lag_ms",
                            "max_compaction_lag_ms", "delete_retention_ms"}),
    v.LogStateView: frozenset({"producers", "producer_snapshots", "last_stable_offset",
                               "aborted_txns", "producer_snapshot_tables",
                               "cleaner_checkpoint"}),
    v.BatchView: frozenset({"producer_id", "producer_epoch", "base_sequence", "is_transactional",
                            "is_control", "record_offsets"}),
    v.FetchDataInfo: frozenset({"aborted_transactions"}),
}


def without_transactions(info: v.FetchDataInfo) -> v.FetchDataInfo:
    """A read result as an adapter without the `transactions` feature reports it: no
    transactional or control bits in its batch views and no aborted list."""
    plain = tuple(dataclasses.replace(b, is_transactional=False, is_control=False)
                  for b in info.batches)
    return dataclasses.replace(info, batches=plain, aborted_transactions=None)


def action_spec(name: str, where: str = "action") -> ActionSpec:
    """The spec of one action; raises UnknownActionError for a name outside the vocabulary."""
    spec = ACTIONS.get(name)
    if spec is None:
        raise UnknownActionError(f"unknown action {name!r}", where=where)
    return spec


# --- encoding ---------------------------------------------------------------------------------


def encode(value: Any) -> Json:
    """A value of the vocabulary as JSON-ready data (see the module docstring for the mapping)."""
    kind = _KINDS.get(type(value))
    if kind is None:
        kind = _KINDS[type(value)] = _kind_of(value)
    if kind == _AS_IS:
        return value
    if kind == _DATACLASS:
        out: dict[str, Json] = {}
        for name, omittable, default in _fields_of(type(value)):
            item = getattr(value, name)
            if not omittable or item != default:
                out[name] = encode(item)
        return out
    if kind == _SEQUENCE:
        return [encode(item) for item in value]
    if kind == _ENUM:
        return value.value
    if kind == _BYTES:
        return base64.b64encode(value).decode("ascii")
    return {str(key): encode(item) for key, item in value.items()}


_AS_IS, _ENUM, _BYTES, _SEQUENCE, _DATACLASS, _DICT = range(6)
#: How `encode` encodes a value, by its type: every step encodes its arguments and both results,
#: and the answer depends on the type alone.
_KINDS: dict[type, int] = {}


def _kind_of(value: Any) -> int:
    """The encoding of `value`'s type, tried in this order (an int enum encodes as an enum)."""
    if value is None or isinstance(value, bool | str):
        return _AS_IS
    if isinstance(value, enum.Enum):
        return _ENUM
    if isinstance(value, int | float):
        return _AS_IS
    if isinstance(value, bytes):
        return _BYTES
    if isinstance(value, tuple | list):
        return _SEQUENCE
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _DATACLASS
    if isinstance(value, dict):
        return _DICT
    raise TypeError(f"no JSON encoding for {type(value).__name__}")


_FIELDS_OF: dict[type, tuple[tuple[str, bool, Any], ...]] = {}


def _fields_of(cls: type) -> tuple[tuple[str, bool, Any], ...]:
    """(name, omitted when default, default) of each field of a dataclass, in order: worked
    out once per type, since every step encodes its arguments and both results."""
    known = _FIELDS_OF.get(cls)
    if known is None:
        omit = OMIT_WHEN_DEFAULT.get(cls, frozenset())
        known = _FIELDS_OF[cls] = tuple((f.name, f.name in omit, f.default)
                                        for f in dataclasses.fields(cls))
    return known


def encode_args(action: str, args: dict[str, Any]) -> Json:
    """The `args` object of a request: every parameter of the action, defaults included."""
    spec = action_spec(action)
    out = {}
    for p in spec.params:
        if p.name not in args and p.default is REQUIRED:
            raise TypeError(f"{action} needs argument {p.name!r}")
        value = args.get(p.name, p.default)
        if p.omit_default and value == p.default:
            continue
        out[p.name] = encode(value)
    return out


def encode_error(error: KafkalogError) -> Json:
    """`{"code", "message"}` of a typed error (plus the offsets of UnexpectedAppendOffsetError)."""
    out: dict[str, Json] = {"code": error.code, "message": str(error)}
    if isinstance(error, UnexpectedAppendOffsetError):
        out["first_offset"] = error.first_offset
        out["last_offset"] = error.last_offset
    return out


# --- decoding ---------------------------------------------------------------------------------


def decode(hint: Any, data: Json, path: str = "value") -> Any:
    """Decode JSON data into the value type `hint`; raises WireFormatError naming `path`."""
    if hint is Any:
        return data
    if hint is type(None) or hint is None:
        if data is not None:
            raise WireFormatError(f"expected null, got {_kind(data)}", where=path)
        return None
    origin = typing.get_origin(hint)
    if origin in (types.UnionType, typing.Union):
        return _decode_union(typing.get_args(hint), data, path)
    if origin is tuple:
        return _decode_tuple(typing.get_args(hint), data, path)
    if hint is bool:
        if not isinstance(data, bool):
            raise WireFormatError(f"expected a boolean, got {_kind(data)}", where=path)
        return data
    if hint is int:
        if isinstance(data, bool) or not isinstance(data, int):
            raise WireFormatError(f"expected an integer, got {_kind(data)}", where=path)
        return data
    if hint is float:
        if isinstance(data, bool) or not isinstance(data, int | float):
            raise WireFormatError(f"expected a number, got {_kind(data)}", where=path)
        return float(data)
    if hint is str:
        if not isinstance(data, str):
            raise WireFormatError(f"expected a string, got {_kind(data)}", where=path)
        return data
    if hint is bytes:
        return _decode_bytes(data, path)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        try:
            return hint(data)
        except ValueError:
            allowed = ", ".join(repr(m.value) for m in hint)
            raise WireFormatError(f"expected one of {allowed}, got {data!r}", where=path) from None
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _decode_dataclass(hint, data, path)
    raise TypeError(f"no JSON decoding for {hint!r}")


def decode_args(action: str, data: Json, where: str = "args") -> dict[str, Any]:
    """The keyword arguments of one action from a request's `args` object."""
    spec = action_spec(action, where)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise WireFormatError(f"expected an object, got {_kind(data)}", where=where)
    unknown = set(data) - {p.name for p in spec.params}
    if unknown:
        raise WireFormatError(f"unknown argument(s) {sorted(unknown)} of {action}", where=where)
    out: dict[str, Any] = {}
    for p in spec.params:
        if p.name in data:
            out[p.name] = decode(p.type, data[p.name], f"{where}.{p.name}")
        elif p.default is REQUIRED:
            raise WireFormatError(f"missing argument {p.name!r} of {action}", where=where)
        else:
            out[p.name] = p.default
    return out


def decode_result(action: str, data: Json, where: str = "ok") -> Any:
    """The result of one action from a response's `ok` value."""
    if action == "state":
        return decode(v.LogStateView, data, where)
    return decode(action_spec(action, where).result, data, where)


def decode_error(data: Json, where: str = "error") -> KafkalogError:
    """A typed error from `{"code", "message"}`; an unknown code is a WireFormatError."""
    if not isinstance(data, dict):
        raise WireFormatError(f"expected an error object, got {_kind(data)}", where=where)
    code, message = data.get("code"), data.get("message")
    if not isinstance(code, str) or not isinstance(message, str):
        raise WireFormatError("an error needs string fields code and message", where=where)
    cls = ACTION_ERRORS.get(code)
    if cls is None:
        raise WireFormatError(f"unknown error code {code!r} (see specs/errors.md)", where=where)
    if cls is UnexpectedAppendOffsetError:
        first = decode(int, data.get("first_offset", -1), f"{where}.first_offset")
        last = decode(int, data.get("last_offset", -1), f"{where}.last_offset")
        return UnexpectedAppendOffsetError(message, first, last)
    return cls(message)


def _decode_union(options: tuple[Any, ...], data: Json, path: str) -> Any:
    if data is None and type(None) in options:
        return None
    concrete = [o for o in options if o is not type(None)]
    assert len(concrete) == 1, f"only Optional[...] unions are encoded: {options}"
    return decode(concrete[0], data, path)


def _decode_tuple(params: tuple[Any, ...], data: Json, path: str) -> tuple[Any, ...]:
    if not isinstance(data, list):
        raise WireFormatError(f"expected an array, got {_kind(data)}", where=path)
    if Ellipsis not in params:  # a fixed-length pair such as an index entry
        if len(data) != len(params):
            raise WireFormatError(f"expected {len(params)} items, got {len(data)}", where=path)
        return tuple(decode(p, item, f"{path}[{i}]") for i, (p, item) in
                     enumerate(zip(params, data, strict=True)))
    assert len(params) == 2 and params[1] is Ellipsis, f"only tuple[T, ...] is encoded: {params}"
    return tuple(decode(params[0], item, f"{path}[{i}]") for i, item in enumerate(data))


def _decode_bytes(data: Json, path: str) -> bytes:
    if not isinstance(data, str):
        raise WireFormatError(f"expected base64 text, got {_kind(data)}", where=path)
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise WireFormatError(f"invalid base64 {data[:40]!r}", where=path) from None


def _decode_dataclass(cls: type, data: Json, path: str) -> Any:
    if not isinstance(data, dict):
        raise WireFormatError(f"expected a {cls.__name__} object, got {_kind(data)}", where=path)
    hints = _hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = set(data) - set(fields)
    if unknown:
        raise WireFormatError(f"unknown field(s) {sorted(unknown)} of {cls.__name__}", where=path)
    kwargs: dict[str, Any] = {}
    for name, f in fields.items():
        if name in data:
            kwargs[name] = decode(hints[name], data[name], f"{path}.{name}")
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise WireFormatError(f"missing field {name!r} of {cls.__name__}", where=path)
    return cls(**kwargs)


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    """Resolved field types of a values dataclass (cached: get_type_hints is slow)."""
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls, vars(v))
    return _HINTS[cls]


def _kind(data: Json) -> str:
    if data is None:
        return "null"
    return {bool: "boolean", int: "integer", float: "number", str: "string", list: "array",
            dict: "object"}.get(type(data), type(data).__name__)
