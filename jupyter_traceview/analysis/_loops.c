/*
 * _loops: single-pass loops of the analyses (analysis/loops.py finds the module).
 *
 * Each function computes exactly what the numpy code of its caller computes, in one pass
 * over its input instead of several whole-array numpy passes: the distinct operator calls
 * of perfmodel/performance.py (factorize_calls), the kernels' occupancy sums of
 * findings/extraction.py (occupancy), the steps counted by summary.py (count_steps), the host
 * ranges' nesting of _host.py (innermost), the what-if replay's longest-path times (replay,
 * whatif/replay.py), the dominance sums of _enclose.py (enclosed_sums), the call-tree icicle's
 * boxes of charts/call_tree.py (icicle). The
 * callers keep the numpy code as the fallback (no compiler, or TRACEVIEW_NATIVE=0), and
 * tests/analysis/test_loops.py compares both. The interval algebra's loops are model/_sweep.c.
 *
 * Arrays are passed through the buffer protocol, one-dimensional and C-contiguous. Outputs
 * are the caller's writable buffers. The GIL is released while looping. Plain C99.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../_buffers.h" /* get_i64, get_ints, release, ... */



PyDoc_STRVAR(factorize_calls_doc,
             "factorize_calls(name, rows, c1, c2, c3, radix, inv, first) -> k\n\n"
             "perfmodel.work_of_ops' distinct calls: key[i] = ((name[rows[i]] * radix[0] + c1[i] + 1) * radix[1] +\n"
             "c2[i] + 1) * radix[2] + c3[i] + 1 (int64, the caller checked it cannot overflow); inv[i] = the\n"
             "position of key[i] among the k distinct keys in increasing order (pd.factorize(key, sort=True)),\n"
             "first[g] = the last i with inv[i] == g. Codes of any signed integer width; rows int64 in\n"
             "[0, len(name)). Outputs of len(rows) at least.");

static PyObject *loops_factorize_calls(PyObject *self, PyObject *args) {
    PyObject *o[8];
    if (!PyArg_ParseTuple(args, "OOOOOOOO:factorize_calls", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7]))
        return NULL;
    static const char *const what[] = {"name", "rows", "c1", "c2", "c3", "radix", "inv", "first"};
    Py_buffer v[8];
    for (int i = 0; i < 8; i++) {
        int r = (i == 0 || (i >= 2 && i <= 4)) ? get_ints(o[i], &v[i], 0, what[i]) : get_i64(o[i], &v[i], i >= 6, what[i]);
        if (r < 0) {
            release(v, i);
            return NULL;
        }
    }
    Py_ssize_t n_names = v[0].len / v[0].itemsize, n = LEN(v[1]);
    if (v[2].len / v[2].itemsize != n || v[3].len / v[3].itemsize != n || v[4].len / v[4].itemsize != n ||
        LEN(v[5]) != 3 || LEN(v[6]) < n || LEN(v[7]) < n) {
        release(v, 8);
        PyErr_SetString(PyExc_ValueError, "factorize_calls: columns of one length, 3 radices, outputs as long");
        return NULL;
    }
    ints_t name = {v[0].buf, (int)v[0].itemsize}, c1 = {v[2].buf, (int)v[2].itemsize},
           c2 = {v[3].buf, (int)v[3].itemsize}, c3 = {v[4].buf, (int)v[4].itemsize};
    const int64_t *rows = v[1].buf, *radix = v[5].buf;
    int64_t *inv = v[6].buf, *first = v[7].buf;
    Py_ssize_t k = 0;
    int err = 0;
    /* Open addressing: key -> provisional id (first-seen order); grown at half full. */
    size_t cap = 1024;
    int64_t *keys = malloc(cap * sizeof(int64_t));
    int64_t *slot = malloc(2 * cap * sizeof(int64_t)); /* id + 1, 0 empty */
    int64_t *order = NULL, *rank = NULL;
    if (keys == NULL || slot == NULL) {
        err = 2;
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS;
    memset(slot, 0, 2 * cap * sizeof(int64_t));
    size_t mask = 2 * cap - 1;
    int64_t last_key = 0;
    Py_ssize_t last_id = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t r = rows[i];
        if (r < 0 || r >= n_names) {
            err = 1;
            break;
        }
        uint64_t key = (uint64_t)at_int(name, r);
        key = key * (uint64_t)radix[0] + (uint64_t)(at_int(c1, i) + 1);
        key = key * (uint64_t)radix[1] + (uint64_t)(at_int(c2, i) + 1);
        key = key * (uint64_t)radix[2] + (uint64_t)(at_int(c3, i) + 1);
        int64_t kk = (int64_t)key;
        Py_ssize_t id;
        if (last_id >= 0 && kk == last_key) {
            id = last_id;
        } else {
            size_t h = (size_t)((key * 0x9E3779B97F4A7C15ULL) >> 17) & mask;
            for (;;) {
                int64_t x = slot[h];
                if (x == 0) {
                    if ((size_t)k >= cap) { /* grow: keys and a table twice as large */
                        size_t ncap = cap * 2;
                        int64_t *nkeys = realloc(keys, ncap * sizeof(int64_t));
                        int64_t *nslot = nkeys == NULL ? NULL : calloc(2 * ncap, sizeof(int64_t));
                        if (nkeys != NULL) keys = nkeys;
                        if (nslot == NULL) {
                            err = 2;
                            break;
                        }
                        free(slot);
                        slot = nslot;
                        cap = ncap;
                        mask = 2 * cap - 1;
                        for (Py_ssize_t j = 0; j < k; j++) {
                            size_t g = (size_t)(((uint64_t)keys[j] * 0x9E3779B97F4A7C15ULL) >> 17) & mask;
                            while (slot[g] != 0) g = (g + 1) & mask;
                            slot[g] = j + 1;
                        }
                        h = (size_t)((key * 0x9E3779B97F4A7C15ULL) >> 17) & mask;
                        while (slot[h] != 0) h = (h + 1) & mask;
                    }
                    keys[k] = kk;
                    slot[h] = k + 1;
                    id = k++;
                    break;
                }
                if (keys[x - 1] == kk) {
                    id = x - 1;
                    break;
                }
                h = (h + 1) & mask;
            }
            if (err) break;
            last_key = kk;
            last_id = id;
        }
        inv[i] = id;
    }
    if (!err) {
        /* The distinct keys in increasing order: each provisional id's rank. */
        order = malloc((size_t)(k > 0 ? k : 1) * 2 * sizeof(int64_t));
        rank = malloc((size_t)(k > 0 ? k : 1) * sizeof(int64_t));
        if (order == NULL || rank == NULL) err = 2;
    }
    if (!err) {
        for (Py_ssize_t j = 0; j < k; j++) {
            order[2 * j] = keys[j];
            order[2 * j + 1] = j;
        }
        qsort(order, (size_t)k, 2 * sizeof(int64_t), cmp_i64); /* by key (distinct) */
        for (Py_ssize_t j = 0; j < k; j++) rank[order[2 * j + 1]] = j;
        for (Py_ssize_t i = 0; i < n; i++) {
            inv[i] = rank[inv[i]];
            first[inv[i]] = i;
        }
    }
    Py_END_ALLOW_THREADS;
done:
    free(keys);
    free(slot);
    free(order);
    free(rank);
    release(v, 8);
    if (err == 2) return PyErr_NoMemory();
    if (err) {
        PyErr_SetString(PyExc_ValueError, "factorize_calls: a row out of range");
        return NULL;
    }
    return PyLong_FromSsize_t(k);
}

PyDoc_STRVAR(occupancy_doc,
             "occupancy(rows, occ, kind, kernel_kind, gpu_class, compute, name, dur, occ_ns, occ_w, count) -> ok\n\n"
             "findings' kernel occupancy sums: for each argument row j in order with occ[j] > 0 and an event row\n"
             "r = rows[j] >= 0 whose kind code is flagged in kernel_kind (code -1: its last entry) and whose\n"
             "gpu_class code == compute: occ_ns[name[r]] += dur[r], occ_w[name[r]] += dur[r] * occ[j] (doubles,\n"
             "in that order: np.bincount's sums), count[name[r]] += 1. occ float32 or float64; the outputs of one\n"
             "length, zeroed by the caller. False (outputs unspecified) for a name code outside them.");

static PyObject *loops_occupancy(PyObject *self, PyObject *args) {
    PyObject *o[11];
    long long compute;
    if (!PyArg_ParseTuple(args, "OOOOOLOOOOO:occupancy", &o[0], &o[1], &o[2], &o[3], &o[4], &compute, &o[5], &o[6],
                          &o[7], &o[8], &o[9]))
        return NULL;
    /* o: rows, occ, kind, kernel_kind, gpu_class, name, dur, occ_ns, occ_w, count */
    Py_buffer v[10];
    int got = 0;
    for (; got < 10; got++) {
        int r;
        PyObject *obj = o[got];
        if (got == 0 || got == 6)
            r = get_i64(obj, &v[got], 0, got == 0 ? "rows" : "dur");
        else if (got == 9)
            r = get_i64(obj, &v[got], 1, "count");
        else if (got == 3)
            r = get_ints(obj, &v[got], 1, "kernel_kind");
        else if (got == 2 || got == 4 || got == 5)
            r = get_ints(obj, &v[got], 0, got == 2 ? "kind" : got == 4 ? "gpu_class" : "name");
        else { /* occ (1, float32 or float64), occ_ns and occ_w (7, 8: writable float64) */
            r = PyObject_GetBuffer(obj, &v[got], PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (got > 1 ? PyBUF_WRITABLE : 0));
            if (r == 0) {
                const char *f = v[got].format;
                if (f != NULL && (f[0] == '<' || f[0] == '=' || f[0] == '@')) f++;
                int ok = v[got].ndim == 1 && f != NULL &&
                         ((strcmp(f, "d") == 0 && v[got].itemsize == 8) ||
                          (got == 1 && strcmp(f, "f") == 0 && v[got].itemsize == 4));
                if (!ok) {
                    PyBuffer_Release(&v[got]);
                    PyErr_SetString(PyExc_TypeError, "occupancy: float arrays of the documented types are needed");
                    r = -1;
                }
            }
        }
        if (r < 0) {
            release(v, got);
            return NULL;
        }
    }
    Py_ssize_t m = LEN(v[0]), n = v[2].len / v[2].itemsize, n_lut = v[3].len, n_codes = LEN(v[9]);
    if (v[1].len / v[1].itemsize != m || v[4].len / v[4].itemsize != n || v[5].len / v[5].itemsize != n ||
        LEN(v[6]) != n || LEN(v[7]) != n_codes || LEN(v[8]) != n_codes || n_lut < 1) {
        release(v, 10);
        PyErr_SetString(PyExc_ValueError, "occupancy: arrays of inconsistent lengths");
        return NULL;
    }
    const int64_t *rows = v[0].buf, *dur = v[6].buf;
    int occ32 = v[1].itemsize == 4;
    const float *occ_f = v[1].buf;
    const double *occ_d = v[1].buf;
    ints_t kind = {v[2].buf, (int)v[2].itemsize}, cls = {v[4].buf, (int)v[4].itemsize},
           name = {v[5].buf, (int)v[5].itemsize};
    const uint8_t *kernel_kind = v[3].buf;
    double *occ_ns = v[7].buf, *occ_w = v[8].buf;
    int64_t *count = v[9].buf;
    int ok = 1;
    Py_BEGIN_ALLOW_THREADS;
    for (Py_ssize_t j = 0; j < m; j++) {
        double oc = occ32 ? (double)occ_f[j] : occ_d[j];
        int64_t r = rows[j];
        if (!(oc > 0) || r < 0) continue;
        if (r >= n) {
            ok = 0;
            break;
        }
        int64_t kc = at_int(kind, r);
        if (kc < 0) kc = n_lut - 1;
        if (kc >= n_lut) {
            ok = 0;
            break;
        }
        if (!kernel_kind[kc] || at_int(cls, r) != compute) continue;
        int64_t c = at_int(name, r);
        if (c < 0 || c >= n_codes) {
            ok = 0;
            break;
        }
        double d = (double)dur[r];
        /* Stored before it is added: the product rounded on its own, as numpy's d * occ array
         * is (no fused multiply-add where the target has one). */
        volatile double w = d * oc;
        occ_ns[c] += d;
        occ_w[c] += w;
        count[c] += 1;
    }
    Py_END_ALLOW_THREADS;
    release(v, 10);
    return PyBool_FromLong(ok);
}

PyDoc_STRVAR(count_steps_doc,
             "count_steps(steps) -> n\n\n"
             "summary._count_steps: how many distinct values >= 0 (len >= 1); -1 where the values are below -1\n"
             "or too far apart for a table (over 4 * len + 4096: the caller sorts).");

static PyObject *loops_count_steps(PyObject *self, PyObject *args) {
    PyObject *obj;
    if (!PyArg_ParseTuple(args, "O:count_steps", &obj)) return NULL;
    Py_buffer v;
    if (get_ints(obj, &v, 0, "steps") < 0) return NULL;
    Py_ssize_t n = v.len / v.itemsize;
    if (n < 1) {
        PyBuffer_Release(&v);
        PyErr_SetString(PyExc_ValueError, "count_steps: at least one value");
        return NULL;
    }
    ints_t st = {v.buf, (int)v.itemsize};
    Py_ssize_t count = 0;
    int64_t lo = at_int(st, 0), hi = lo;
    uint8_t *seen = NULL;
    Py_BEGIN_ALLOW_THREADS;
    for (Py_ssize_t i = 1; i < n; i++) {
        int64_t x = at_int(st, i);
        lo = x < lo ? x : lo;
        hi = x > hi ? x : hi;
    }
    if (hi < 0) {
        count = 0;
    } else if (lo < -1 || hi > 4 * (int64_t)n + 4096) {
        count = -1;
    } else {
        seen = calloc((size_t)hi + 2, 1);
        if (seen == NULL) {
            count = -2;
        } else {
            for (Py_ssize_t i = 0; i < n; i++) seen[at_int(st, i) + 1] = 1; /* -1 at 0 */
            for (int64_t x = 0; x <= hi; x++) count += seen[x + 1];
        }
    }
    Py_END_ALLOW_THREADS;
    free(seen);
    PyBuffer_Release(&v);
    if (count == -2) return PyErr_NoMemory();
    return PyLong_FromSsize_t(count);
}

PyDoc_STRVAR(innermost_doc,
             "innermost(thread, end, is_point, order, out)\n\n"
             "The innermost enclosing range of each range and point (analysis/_host.py), by one stack sweep per\n"
             "thread: out[i] = the range j != i (is_point[j] == 0) on the same thread with ts[j] <= ts[i] and\n"
             "end[i] <= end[j] that comes last in ``order``, or -1. ``order`` visits the entries by (thread, ts,\n"
             "-end, is_point, tie) (numpy.lexsort: the starts are in the order), so of two equal ranges only the earlier encloses the later,\n"
             "and of the enclosing ranges the last visited is the latest to start, then the shortest, then the\n"
             "last by tie. A range that ends before a later-visited range ends is never again innermost (the\n"
             "later one encloses everything it does and starts no earlier), so it leaves the stack: the stack's\n"
             "ends never increase from bottom to top, and a point's answer is found by bisection. int64 arrays\n"
             "(is_point: bool) of one length n; out written in full.");

static PyObject *loops_innermost(PyObject *self, PyObject *args) {
    PyObject *o[5];
    if (!PyArg_ParseTuple(args, "OOOOO:innermost", &o[0], &o[1], &o[2], &o[3], &o[4])) return NULL;
    static const char *const what[] = {"thread", "end", "is_point", "order", "out"};
    Py_buffer v[5];
    int got = 0;
    for (; got < 5; got++) {
        int rc = got == 2 ? get_ints(o[got], &v[got], 1, what[got]) : get_i64(o[got], &v[got], got == 4, what[got]);
        if (rc < 0) {
            release(v, got);
            return NULL;
        }
    }
    Py_ssize_t n = LEN(v[0]);
    for (int k = 1; k < 5; k++) {
        Py_ssize_t m = k == 2 ? v[k].len : LEN(v[k]);
        if (m != n) {
            release(v, 5);
            PyErr_Format(PyExc_ValueError, "innermost: %s has %zd entries, thread has %zd", what[k], m, n);
            return NULL;
        }
    }
    const int64_t *thread = v[0].buf, *end = v[1].buf, *order = v[3].buf;
    const uint8_t *is_point = v[2].buf;
    int64_t *out = v[4].buf;
    int64_t *stack = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    int bad = 0;
    if (stack == NULL) {
        release(v, 5);
        return PyErr_NoMemory();
    }
    Py_BEGIN_ALLOW_THREADS;
    Py_ssize_t top = 0; /* stack[0 .. top) */
    for (Py_ssize_t k = 0; k < n; k++) {
        int64_t i = order[k];
        if (i < 0 || i >= n) {
            bad = 1;
            break;
        }
        if (k > 0 && thread[i] != thread[order[k - 1]]) top = 0;
        int64_t e = end[i];
        if (is_point[i]) {
            Py_ssize_t lo = 0, hi = top; /* the first stack entry with end < e */
            while (lo < hi) {
                Py_ssize_t mid = lo + (hi - lo) / 2;
                if (end[stack[mid]] >= e)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            out[i] = lo ? stack[lo - 1] : -1;
        } else {
            while (top && end[stack[top - 1]] < e) top--;
            out[i] = top ? stack[top - 1] : -1;
            stack[top++] = i;
        }
    }
    Py_END_ALLOW_THREADS;
    free(stack);
    release(v, 5);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "innermost: order holds a position out of range");
        return NULL;
    }
    Py_RETURN_NONE;
}

PyDoc_STRVAR(enclosed_sums_doc,
             "enclosed_sums(thread, key, is_point, weight, order, out)\n\n"
             "analysis/_enclose.py's dominance sums: visiting the entries in ``order`` (thread by thread), a point\n"
             "entry adds weight[i] at key[i] of its thread's Fenwick tree, and a range entry gets out[i] = the sum of\n"
             "the weights added so far on its thread at keys <= key[i] (key: 0 <= key < n, the dense rank of the\n"
             "entry's end within its thread). int64 arrays (is_point: bool) of one length n; out is written at the\n"
             "range entries. O(n log n) time, n + 1 int64 of memory.");

static PyObject *loops_enclosed_sums(PyObject *self, PyObject *args) {
    PyObject *o[6];
    if (!PyArg_ParseTuple(args, "OOOOOO:enclosed_sums", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5])) return NULL;
    static const char *const what[] = {"thread", "key", "is_point", "weight", "order", "out"};
    Py_buffer v[6];
    int got = 0;
    for (; got < 6; got++) {
        int rc = got == 2 ? get_ints(o[got], &v[got], 1, what[got]) : get_i64(o[got], &v[got], got == 5, what[got]);
        if (rc < 0) {
            release(v, got);
            return NULL;
        }
    }
    Py_ssize_t n = LEN(v[0]);
    for (int k = 1; k < 6; k++) {
        Py_ssize_t m = k == 2 ? v[k].len : LEN(v[k]);
        if (m != n) {
            release(v, 6);
            PyErr_Format(PyExc_ValueError, "enclosed_sums: %s has %zd entries, thread has %zd", what[k], m, n);
            return NULL;
        }
    }
    const int64_t *thread = v[0].buf, *key = v[1].buf, *weight = v[3].buf, *order = v[4].buf;
    const uint8_t *is_point = v[2].buf;
    int64_t *out = v[5].buf;
    int64_t *tree = calloc((size_t)n + 1, sizeof(int64_t)); /* 1-based Fenwick tree of one thread */
    int bad = 0;
    if (tree == NULL) {
        release(v, 6);
        return PyErr_NoMemory();
    }
    Py_BEGIN_ALLOW_THREADS;
    for (Py_ssize_t k0 = 0; k0 < n && !bad;) {
        /* One thread's run of entries [k0, k1) and its keys' range [0, size): its own tree. */
        Py_ssize_t k1 = k0, size = 0;
        for (; k1 < n; k1++) {
            int64_t i = order[k1];
            if (i < 0 || i >= n || key[i] < 0 || key[i] >= n) {
                bad = 1;
                break;
            }
            if (k1 > k0 && thread[i] != thread[order[k0]]) break;
            if (key[i] + 1 > size) size = (Py_ssize_t)key[i] + 1;
        }
        if (bad) break;
        memset(tree, 0, sizeof(int64_t) * (size_t)(size + 1));
        for (Py_ssize_t k = k0; k < k1; k++) {
            int64_t i = order[k];
            Py_ssize_t x = (Py_ssize_t)key[i] + 1;
            if (is_point[i]) {
                for (; x <= size; x += x & -x) tree[x] += weight[i];
            } else {
                int64_t sum = 0;
                for (; x > 0; x -= x & -x) sum += tree[x];
                out[i] = sum;
            }
        }
        k0 = k1;
    }
    Py_END_ALLOW_THREADS;
    free(tree);
    release(v, 6);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "enclosed_sums: order or key holds a value out of range");
        return NULL;
    }
    Py_RETURN_NONE;
}

PyDoc_STRVAR(replay_doc,
             "replay(in_ptr, in_src, in_w, out_ptr, out_dst, base, out) -> done\n\n"
             "whatif/replay.py: the longest-path times of a graph in topological order (Kahn). Node v's\n"
             "incoming edges are in_src/in_w[in_ptr[v]:in_ptr[v+1]], its outgoing ones out_dst[out_ptr[v]:\n"
             "out_ptr[v+1]]; out[v] = max(base[v], max(out[u] + w)). Returns how many nodes were reached\n"
             "(fewer than all: a cycle; those left keep out = INT64_MIN). With origin (optional, int64,\n"
             "written): on entry origin[v] >= 0 marks v as an origin; on return origin[v] is the origin\n"
             "whose time v's derives from along the edges that set it (the first of equals), -1 where\n"
             "it derives from a base time only (v marked: v itself).");

static PyObject *loops_replay(PyObject *self, PyObject *args) {
    PyObject *o[8] = {NULL};
    if (!PyArg_ParseTuple(args, "OOOOOOO|O:replay", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7]))
        return NULL;
    static const char *what[8] = {"in_ptr", "in_src", "in_w", "out_ptr", "out_dst", "base", "out", "origin"};
    Py_buffer v[8];
    int nv = o[7] != NULL && o[7] != Py_None ? 8 : 7;
    for (int i = 0; i < nv; i++) {
        if (get_i64(o[i], &v[i], i >= 6, what[i]) < 0) {
            release(v, i);
            return NULL;
        }
    }
    Py_ssize_t n = LEN(v[5]);
    Py_ssize_t m = LEN(v[1]);
    if (LEN(v[0]) != n + 1 || LEN(v[3]) != n + 1 || LEN(v[6]) != n || LEN(v[2]) != m || LEN(v[4]) != m ||
        (nv == 8 && LEN(v[7]) != n)) {
        release(v, nv);
        PyErr_SetString(PyExc_ValueError, "replay: inconsistent array lengths");
        return NULL;
    }
    const int64_t *in_ptr = v[0].buf, *in_src = v[1].buf, *in_w = v[2].buf;
    const int64_t *out_ptr = v[3].buf, *out_dst = v[4].buf, *base = v[5].buf;
    int64_t *out = v[6].buf;
    int64_t *origin = nv == 8 ? v[7].buf : NULL;
    int bad = 0;
    Py_ssize_t done = 0;
    int64_t *deg = malloc(sizeof(int64_t) * (size_t)(n + 1));
    int64_t *queue = malloc(sizeof(int64_t) * (size_t)(n + 1));
    if (deg == NULL || queue == NULL) {
        free(deg);
        free(queue);
        release(v, nv);
        return PyErr_NoMemory();
    }
    Py_BEGIN_ALLOW_THREADS;
    Py_ssize_t head = 0, tail = 0;
    for (Py_ssize_t i = 0; i < n && !bad; i++) {
        if (in_ptr[i + 1] < in_ptr[i] || in_ptr[i + 1] > m || out_ptr[i + 1] < out_ptr[i] || out_ptr[i + 1] > m) {
            bad = 1;
            break;
        }
        deg[i] = in_ptr[i + 1] - in_ptr[i];
        out[i] = INT64_MIN;
        if (deg[i] == 0) queue[tail++] = i;
    }
    for (Py_ssize_t e = 0; e < m && !bad; e++) {
        if (in_src[e] < 0 || in_src[e] >= n || out_dst[e] < 0 || out_dst[e] >= n) bad = 1;
    }
    while (!bad && head < tail) {
        int64_t x = queue[head++];
        int64_t best = base[x];
        int64_t from = -1;
        for (int64_t e = in_ptr[x]; e < in_ptr[x + 1]; e++) {
            int64_t u = out[in_src[e]];
            if (u == INT64_MIN) continue;
            int64_t c = u + in_w[e];
            if (c > best) {
                best = c;
                from = in_src[e];
            }
        }
        out[x] = best;
        if (origin != NULL && origin[x] < 0) origin[x] = from >= 0 ? origin[from] : -1;
        done++;
        for (int64_t e = out_ptr[x]; e < out_ptr[x + 1]; e++) {
            int64_t y = out_dst[e];
            if (--deg[y] == 0) queue[tail++] = y;
        }
    }
    Py_END_ALLOW_THREADS;
    free(deg);
    free(queue);
    release(v, nv);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "replay: an index out of range");
        return NULL;
    }
    return PyLong_FromSsize_t(done);
}

PyDoc_STRVAR(icicle_doc,
             "icicle(at, parent, group, incl, x0, width) -> None\n\n"
             "charts/call_tree.py's icicle boxes below the roots, in the float operations of its numpy code:\n"
             "the entries at[k] (int64, parents before children, siblings contiguous in node order) form runs\n"
             "of equal group[k] whose parent is parent[k] (an index into incl/x0/width, float64 of one length).\n"
             "Per run, the children's inclusive sum (pandas' compensated sum) over the parent's width gives a\n"
             "scale (<= 1), width = incl * scale, and x0 = the parent's x0 + the compensated running sum of the\n"
             "widths before each. x0 and width are written at the entries.");

/* No fused multiply-add: the numpy code rounds each product and sum on its own. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif
static int icicle_runs(const int64_t *at, const int64_t *parent, const int64_t *group, Py_ssize_t m,
                       const double *incl, double *x0, double *width, Py_ssize_t n) {
    for (Py_ssize_t k0 = 0; k0 < m;) {
        Py_ssize_t k1 = k0;
        for (; k1 < m && group[k1] == group[k0]; k1++) {
            if (at[k1] < 0 || at[k1] >= n || parent[k1] < 0 || parent[k1] >= n || parent[k1] != parent[k0]) return -1;
        }
        const int64_t p = parent[k0];
        /* pandas' groupby sum: Kahan-compensated. */
        double sum = 0.0, comp = 0.0;
        for (Py_ssize_t k = k0; k < k1; k++) {
            double y = incl[at[k]] - comp;
            double t = sum + y;
            comp = t - sum - y;
            if (comp != comp) comp = 0.0;
            sum = t;
        }
        const double wp = width[p], xp = x0[p];
        const double scale = sum > wp ? wp / (sum > 1.0 ? sum : 1.0) : 1.0;
        /* pandas' groupby cumsum: Kahan-compensated; x0 = parent's x0 + (running sum - own width). */
        double acc = 0.0;
        comp = 0.0;
        for (Py_ssize_t k = k0; k < k1; k++) {
            const int64_t i = at[k];
            double w = incl[i] * scale;
            width[i] = w;
            double y = w - comp;
            double t = acc + y;
            comp = t - acc - y;
            acc = t;
            double before = t - w;
            x0[i] = xp + before;
        }
        k0 = k1;
    }
    return 0;
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

static PyObject *loops_icicle(PyObject *self, PyObject *args) {
    PyObject *o[6];
    if (!PyArg_ParseTuple(args, "OOOOOO:icicle", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5])) return NULL;
    static const char *const what[] = {"at", "parent", "group", "incl", "x0", "width"};
    Py_buffer v[6];
    int got = 0;
    for (; got < 6; got++) {
        int rc = got < 3 ? get_i64(o[got], &v[got], 0, what[got]) : get_f64(o[got], &v[got], got >= 4, what[got]);
        if (rc < 0) {
            release(v, got);
            return NULL;
        }
    }
    Py_ssize_t m = LEN(v[0]), n = LEN(v[3]);
    if (LEN(v[1]) != m || LEN(v[2]) != m || LEN(v[4]) != n || LEN(v[5]) != n) {
        release(v, 6);
        PyErr_SetString(PyExc_ValueError, "icicle: at/parent/group, and incl/x0/width, must be of one length");
        return NULL;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS;
    rc = icicle_runs(v[0].buf, v[1].buf, v[2].buf, m, v[3].buf, v[4].buf, v[5].buf, n);
    Py_END_ALLOW_THREADS;
    release(v, 6);
    if (rc < 0) {
        PyErr_SetString(PyExc_ValueError, "icicle: an index out of range, or a run of two parents");
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef loops_methods[] = {
    {"factorize_calls", loops_factorize_calls, METH_VARARGS, factorize_calls_doc},
    {"occupancy", loops_occupancy, METH_VARARGS, occupancy_doc},
    {"count_steps", loops_count_steps, METH_VARARGS, count_steps_doc},
    {"innermost", loops_innermost, METH_VARARGS, innermost_doc},
    {"replay", loops_replay, METH_VARARGS, replay_doc},
    {"enclosed_sums", loops_enclosed_sums, METH_VARARGS, enclosed_sums_doc},
    {"icicle", loops_icicle, METH_VARARGS, icicle_doc},
    {NULL, NULL, 0, NULL},
};

static int loops_exec(PyObject *m) {
    if (PyModule_AddIntConstant(m, "VERSION", 5) < 0) return -1;
#ifdef TRACEVIEW_SOURCE_SHA256
    /* The build hook (hatch_build.py) passes the source's digest: a stale build fails a test. */
    if (PyModule_AddStringConstant(m, "SOURCE_SHA256", TRACEVIEW_SOURCE_SHA256) < 0) return -1;
#endif
    return 0;
}

static PyModuleDef_Slot loops_slots[] = {
    {Py_mod_exec, (void *)loops_exec},
    {0, NULL},
};

static struct PyModuleDef loops_module = {
    PyModuleDef_HEAD_INIT,
    "_loops",
    "Single-pass loops of the analyses (see analysis/loops.py).",
    0,
    loops_methods,
    loops_slots,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__loops(void) { return PyModuleDef_Init(&loops_module); }
