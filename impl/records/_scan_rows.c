/* Two more of the append path's compiled twins, each held to its Python reference
 * by tests/impl/test_append_scan.py: which batches producer state must read
 * (producer.rebuild.py_producer_rows) and an offset index run packed as its file stores it
 * (offset_index.py_pack_entries). Each returns what its reference returns, or None where it
 * cannot decide in int64 (the caller then runs the reference). */
#include "_scan.h"

#define ATTRIBUTES 21 /* FMT-45: attributes (int16), then ... producerId at 43 */
#define PRODUCER_ID 43
#define CONTROL_FLAG 0x20

const char producer_rows_doc[] =
    "producer_rows(buf, facts) -> list of int | None\n\n"
    "producer.rebuild.py_producer_rows: the indexes of the facts whose batch is a control batch\n"
    "or carries a producer id (>= 0): the only ones producer state reads (PST-6).";

PyObject *producer_rows(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!arity_ok(nargs, 2, "producer_rows")) return NULL;
    PyObject *facts = args[1];
    if (!PyList_Check(facts)) Py_RETURN_NONE;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *buf = (const unsigned char *)view.buf;
    PyObject *out = PyList_New(0);
    if (out == NULL) goto fail;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(facts); i++) {
        PyObject *item = PyList_GET_ITEM(facts, i);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) < 1) goto decline;
        Py_ssize_t pos = PyLong_AsSsize_t(PyTuple_GET_ITEM(item, 0));
        if (pos == -1 && PyErr_Occurred()) goto decline;
        if (pos < 0 || pos > view.len - HEADER) goto decline;
        const unsigned char *b = buf + pos;
        if ((b[ATTRIBUTES + 1] & CONTROL_FLAG) == 0 && (b[PRODUCER_ID] & 0x80) != 0) continue;
        PyObject *index = PyLong_FromSsize_t(i);
        int failed = index == NULL || PyList_Append(out, index) < 0;
        Py_XDECREF(index);
        if (failed) goto fail;
    }
    PyBuffer_Release(&view);
    return out;
decline:
    PyErr_Clear();
    PyBuffer_Release(&view);
    Py_DECREF(out);
    Py_RETURN_NONE;
fail:
    PyBuffer_Release(&view);
    Py_XDECREF(out);
    return NULL;
}

const char pack_offset_entries_doc[] =
    "pack_offset_entries(offsets, positions, base_offset) -> bytes | None\n\n"
    "offset_index.py_pack_entries: the 8-byte entries (offset - base_offset, position; big-endian\n"
    "int32s, FMT-10) of a run whose offsets strictly increase from base_offset on, within int32;\n"
    "None otherwise (the index then declines the bulk store).";

/* Element i of a list as int64: 1, 0 when not an int within int64 (no exception), -1 error. */
static int list_int(PyObject *list, Py_ssize_t i, long long *out) {
    PyObject *v = PyList_GET_ITEM(list, i);
    if (!PyLong_Check(v)) return 0;
    int overflow = 0;
    *out = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow != 0) return 0;
    if (*out == -1 && PyErr_Occurred()) return -1;
    return 1;
}

PyObject *pack_offset_entries(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!arity_ok(nargs, 3, "pack_offset_entries")) return NULL;
    PyObject *offsets = args[0], *positions = args[1];
    int overflow = 0;
    long long base = PyLong_AsLongLongAndOverflow(args[2], &overflow);
    if (base == -1 && PyErr_Occurred()) return NULL;
    if (overflow || !PyList_Check(offsets) || !PyList_Check(positions)) Py_RETURN_NONE;
    Py_ssize_t n = PyList_GET_SIZE(offsets);
    if (n == 0 || n != PyList_GET_SIZE(positions)) Py_RETURN_NONE;
    PyObject *out = PyBytes_FromStringAndSize(NULL, 8 * n);
    if (out == NULL) return NULL;
    unsigned char *p = (unsigned char *)PyBytes_AS_STRING(out);
    long long previous = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        long long offset, position, rel;
        int a = list_int(offsets, i, &offset), b = a > 0 ? list_int(positions, i, &position) : a;
        if (a < 0 || b < 0) {
            Py_DECREF(out);
            return NULL;
        }
        if (a == 0 || b == 0 || __builtin_sub_overflow(offset, base, &rel) || rel < 0 ||
            rel > INT32_MAX_ || rel <= previous || position < INT32_MIN || position > INT32_MAX_) {
            Py_DECREF(out);
            Py_RETURN_NONE;
        }
        previous = rel;
        put_be32(p + 8 * i, (uint32_t)rel);
        put_be32(p + 8 * i + 4, (uint32_t)position);
    }
    return out;
}
