/* kafkalog.impl.records._scan: batch-level one-pass scans of v2 record batches (FMT-45, FMT-46).
 *
 * The optional compiled twin of impl/records/batch_scan.py (the pure-Python reference, selected with
 * KAFKALOG_PURE_PYTHON=1 or when this module did not build). Both return exactly the same
 * values; tests/impl/test_batch_scan.py holds them to it on valid and hostile buffers.
 *
 * Contract shared with the Python twin: a scan never raises for bad bytes. It stops *before*
 * the first batch it cannot vouch for and says why; the caller then hands that batch to the
 * per-batch Python path, which raises the typed error or makes the cut exactly as before.
 *
 * Units: this one (recovery, checked reads, lookups, the module), _scan_crc.c (CRC-32C: the
 * SSE4.2 crc32 instruction on three interleaved streams, a byte table otherwise),
 * _scan_crc_fold.c (CRC-32C by VPCLMULQDQ folding where AVX-512 is there), _scan_append.c
 * (the append path's header pass, facts summary, header stamps and index decisions),
 * _scan_rows.c (producer rows, packed index entries) and _scan_write.c (the leader's vectored
 * write, reached only through impl/fs/file_system.py).
 */
#include "_scan.h"

#include <limits.h>
#include <string.h>

/* The part of one batch both scans check: whole, magic 2, size >= 61, CRC over [21, size).
 * Returns the size, 0 when the buffer ends inside the batch, -1 when the batch is not valid. */
static inline Py_ssize_t valid_batch(const unsigned char *b, Py_ssize_t left) {
    if (left < HEADER) return 0;
    int64_t size = (int64_t)be32(b + 8) + LOG_OVERHEAD;
    if (size < HEADER || b[16] != 2) return -1;
    if (size > left) return 0;
    uint32_t stored = (uint32_t)be32(b + 17);
    if (kl_crc32c(0, b + 21, (size_t)(size - 21)) != stored) return -1;
    return (Py_ssize_t)size;
}

/* --- scan_recovery ------------------------------------------------------------------------ */

PyDoc_STRVAR(scan_recovery_doc,
"scan_recovery(buf, position, base_offset, interval, last_index_entry, max_ts, max_off,\n"
"              oi_entries, oi_max, oi_last, ti_entries, ti_max, ti_last_ts, ti_last_off,\n"
"              epoch_check, latest_epoch)\n"
"-> (consumed, stop, last_index_entry, max_ts, max_off, oi_bytes, ti_bytes, ti_flags,\n"
"    producer_positions, v2_end)\n\n"
"LogSegment.recover's per-batch work (SEG-15) over the whole v2 batches of buf; see\n"
"impl/records/batch_scan.py for the meaning of every argument and result.");

static PyObject *scan_recovery(PyObject *self, PyObject *args) {
    Py_buffer view;
    long long position, base_offset, interval, last_index_entry, max_ts, max_off;
    long long oi_entries, oi_max, oi_last, ti_entries, ti_max, ti_last_ts, ti_last_off;
    int epoch_check;
    PyObject *latest_obj;
    if (!PyArg_ParseTuple(args, "y*LLLLLLLLLLLLLpO", &view, &position, &base_offset, &interval,
                          &last_index_entry, &max_ts, &max_off, &oi_entries, &oi_max, &oi_last,
                          &ti_entries, &ti_max, &ti_last_ts, &ti_last_off, &epoch_check,
                          &latest_obj))
        return NULL;
    int latest_known = latest_obj != Py_None;
    long long latest = 0;
    if (latest_known) {
        latest = PyLong_AsLongLong(latest_obj);
        if (latest == -1 && PyErr_Occurred()) {
            PyBuffer_Release(&view);
            return NULL;
        }
    }
    const unsigned char *buf = (const unsigned char *)view.buf;
    Py_ssize_t n = view.len, rel = 0;
    int stop = STOP_END;
    /* At most one index point per batch, and batches are >= 61 bytes. */
    Py_ssize_t cap = n / HEADER + 1;
    PyObject *oi = PyBytes_FromStringAndSize(NULL, cap * 8);
    PyObject *ti = PyBytes_FromStringAndSize(NULL, cap * 12);
    PyObject *flags = PyBytes_FromStringAndSize(NULL, cap);
    PyObject *producers = PyList_New(0);
    if (!oi || !ti || !flags || !producers) goto fail;
    unsigned char *op = (unsigned char *)PyBytes_AS_STRING(oi);
    unsigned char *tp = (unsigned char *)PyBytes_AS_STRING(ti);
    unsigned char *fp = (unsigned char *)PyBytes_AS_STRING(flags);
    Py_ssize_t points = 0, tcount = 0;
    long long v2_end = -1;
    Py_BEGIN_ALLOW_THREADS
    while (1) {
        const unsigned char *b = buf + rel;
        Py_ssize_t size = valid_batch(b, n - rel);
        if (size == 0) {
            stop = rel == n ? STOP_END : STOP_MORE;
            break;
        }
        if (size < 0) {
            stop = STOP_SLOW;
            break;
        }
        int64_t base = be64(b), last;
        int32_t delta = be32(b + 23);
        if (__builtin_add_overflow(base, (int64_t)delta, &last) || last == INT64_MAX) {
            stop = STOP_SLOW; /* Python's integers decide what offsets at the limit mean */
            break;
        }
        /* The offset-range check, whose failure raises (SEG-15): the Python path raises it. */
        if (last < base_offset || last - base_offset > INT32_MAX_) {
            stop = STOP_SLOW;
            break;
        }
        int32_t epoch = be32(b + 12);
        if (epoch_check && epoch >= 0 && (!latest_known || epoch > latest)) {
            stop = STOP_SLOW; /* the epoch cache learns a new epoch: Python assigns it */
            break;
        }
        long long pos = position + rel;
        int64_t batch_max_ts = be64(b + 35);
        long long new_max_ts = max_ts, new_max_off = max_off;
        if (batch_max_ts > new_max_ts) {
            new_max_ts = batch_max_ts;
            new_max_off = last;
        }
        if (pos - last_index_entry > interval) {
            /* Both appends must be ones the index classes accept without growing; anything
             * else (a full index, offsets going back) is the Python path's to decide. */
            if (oi_entries >= oi_max || ti_entries >= ti_max - 1 ||
                (oi_entries != 0 && last <= oi_last) ||
                (ti_entries != 0 && (new_max_off < ti_last_off || new_max_ts < ti_last_ts)) ||
                (new_max_ts > ti_last_ts &&
                 (new_max_off < base_offset || new_max_off - base_offset > INT32_MAX_))) {
                stop = STOP_SLOW;
                break;
            }
            put_be32(op + points * 8, (uint32_t)(last - base_offset));
            put_be32(op + points * 8 + 4, (uint32_t)pos);
            oi_entries++;
            oi_last = last;
            if (new_max_ts > ti_last_ts) {
                put_be64(tp + tcount * 12, (uint64_t)new_max_ts);
                put_be32(tp + tcount * 12 + 8, (uint32_t)(new_max_off - base_offset));
                tcount++;
                ti_entries++;
                ti_last_ts = new_max_ts;
                ti_last_off = new_max_off;
                fp[points] = 1;
            } else {
                fp[points] = 0;
            }
            points++;
            last_index_entry = pos;
        }
        max_ts = new_max_ts;
        max_off = new_max_off;
        v2_end = last + 1;
        if (be64(b + 43) >= 0) {
            Py_BLOCK_THREADS
            PyObject *p = PyLong_FromLongLong(pos);
            int bad = p == NULL || PyList_Append(producers, p) < 0;
            Py_XDECREF(p);
            Py_UNBLOCK_THREADS
            if (bad) {
                stop = -1;
                break;
            }
        }
        rel += size;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (stop < 0) goto fail_released;
    if (_PyBytes_Resize(&oi, points * 8) < 0) { oi = NULL; goto fail_released; }
    if (_PyBytes_Resize(&ti, tcount * 12) < 0) { ti = NULL; goto fail_released; }
    if (_PyBytes_Resize(&flags, points) < 0) { flags = NULL; goto fail_released; }
    return Py_BuildValue("niLLLNNNNL", rel, stop, last_index_entry, max_ts, max_off, oi, ti,
                         flags, producers, v2_end);
fail:
    PyBuffer_Release(&view);
fail_released:
    Py_XDECREF(oi);
    Py_XDECREF(ti);
    Py_XDECREF(flags);
    Py_XDECREF(producers);
    return NULL;
}

/* --- scan_valid --------------------------------------------------------------------------- */

PyDoc_STRVAR(scan_valid_doc,
"scan_valid(buf) -> (consumed, stop, batches, next_offset)\n\n"
"Walks the whole, valid v2 batches of buf (size, magic, CRC-32C: RecordBatch.is_valid);\n"
"see impl/records/batch_scan.py.");

static PyObject *scan_valid(PyObject *self, PyObject *args) {
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*", &view)) return NULL;
    const unsigned char *buf = (const unsigned char *)view.buf;
    Py_ssize_t n = view.len, rel = 0, count = 0;
    int stop;
    long long next_offset = -1;
    int overflow = 0;
    Py_BEGIN_ALLOW_THREADS
    while (1) {
        Py_ssize_t size = valid_batch(buf + rel, n - rel);
        if (size == 0) {
            stop = rel == n ? STOP_END : STOP_MORE;
            break;
        }
        if (size < 0) {
            stop = STOP_SLOW;
            break;
        }
        int64_t last;
        if (__builtin_add_overflow(be64(buf + rel), (int64_t)be32(buf + rel + 23), &last) ||
            last == INT64_MAX) {
            overflow = 1; /* next_offset would not fit: the caller reads it from the batch */
        } else {
            next_offset = last + 1;
        }
        count++;
        rel += size;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (overflow) stop = STOP_SLOW;
    return Py_BuildValue("ninL", rel, stop, count, next_offset);
}

/* --- offset lookups (SEG-9, FMT-13, FMT-54) ---------------------------------------------- */

PyDoc_STRVAR(index_floor_span_doc,
"index_floor_span(buf, entries, relative_target) -> (position, next_position)\n\n"
"OffsetIndex.floor_span over the mapping itself: the position of the largest entry whose\n"
"relative offset is <= relative_target (0 when none) and the next entry's position (-1 when\n"
"there is none). buf holds `entries` big-endian (int32 relative offset, int32 position)\n"
"entries whose offsets strictly increase (FMT-10); it may be None when entries is 0.");

static PyObject *index_floor_span(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!arity_ok(nargs, 3, "index_floor_span")) return NULL;
    Py_ssize_t entries = PyLong_AsSsize_t(args[1]);
    if (entries == -1 && PyErr_Occurred()) return NULL;
    int overflow = 0;
    long long target = PyLong_AsLongLongAndOverflow(args[2], &overflow);
    if (target == -1 && PyErr_Occurred()) return NULL;
    if (overflow) target = overflow > 0 ? LLONG_MAX : LLONG_MIN; /* beyond every int32 key */
    if (entries <= 0) {
        if (entries < 0) {
            PyErr_SetString(PyExc_ValueError, "negative entry count");
            return NULL;
        }
        return Py_BuildValue("ii", 0, -1);
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    if (entries > view.len / 8) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "more entries than the index buffer holds");
        return NULL;
    }
    const unsigned char *buf = (const unsigned char *)view.buf;
    Py_ssize_t lo = 0, hi = entries; /* bisect_right over the keys */
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if ((long long)be32(buf + mid * 8) <= target) lo = mid + 1;
        else hi = mid;
    }
    Py_ssize_t slot = lo - 1;
    long position, next_position;
    if (slot < 0) {
        position = 0;
        next_position = be32(buf + 4);
    } else {
        position = be32(buf + slot * 8 + 4);
        next_position = slot + 1 < entries ? be32(buf + slot * 8 + 12) : -1;
    }
    PyBuffer_Release(&view);
    return Py_BuildValue("ll", position, next_position);
}

PyDoc_STRVAR(find_batch_header_doc,
"find_batch_header(chunk, position, stop, target, result_type)\n\n"
"FileRecords.search_for_offset_with_size's walk over the v2 headers of one chunk read at\n"
"`position` of a file whose logical size is `stop`: result_type(last_offset, position, size)\n"
"for the first batch whose last offset >= target; None at a torn tail (a batch running past\n"
"stop); an int >= 0, the position to read more from, when the chunk ends before a header's\n"
"lastOffsetDelta; ~position (< 0) for a batch the per-batch path must decide (legacy magic, a\n"
"size below the v2 header, a last offset or a target beyond int64). See impl/records/batch_scan.py.");

#define LAST_OFFSET_END 27 /* a v2 header up to and including lastOffsetDelta (FMT-45) */

static PyObject *find_batch_header(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!arity_ok(nargs, 5, "find_batch_header")) return NULL;
    long long pos = PyLong_AsLongLong(args[1]);
    if (pos == -1 && PyErr_Occurred()) return NULL;
    long long stop = PyLong_AsLongLong(args[2]);
    if (stop == -1 && PyErr_Occurred()) return NULL;
    int overflow = 0;
    long long target = PyLong_AsLongLongAndOverflow(args[3], &overflow);
    if (target == -1 && PyErr_Occurred()) return NULL;
    if (overflow) return PyLong_FromLongLong(~pos); /* never on a read: the per-batch path */
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *buf = (const unsigned char *)view.buf;
    Py_ssize_t n = view.len, rel = 0;
    int slow = 0, torn = 0, found = 0;
    long long last = 0, size = 0;
    while (rel + LAST_OFFSET_END <= n) {
        const unsigned char *b = buf + rel;
        size = (long long)be32(b + 8) + LOG_OVERHEAD;
        if (b[16] < 2 || size < HEADER) {
            slow = 1;
            break;
        }
        if (pos + size > stop) {
            torn = 1;
            break;
        }
        if (__builtin_add_overflow(be64(b), (int64_t)be32(b + 23), &last)) {
            slow = 1;
            break;
        }
        if (last >= target) {
            found = 1;
            break;
        }
        pos += size;
        rel += (Py_ssize_t)size;
    }
    PyBuffer_Release(&view);
    if (found) {
        PyTypeObject *type = (PyTypeObject *)args[4];
        if (!PyType_Check(type) || !PyType_IsSubtype(type, &PyTuple_Type)) {
            PyErr_SetString(PyExc_TypeError, "result_type must be a tuple type");
            return NULL;
        }
        /* tuple.__new__(result_type, ...) without the call: a NamedTuple has no other state */
        PyObject *result = type->tp_alloc(type, 3);
        if (result == NULL) return NULL;
        PyObject *items[3] = {PyLong_FromLongLong(last), PyLong_FromLongLong(pos),
                              PyLong_FromLongLong(size)};
        for (int i = 0; i < 3; i++) {
            if (items[i] == NULL) {
                for (int j = 0; j < 3; j++) Py_XDECREF(items[j]);
                Py_DECREF(result);
                return NULL;
            }
            PyTuple_SET_ITEM(result, i, items[i]);
        }
        return result;
    }
    if (torn) Py_RETURN_NONE;
    return PyLong_FromLongLong(slow ? ~pos : pos);
}

PyDoc_STRVAR(crc32c_doc, "crc32c(data, value=0) -> int: CRC-32C of data, continuing value.");

static PyObject *py_crc32c(PyObject *self, PyObject *args) {
    Py_buffer view;
    unsigned int value = 0;
    if (!PyArg_ParseTuple(args, "y*|I", &view, &value)) return NULL;
    uint32_t crc;
    Py_BEGIN_ALLOW_THREADS
    crc = kl_crc32c(value, (const unsigned char *)view.buf, (size_t)view.len);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc);
}

static PyMethodDef methods[] = {
    {"scan_recovery", scan_recovery, METH_VARARGS, scan_recovery_doc},
    {"scan_valid", scan_valid, METH_VARARGS, scan_valid_doc},
    {"crc32c", py_crc32c, METH_VARARGS, crc32c_doc},
    {"scan_headers", scan_headers, METH_O, scan_headers_doc},
    {"stamp_headers", (PyCFunction)(void (*)(void))stamp_headers, METH_FASTCALL,
     stamp_headers_doc},
    {"index_decisions", (PyCFunction)(void (*)(void))index_decisions, METH_FASTCALL,
     index_decisions_doc},
    {"producer_rows", (PyCFunction)(void (*)(void))producer_rows, METH_FASTCALL,
     producer_rows_doc},
    {"pack_offset_entries", (PyCFunction)(void (*)(void))pack_offset_entries, METH_FASTCALL,
     pack_offset_entries_doc},
    {"write_stamped", (PyCFunction)(void (*)(void))write_stamped, METH_FASTCALL,
     write_stamped_doc},
    {"facts_summary", facts_summary, METH_O, facts_summary_doc},
    {"index_floor_span", (PyCFunction)(void (*)(void))index_floor_span, METH_FASTCALL,
     index_floor_span_doc},
    {"find_batch_header", (PyCFunction)(void (*)(void))find_batch_header, METH_FASTCALL,
     find_batch_header_doc},
    {"index_first_disorder", (PyCFunction)(void (*)(void))index_first_disorder, METH_FASTCALL,
     index_first_disorder_doc},
    {"record_walk", (PyCFunction)(void (*)(void))record_walk, METH_FASTCALL, record_walk_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_scan",
    "Compiled batch scans (see impl/records/batch_scan.py, the pure-Python reference).", -1, methods,
};

PyMODINIT_FUNC PyInit__scan(void) {
    kl_crc_init();
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddStringConstant(m, "CRC_IMPLEMENTATION", kl_crc_name()) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
