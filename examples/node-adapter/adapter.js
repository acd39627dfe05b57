#!/usr/bin/env node
// A small in-memory Kafka partition log in Node.js, speaking kafkalog's JSON-lines adapter
// protocol (specs/adapter-protocol.md) on stdin/stdout. It implements only the `core` feature:
// leader appends, reads, the high watermark, the log start offset, retention, rolls, truncation,
// flush and the clock. Sizes follow Kafka's v2 batch format (FMT-49) without encoding bytes.
// Semantics: specs/log.md (trunk profile). No dependencies; Node >= 18.
//
// A seeded bug for the checker to find: KAFKALOG_NODE_BUG=size_roll_off_by_one (or the flag
// --bug=size_roll_off_by_one) rolls a segment when an append would make it exactly
// segment_bytes long, where Kafka rolls only when it would exceed it (KL-ROLL-1, SEG-6).
"use strict";

const readline = require("readline");

const BUG = (process.argv.find((a) => a.startsWith("--bug=")) || "").slice(6) ||
  process.env.KAFKALOG_NODE_BUG || "";
const FEATURES = ["core"];
const RECORD_BATCH_OVERHEAD = 61;
const INT32_MAX = 2147483647;

class LogError extends Error {
  constructor(code, message) { super(message); this.code = code; }
}
const illegal = (m) => new LogError("IllegalArgumentError", m);
const outOfRange = (m) => new LogError("OffsetOutOfRangeError", m);

// --- sizes (FMT-48..FMT-50) --------------------------------------------------------------------
function varintSize(n) {
  let v = n >= 0 ? 2 * n : -2 * n - 1;
  let size = 1;
  while (v >= 0x80) { v = Math.floor(v / 128); size += 1; }
  return size;
}
const bytesLen = (b64) => (b64 === null ? null : Buffer.from(b64, "base64").length);
const fieldSize = (len) => (len === null ? varintSize(-1) : varintSize(len) + len);
function recordSize(r, delta, baseTs) {
  let body = 1 + varintSize(r.timestamp - baseTs) + varintSize(delta) + fieldSize(bytesLen(r.key)) +
    fieldSize(bytesLen(r.value)) + varintSize(r.headers.length);
  for (const h of r.headers) {
    body += fieldSize(Buffer.byteLength(h.key, "utf8")) + fieldSize(bytesLen(h.value));
  }
  return varintSize(body) + body;
}
function batchSize(records) {
  const base = records.length ? records[0].timestamp : -1;
  return RECORD_BATCH_OVERHEAD + records.reduce((s, r, i) => s + recordSize(r, i, base), 0);
}

// --- segments ------------------------------------------------------------------------------------
function newSegment(base, cfg, now) {
  const jitter = cfg.segment_jitter_ms === 0 ? 0 : base % Math.min(cfg.segment_jitter_ms, cfg.segment_ms);
  return { base, batches: [], size: 0, offIdx: [], offCap: Math.floor(cfg.segment_index_bytes / 8),
    timeIdx: [], timeCap: Math.floor(cfg.segment_index_bytes / 12), since: 0, created: now,
    modified: now, jitter };
}
function segMax(seg) {
  let best = [-1, -1];
  for (const b of seg.batches) if (b.maxTs > best[0]) best = [b.maxTs, b.last];
  return best;
}
const nextOffset = (seg) => (seg.batches.length ? seg.batches[seg.batches.length - 1].last + 1 : seg.base);
const largestTimestamp = (seg) => { const m = segMax(seg)[0]; return m >= 0 ? m : seg.modified; };
const indexesFull = (seg) => seg.offIdx.length >= seg.offCap || seg.timeIdx.length >= seg.timeCap - 1;
function timeIdxAppend(idx, ts, off) {
  const last = idx.length ? idx[idx.length - 1][0] : -1;
  if (ts > last) idx.push([ts, off]);
}
function becomeInactive(seg) {
  const [ts, off] = segMax(seg);
  timeIdxAppend(seg.timeIdx, ts, off);
  seg.timeCap = seg.timeIdx.length;
  seg.offCap = seg.offIdx.length;
}
function floorIndex(keys, x) {
  let i = -1;
  for (let j = 0; j < keys.length; j += 1) if (keys[j] <= x) i = j;
  return i;
}
function keepAfterCut(keys, offset) {
  const slot = floorIndex(keys, offset);
  if (slot < 0) return 0;
  return keys[slot] === offset ? slot : slot + 1;
}

// --- the log ---------------------------------------------------------------------------------------
class Log {
  constructor(cfg, now, lso) {
    if (lso < 0) throw illegal(`log start offset ${lso} is negative`);
    if (cfg.segment_bytes < 14 || cfg.segment_ms < 1 || cfg.segment_index_bytes < 12) {
      throw illegal("invalid LogConfig");
    }
    this.cfg = cfg; this.now = now;
    this.segments = [newSegment(lso, cfg, now)];
    this.lso = lso; this.leo = lso; this.rp = lso;
    this.hw = { off: lso, seg: -1, pos: -1 };
    this.epochs = []; this.deleted = []; this.timers = [];
  }
  get active() { return this.segments[this.segments.length - 1]; }
  leoMeta() { return { off: this.leo, seg: this.active.base, pos: this.active.size }; }
  hwFollowsLeo() { if (this.hw.off >= this.leo) this.hw = this.leoMeta(); }

  scheduleDeletion(removed) {
    if (!removed.length) return;
    const due = this.now + this.cfg.file_delete_delay_ms;
    const files = new Set(this.deleted);
    for (const s of removed) { files.add(s.base); this.timers.push([due, s.base]); }
    this.deleted = [...files].sort((a, b) => a - b);
  }
  fireDue() {
    const gone = new Set(this.timers.filter((t) => t[0] <= this.now).map((t) => t[1]));
    this.timers = this.timers.filter((t) => t[0] > this.now);
    this.deleted = this.deleted.filter((b) => !gone.has(b));
  }

  // epochs (EPO-2, EPO-6, EPO-7)
  assign(epoch, start) {
    if (epoch < 0 || start < 0) throw illegal(`Received invalid partition leader epoch entry (epoch=${epoch}, start_offset=${start})`);
    const last = this.epochs[this.epochs.length - 1];
    if (last && last.epoch === epoch && start >= last.start_offset) return;
    while (this.epochs.length) {
      const t = this.epochs[this.epochs.length - 1];
      if (t.epoch >= epoch || t.start_offset >= start) this.epochs.pop(); else break;
    }
    this.epochs.push({ epoch, start_offset: start });
  }
  epochsFromEnd(end) {
    const last = this.epochs[this.epochs.length - 1];
    if (end < 0 || !last || last.start_offset < end) return;
    this.epochs = this.epochs.filter((e) => e.start_offset < end);
  }
  epochsFromStart(start) {
    const removed = this.epochs.filter((e) => e.start_offset <= start);
    if (!removed.length) return;
    this.epochs = [{ epoch: removed[removed.length - 1].epoch, start_offset: start },
      ...this.epochs.filter((e) => e.start_offset > start)];
  }

  // roll (LOC-6, LOG-25)
  rollLocal(expected) {
    const base = Math.max(expected === null ? 0 : expected, this.leo);
    const active = this.active;
    const fresh = newSegment(base, this.cfg, this.now);
    if (this.segments.some((s) => s.base === base)) {
      if (active.base === base && active.size === 0) {
        this.segments[this.segments.length - 1] = fresh;
        this.scheduleDeletion([active]);
        return base;
      }
      throw new LogError("InvalidRollError", `Trying to roll a new log segment with start offset ${base} while it already exists`);
    }
    if (base < active.base) {
      throw new LogError("InvalidRollError", `Trying to roll a new log segment with start offset ${base} lower than start offset of the active segment ${active.base}`);
    }
    becomeInactive(active);
    this.segments.push(fresh);
    return base;
  }
  roll(expected) {
    const base = this.rollLocal(expected);
    this.hwFollowsLeo();
    this.rp = Math.max(this.rp, Math.min(base, this.leo));
    return base;
  }

  // append (LOG-15..LOG-24, SEG-3)
  appendAsLeader(records, epoch) {
    if (!records.length) {
      return { first_offset: -1, last_offset: -1, max_timestamp: -1, offset_of_max_timestamp: -1,
        log_append_time: -1, valid_bytes: 0, record_count: 0 };
    }
    for (const r of records) if (r.timestamp < -1) throw illegal(`Invalid negative timestamp ${r.timestamp}`);
    const logAppend = this.cfg.message_timestamp_type === "LogAppendTime";
    const maxTs = logAppend ? this.now : Math.max(...records.map((r) => r.timestamp));
    const batch = { base: this.leo, last: this.leo + records.length - 1, epoch, maxTs,
      size: batchSize(records), pos: 0, records, type: logAppend ? "LogAppendTime" : "CreateTime" };
    if (batch.size > this.cfg.max_message_bytes) {
      throw new LogError("RecordTooLargeError", `The record batch size ${batch.size} exceeds max.message.bytes`);
    }
    if (epoch < 0) throw illegal(`Received invalid partition leader epoch entry (epoch=${epoch}, start_offset=${batch.base})`);
    if (batch.size > this.cfg.segment_bytes) {
      throw new LogError("RecordBatchTooLargeError", `Message batch size is ${batch.size} bytes`);
    }
    this.maybeRoll(batch);
    const seg = this.active;
    batch.pos = seg.size;
    let [segTs, segOff] = segMax(seg);
    if (batch.maxTs > segTs) [segTs, segOff] = [batch.maxTs, batch.last];
    if (seg.since > this.cfg.index_interval_bytes) {
      if (seg.offIdx.length >= seg.offCap) throw illegal("Attempt to append to a full index");
      if (seg.timeIdx.length >= seg.timeCap - 1) throw illegal("Attempt to append to a full time index");
      seg.offIdx.push([batch.last, batch.pos]);
      timeIdxAppend(seg.timeIdx, segTs, segOff);
      seg.since = 0;
    }
    seg.since += batch.size;
    seg.batches.push(batch);
    seg.size += batch.size;
    seg.modified = this.now;
    this.assign(epoch, batch.base);
    this.leo = batch.last + 1;
    this.hwFollowsLeo();
    return { first_offset: batch.base, last_offset: batch.last, max_timestamp: maxTs,
      offset_of_max_timestamp: maxTs >= 0 ? batch.last : -1,
      log_append_time: logAppend ? this.now : -1, valid_bytes: batch.size,
      record_count: records.length };
  }
  maybeRoll(batch) {
    const seg = this.active;
    const limit = this.cfg.segment_bytes - batch.size;
    const bySize = BUG === "size_roll_off_by_one" ? seg.size >= limit : seg.size > limit;
    const rolling = seg.batches.length ? seg.batches[0].maxTs : -1;
    const waited = rolling >= 0 ? batch.maxTs - rolling : this.now - seg.created;
    const byTime = seg.size > 0 && waited > this.cfg.segment_ms - seg.jitter;
    const rel = batch.last - seg.base;
    if (bySize || byTime || indexesFull(seg) || rel < 0 || rel > INT32_MAX) this.roll(batch.base);
  }

  // read (LOG-27, LOC-4, SEG-10)
  read(start, maxBytes, isolation, minOne) {
    if (start < this.lso) throw outOfRange(`Received request for offset ${start}, but the log start offset is ${this.lso}`);
    const bound = isolation === "high_watermark" ? this.materialiseHw() : this.leoMeta();
    return this.localRead(start, maxBytes, minOne, bound);
  }
  localRead(start, maxBytes, minOne, bound) {
    const idx = floorIndex(this.segments.map((s) => s.base), start);
    if (start > this.leo || idx < 0) throw outOfRange(`Received request for offset ${start}, but we only have log segments upto ${this.leo}`);
    if (start === bound.off) return fetchInfo(bound);
    if (start > bound.off) return fetchInfo(this.localRead(start, 1, false, this.leoMeta()).meta);
    for (const seg of this.segments.slice(idx)) {
      let maxPos = null;
      if (seg.base < bound.seg) maxPos = seg.size;
      else if (seg.base === bound.seg && !(bound.seg === -1 && bound.pos === -1)) maxPos = bound.pos;
      const found = segmentRead(seg, start, maxBytes, maxPos, minOne);
      if (found) return found;
    }
    return fetchInfo(this.leoMeta());
  }
  materialiseHw() {
    if (!(this.hw.seg === -1 && this.hw.pos === -1)) return this.hw;
    let found;
    try {
      found = this.localRead(this.hw.off, 1, false, this.leoMeta()).meta;
    } catch (e) {
      if (e.code === "OffsetOutOfRangeError") return this.hw;
      throw e;
    }
    this.hw = { off: this.hw.off, seg: found.seg, pos: found.pos };
    return this.hw;
  }

  // high watermark and log start offset (LOG-5, LOG-29)
  updateHighWatermark(offset) {
    if (offset < this.lso) this.hw = { off: this.lso, seg: -1, pos: -1 };
    else if (offset >= this.leo) this.hw = this.leoMeta();
    else this.hw = { off: offset, seg: -1, pos: -1 };
    return this.hw.off;
  }
  maybeIncrementLogStartOffset(offset) {
    if (offset > this.hw.off) throw outOfRange(`Cannot increment the log start offset to ${offset} since it is larger than the high watermark ${this.hw.off}`);
    if (offset <= this.lso) return false;
    this.lso = offset;
    if (this.hw.off < offset) this.updateHighWatermark(offset);
    this.rp = Math.max(this.rp, offset);
    this.epochsFromStart(offset);
    return true;
  }

  // retention (LOG-32..LOG-38)
  deleteOldSegments() {
    let total = 0;
    for (const predicate of [this.startPredicate, this.sizePredicate, this.timePredicate]) {
      total += this.deletePass(predicate.call(this));
    }
    return total;
  }
  startPredicate() {
    const s = this.segments;
    return s.map((_, i) => i + 1 < s.length && s[i + 1].base <= this.lso);
  }
  sizePredicate() {
    const sizes = this.segments.map((s) => s.size);
    const total = sizes.reduce((a, b) => a + b, 0);
    let count = 0;
    if (this.cfg.retention_bytes >= 0 && total >= this.cfg.retention_bytes) {
      let diff = total - this.cfg.retention_bytes;
      for (const size of sizes) { if (diff - size < 0) break; diff -= size; count += 1; }
    }
    return sizes.map((_, i) => i < count);
  }
  timePredicate() {
    const r = this.cfg.retention_ms;
    return this.segments.map((s) => r >= 0 && this.now - largestTimestamp(s) > r);
  }
  deletePass(ok) {
    const s = this.segments;
    let count = 0;
    for (let i = 0; i < s.length; i += 1) {
      const upper = i + 1 < s.length ? s[i + 1].base : this.leo;
      if (this.hw.off < upper || !ok[i]) break;
      if (i === s.length - 1 && s[i].size === 0) break;
      count += 1;
    }
    if (count === 0) return 0;
    let doomed = s.slice(0, count);
    if (count === s.length) {
      const base = this.roll(null);
      if (doomed[doomed.length - 1].base === base) doomed = doomed.slice(0, -1);
    }
    if (!doomed.length) return count;
    const remaining = this.segments.slice(doomed.length);
    if (remaining[0].base > this.lso) {
      this.lso = remaining[0].base;
      this.rp = Math.max(this.rp, this.lso);
      this.epochsFromStart(this.lso);
    }
    this.segments = remaining;
    this.scheduleDeletion(doomed);
    return count;
  }

  // truncation (LOG-40, LOG-41, SEG-13)
  truncateTo(offset) {
    if (offset < 0) throw illegal(`Cannot truncate partition to a negative offset (${offset})`);
    if (offset >= this.leo) { this.epochsFromEnd(this.leo); return false; }
    if (this.segments[0].base > offset) { this.truncateFullyAndStartAt(offset); return true; }
    const kept = this.segments.filter((s) => s.base <= offset);
    const removed = this.segments.filter((s) => s.base > offset);
    const seg = kept[kept.length - 1];
    const before = seg.size;
    seg.batches = seg.batches.filter((b) => b.last < offset);
    seg.size = seg.batches.reduce((a, b) => a + b.size, 0);
    seg.offIdx = seg.offIdx.slice(0, keepAfterCut(seg.offIdx.map((e) => e[0]), offset));
    seg.timeIdx = seg.timeIdx.slice(0, keepAfterCut(seg.timeIdx.map((e) => e[1]), offset));
    seg.offCap = Math.floor(this.cfg.segment_index_bytes / 8);
    seg.timeCap = Math.floor(this.cfg.segment_index_bytes / 12);
    seg.since = 0;
    if (!seg.batches.length) seg.created = this.now;
    if (seg.size < before) seg.modified = this.now;
    this.segments = kept;
    this.leo = offset;
    this.rp = Math.min(this.rp, offset);
    this.epochsFromEnd(offset);
    this.lso = Math.min(offset, this.lso);
    this.scheduleDeletion(removed);
    this.hwFollowsLeo();
    return true;
  }
  truncateFullyAndStartAt(offset) {
    if (offset < 0) throw illegal(`Cannot start the log at negative offset ${offset}`);
    const old = this.segments;
    this.segments = [newSegment(offset, this.cfg, this.now)];
    this.leo = offset;
    this.rp = Math.min(this.rp, offset);
    this.epochs = [];
    this.scheduleDeletion(old);
    this.lso = offset;
    this.hw = this.leoMeta();
    return null;
  }

  flush(offset) {
    const target = offset === null ? this.leo : offset;
    if (target < 0 || target > this.leo) throw illegal(`flush offset ${target} outside [0, ${this.leo}]`);
    this.rp = Math.max(this.rp, target);
    return this.rp;
  }
  advanceClock(ms) {
    if (ms < 0) throw illegal(`cannot move the clock back by ${ms} ms`);
    this.now += ms;
    this.fireDue();
    return this.now;
  }
  state() {
    return { log_start_offset: this.lso, high_watermark: this.hw.off, log_end_offset: this.leo,
      recovery_point: this.rp,
      segments: this.segments.map((s) => ({ base_offset: s.base, size_in_bytes: s.size, next_offset: nextOffset(s) })),
      epoch_entries: this.epochs.map((e) => ({ ...e })), pending_deletions: [...this.deleted] };
  }
}

function segmentRead(seg, start, maxSize, maxPos, minOne) {
  if (maxSize < 0) throw illegal(`Invalid max size ${maxSize}`);
  const first = seg.batches.find((b) => b.last >= start);
  if (!first) return null;
  const meta = { off: first.base, seg: seg.base, pos: first.pos };
  const adjusted = minOne ? Math.max(maxSize, first.size) : maxSize;
  if (adjusted === 0 || maxPos === null) return fetchInfo(meta);
  const fetchSize = Math.min(maxPos - first.pos, adjusted);
  if (fetchSize < 0) throw illegal(`Invalid slice size ${fetchSize} at position ${first.pos}`);
  const end = Math.min(first.pos + fetchSize, seg.size);
  const batches = seg.batches.filter((b) => b.pos >= first.pos && b.pos + b.size <= end);
  return fetchInfo(meta, end - first.pos, batches, adjusted < first.size);
}
function fetchInfo(meta, size = 0, batches = [], incomplete = false) {
  return { meta, size, batches, incomplete };
}
function fetchJson(info) {
  return {
    fetch_offset_metadata: { message_offset: info.meta.off, segment_base_offset: info.meta.seg,
      relative_position_in_segment: info.meta.pos },
    size_in_bytes: info.size,
    batches: info.batches.map((b) => ({ base_offset: b.base, last_offset: b.last,
      partition_leader_epoch: b.epoch, max_timestamp: b.maxTs, size_in_bytes: b.size, position: b.pos,
      records: b.records.map((r) => ({ ...r, timestamp: b.type === "LogAppendTime" ? b.maxTs : r.timestamp })),
      timestamp_type: b.type })),
    first_entry_incomplete: info.incomplete,
  };
}

// --- protocol ------------------------------------------------------------------------------------
let log = null;
const ACTIONS = {
  append_as_leader: (a) => log.appendAsLeader(a.records, a.leader_epoch),
  read: (a) => fetchJson(log.read(a.start_offset, a.max_bytes, a.isolation, a.min_one_message)),
  update_high_watermark: (a) => log.updateHighWatermark(a.offset),
  maybe_increment_log_start_offset: (a) => log.maybeIncrementLogStartOffset(a.offset),
  delete_old_segments: () => log.deleteOldSegments(),
  roll: (a) => log.roll(a.expected_next_offset === undefined ? null : a.expected_next_offset),
  truncate_to: (a) => log.truncateTo(a.offset),
  truncate_fully_and_start_at: (a) => log.truncateFullyAndStartAt(a.offset),
  flush: (a) => log.flush(a.offset === undefined ? null : a.offset),
  advance_clock: (a) => log.advanceClock(a.ms),
  state: () => log.state(),
};
const OTHER_ACTIONS = ["append_as_follower", "maybe_increment_high_watermark", "assign_epoch",
  "end_offset_for_epoch", "fetch_offset_by_timestamp", "close_and_reopen", "check", "verify"];

function handle(request) {
  const { action, args = {} } = request;
  if (action === "handshake") {
    return { ok: { protocol_version: 1, implementation: `node-adapter${BUG ? ` (bug: ${BUG})` : ""}`, features: FEATURES } };
  }
  if (action === "open") { log = new Log(args.config, args.now_ms, args.log_start_offset); return { ok: null }; }
  if (action === "close") { log = null; return { ok: null }; }
  if (OTHER_ACTIONS.includes(action)) return { unsupported: { message: `${action} is not implemented` } };
  const run = ACTIONS[action];
  if (!run) return { error: { code: "UnknownActionError", message: `unknown action ${action}` } };
  if (log === null) return { error: { code: "ProtocolError", message: "no log is open" } };
  const result = run(args);
  return { ok: result === undefined ? null : result };
}

const input = readline.createInterface({ input: process.stdin });
input.on("line", (line) => {
  if (!line.trim()) return;
  let request;
  try {
    request = JSON.parse(line);
  } catch (e) {
    process.stdout.write(`${JSON.stringify({ id: null, error: { code: "ProtocolError", message: e.message } })}\n`);
    return;
  }
  let reply;
  try {
    reply = handle(request);
  } catch (e) {
    const code = e instanceof LogError ? e.code : "UnexpectedException";
    reply = { error: { code, message: e.message } };
  }
  process.stdout.write(`${JSON.stringify({ id: request.id, ...reply })}\n`);
});
input.on("close", () => process.exit(0));
