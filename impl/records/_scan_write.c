/* write_stamped: a leader append's batches written without copying them (the
 * reference is fs/file_system.py py_write_stamped, the caller FileHandle.write_stamped, the seam's only way in).
 * Each batch goes out as two buffers, its stamped first 16 bytes and the rest of the caller's
 * bytes, in pwritev calls of up to IOV_MAX buffers with the GIL released. */
#include "_scan.h"

#include <errno.h>
#include <sys/uio.h>
#include <unistd.h>

#define STAMP 16
#define IOV_CHUNK 512 /* batches a call: two buffers each, IOV_MAX (1,024) in all */

const char write_stamped_doc[] =
    "write_stamped(fd, source, headers, facts, position) -> int | None\n\n"
    "fs.py_write_stamped: pwritev of each batch's 16 bytes of headers, then the rest of it from\n"
    "source; the bytes written. None (nothing written) when a fact does not fit the buffers.\n"
    "Raises OSError.";

/* Writes iov[0:n) (whole) at `position`, resuming after short writes. 0, or an errno. */
static int pwritev_all(int fd, struct iovec *iov, int n, off_t position) {
    while (n > 0) {
        ssize_t done = pwritev(fd, iov, n, position);
        if (done < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        position += done;
        while (n > 0 && (size_t)done >= iov->iov_len) {
            done -= (ssize_t)iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (char *)iov->iov_base + done;
            iov->iov_len -= (size_t)done;
        }
    }
    return 0;
}

/* The (position, size) of each fact into spans; 0 when one does not fit (decline), -1 error. */
static int read_spans(PyObject *facts, Py_ssize_t source_len, Py_ssize_t headers_len,
                      Py_ssize_t (*spans)[2]) {
    Py_ssize_t n = PyList_GET_SIZE(facts);
    if (headers_len != STAMP * n) return 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyList_GET_ITEM(facts, i);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) < 2) return 0;
        Py_ssize_t at = PyLong_AsSsize_t(PyTuple_GET_ITEM(item, 0));
        Py_ssize_t size = at == -1 && PyErr_Occurred() ? -1
                                                       : PyLong_AsSsize_t(PyTuple_GET_ITEM(item, 1));
        if (PyErr_Occurred()) {
            if (!PyErr_ExceptionMatches(PyExc_OverflowError) &&
                !PyErr_ExceptionMatches(PyExc_TypeError))
                return -1;
            PyErr_Clear();
            return 0;
        }
        if (at < 0 || size < STAMP || at > source_len - size) return 0;
        spans[i][0] = at;
        spans[i][1] = size;
    }
    return 1;
}

static PyObject *write_spans(int fd, const char *source, const char *headers,
                             Py_ssize_t (*spans)[2], Py_ssize_t n, long long position) {
    struct iovec iov[2 * IOV_CHUNK];
    long long written = 0;
    int error = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t first = 0; first < n && !error; first += IOV_CHUNK) {
        Py_ssize_t count = n - first < IOV_CHUNK ? n - first : IOV_CHUNK;
        long long bytes = 0;
        for (Py_ssize_t i = 0; i < count; i++) {
            Py_ssize_t at = spans[first + i][0], size = spans[first + i][1];
            iov[2 * i].iov_base = (void *)(headers + STAMP * (first + i));
            iov[2 * i].iov_len = STAMP;
            iov[2 * i + 1].iov_base = (void *)(source + at + STAMP);
            iov[2 * i + 1].iov_len = (size_t)(size - STAMP);
            bytes += size;
        }
        error = pwritev_all(fd, iov, (int)(2 * count), (off_t)(position + written));
        if (!error) written += bytes;
    }
    Py_END_ALLOW_THREADS
    if (error) {
        errno = error;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    return PyLong_FromLongLong(written);
}

PyObject *write_stamped(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!arity_ok(nargs, 5, "write_stamped")) return NULL;
    long fd = PyLong_AsLong(args[0]);
    long long position = PyLong_AsLongLong(args[4]);
    if (PyErr_Occurred()) return NULL;
    if (!PyList_Check(args[3]) || position < 0 || fd < 0 || fd > INT32_MAX_) Py_RETURN_NONE;
    Py_buffer source, headers;
    if (PyObject_GetBuffer(args[1], &source, PyBUF_SIMPLE) < 0) return NULL;
    if (PyObject_GetBuffer(args[2], &headers, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&source);
        return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t n = PyList_GET_SIZE(args[3]);
    Py_ssize_t (*spans)[2] = PyMem_Malloc(sizeof(Py_ssize_t[2]) * (size_t)(n ? n : 1));
    if (spans == NULL) {
        PyErr_NoMemory();
    } else {
        int ok = read_spans(args[3], source.len, headers.len, spans);
        if (ok > 0)
            result = write_spans((int)fd, source.buf, headers.buf, spans, n, position);
        else if (ok == 0)
            result = Py_NewRef(Py_None);
        PyMem_Free(spans);
    }
    PyBuffer_Release(&headers);
    PyBuffer_Release(&source);
    return result;
}
