/* The append path's compiled twins (kafkalog.impl.records._scan; references in Python beside their
 * callers: memory_records.py_scan_headers, log.validator.py_stamp_headers,
 * segment.indexing.py_index_decisions). Each returns exactly what its reference returns, or None
 * where the reference would need integers beyond int64 (the caller then runs the reference). */
#include "_scan.h"

#define NO_TIMESTAMP (-1LL)

/* --- scan_headers ---------------------------------------------------------- */

const char scan_headers_doc[] =
    "scan_headers(buf) -> list of (position, size, base_offset, last_offset_delta, epoch,\n"
    "                              max_timestamp, record_count, crc_ok) | None\n\n"
    "memory_records.py_scan_headers: one pass over the whole v2 batches of buf, each one's "
    "header\nfacts and CRC validity; stops silently at a torn tail; None when a batch is not a "
    "plain v2\nbatch (magic != 2, size < 61), so the caller takes the batch-object path.";

/* The facts of the whole v2 batches of buf[0:end]: a new list, Py_None (new reference) to
 * decline, or NULL with an exception. */
static PyObject *scan_facts(const unsigned char *buf, Py_ssize_t end) {
    Py_ssize_t pos = 0;
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    while (pos + HEADER <= end) {
        const unsigned char *b = buf + pos;
        int64_t size = (int64_t)be32(b + 8) + LOG_OVERHEAD;
        if (size < HEADER || b[16] != 2) goto decline;
        if (pos + size > end) break; /* a torn tail (FMT-52) */
        /* The CRC covers [attributes, end) (FMT-46); same test as RecordBatch.is_valid. */
        int crc_ok = kl_crc32c(0, b + 21, (size_t)(size - 21)) == (uint32_t)be32(b + 17);
        const long long fields[8] = {pos, size, be64(b), be32(b + 23), be32(b + 12),
                                     be64(b + 35), be32(b + 57), crc_ok};
        PyObject *facts = facts_tuple(fields);
        if (facts == NULL) goto fail;
        int failed = PyList_Append(out, facts);
        Py_DECREF(facts);
        if (failed < 0) goto fail;
        pos += (Py_ssize_t)size;
    }
    if (pos + HEADER > end && pos + 17 < end) {
        /* Fewer than 61 bytes left but more than 17: a torn tail only if its size field says so. */
        int64_t size = (int64_t)be32(buf + pos + 8) + LOG_OVERHEAD;
        if (size < HEADER || buf[pos + 16] != 2) goto decline;
    }
    return out;
decline:
    Py_DECREF(out);
    Py_RETURN_NONE;
fail:
    Py_DECREF(out);
    return NULL;
}

PyObject *scan_headers(PyObject *self, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    PyObject *out = scan_facts((const unsigned char *)view.buf, view.len);
    PyBuffer_Release(&view);
    return out;
}

/* --- reading BatchFacts tuples ------------------------------------------------------------- */

/* The eight fields of a BatchFacts tuple as int64 (crc_ok as 0/1); 0 when an item is not a
 * tuple of eight ints within int64 (the exception cleared: the caller declines), -1 on error. */
static int read_facts(PyObject *item, long long f[8]) {
    if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 8) return 0;
    for (int i = 0; i < 8; i++) {
        PyObject *v = PyTuple_GET_ITEM(item, i);
        if (i == 7) {
            int truth = PyObject_IsTrue(v);
            if (truth < 0) return -1;
            f[i] = truth;
            continue;
        }
        int overflow = 0;
        f[i] = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow != 0) return 0;
        if (f[i] == -1 && PyErr_Occurred()) return -1;
    }
    return 1;
}

/* The int64 arguments args[first_int:want] into `ints`: 1, 0 when one is beyond int64 (no
 * exception set: the caller declines), -1 with an exception. */
static int fast_args(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t want, const char *name,
                     long long *ints, Py_ssize_t first_int) {
    if (!arity_ok(nargs, want, name)) return -1;
    for (Py_ssize_t i = first_int; i < want; i++) {
        int overflow = 0;
        ints[i - first_int] = PyLong_AsLongLongAndOverflow(args[i], &overflow);
        if (overflow != 0) return 0;
        if (ints[i - first_int] == -1 && PyErr_Occurred()) return -1;
    }
    return 1;
}

/* --- stamp_headers (LOG-18, create time) --------------------------------------------------- */

const char stamp_headers_doc[] =
    "stamp_headers(facts, first_offset, leader_epoch)\n"
    "-> (headers, stamped facts, next_offset, max_timestamp, offset of max, record count) | None\n\n"
    "log.validator.py_stamp_headers: each batch's first 16 bytes as a leader stamps them (base\n"
    "offset from first_offset, batch length, leader epoch; FMT-45, outside the CRC, FMT-47),\n"
    "16 bytes a batch, so the batches can be written without copying them.";

PyObject *stamp_headers(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    long long ints[2];
    int ok = fast_args(args, nargs, 3, "stamp_headers", ints, 1);
    if (ok <= 0) return ok < 0 ? NULL : Py_NewRef(Py_None);
    long long next_offset = ints[0], epoch = ints[1], max_ts = NO_TIMESTAMP, max_last = -1;
    long long count = 0;
    PyObject *facts = args[0], *out = NULL, *headers = NULL;
    if (!PyList_Check(facts) || epoch < INT32_MIN || epoch > INT32_MAX) Py_RETURN_NONE;
    Py_ssize_t n = PyList_GET_SIZE(facts);
    /* Check every item first: the offsets must stay within int64, the sizes within int32. */
    long long (*f)[8] = PyMem_Malloc(sizeof(long long[8]) * (size_t)(n ? n : 1));
    if (f == NULL) return PyErr_NoMemory();
    long long offset = next_offset;
    for (Py_ssize_t i = 0; i < n; i++) {
        int read = read_facts(PyList_GET_ITEM(facts, i), f[i]);
        long long last, after;
        if (read < 0) goto fail;
        if (read == 0 || f[i][1] < HEADER || f[i][1] - LOG_OVERHEAD > INT32_MAX_ || f[i][3] < 0 ||
            __builtin_add_overflow(offset, f[i][3], &last) ||
            __builtin_add_overflow(last, 1, &after)) {
            PyErr_Clear();
            PyMem_Free(f);
            Py_RETURN_NONE;
        }
        offset = after;
    }
    out = PyList_New(n);
    headers = PyBytes_FromStringAndSize(NULL, 16 * n);
    if (out == NULL || headers == NULL) goto fail;
    unsigned char *h = (unsigned char *)PyBytes_AS_STRING(headers);
    for (Py_ssize_t i = 0; i < n; i++, h += 16) {
        long long *b = f[i];
        put_be64(h, (uint64_t)next_offset);
        put_be32(h + 8, (uint32_t)(b[1] - LOG_OVERHEAD));
        put_be32(h + 12, (uint32_t)epoch);
        if (b[5] > max_ts) {
            max_ts = b[5];
            max_last = next_offset + b[3];
        }
        const long long fields[8] = {b[0], b[1], next_offset, b[3], epoch, b[5], b[6], b[7]};
        PyObject *item = facts_tuple(fields);
        if (item == NULL) goto fail;
        PyList_SET_ITEM(out, i, item);
        next_offset += b[3] + 1;
        count += b[6];
    }
    PyMem_Free(f);
    return Py_BuildValue("NNLLLL", headers, out, next_offset, max_ts, max_last, count);
fail:
    PyMem_Free(f);
    Py_XDECREF(out);
    Py_XDECREF(headers);
    return NULL;
}

/* --- index_decisions (SEG-3) --------------------------------------------------------------- */

const char index_decisions_doc[] =
    "index_decisions(batches, position, interval, since, max_ts, max_off)\n"
    "-> (offsets, positions, timed, since, max_ts, max_off) | None\n\n"
    "segment.indexing.py_index_decisions over BatchFacts tuples.";

PyObject *index_decisions(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    long long v[5];
    int ok = fast_args(args, nargs, 6, "index_decisions", v, 1);
    if (ok <= 0) return ok < 0 ? NULL : Py_NewRef(Py_None);
    long long position = v[0], interval = v[1], since = v[2], max_ts = v[3], max_off = v[4];
    PyObject *batches = args[0];
    if (!PyList_Check(batches)) Py_RETURN_NONE;
    PyObject *offsets = PyList_New(0), *positions = PyList_New(0), *timed = PyList_New(0);
    if (offsets == NULL || positions == NULL || timed == NULL) goto fail;
    int timed_any = 0;
    long long timed_ts = 0, timed_off = 0;
    Py_ssize_t n = PyList_GET_SIZE(batches);
    for (Py_ssize_t i = 0; i < n; i++) {
        long long f[8], last;
        int read = read_facts(PyList_GET_ITEM(batches, i), f);
        if (read < 0) goto fail;
        if (read == 0 || __builtin_add_overflow(f[2], f[3], &last)) goto decline;
        if (f[5] > max_ts) {
            max_ts = f[5];
            max_off = last;
        }
        if (since > interval) {
            PyObject *o = PyLong_FromLongLong(last), *p = PyLong_FromLongLong(position);
            int failed = o == NULL || p == NULL || PyList_Append(offsets, o) < 0 ||
                         PyList_Append(positions, p) < 0;
            Py_XDECREF(o);
            Py_XDECREF(p);
            if (failed) goto fail;
            if (!timed_any || max_ts != timed_ts || max_off != timed_off) {
                timed_any = 1;
                timed_ts = max_ts;
                timed_off = max_off;
                PyObject *t = Py_BuildValue("(LL)", max_ts, max_off);
                if (t == NULL || PyList_Append(timed, t) < 0) {
                    Py_XDECREF(t);
                    goto fail;
                }
                Py_DECREF(t);
            }
            since = 0;
        }
        if (__builtin_add_overflow(position, f[1], &position) ||
            __builtin_add_overflow(since, f[1], &since))
            goto decline;
    }
    return Py_BuildValue("NNNLLL", offsets, positions, timed, since, max_ts, max_off);
decline:
    PyErr_Clear();
    Py_DECREF(offsets);
    Py_DECREF(positions);
    Py_DECREF(timed);
    Py_RETURN_NONE;
fail:
    Py_XDECREF(offsets);
    Py_XDECREF(positions);
    Py_XDECREF(timed);
    return NULL;
}

/* --- facts_summary ------------------------------------------------------------------------- */

const char facts_summary_doc[] =
    "facts_summary(facts) -> (count, crc_all_ok, bases_all_zero, max_size, max_epoch, min_epoch,\n"
    "    lasts_increasing, bases_non_decreasing, last_offset, total_size, total_records,\n"
    "    max_timestamp, max_timestamp_index) | None\n\n"
    "facts_summary.py_facts_summary over non-empty BatchFacts; None where it needs integers\n"
    "beyond int64 (or for no facts).";

PyObject *facts_summary(PyObject *self, PyObject *arg) {
    if (!PyList_Check(arg) || PyList_GET_SIZE(arg) == 0) Py_RETURN_NONE;
    Py_ssize_t n = PyList_GET_SIZE(arg), top_at = 0;
    long long max_size = 0, max_epoch = 0, min_epoch = 0, last = 0, previous_last = 0;
    long long previous_base = 0, total_size = 0, total_records = 0, top = 0;
    int crc_ok = 1, bases_zero = 1, increasing = 1, non_decreasing = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        long long f[8];
        int read = read_facts(PyList_GET_ITEM(arg, i), f);
        if (read < 0) return NULL;
        if (read == 0 || __builtin_add_overflow(f[2], f[3], &last) ||
            __builtin_add_overflow(total_size, f[1], &total_size) ||
            __builtin_add_overflow(total_records, f[6], &total_records)) {
            PyErr_Clear();
            Py_RETURN_NONE;
        }
        crc_ok &= f[7] != 0;
        bases_zero &= f[2] == 0;
        if (i == 0 || f[1] > max_size) max_size = f[1];
        if (i == 0 || f[4] > max_epoch) max_epoch = f[4];
        if (i == 0 || f[4] < min_epoch) min_epoch = f[4];
        if (i == 0 || f[5] > top) {
            top = f[5];
            top_at = i;
        }
        if (i > 0) {
            increasing &= last > previous_last;
            non_decreasing &= f[2] >= previous_base;
        }
        previous_last = last;
        previous_base = f[2];
    }
    return Py_BuildValue("nOOLLLOOLLLLn", n, crc_ok ? Py_True : Py_False,
                         bases_zero ? Py_True : Py_False, max_size, max_epoch, min_epoch,
                         increasing ? Py_True : Py_False, non_decreasing ? Py_True : Py_False,
                         last, total_size, total_records, top, top_at);
}
