/*
 * _buffers.h: the buffer helpers of the package's C extensions (_kscan, _sweep, _loops), in
 * one place. Each extension is one .c file that includes this header by a relative path
 * (``#include "../_buffers.h"``); hatch_build.source_digest hashes it with each source, so a
 * change here rebuilds them all. Every function is static inline: an extension that does not
 * use one compiles without it (and without an unused-function warning).
 */
#ifndef TRACEVIEW_BUFFERS_H
#define TRACEVIEW_BUFFERS_H

#include <Python.h>

#include <stdint.h>
#include <string.h>

/* The length, in 8-byte items, of a buffer of them. */
#define LEN(v) ((v).len / 8)

/* A 1-d C-contiguous buffer of 8-byte items of format "q"/"l" (int64) or "d" (float64);
 * writable if asked. Returns 0, or -1 with an exception. */
static inline int get_8byte(PyObject *obj, Py_buffer *view, int writable, int floats, const char *what) {
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0) return -1;
    const char *f = view->format;
    if (f != NULL && (f[0] == '<' || f[0] == '=' || f[0] == '@')) f++;
    int ok = view->ndim == 1 && view->itemsize == 8 && f != NULL &&
             (floats ? strcmp(f, "d") == 0 : (strcmp(f, "q") == 0 || strcmp(f, "l") == 0));
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "%s: a one-dimensional %s array is needed", what, floats ? "float64" : "int64");
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* A 1-d C-contiguous int64 buffer; writable if asked. Returns 0, or -1 with an exception. */
static inline int get_i64(PyObject *obj, Py_buffer *view, int writable, const char *what) {
    return get_8byte(obj, view, writable, 0, what);
}

/* A 1-d C-contiguous float64 buffer; writable if asked. Returns 0, or -1 with an exception. */
static inline int get_f64(PyObject *obj, Py_buffer *view, int writable, const char *what) {
    return get_8byte(obj, view, writable, 1, what);
}

/* A writable C-contiguous buffer of at least need bytes, aligned for 8-byte items (any
 * format: the scanner's 2-d output arrays). Returns 0, or -1 with an exception. */
static inline int get_out(PyObject *obj, Py_buffer *view, Py_ssize_t need, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) return -1;
    if (view->len < need) {
        PyErr_Format(PyExc_ValueError, "%s: a buffer of %zd bytes, %zd needed", what, view->len, need);
        PyBuffer_Release(view);
        return -1;
    }
    if ((uintptr_t)view->buf % 8 != 0) {
        PyErr_Format(PyExc_ValueError, "%s: a buffer not aligned to 8 bytes", what);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* Release the first n buffers of v. */
static inline void release(Py_buffer *v, int n) {
    for (int i = 0; i < n; i++) PyBuffer_Release(&v[i]);
}

/* A signed integer array of any width (codes as pandas stores them: int8-64). */
typedef struct {
    const char *p;
    int size;
} ints_t;

static inline int64_t at_int(ints_t a, Py_ssize_t i) {
    switch (a.size) {
    case 1:
        return ((const int8_t *)a.p)[i];
    case 2:
        return ((const int16_t *)a.p)[i];
    case 4:
        return ((const int32_t *)a.p)[i];
    default:
        return ((const int64_t *)a.p)[i];
    }
}

/* A 1-d C-contiguous buffer of signed integers (format b, h, i, l, q) or, with flags, bools. */
static inline int get_ints(PyObject *obj, Py_buffer *view, int bools, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
    const char *f = view->format;
    if (f != NULL && (f[0] == '<' || f[0] == '=' || f[0] == '@')) f++;
    int ok = view->ndim == 1 && f != NULL && f[0] != 0 && f[1] == 0;
    if (ok) {
        char c = f[0];
        /* Signed integers by their size (a C long is 4 bytes on Windows, 8 elsewhere). */
        Py_ssize_t size = view->itemsize;
        ok = bools ? (c == '?' && size == 1)
                   : (c != 0 && strchr("bhilq", c) != NULL && (size == 1 || size == 2 || size == 4 || size == 8));
    }
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "%s: a one-dimensional %s array is needed", what,
                     bools ? "bool" : "signed integer");
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* qsort's comparison of int64 values. */
static inline int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

#endif /* TRACEVIEW_BUFFERS_H */
