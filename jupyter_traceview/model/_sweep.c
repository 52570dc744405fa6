/*
 * _sweep: single-pass loops for the interval algebra of model/intervals.py (issue 17).
 *
 * Each function computes exactly what the numpy code of model/intervals.py computes (the
 * same int64 results, wrapping on overflow as numpy's int64 arithmetic does), in one pass
 * over its input instead of several whole-array numpy passes with their temporaries. The
 * callers in intervals.py keep the numpy code as the fallback (no compiler, or
 * TRACEVIEW_NATIVE=0), and tests/model/test_sweep.py compares both on edge cases and real
 * traces.
 *
 * Arrays are passed through the buffer protocol: int64 (format 'q' or 'l' of 8 bytes),
 * one-dimensional, C-contiguous. Outputs are the caller's writable buffers. The GIL is
 * released while looping. Plain C99.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

/* Wrapping int64 arithmetic (numpy's int64 overflow), without signed-overflow UB. */
static inline int64_t wadd(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static inline int64_t wsub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }

/* A 1-d C-contiguous int64 buffer; writable if asked. Returns 0, or -1 with an exception. */
static int get_i64(PyObject *obj, Py_buffer *view, int writable, const char *what) {
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0) return -1;
    const char *f = view->format;
    if (f != NULL && (f[0] == '<' || f[0] == '=' || f[0] == '@')) f++;
    if (view->ndim != 1 || view->itemsize != 8 || f == NULL || (strcmp(f, "q") != 0 && strcmp(f, "l") != 0)) {
        PyErr_Format(PyExc_TypeError, "%s: a one-dimensional int64 array is needed", what);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static void release(Py_buffer *v, int n) {
    for (int i = 0; i < n; i++) PyBuffer_Release(&v[i]);
}

/* Parse objs[0..n) into v[0..n); the last n_out are written. */
static int get_all(PyObject **objs, Py_buffer *v, int n, int n_out, const char *const *what) {
    for (int i = 0; i < n; i++) {
        if (get_i64(objs[i], &v[i], i >= n - n_out, what[i]) < 0) {
            release(v, i);
            return -1;
        }
    }
    return 0;
}

#define LEN(v) ((v).len / 8)

PyDoc_STRVAR(union_doc,
             "union_sorted(s, e, out_s, out_e) -> k\n\n"
             "intervals.union of intervals in start order: the merged intervals in out_s[:k], out_e[:k]\n"
             "(out_* at least as long as s); -1 (outputs unspecified) if s is not in start order.");

static PyObject *sweep_union(PyObject *self, PyObject *args) {
    PyObject *objs[4];
    static const char *const what[] = {"s", "e", "out_s", "out_e"};
    Py_buffer v[4];
    if (!PyArg_ParseTuple(args, "OOOO:union_sorted", &objs[0], &objs[1], &objs[2], &objs[3])) return NULL;
    if (get_all(objs, v, 4, 2, what) < 0) return NULL;
    Py_ssize_t n = LEN(v[0]);
    if (LEN(v[1]) != n || LEN(v[2]) < n || LEN(v[3]) < n) {
        release(v, 4);
        PyErr_SetString(PyExc_ValueError, "union_sorted: s and e of one length, outputs at least as long");
        return NULL;
    }
    const int64_t *s = v[0].buf, *e = v[1].buf;
    int64_t *os = v[2].buf, *oe = v[3].buf;
    Py_ssize_t k = 0;
    Py_BEGIN_ALLOW_THREADS;
    if (n > 0) {
        int64_t cur = s[0], run = e[0];
        for (Py_ssize_t i = 1; i < n; i++) {
            int64_t si = s[i];
            if (si < s[i - 1]) {
                k = -1;
                break;
            }
            if (si > run) { /* beyond every earlier end: a new group */
                os[k] = cur;
                oe[k] = run;
                k++;
                cur = si;
            }
            if (e[i] > run) run = e[i];
        }
        if (k >= 0) {
            os[k] = cur;
            oe[k] = run;
            k++;
        }
    }
    Py_END_ALLOW_THREADS;
    release(v, 4);
    return PyLong_FromSsize_t(k);
}

PyDoc_STRVAR(at_least_two_doc,
             "at_least_two_sorted(s, e, out_s, out_e) -> k\n\n"
             "intervals.at_least_two of intervals in start order (len >= 2): the union in out_s[:k], out_e[:k];\n"
             "-1 if s is not in start order.");

static PyObject *sweep_at_least_two(PyObject *self, PyObject *args) {
    PyObject *objs[4];
    static const char *const what[] = {"s", "e", "out_s", "out_e"};
    Py_buffer v[4];
    if (!PyArg_ParseTuple(args, "OOOO:at_least_two_sorted", &objs[0], &objs[1], &objs[2], &objs[3])) return NULL;
    if (get_all(objs, v, 4, 2, what) < 0) return NULL;
    Py_ssize_t n = LEN(v[0]);
    if (LEN(v[1]) != n || n < 2 || LEN(v[2]) < n || LEN(v[3]) < n) {
        release(v, 4);
        PyErr_SetString(PyExc_ValueError, "at_least_two_sorted: s and e of one length >= 2, outputs as long");
        return NULL;
    }
    const int64_t *s = v[0].buf, *e = v[1].buf;
    int64_t *os = v[2].buf, *oe = v[3].buf;
    Py_ssize_t k = 0;
    Py_BEGIN_ALLOW_THREADS;
    int64_t before = e[0]; /* the latest end among the earlier intervals */
    int have = 0;
    int64_t cur = 0, run = 0;
    for (Py_ssize_t i = 1; i < n; i++) {
        int64_t si = s[i], ei = e[i];
        if (si < s[i - 1]) {
            k = -1;
            break;
        }
        int64_t pe = ei < before ? ei : before;
        if (ei > before) before = ei;
        if (!(pe > si)) continue; /* the piece run alongside an earlier one is empty */
        if (!have) {
            cur = si;
            run = pe;
            have = 1;
        } else {
            if (si > run) {
                os[k] = cur;
                oe[k] = run;
                k++;
                cur = si;
            }
            if (pe > run) run = pe;
        }
    }
    if (k >= 0 && have) {
        os[k] = cur;
        oe[k] = run;
        k++;
    }
    Py_END_ALLOW_THREADS;
    release(v, 4);
    return PyLong_FromSsize_t(k);
}

/* How many of the n sorted values s are <= t, searching from the hint (the previous answer):
 * galloping, so queries in order cost O(1) each and any order O(log n). */
static inline Py_ssize_t upper_bound(const int64_t *s, Py_ssize_t n, int64_t t, Py_ssize_t hint) {
    Py_ssize_t lo, hi; /* answer in [lo, hi] */
    if (hint > 0 && s[hint - 1] > t) {
        /* answer < hint: gallop down */
        Py_ssize_t step = 1;
        hi = hint - 1;
        lo = hi - step;
        while (lo > 0 && s[lo - 1] > t) {
            hi = lo - 1;
            step <<= 1;
            lo = hi - step;
        }
        if (lo < 0) lo = 0;
    } else {
        /* answer >= hint: gallop up */
        Py_ssize_t step = 1;
        lo = hint;
        hi = lo + step;
        while (hi < n && s[hi - 1] <= t) {
            lo = hi;
            step <<= 1;
            hi = lo + step;
        }
        if (hi > n) hi = n;
    }
    /* invariant: s[lo - 1] <= t (or lo == 0), s[hi] > t (or hi == n) */
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (s[mid] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

PyDoc_STRVAR(coverage_doc,
             "coverage(us, ue, qs, qe, before, out) -> ok\n\n"
             "intervals.coverage_of: out[i] = time of [qs[i], qe[i]) covered by the union (us, ue) (len >= 1;\n"
             "queries in any order, len >= 1). before: scratch of len(us) int64. False (out unspecified) if us\n"
             "is not sorted (numpy's binary search then answers what it answers: the caller runs it).");

static PyObject *sweep_coverage(PyObject *self, PyObject *args) {
    PyObject *objs[6];
    static const char *const what[] = {"us", "ue", "qs", "qe", "before", "out"};
    Py_buffer v[6];
    if (!PyArg_ParseTuple(args, "OOOOOO:coverage", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5]))
        return NULL;
    if (get_all(objs, v, 6, 2, what) < 0) return NULL;
    Py_ssize_t m = LEN(v[0]), n = LEN(v[2]);
    if (LEN(v[1]) != m || m < 1 || LEN(v[3]) != n || n < 1 || LEN(v[4]) < m || LEN(v[5]) < n) {
        release(v, 6);
        PyErr_SetString(PyExc_ValueError, "coverage: a union of >= 1 intervals, >= 1 queries, buffers as long");
        return NULL;
    }
    const int64_t *us = v[0].buf, *ue = v[1].buf, *qs = v[2].buf, *qe = v[3].buf;
    int64_t *before = v[4].buf, *out = v[5].buf;
    int sorted = 1;
    Py_BEGIN_ALLOW_THREADS;
    /* The sentinel's start (numpy's code puts a zero-length interval at lo first). */
    int64_t lo = us[0];
    for (Py_ssize_t i = 0; i < n; i++) {
        if (qs[i] < lo) lo = qs[i];
        if (qe[i] < lo) lo = qe[i];
    }
    int64_t acc = 0;
    for (Py_ssize_t j = 0; j < m; j++) {
        before[j] = acc;
        acc = wadd(acc, wsub(ue[j], us[j]));
        if (j > 0 && us[j] < us[j - 1]) sorted = 0;
    }
    Py_ssize_t hs = 0, he = 0;
    for (Py_ssize_t i = 0; sorted && i < n; i++) {
        int64_t t, x, len, up[2];
        for (int side = 0; side < 2; side++) {
            t = side ? qs[i] : qe[i];
            Py_ssize_t *h = side ? &hs : &he;
            Py_ssize_t j = upper_bound(us, m, t, *h);
            *h = j;
            if (j == 0) { /* the sentinel [lo, lo): min(t - lo, 0) + 0 */
                x = wsub(t, lo);
                up[side] = x < 0 ? x : 0;
            } else {
                len = wsub(ue[j - 1], us[j - 1]);
                x = wsub(t, us[j - 1]);
                up[side] = wadd(x < len ? x : len, before[j - 1]);
            }
        }
        out[i] = wsub(up[0], up[1]);
    }
    Py_END_ALLOW_THREADS;
    release(v, 6);
    return PyBool_FromLong(sorted);
}

static PyMethodDef sweep_methods[] = {
    {"union_sorted", sweep_union, METH_VARARGS, union_doc},
    {"at_least_two_sorted", sweep_at_least_two, METH_VARARGS, at_least_two_doc},
    {"coverage", sweep_coverage, METH_VARARGS, coverage_doc},
    {NULL, NULL, 0, NULL},
};

static int sweep_exec(PyObject *m) {
    if (PyModule_AddIntConstant(m, "VERSION", 1) < 0) return -1;
#ifdef TRACEVIEW_SOURCE_SHA256
    /* The build hook (hatch_build.py) passes the source's digest: a stale build fails a test. */
    if (PyModule_AddStringConstant(m, "SOURCE_SHA256", TRACEVIEW_SOURCE_SHA256) < 0) return -1;
#endif
    return 0;
}

static PyModuleDef_Slot sweep_slots[] = {
    {Py_mod_exec, (void *)sweep_exec},
    {0, NULL},
};

static struct PyModuleDef sweep_module = {
    PyModuleDef_HEAD_INIT,
    "_sweep",
    "Single-pass loops for the interval algebra (see model/intervals.py).",
    0,
    sweep_methods,
    sweep_slots,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__sweep(void) { return PyModuleDef_Init(&sweep_module); }
