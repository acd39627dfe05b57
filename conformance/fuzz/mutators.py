"""Hypothesis strategies that damage what the log reads: files, adapter lines and traces.

Configs are drawn at and beyond every bound Kafka puts on them (`hostile_configs`: the Java type's
range and the validator's minimum, KL-STATE-2, KL-BOUND-1) for adapter `open` requests and trace
headers alike. A file mutation is a small value (`FileMutation`) applied to one file of a log
directory copy:
bit flips, byte overwrites, header fields set to extreme integers, truncation, garbage tails,
sparse extension to a large apparent size, whole-file replacement by a hostile payload
(decompression bombs, legacy wrappers, random bytes), text edits of checkpoints, deletion, a
symbolic link pointing outside the directory, or a junk file with a hostile name. Values are
plain data, so a failing case prints readably and replays from its repr.
"""

from __future__ import annotations

import functools
import json
import os
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hypothesis import strategies as st
from kafkalog.conformance.fuzz.builders import legacy_gzip_bomb, legacy_message, v2_bomb
from kafkalog.model.bounds import CONFIG_BOUNDS

# Integers that break parsers: boundaries of every width the formats use.
EXTREMES = (0, 1, -1, 13, 14, 48, 49, 60, 61, 2**15 - 1, -(2**15), 2**31 - 1, -(2**31),
            2**63 - 1, -(2**63), 0x7F, 0xFF)
# (offset, struct format) of header fields: v2 batch (FMT-45), legacy message (FMT-51), index
# entries (FMT-10, FMT-19).
FIELDS = ((0, ">q"), (8, ">i"), (12, ">i"), (16, ">b"), (17, ">i"), (21, ">h"), (23, ">i"),
          (27, ">q"), (35, ">q"), (43, ">q"), (51, ">h"), (53, ">i"), (57, ">i"), (61, ">b"),
          (4, ">i"), (20, ">i"))
CHECKPOINT_TOKENS = (" 0", "0_0", "+1", "-1", "٣", "1e3", "0x10", "9" * 30, "", " ", "\x0b",
                     "\x0c", "\r", "\u2028", "\x00", "t\t0", "0 0 0", str(2**63), str(-(2**63)))
HOSTILE_NAMES = ("00000000000000000000.log.swap", "00000000000000000099.index",
                 "0000000000000000000x.log", "99999999999999999999.log", ".log", "-1.log",
                 "00000000000000000000.snapshot", "00000000000000000000.txnindex",
                 "leader-epoch-checkpoint.tmp", "x-y-z", "\u00e9-0")
LARGE_SIZES = (1 << 20, 1 << 30, 3 << 29)  # up to 1.5 GiB apparent size (sparse)


@dataclass(frozen=True)
class FileMutation:
    """One damage to one file, chosen by index into the directory's sorted file list."""

    kind: str
    target: int  # index into the sorted list of files (modulo its length)
    position: int = 0  # a byte position (modulo the file's size) or a line number
    value: int = 0
    data: bytes = b""
    text: str = ""

    def apply(self, root: Path, outside: Path) -> str:
        """Apply to a file under `root`; returns the path touched (for the report)."""
        files = sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink())
        dirs = sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink())
        if self.kind == "junk_file":
            where = dirs[self.target % len(dirs)] if dirs else root
            path = where / HOSTILE_NAMES[self.value % len(HOSTILE_NAMES)]
            path.write_bytes(self.data)
            return str(path)
        if self.kind == "symlink_dir" and dirs:
            victim = dirs[self.target % len(dirs)]
            os.rename(victim, outside / victim.name)
            victim.symlink_to(outside / victim.name, target_is_directory=True)
            return str(victim)
        if not files:
            return ""
        path = files[self.target % len(files)]
        _MUTATE[self.kind](self, path, outside)
        return str(path)


EDIT_LIMIT = 1 << 20  # a file larger than this (a sparse extension) is edited in its head


def _edit(path: Path, change: Callable[[bytes], bytes]) -> None:
    """Apply a pure edit to the file's bytes, or to its first EDIT_LIMIT bytes when larger
    (a shorter result then cuts the file there), so mutating never loads 1.5 GiB."""
    if path.stat().st_size <= EDIT_LIMIT:
        path.write_bytes(change(path.read_bytes()))
        return
    with open(path, "r+b") as f:
        head = f.read(EDIT_LIMIT)
        new = change(head)
        f.seek(0)
        f.write(new)
        if len(new) < len(head):
            f.truncate(len(new))


def _flip(m: FileMutation, path: Path, _: Path) -> None:
    def change(data: bytes) -> bytes:
        if not data:
            return data
        out = bytearray(data)
        out[m.position % len(out)] ^= 1 << (m.value % 8)
        return bytes(out)

    _edit(path, change)


def _overwrite(m: FileMutation, path: Path, _: Path) -> None:
    def change(data: bytes) -> bytes:
        out = bytearray(data)
        at = m.position % (len(out) + 1)
        out[at : at + len(m.data)] = m.data
        return bytes(out)

    _edit(path, change)


def _field(m: FileMutation, path: Path, _: Path) -> None:
    offset, fmt = FIELDS[m.position % len(FIELDS)]
    size = struct.calcsize(fmt)
    bits = 8 * size
    value = EXTREMES[m.value % len(EXTREMES)]
    value = ((value + (1 << (bits - 1))) % (1 << bits)) - (1 << (bits - 1))

    def change(data: bytes) -> bytes:
        # A batch header at the start of the file, or at one of the first 64-byte boundaries.
        base = 0 if not data else (m.value >> 8) % max(1, len(data) // 64) * 64
        if base + offset + size > len(data):
            return data
        out = bytearray(data)
        struct.pack_into(fmt, out, base + offset, value)
        return bytes(out)

    _edit(path, change)


def _truncate(m: FileMutation, path: Path, _: Path) -> None:
    size = path.stat().st_size
    os.truncate(path, m.position % (size + 1))


def _append(m: FileMutation, path: Path, _: Path) -> None:
    with open(path, "ab") as f:
        f.write(m.data)


def _sparse(m: FileMutation, path: Path, _: Path) -> None:
    os.truncate(path, max(path.stat().st_size, LARGE_SIZES[m.value % len(LARGE_SIZES)]))


def _replace(m: FileMutation, path: Path, _: Path) -> None:
    path.write_bytes(m.data)


@functools.cache
def _bomb(kind: int) -> bytes:
    """Bombs inflating to 64 MiB (twice the decompression bound), built once per process."""
    if kind == 0:
        return legacy_gzip_bomb(0, 64 << 20)
    return v2_bomb(64 << 20, (4, 1, 3)[kind - 1])


def _payload(m: FileMutation, path: Path, _: Path) -> None:
    payloads = (lambda: _bomb(0), lambda: _bomb(1), lambda: _bomb(2), lambda: _bomb(3),
                lambda: legacy_message(0, b"", attributes=1),
                lambda: legacy_message(0, None, attributes=2),
                lambda: legacy_message(0, m.data, attributes=m.value % 8, magic=m.value % 2))

    def change(data: bytes) -> bytes:
        return data[: m.position % (len(data) + 1)] + payloads[m.value % len(payloads)]()

    _edit(path, change)


def _text(m: FileMutation, path: Path, _: Path) -> None:
    def change(data: bytes) -> bytes:
        lines = data.decode("utf-8", errors="replace").split("\n")
        n = m.position % len(lines)
        tokens = lines[n].split(" ")
        tokens[m.value % len(tokens)] = m.text
        lines[n] = " ".join(tokens)
        return "\n".join(lines).encode("utf-8", errors="surrogatepass")

    _edit(path, change)


def _delete(m: FileMutation, path: Path, _: Path) -> None:
    path.unlink()


def _symlink(m: FileMutation, path: Path, outside: Path) -> None:
    target = outside / f"canary-{path.name}"
    with open(path, "rb") as f:
        target.write_bytes(f.read(EDIT_LIMIT))
    path.unlink()
    path.symlink_to(target)


_MUTATE = {"flip": _flip, "overwrite": _overwrite, "field": _field, "truncate": _truncate,
           "append": _append, "sparse": _sparse, "replace": _replace, "payload": _payload,
           "text": _text, "delete": _delete, "symlink": _symlink}

_INDEX = st.integers(0, 2**16)
_SMALL_BYTES = st.binary(max_size=64)


def file_mutations() -> st.SearchStrategy[FileMutation]:
    """One damage of any kind; common kinds (bit flips, fields, text) weigh more."""
    def simple(kind: str, **extra: st.SearchStrategy[object]) -> st.SearchStrategy[FileMutation]:
        return st.builds(FileMutation, kind=st.just(kind), target=_INDEX, position=_INDEX,
                         value=st.integers(0, 2**16), **extra)  # type: ignore[arg-type]

    return st.one_of(
        simple("flip"), simple("flip"), simple("field"), simple("field"),
        simple("overwrite", data=st.binary(min_size=1, max_size=32)),
        simple("truncate"), simple("append", data=_SMALL_BYTES), simple("sparse"),
        simple("replace", data=st.binary(max_size=200)), simple("payload", data=_SMALL_BYTES),
        simple("text", text=st.sampled_from(CHECKPOINT_TOKENS) | st.text(max_size=8)),
        simple("text", text=st.sampled_from(CHECKPOINT_TOKENS)),
        simple("delete"), simple("symlink"), simple("symlink_dir"),
        simple("junk_file", data=_SMALL_BYTES),
    )


# --- configs ---


def config_edges(bits: int, minimum: int | None) -> tuple[int, ...]:
    """A config's edge values: its minimum and the values beside it, both ends of its Java type
    and one past each, and integers no Java type holds."""
    top = 2 ** (bits - 1)
    low = -top if minimum is None else minimum
    return (low - 1, low, low + 1, top - 1, top, -top - 1, 2**63 - 1, 2**63, 2**80, -(2**80))


@st.composite
def hostile_configs(draw: st.DrawFn) -> dict[str, int]:
    """A small working config with one to three integer settings at or beyond their bounds."""
    config = {"segment_bytes": 300}
    chosen = draw(st.lists(st.sampled_from(CONFIG_BOUNDS), min_size=1, max_size=3,
                           unique=True))
    for name, bits, minimum in chosen:
        config[name] = draw(st.sampled_from(config_edges(bits, minimum)))
    return config


def _open_line(ident: int, config: dict[str, int]) -> bytes:
    return b'{"id":%d,"action":"open","args":{"config":%s}}' % (ident, json.dumps(config).encode())


def hostile_open_lines() -> st.SearchStrategy[bytes]:
    """An `open` whose config sits at or beyond its bounds."""
    return st.builds(_open_line, st.integers(0, 10**6), hostile_configs())


# --- adapter lines ---

_GOOD = (b'{"id":%d,"action":"append_as_leader","args":{"records":[{"key":null,"value":"eA==",'
         b'"timestamp":%d}],"leader_epoch":%d}}',
         b'{"id":%d,"action":"read","args":{"start_offset":%d,"max_bytes":%d}}',
         b'{"id":%d,"action":"truncate_to","args":{"offset":%d}}',
         b'{"id":%d,"action":"roll","args":{"expected_next_offset":%d}}',
         b'{"id":%d,"action":"advance_clock","args":{"ms":%d}}',
         b'{"id":%d,"action":"assign_epoch","args":{"epoch":%d,"start_offset":%d}}',
         b'{"id":%d,"action":"fetch_offset_by_timestamp","args":{"timestamp":%d}}',
         b'{"id":%d,"action":"open","args":{"now_ms":%d,"log_start_offset":%d}}',
         b'{"id":%d,"action":"close_and_reopen"}', b'{"id":%d,"action":"verify"}',
         b'{"id":%d,"action":"state"}', b'{"id":%d,"action":"check"}',
         b'{"id":%d,"action":"update_high_watermark","args":{"offset":%d}}',
         b'{"id":%d,"action":"flush","args":{"offset":%d}}',
         b'{"id":%d,"action":"append_as_follower","args":{"batches":[{"base_offset":%d,'
         b'"partition_leader_epoch":%d,"records":[{"key":"eA==","value":null,"timestamp":1,'
         b'"headers":[{"key":"h","value":null}]}]}]}}')
_NUMBERS = st.sampled_from(EXTREMES + (2**64, 2**80, -(2**80), 5, 100)) | st.integers(-5, 300)


@st.composite
def adapter_lines(draw: st.DrawFn) -> bytes:
    """One request line: a valid-looking request with hostile numbers, or a damaged one."""
    template = draw(st.sampled_from(_GOOD))
    numbers = tuple(draw(_NUMBERS) for _ in range(template.count(b"%d") - 1))
    line = template % (draw(st.integers(-3, 10**6)), *numbers)
    damage = draw(st.sampled_from(("none", "none", "flip", "cut", "nest", "digits", "utf8",
                                   "null_args", "float_id", "surrogate")))
    if damage == "flip" and line:
        at = draw(st.integers(0, len(line) - 1))
        line = line[:at] + bytes([line[at] ^ (1 << draw(st.integers(0, 7)))]) + line[at + 1:]
    elif damage == "cut":
        line = line[: draw(st.integers(0, len(line)))]
    elif damage == "nest":
        depth = draw(st.sampled_from((10, 1000, 100_000)))
        line = line.replace(b'"args":', b'"args":' + b"[" * depth + b"]" * depth + b',"x":', 1)
    elif damage == "digits":
        line = line.replace(b"%d" % numbers[0] if numbers else b"0", b"9" * 5000, 1)
    elif damage == "utf8":
        line = line.replace(b"eA==", b"\xff\xfe", 1)
    elif damage == "null_args":
        line = line.replace(b'"args":{', b'"args":null,"y":{', 1)
    elif damage == "float_id":
        line = line.replace(b'"id":', b'"id":1.5,"z":', 1)
    elif damage == "surrogate":
        line = line.replace(b'"key":"h"', b'"key":"\\ud800"', 1)
    return line.replace(b"\n", b" ")


def adapter_sessions() -> st.SearchStrategy[list[bytes]]:
    """A handshake (usually valid), an open (one in three with a config at or beyond its
    bounds), then hostile request lines, hostile opens among them."""
    good = b'{"id":0,"action":"handshake","args":{"protocol_version":1}}'
    handshake = st.sampled_from((good,) * 8 + (
        b'{"id":0,"action":"handshake","args":{"protocol_version":1.0}}',
        b'{"id":0,"action":"handshake","args":{"protocol_version":true}}'))
    good_open = st.just(_open_line(1, {"segment_bytes": 300}))
    opening = st.one_of(good_open, good_open, st.builds(_open_line, st.just(1), hostile_configs()))
    return st.builds(lambda h, o, rest: [h, o, *rest], handshake, opening,
                     st.lists(adapter_lines() | hostile_open_lines(), min_size=1, max_size=12))


# --- traces ---


@st.composite
def trace_texts(draw: st.DrawFn, seeds: tuple[str, ...]) -> str:
    """A stored trace with a few of its lines damaged (JSON values, cut lines, swaps)."""
    lines = draw(st.sampled_from(seeds)).splitlines()
    for _ in range(draw(st.integers(1, 3))):
        n = draw(st.integers(0, len(lines) - 1))
        kind = draw(st.sampled_from(("number",) * 6 + ("config",) * 2 + (
            "cut", "drop", "dup", "args", "nest", "digits")))
        line = lines[n]
        if kind == "config":
            lines[0] = _with_config(lines[0], draw(hostile_configs()))
            continue
        if kind == "number":
            # Inside the arguments (or the header's config), so the trace still parses and the
            # hostile value reaches both model and implementation.
            start = max(line.find('"args":'), line.find('"config":'), 0)
            digits = [i for i, c in enumerate(line) if c.isdigit() and i > start]
            if digits:
                at = draw(st.sampled_from(digits))
                line = line[:at] + str(draw(_NUMBERS)) + line[at + 1:]
        elif kind == "cut":
            line = line[: draw(st.integers(0, len(line)))]
        elif kind == "drop":
            line = ""
        elif kind == "dup":
            line = line + "\n" + line
        elif kind == "args":
            line = line.replace('"args":{', '"args":' + draw(st.sampled_from(
                ("null,", "[],", "1,", '"x",'))) + '"w":{', 1)
        elif kind == "nest":
            line = line.replace('"args":', '"args":' + "[" * 50_000 + "]" * 50_000 + ',"q":', 1)
        else:
            line = line.replace('"step":', '"step":' + "9" * 5000 + ',"r":', 1)
        lines[n] = line
    return "\n".join(lines) + "\n"


def _with_config(header: str, hostile: dict[str, int]) -> str:
    """The header line with `hostile` merged into its config (unchanged if it does not parse)."""
    try:
        fields = json.loads(header)
    except ValueError:
        return header
    if not isinstance(fields, dict) or not isinstance(fields.get("config", {}), dict):
        return header
    fields["config"] = {**fields.get("config", {}), **hostile}
    return json.dumps(fields)
