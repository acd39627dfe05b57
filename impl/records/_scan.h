/* Shared by the units of kafkalog.impl.records._scan (impl/records/_scan.c and the _scan_*.c listed there):
 * CRC-32C, the big-endian header fields of a v2 batch (FMT-45) and the append path's scans. */
#ifndef KL_SCAN_H
#define KL_SCAN_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>

uint32_t kl_crc32c(uint32_t crc, const unsigned char *p, size_t len);
void kl_crc_init(void);
int kl_crc_hw(void);
const char *kl_crc_name(void);

/* VPCLMULQDQ folding (impl/records/_scan_crc_fold.c): whole 64-byte blocks of inputs this long. */
#define KL_FOLD_MIN 256
void kl_crc_fold_init(void);
size_t kl_crc_fold(uint32_t *crc, const unsigned char *p, size_t len);

/* --- big-endian header fields (FMT-45) ---------------------------------------------------- */

/* 1 when a METH_FASTCALL entry point got `want` arguments; else 0 with a TypeError set. */
static inline int arity_ok(Py_ssize_t nargs, Py_ssize_t want, const char *name) {
    if (nargs == want) return 1;
    PyErr_Format(PyExc_TypeError, "%s takes %zd arguments", name, want);
    return 0;
}

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

/* A BatchFacts tuple (memory_records.py): seven ints and crc_ok as a bool; a new reference or
 * NULL. Built directly: Py_BuildValue's format parsing cost more than the rest per batch. */
static inline PyObject *facts_tuple(const long long f[8]) {
    PyObject *t = PyTuple_New(8);
    if (t == NULL) return NULL;
    for (int i = 0; i < 7; i++) {
        PyObject *v = PyLong_FromLongLong(f[i]);
        if (v == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, v);
    }
    PyTuple_SET_ITEM(t, 7, Py_NewRef(f[7] ? Py_True : Py_False));
    return t;
}

/* Stop reasons; the values are shared with impl/records/batch_scan.py. */
enum { STOP_END = 0, STOP_MORE = 1, STOP_SLOW = 2 };

#define HEADER 61
#define LOG_OVERHEAD 12
#define INT32_MAX_ 2147483647LL


/* The append path (impl/records/_scan_append.c). */
extern const char scan_headers_doc[], stamp_headers_doc[], index_decisions_doc[];
PyObject *scan_headers(PyObject *self, PyObject *arg);
PyObject *stamp_headers(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *index_decisions(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
extern const char facts_summary_doc[];
PyObject *facts_summary(PyObject *self, PyObject *arg);


/* More append-path twins (impl/records/_scan_rows.c). */
extern const char producer_rows_doc[], pack_offset_entries_doc[];
PyObject *producer_rows(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *pack_offset_entries(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* The leader's stamped batches in one vectored write (impl/records/_scan_write.c). */
extern const char write_stamped_doc[];
PyObject *write_stamped(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
/* _scan_index.c */
extern const char index_first_disorder_doc[];
PyObject *index_first_disorder(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
/* The cleaner's record walk (impl/records/_scan_walk.c). */
extern const char record_walk_doc[];
PyObject *record_walk(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

#endif
