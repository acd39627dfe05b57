/* The cleaner's record walk (impl/records/record_walk.py holds the pure-Python reference,
 * py_record_walk): the records section of one v2 batch (FMT-49) read without building a Record,
 * held to the reference by tests/impl/test_record_walk.py.
 *
 * The walk vouches only for what RecordBatch.records() would decode without raising: every
 * varint as varint.decode_varint reads it (at most 5 bytes, 10 for a varlong, bits beyond the
 * width dropped), sizes and lengths inside the section, header keys present and UTF-8, each
 * record's fields ending where its size says and the section ending after `count` records.
 * Anything else returns None and the caller decodes the batch record by record, which raises
 * the typed error. Fields are read within the record's own size: a field running past it
 * makes records() fail too (the record's end no longer matches), so both agree on success. */
#include "_scan.h"

#define MIN_RECORD 7 /* size, attributes, timestamp and offset deltas, key, value, headers */

/* The raw groups of a varint of at most max_bytes at *pos, bounded by end: 1 and *pos after it,
 * or 0 where varint._decode raises (truncated, or longer than max_bytes). Groups beyond 64
 * bits drop off, as the reference masks them. */
static inline int read_raw(const unsigned char *b, Py_ssize_t *pos, Py_ssize_t end,
                           int max_bytes, uint64_t *raw) {
    uint64_t r = 0;
    Py_ssize_t p = *pos;
    for (int i = 0; i < max_bytes; i++) {
        if (p + i >= end) return 0;
        unsigned char c = b[p + i];
        r |= (uint64_t)(c & 0x7F) << (7 * i);
        if (c < 0x80) {
            *raw = r;
            *pos = p + i + 1;
            return 1;
        }
    }
    return 0;
}

/* Whether bytes [at, at + n) are exactly the encoding of `raw` (already masked to its width):
 * what encode_varint / varint_bytes would write for the decoded value, so a rebuild may copy
 * them. Non-minimal groups and dropped high bits fail. */
static inline int canonical(const unsigned char *b, Py_ssize_t at, Py_ssize_t n, uint64_t raw) {
    Py_ssize_t i = 0;
    do {
        unsigned char c = (unsigned char)(raw & 0x7F);
        raw >>= 7;
        if (raw) c |= 0x80;
        if (i >= n || b[at + i] != c) return 0;
        i++;
    } while (raw);
    return i == n;
}

static inline int read_varint(const unsigned char *b, Py_ssize_t *pos, Py_ssize_t end,
                              int32_t *value, int *canon) {
    Py_ssize_t at = *pos;
    uint64_t raw;
    if (!read_raw(b, pos, end, 5, &raw)) return 0;
    uint32_t r = (uint32_t)raw;
    *value = (int32_t)((r >> 1) ^ (0u - (r & 1u)));
    if (canon != NULL && !canonical(b, at, *pos - at, r)) *canon = 0;
    return 1;
}

static inline int read_varlong(const unsigned char *b, Py_ssize_t *pos, Py_ssize_t end,
                               int64_t *value) {
    uint64_t r;
    if (!read_raw(b, pos, end, 10, &r)) return 0;
    *value = (int64_t)((r >> 1) ^ (0ull - (r & 1ull)));
    return 1;
}

/* A nullable byte field (key, value, header value) at *pos: *at and *len (< 0: null), or 0
 * when it runs past end. A null other than -1 is read as null but is not canonical. */
static inline int read_field(const unsigned char *b, Py_ssize_t *pos, Py_ssize_t end,
                             Py_ssize_t *at, Py_ssize_t *len, int *canon) {
    int32_t n;
    if (!read_varint(b, pos, end, &n, canon)) return 0;
    if (n < 0) {
        if (n != -1) *canon = 0;
        *len = -1;
        return 1;
    }
    if (n > end - *pos) return 0;
    *at = *pos;
    *len = n;
    *pos += n;
    return 1;
}

/* The headers of one record: 1, 0 where records() raises, -1 on a Python error. */
static int read_headers(const unsigned char *b, Py_ssize_t *pos, Py_ssize_t end, int *canon) {
    int32_t count;
    if (!read_varint(b, pos, end, &count, canon) || count < 0) return 0;
    for (int32_t i = 0; i < count; i++) {
        Py_ssize_t at = 0, len;
        if (!read_field(b, pos, end, &at, &len, canon) || len < 0) return 0;
        PyObject *key = PyUnicode_DecodeUTF8((const char *)b + at, len, NULL);
        if (key == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) return -1;
            PyErr_Clear();
            return 0;
        }
        Py_DECREF(key);
        if (!read_field(b, pos, end, &at, &len, canon)) return 0;
    }
    return 1;
}

typedef struct {
    int64_t ts_delta;
    int32_t offset_delta;
    Py_ssize_t key_at, key_len, value_len, tail, end;
} walked_record;

/* record_batch._read_record at *pos: 1 (and *pos at the next record), 0 where it raises,
 * -1 on a Python error. */
static int walk_one(const unsigned char *b, Py_ssize_t n, Py_ssize_t *pos, walked_record *w,
                    int *canon) {
    int32_t size;
    if (!read_varint(b, pos, n, &size, NULL) || size < 0 || size > n - *pos) return 0;
    Py_ssize_t end = *pos + size, p = *pos + 1; /* attributes: unused */
    if (!read_varlong(b, &p, end, &w->ts_delta)) return 0;
    if (!read_varint(b, &p, end, &w->offset_delta, NULL)) return 0;
    w->tail = p;
    Py_ssize_t value_at;
    if (!read_field(b, &p, end, &w->key_at, &w->key_len, canon)) return 0;
    if (!read_field(b, &p, end, &value_at, &w->value_len, canon)) return 0;
    int headers = read_headers(b, &p, end, canon);
    if (headers <= 0) return headers;
    if (p != end) return 0;
    w->end = end;
    *pos = end;
    return 1;
}

/* Stores record i's values in the result lists; 0 on a Python error. */
static int store(PyObject **lists, unsigned char *nulls, Py_ssize_t i, const walked_record *w,
                 long long offset, const unsigned char *b) {
    PyObject *key = w->key_len < 0 ? Py_NewRef(Py_None)
                                   : PyBytes_FromStringAndSize((const char *)b + w->key_at,
                                                               w->key_len);
    PyObject *items[5] = {PyLong_FromLongLong(offset), PyLong_FromLongLong(w->ts_delta), key,
                          PyLong_FromSsize_t(w->tail), PyLong_FromSsize_t(w->end)};
    int ok = 1;
    for (int j = 0; j < 5; j++) {
        if (items[j] == NULL) ok = 0;
        else PyList_SET_ITEM(lists[j], i, items[j]);
    }
    nulls[i] = w->value_len < 0;
    return ok;
}

const char record_walk_doc[] =
    "record_walk(data, count, base_offset)\n"
    "-> (offsets, timestamp_deltas, keys, null_values, tails, ends, canonical) | None\n\n"
    "record_walk.py_record_walk: the `count` records of an uncompressed v2 records section\n"
    "without Record objects, or None where RecordBatch.records() would raise or an offset\n"
    "leaves int64 (the caller then decodes record by record).";

PyObject *record_walk(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!arity_ok(nargs, 3, "record_walk")) return NULL;
    int overflow = 0;
    long long count = PyLong_AsLongLongAndOverflow(args[1], &overflow);
    if (count == -1 && PyErr_Occurred()) return NULL;
    if (overflow) count = overflow > 0 ? LLONG_MAX : 0;
    if (count < 0) count = 0; /* range(count) is empty */
    long long base = PyLong_AsLongLongAndOverflow(args[2], &overflow);
    if (base == -1 && PyErr_Occurred()) return NULL;
    if (overflow) Py_RETURN_NONE;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *b = (const unsigned char *)view.buf;
    Py_ssize_t n = view.len, pos = 0;
    PyObject *lists[5] = {NULL, NULL, NULL, NULL, NULL}, *nulls = NULL, *result = NULL;
    if (count > n / MIN_RECORD) goto decline; /* no section that short holds them */
    for (int j = 0; j < 5; j++)
        if ((lists[j] = PyList_New((Py_ssize_t)count)) == NULL) goto done;
    if ((nulls = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)count)) == NULL) goto done;
    unsigned char *null_bytes = (unsigned char *)PyBytes_AS_STRING(nulls);
    int canon = 1;
    for (Py_ssize_t i = 0; i < (Py_ssize_t)count; i++) {
        walked_record w = {0};
        long long offset;
        int got = walk_one(b, n, &pos, &w, &canon);
        if (got < 0) goto done;
        if (got == 0 || __builtin_add_overflow(base, (long long)w.offset_delta, &offset))
            goto decline;
        if (!store(lists, null_bytes, i, &w, offset, b)) goto done;
    }
    if (pos != n) goto decline;
    result = Py_BuildValue("OOONOOO", lists[0], lists[1], lists[2], nulls, lists[3], lists[4],
                           canon ? Py_True : Py_False);
    nulls = NULL; /* the tuple took it */
    goto done;
decline:
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&view);
    for (int j = 0; j < 5; j++) Py_XDECREF(lists[j]);
    Py_XDECREF(nulls);
    return result;
}
