/* kafkalog.impl._scan: batch-level one-pass scans of v2 record batches (FMT-45, FMT-46).
 *
 * The optional compiled twin of impl/batch_scan.py (the pure-Python reference, selected with
 * KAFKALOG_PURE_PYTHON=1 or when this module did not build). Both return exactly the same
 * values; tests/impl/test_batch_scan.py holds them to it on valid and hostile buffers.
 *
 * Contract shared with the Python twin: a scan never raises for bad bytes. It stops *before*
 * the first batch it cannot vouch for and says why; the caller then hands that batch to the
 * per-batch Python path, which raises the typed error or makes the cut exactly as before.
 *
 * CRC-32C: the SSE4.2 crc32 instruction on three interleaved streams combined with zero
 * operators (Mark Adler's public-domain method), picked at run time; a byte table otherwise.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define KL_HAVE_SSE42_BUILD 1
#endif

#define POLY 0x82f63b78u
/* Stream lengths of the three-way interleave, largest first: a 16 KiB batch takes one 3 x 4 KiB
 * round, one 3 x 1 KiB and one 3 x 256 B, so it pays three combines, not twenty-one. */
#define LEVELS 6
static const size_t block_sizes[LEVELS] = {8192, 4096, 2048, 1024, 512, 256};

static uint32_t crc_table[256];
static uint32_t crc_zeros[LEVELS][4][256];
static int use_hw = 0;

/* --- CRC-32C ---------------------------------------------------------------------------- */

static uint32_t crc32c_sw(uint32_t crc, const unsigned char *p, size_t len) {
    crc = ~crc;
    while (len--) crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

static uint32_t gf2_times(const uint32_t *mat, uint32_t vec) {
    uint32_t sum = 0;
    while (vec) {
        if (vec & 1) sum ^= *mat;
        vec >>= 1;
        mat++;
    }
    return sum;
}

static void gf2_square(uint32_t *square, const uint32_t *mat) {
    for (int n = 0; n < 32; n++) square[n] = gf2_times(mat, mat[n]);
}

/* The operator that appends `len` zero bytes (a power of two) to a raw CRC register. */
static void zeros_op(uint32_t *even, size_t len) {
    uint32_t odd[32];
    uint32_t row = 1;
    odd[0] = POLY;
    for (int n = 1; n < 32; n++) {
        odd[n] = row;
        row <<= 1;
    }
    gf2_square(even, odd); /* 2 zero bits */
    gf2_square(odd, even); /* 4 zero bits */
    do {
        gf2_square(even, odd);
        len >>= 1;
        if (len == 0) return;
        gf2_square(odd, even);
        len >>= 1;
    } while (len);
    memcpy(even, odd, sizeof(odd));
}

static void zeros_tables(uint32_t zeros[][256], size_t len) {
    uint32_t op[32];
    zeros_op(op, len);
    for (uint32_t n = 0; n < 256; n++) {
        zeros[0][n] = gf2_times(op, n);
        zeros[1][n] = gf2_times(op, n << 8);
        zeros[2][n] = gf2_times(op, n << 16);
        zeros[3][n] = gf2_times(op, n << 24);
    }
}

static inline uint32_t shift_crc(uint32_t zeros[][256], uint32_t crc) {
    return zeros[0][crc & 0xff] ^ zeros[1][(crc >> 8) & 0xff] ^ zeros[2][(crc >> 16) & 0xff] ^
           zeros[3][crc >> 24];
}

#ifdef KL_HAVE_SSE42_BUILD
static inline uint64_t load64(const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc,
                                                             const unsigned char *next,
                                                             size_t len) {
    uint64_t crc0 = crc ^ 0xffffffffu, crc1, crc2;
    const unsigned char *end;
    while (len && ((uintptr_t)next & 7) != 0) {
        crc0 = _mm_crc32_u8((uint32_t)crc0, *next++);
        len--;
    }
    for (int level = 0; level < LEVELS; level++) {
        const size_t block = block_sizes[level];
        while (len >= block * 3) {
            crc1 = crc2 = 0;
            end = next + block;
            do {
                crc0 = _mm_crc32_u64(crc0, load64(next));
                crc1 = _mm_crc32_u64(crc1, load64(next + block));
                crc2 = _mm_crc32_u64(crc2, load64(next + 2 * block));
                next += 8;
            } while (next < end);
            crc0 = shift_crc(crc_zeros[level], (uint32_t)crc0) ^ crc1;
            crc0 = shift_crc(crc_zeros[level], (uint32_t)crc0) ^ crc2;
            next += 2 * block;
            len -= 3 * block;
        }
    }
    while (len >= 8) {
        crc0 = _mm_crc32_u64(crc0, load64(next));
        next += 8;
        len -= 8;
    }
    while (len) {
        crc0 = _mm_crc32_u8((uint32_t)crc0, *next++);
        len--;
    }
    return (uint32_t)crc0 ^ 0xffffffffu;
}
#endif

static uint32_t crc32c(uint32_t crc, const unsigned char *p, size_t len) {
#ifdef KL_HAVE_SSE42_BUILD
    if (use_hw) return crc32c_hw(crc, p, len);
#endif
    return crc32c_sw(crc, p, len);
}

static void crc_init(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
        crc_table[n] = c;
    }
    for (int level = 0; level < LEVELS; level++) zeros_tables(crc_zeros[level], block_sizes[level]);
#ifdef KL_HAVE_SSE42_BUILD
    __builtin_cpu_init();
    use_hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
    if (getenv("KAFKALOG_SCAN_NO_HW") != NULL) use_hw = 0;
#endif
}

/* --- big-endian header fields (FMT-45) ---------------------------------------------------- */

static inline int64_t be64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = (v << 8) | p[i];
    return (int64_t)v;
}

static inline int32_t be32(const unsigned char *p) {
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) |
                     (uint32_t)p[3]);
}

static inline void put_be32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static inline void put_be64(unsigned char *p, uint64_t v) {
    put_be32(p, (uint32_t)(v >> 32));
    put_be32(p + 4, (uint32_t)v);
}

/* Stop reasons; the values are shared with impl/batch_scan.py. */
enum { STOP_END = 0, STOP_MORE = 1, STOP_SLOW = 2 };

#define HEADER 61
#define LOG_OVERHEAD 12
#define INT32_MAX_ 2147483647LL

/* The part of one batch both scans check: whole, magic 2, size >= 61, CRC over [21, size).
 * Returns the size, 0 when the buffer ends inside the batch, -1 when the batch is not valid. */
static inline Py_ssize_t valid_batch(const unsigned char *b, Py_ssize_t left) {
    if (left < HEADER) return 0;
    int64_t size = (int64_t)be32(b + 8) + LOG_OVERHEAD;
    if (size < HEADER || b[16] != 2) return -1;
    if (size > left) return 0;
    uint32_t stored = (uint32_t)be32(b + 17);
    if (crc32c(0, b + 21, (size_t)(size - 21)) != stored) return -1;
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
"impl/batch_scan.py for the meaning of every argument and result.");

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
"see impl/batch_scan.py.");

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

/* --- scan_headers (the append path) ------------------------------------------------------- */

PyDoc_STRVAR(scan_headers_doc,
"scan_headers(buf) -> list of (position, size, base_offset, last_offset_delta, epoch,\n"
"                              max_timestamp, record_count, crc_ok) | None\n\n"
"memory_records.py_scan_headers: one pass over the whole v2 batches of buf, each one's header\n"
"facts and CRC validity; stops silently at a torn tail; None when a batch is not a plain v2\n"
"batch (magic != 2, size < 61), so the caller takes the batch-object path.");

static PyObject *scan_headers(PyObject *self, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *buf = (const unsigned char *)view.buf;
    Py_ssize_t end = view.len, pos = 0;
    PyObject *out = PyList_New(0);
    if (out == NULL) goto fail;
    while (pos + HEADER <= end) {
        const unsigned char *b = buf + pos;
        int64_t size = (int64_t)be32(b + 8) + LOG_OVERHEAD;
        if (size < HEADER || b[16] != 2) goto decline;
        if (pos + size > end) goto done; /* a torn tail (FMT-52) */
        /* The CRC covers [attributes, end) (FMT-46); same test as RecordBatch.is_valid. */
        int crc_ok = crc32c(0, b + 21, (size_t)(size - 21)) == (uint32_t)be32(b + 17);
        PyObject *facts = Py_BuildValue("nLLiiLiO", pos, (long long)size, (long long)be64(b),
                                        (int)be32(b + 23), (int)be32(b + 12),
                                        (long long)be64(b + 35), (int)be32(b + 57),
                                        crc_ok ? Py_True : Py_False);
        if (facts == NULL) goto fail;
        int failed = PyList_Append(out, facts);
        Py_DECREF(facts);
        if (failed < 0) goto fail;
        pos += (Py_ssize_t)size;
    }
    if (pos + 17 < end) {
        /* Fewer than 61 bytes left but more than 17: a torn tail only if its size field says so. */
        int64_t size = (int64_t)be32(buf + pos + 8) + LOG_OVERHEAD;
        if (size < HEADER || buf[pos + 16] != 2) goto decline;
    }
done:
    PyBuffer_Release(&view);
    return out;
decline:
    PyBuffer_Release(&view);
    Py_DECREF(out);
    Py_RETURN_NONE;
fail:
    PyBuffer_Release(&view);
    Py_XDECREF(out);
    return NULL;
}

/* --- offset lookups (SEG-9, FMT-13, FMT-54) ---------------------------------------------- */

PyDoc_STRVAR(index_floor_span_doc,
"index_floor_span(buf, entries, relative_target) -> (position, next_position)\n\n"
"OffsetIndex.floor_span over the mapping itself: the position of the largest entry whose\n"
"relative offset is <= relative_target (0 when none) and the next entry's position (-1 when\n"
"there is none). buf holds `entries` big-endian (int32 relative offset, int32 position)\n"
"entries whose offsets strictly increase (FMT-10); it may be None when entries is 0.");

static PyObject *index_floor_span(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "index_floor_span takes 3 arguments");
        return NULL;
    }
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
"size below the v2 header, a last offset or a target beyond int64). See impl/batch_scan.py.");

#define LAST_OFFSET_END 27 /* a v2 header up to and including lastOffsetDelta (FMT-45) */

static PyObject *find_batch_header(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "find_batch_header takes 5 arguments");
        return NULL;
    }
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
    crc = crc32c(value, (const unsigned char *)view.buf, (size_t)view.len);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc);
}

static PyMethodDef methods[] = {
    {"scan_recovery", scan_recovery, METH_VARARGS, scan_recovery_doc},
    {"scan_valid", scan_valid, METH_VARARGS, scan_valid_doc},
    {"crc32c", py_crc32c, METH_VARARGS, crc32c_doc},
    {"scan_headers", scan_headers, METH_O, scan_headers_doc},
    {"index_floor_span", (PyCFunction)(void (*)(void))index_floor_span, METH_FASTCALL,
     index_floor_span_doc},
    {"find_batch_header", (PyCFunction)(void (*)(void))find_batch_header, METH_FASTCALL,
     find_batch_header_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_scan",
    "Compiled batch scans (see impl/batch_scan.py, the pure-Python reference).", -1, methods,
};

PyMODINIT_FUNC PyInit__scan(void) {
    crc_init();
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddStringConstant(m, "CRC_IMPLEMENTATION", use_hw ? "sse4.2" : "table") < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
