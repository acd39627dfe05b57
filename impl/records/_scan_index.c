/* The order scan of an index's entries at load (FMT-14, FMT-22): the compiled twin of
 * OffsetIndex._first_disorder and TimeIndex._first_disorder (impl/index/), which stay the
 * reference and name the culprit. A clean open checks every index, so the Python scan's cost
 * grew with the log; this one runs at memory speed. */

#include "_scan.h"

const char index_first_disorder_doc[] =
"index_first_disorder(buf, entries, time_index) -> int\n\n"
"-1 when the first `entries` big-endian entries of buf are in order, else the number of the\n"
"first entry out of order. Offset index (time_index False): (int32 relative offset, int32\n"
"position), offsets >= 0 strictly increasing, positions >= 0 never decreasing. Time index:\n"
"(int64 timestamp, int32 relative offset), timestamps strictly increasing, offsets >= 0\n"
"never decreasing.";

static Py_ssize_t offset_disorder(const unsigned char *buf, Py_ssize_t n) {
    int32_t prev_rel = -1, prev_pos = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int32_t rel = be32(buf + i * 8), pos = be32(buf + i * 8 + 4);
        if (rel <= prev_rel || pos < prev_pos) return i;
        prev_rel = rel;
        prev_pos = pos;
    }
    return -1;
}

static Py_ssize_t time_disorder(const unsigned char *buf, Py_ssize_t n) {
    int64_t prev_ts = 0;
    int32_t prev_rel = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t ts = be64(buf + i * 12);
        int32_t rel = be32(buf + i * 12 + 8);
        if ((i > 0 && ts <= prev_ts) || rel < prev_rel) return i;
        prev_ts = ts;
        prev_rel = rel;
    }
    return -1;
}

PyObject *index_first_disorder(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!arity_ok(nargs, 3, "index_first_disorder")) return NULL;
    Py_ssize_t entries = PyLong_AsSsize_t(args[1]);
    if (entries == -1 && PyErr_Occurred()) return NULL;
    int time_index = PyObject_IsTrue(args[2]);
    if (time_index < 0) return NULL;
    if (entries < 0) {
        PyErr_SetString(PyExc_ValueError, "negative entry count");
        return NULL;
    }
    if (entries == 0) return PyLong_FromSsize_t(-1);
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    Py_ssize_t size = time_index ? 12 : 8;
    if (entries > view.len / size) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "more entries than the index buffer holds");
        return NULL;
    }
    Py_ssize_t found;
    Py_BEGIN_ALLOW_THREADS
    found = time_index ? time_disorder(view.buf, entries) : offset_disorder(view.buf, entries);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(found);
}
