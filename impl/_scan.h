/* Shared by the units of kafkalog.impl._scan (impl/_scan.c, _scan_crc.c, _scan_append.c):
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


/* The append path (impl/_scan_append.c). */
extern const char scan_headers_doc[], stamp_offsets_doc[], index_decisions_doc[];
PyObject *scan_headers(PyObject *self, PyObject *arg);
PyObject *stamp_offsets(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *index_decisions(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

#endif
