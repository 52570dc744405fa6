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
#include <stdlib.h>
#include <string.h>

#include "../_buffers.h" /* get_i64, get_ints, release, ... */

/* Wrapping int64 arithmetic (numpy's int64 overflow), without signed-overflow UB. */
static inline int64_t wadd(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static inline int64_t wsub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }

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

/* One (start, end) pair, for sorting a thread's intervals by start. */
typedef struct {
    int64_t s, e;
} pair_t;

static int pair_cmp(const void *a, const void *b) {
    int64_t x = ((const pair_t *)a)->s, y = ((const pair_t *)b)->s;
    return (x > y) - (x < y);
}

/* Union of n pairs in place (sorted by start first if they are not); returns the count. */
static Py_ssize_t union_pairs(pair_t *p, Py_ssize_t n) {
    if (n == 0) return 0;
    for (Py_ssize_t i = 1; i < n; i++) {
        if (p[i].s < p[i - 1].s) {
            qsort(p, (size_t)n, sizeof(pair_t), pair_cmp); /* the union does not depend on ties' order */
            break;
        }
    }
    Py_ssize_t k = 0;
    int64_t cur = p[0].s, run = p[0].e;
    for (Py_ssize_t i = 1; i < n; i++) {
        if (p[i].s > run) {
            p[k].s = cur;
            p[k].e = run;
            k++;
            cur = p[i].s;
        }
        if (p[i].e > run) run = p[i].e;
    }
    p[k].s = cur;
    p[k].e = run;
    return k + 1;
}

/* Open addressing on (pid, tid) -> thread number. */
typedef struct {
    int64_t *pid, *tid; /* per thread */
    Py_ssize_t n, cap;  /* threads, capacity of pid/tid */
    int32_t *slot;      /* hash slots: thread number, -1 empty */
    size_t mask;
} threads_t;

static size_t hash2(int64_t p, int64_t t) {
    uint64_t h = (uint64_t)p * 0x9E3779B97F4A7C15ULL ^ ((uint64_t)t + 0x632BE59BD9B4E019ULL) * 0xC2B2AE3D27D4EB4FULL;
    return (size_t)(h ^ (h >> 29));
}

static int threads_grow(threads_t *th) {
    size_t n_slots = (th->mask + 1) * 2;
    int32_t *slot = malloc(n_slots * sizeof(int32_t));
    Py_ssize_t cap = th->cap * 2;
    int64_t *pid = realloc(th->pid, (size_t)cap * sizeof(int64_t));
    if (pid != NULL) th->pid = pid;
    int64_t *tid = pid == NULL ? NULL : realloc(th->tid, (size_t)cap * sizeof(int64_t));
    if (tid != NULL) th->tid = tid;
    if (slot == NULL || pid == NULL || tid == NULL) {
        free(slot);
        return -1;
    }
    th->cap = cap;
    for (size_t i = 0; i < n_slots; i++) slot[i] = -1;
    for (Py_ssize_t t = 0; t < th->n; t++) {
        size_t h = hash2(th->pid[t], th->tid[t]) & (n_slots - 1);
        while (slot[h] >= 0) h = (h + 1) & (n_slots - 1);
        slot[h] = (int32_t)t;
    }
    free(th->slot);
    th->slot = slot;
    th->mask = n_slots - 1;
    return 0;
}

/* The thread number of (p, t), numbered in order of first appearance; -1 if out of memory. */
static Py_ssize_t thread_of(threads_t *th, int64_t p, int64_t t) {
    size_t h = hash2(p, t) & th->mask;
    for (;;) {
        int32_t x = th->slot[h];
        if (x < 0) break;
        if (th->pid[x] == p && th->tid[x] == t) return x;
        h = (h + 1) & th->mask;
    }
    if ((size_t)(th->n + 1) * 2 > th->mask + 1 || th->n + 1 > th->cap) {
        if (th->n >= INT32_MAX - 1 || threads_grow(th) < 0) return -1;
        h = hash2(p, t) & th->mask;
        while (th->slot[h] >= 0) h = (h + 1) & th->mask;
    }
    th->pid[th->n] = p;
    th->tid[th->n] = t;
    th->slot[h] = (int32_t)th->n;
    return th->n++;
}

/* One (thread, state)'s union, built as its rows come (in start order; else redone at the end). */
typedef struct {
    int64_t *s, *e;       /* the merged intervals so far */
    Py_ssize_t n, cap;
    int64_t cur, run;     /* the interval being merged */
    int64_t last;         /* the last start seen */
    int have, unsorted;
} acc_t;

static int acc_push(acc_t *a, int64_t s, int64_t e) {
    if (a->n == a->cap) {
        Py_ssize_t cap = a->cap ? 2 * a->cap : 64;
        int64_t *ns = realloc(a->s, (size_t)cap * sizeof(int64_t));
        if (ns == NULL) return -1;
        a->s = ns;
        int64_t *ne = realloc(a->e, (size_t)cap * sizeof(int64_t));
        if (ne == NULL) return -1;
        a->e = ne;
        a->cap = cap;
    }
    a->s[a->n] = s;
    a->e[a->n] = e;
    a->n++;
    return 0;
}

/* Add [s, e) to a union being built in start order (iv.union's merge: a new interval where the
 * start is beyond every earlier end). */
static inline int acc_add(acc_t *a, int64_t s, int64_t e) {
    if (!a->have) {
        a->have = 1;
        a->cur = s;
        a->run = e;
        a->last = s;
        return 0;
    }
    if (s < a->last) {
        a->unsorted = 1; /* redone from the rows at the end */
        return 0;
    }
    a->last = s;
    if (s > a->run) {
        if (acc_push(a, a->cur, a->run) < 0) return -1;
        a->cur = s;
    }
    if (e > a->run) a->run = e; /* the latest end so far (numpy's running maximum) */
    return 0;
}

PyDoc_STRVAR(thread_unions_doc,
             "thread_unions(state, pid, tid, ts, dur, lo, hi, windowed, out_pid, out_tid, out_s, out_e, offsets)\n"
             "    -> n_threads\n\n"
             "threads.thread_states' unions: state int8 per event row (0 op, 1 data loader, 2 Python, 3 another\n"
             "host annotation, 4 not a host event). The host rows (states 0-3; with windowed, those with\n"
             "ts < hi and ts + dur > lo) make the threads, numbered by first row (out_pid, out_tid); the union\n"
             "of thread t's state-s intervals (clipped to [lo, hi) if windowed) is out_s/out_e[offsets[3t+s]:\n"
             "offsets[3t+s+1]]. Outputs: out_* of len(state), offsets of 3 * len(state) + 1.");

static PyObject *sweep_thread_unions(PyObject *self, PyObject *args) {
    PyObject *o_state, *objs[9];
    long long lo, hi;
    int windowed;
    static const char *const what[] = {"pid", "tid", "ts", "dur", "out_pid", "out_tid", "out_s", "out_e", "offsets"};
    if (!PyArg_ParseTuple(args, "OOOOOLLpOOOOO:thread_unions", &o_state, &objs[0], &objs[1], &objs[2], &objs[3], &lo,
                          &hi, &windowed, &objs[4], &objs[5], &objs[6], &objs[7], &objs[8]))
        return NULL;
    Py_buffer sv;
    if (PyObject_GetBuffer(o_state, &sv, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return NULL;
    if (sv.ndim != 1 || sv.itemsize != 1 || sv.format == NULL || strcmp(sv.format, "b") != 0) {
        PyBuffer_Release(&sv);
        PyErr_SetString(PyExc_TypeError, "state: a one-dimensional int8 array is needed");
        return NULL;
    }
    Py_buffer v[9];
    if (get_all(objs, v, 9, 5, what) < 0) {
        PyBuffer_Release(&sv);
        return NULL;
    }
    Py_ssize_t n = sv.len;
    if (LEN(v[0]) != n || LEN(v[1]) != n || LEN(v[2]) != n || LEN(v[3]) != n || LEN(v[4]) < n || LEN(v[5]) < n ||
        LEN(v[6]) < n || LEN(v[7]) < n || LEN(v[8]) < 3 * n + 1) {
        PyBuffer_Release(&sv);
        release(v, 9);
        PyErr_SetString(PyExc_ValueError, "thread_unions: inputs of one length, outputs as long (offsets 3n + 1)");
        return NULL;
    }
    const int8_t *state = sv.buf;
    const int64_t *pid = v[0].buf, *tid = v[1].buf, *ts = v[2].buf, *dur = v[3].buf;
    int64_t *out_pid = v[4].buf, *out_tid = v[5].buf, *out_s = v[6].buf, *out_e = v[7].buf, *offsets = v[8].buf;
    Py_ssize_t n_threads = -1;
    threads_t th = {malloc(16 * sizeof(int64_t)), malloc(16 * sizeof(int64_t)), 0, 16, malloc(64 * sizeof(int32_t)), 63};
    Py_ssize_t n_acc = 48; /* 3 per thread, grown with the threads */
    acc_t *acc = calloc((size_t)n_acc, sizeof(acc_t));
    pair_t *pairs = NULL;
    int failed = 0;
    if (acc == NULL || th.pid == NULL || th.tid == NULL || th.slot == NULL) goto done;
    for (int i = 0; i < 64; i++) th.slot[i] = -1;
    Py_BEGIN_ALLOW_THREADS;
    int64_t last_p = 0, last_t = 0;
    Py_ssize_t last = -1;
    int any_unsorted = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int st = state[i];
        if (st < 0 || st > 3) continue;
        int64_t s = ts[i], e = wadd(ts[i], dur[i]);
        if (windowed && !(s < hi && e > lo)) continue;
        if (last < 0 || pid[i] != last_p || tid[i] != last_t) {
            last = thread_of(&th, pid[i], tid[i]);
            if (last < 0) {
                failed = 1;
                break;
            }
            last_p = pid[i];
            last_t = tid[i];
            if (3 * th.n > n_acc) {
                Py_ssize_t grown = 2 * n_acc;
                acc_t *na = realloc(acc, (size_t)grown * sizeof(acc_t));
                if (na == NULL) {
                    failed = 1;
                    break;
                }
                memset(na + n_acc, 0, (size_t)(grown - n_acc) * sizeof(acc_t));
                acc = na;
                n_acc = grown;
            }
        }
        if (st == 3) continue; /* makes a thread, is in no union */
        if (windowed) {
            if (s < lo) s = lo;
            if (e > hi) e = hi;
        }
        acc_t *a = &acc[3 * last + st];
        if (acc_add(a, s, e) < 0) {
            failed = 1;
            break;
        }
        any_unsorted |= a->unsorted;
    }
    Py_ssize_t n_keys = 3 * th.n;
    if (!failed && any_unsorted) {
        /* A (thread, state) whose rows were not in start order: its rows gathered, sorted, merged. */
        pairs = malloc((size_t)(n > 0 ? n : 1) * sizeof(pair_t));
        if (pairs == NULL) failed = 1;
        for (Py_ssize_t k = 0; !failed && k < n_keys; k++) {
            acc_t *a = &acc[k];
            if (!a->unsorted) continue;
            Py_ssize_t t = k / 3, m = 0;
            int want = (int)(k % 3);
            for (Py_ssize_t i = 0; i < n; i++) {
                if (state[i] != want || pid[i] != th.pid[t] || tid[i] != th.tid[t]) continue;
                int64_t s = ts[i], e = wadd(ts[i], dur[i]);
                if (windowed) {
                    if (!(s < hi && e > lo)) continue;
                    if (s < lo) s = lo;
                    if (e > hi) e = hi;
                }
                pairs[m].s = s;
                pairs[m].e = e;
                m++;
            }
            m = union_pairs(pairs, m);
            a->n = 0;
            a->have = 0;
            for (Py_ssize_t j = 0; j < m && !failed; j++)
                if (acc_push(a, pairs[j].s, pairs[j].e) < 0) failed = 1;
        }
    }
    if (!failed) {
        Py_ssize_t w = 0;
        for (Py_ssize_t k = 0; k < n_keys; k++) {
            acc_t *a = &acc[k];
            offsets[k] = w;
            for (Py_ssize_t j = 0; j < a->n; j++) {
                out_s[w] = a->s[j];
                out_e[w] = a->e[j];
                w++;
            }
            if (a->have && !a->unsorted) { /* the interval still being merged */
                out_s[w] = a->cur;
                out_e[w] = a->run;
                w++;
            }
        }
        offsets[n_keys] = w;
        for (Py_ssize_t t = 0; t < th.n; t++) {
            out_pid[t] = th.pid[t];
            out_tid[t] = th.tid[t];
        }
        n_threads = th.n;
    }
    Py_END_ALLOW_THREADS;
done:
    if (acc != NULL) {
        for (Py_ssize_t k = 0; k < n_acc; k++) {
            free(acc[k].s);
            free(acc[k].e);
        }
    }
    free(acc);
    free(pairs);
    free(th.pid);
    free(th.tid);
    free(th.slot);
    PyBuffer_Release(&sv);
    release(v, 9);
    if (n_threads < 0) return PyErr_NoMemory();
    return PyLong_FromSsize_t(n_threads);
}

PyDoc_STRVAR(span_per_group_doc,
             "span_per_group(group, ts, dur, start, end)\n\n"
             "trace._span_per_group: start[g] = min(ts[i]), end[g] = max(ts[i] + dur[i]) over the rows i with\n"
             "group[i] == g, into start and end (filled with int64 max and min by the caller: groups without rows\n"
             "keep them). Every group must be in [0, len(start)): ValueError otherwise (nothing changed then).");

static PyObject *sweep_span_per_group(PyObject *self, PyObject *args) {
    PyObject *objs[5];
    static const char *const what[] = {"group", "ts", "dur", "start", "end"};
    Py_buffer v[5];
    if (!PyArg_ParseTuple(args, "OOOOO:span_per_group", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4])) return NULL;
    if (get_all(objs, v, 5, 2, what) < 0) return NULL;
    Py_ssize_t n = LEN(v[0]), m = LEN(v[3]);
    if (LEN(v[1]) != n || LEN(v[2]) != n || LEN(v[4]) != m) {
        release(v, 5);
        PyErr_SetString(PyExc_ValueError, "span_per_group: group, ts and dur of one length, start and end of one");
        return NULL;
    }
    const int64_t *group = v[0].buf, *ts = v[1].buf, *dur = v[2].buf;
    int64_t *start = v[3].buf, *end = v[4].buf;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (group[i] < 0 || group[i] >= m) {
            bad = 1;
            break;
        }
    }
    if (!bad) {
        for (Py_ssize_t i = 0; i < n; i++) {
            int64_t g = group[i], s = ts[i], e = wadd(ts[i], dur[i]);
            if (s < start[g]) start[g] = s;
            if (e > end[g]) end[g] = e;
        }
    }
    Py_END_ALLOW_THREADS;
    release(v, 5);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "span_per_group: a group out of range");
        return NULL;
    }
    Py_RETURN_NONE;
}

/* Position of x among the k sorted distinct values v, or -1. */
static inline Py_ssize_t find_i64(const int64_t *v, Py_ssize_t k, int64_t x) {
    Py_ssize_t lo = 0, hi = k;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (v[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < k && v[lo] == x ? lo : -1;
}

PyDoc_STRVAR(iterations_doc,
             "iterations(name, kind, step, ts, dur, step_name, step_kind, act_kind, steps, start, end, g_start, g_end,\n"
             "           launched) -> k\n\n"
             "trace._iterations_of's reductions in two passes over the events: the rows whose name code is flagged\n"
             "in step_name and kind code in step_kind (code -1: the tables' last entry) give the distinct steps\n"
             "(sorted, steps[:k]) and each one's first start and last end (start, end); the rows whose kind is\n"
             "flagged in act_kind with a step among those give each step's first start and last end of its GPU\n"
             "activities (g_start, g_end: int64 max and min without any) and how many (launched). Outputs of\n"
             "len(step) at least. ValueError for a code past its table.");

static PyObject *sweep_iterations(PyObject *self, PyObject *args) {
    PyObject *o[14];
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOOOO:iterations", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7],
                          &o[8], &o[9], &o[10], &o[11], &o[12], &o[13]))
        return NULL;
    Py_buffer v[14];
    int got = 0, err = 0;
    static const char *const what[] = {"name", "kind", "step", "ts", "dur", "step_name", "step_kind", "act_kind",
                                       "steps", "start", "end", "g_start", "g_end", "launched"};
    for (; got < 14; got++) {
        int r;
        if (got < 3)
            r = get_ints(o[got], &v[got], 0, what[got]);
        else if (got < 5)
            r = get_i64(o[got], &v[got], 0, what[got]);
        else if (got < 8)
            r = get_ints(o[got], &v[got], 1, what[got]);
        else
            r = get_i64(o[got], &v[got], 1, what[got]);
        if (r < 0) {
            release(v, got);
            return NULL;
        }
    }
    Py_ssize_t n = v[0].len / v[0].itemsize;
    if (v[1].len / v[1].itemsize != n || v[2].len / v[2].itemsize != n || LEN(v[3]) != n || LEN(v[4]) != n ||
        v[5].len < 1 || v[6].len < 1 || v[7].len != v[6].len) {
        release(v, 14);
        PyErr_SetString(PyExc_ValueError, "iterations: columns of one length, tables of >= 1 entry (two of kinds)");
        return NULL;
    }
    for (int i = 8; i < 14; i++) {
        if (LEN(v[i]) < n) {
            release(v, 14);
            PyErr_SetString(PyExc_ValueError, "iterations: outputs as long as the columns");
            return NULL;
        }
    }
    ints_t name = {v[0].buf, (int)v[0].itemsize}, kind = {v[1].buf, (int)v[1].itemsize},
           step = {v[2].buf, (int)v[2].itemsize};
    const int64_t *ts = v[3].buf, *dur = v[4].buf;
    const uint8_t *step_name = v[5].buf, *step_kind = v[6].buf, *act_kind = v[7].buf;
    Py_ssize_t n_names = v[5].len, n_kinds = v[6].len;
    int64_t *steps = v[8].buf, *start = v[9].buf, *end = v[10].buf, *g_start = v[11].buf, *g_end = v[12].buf,
            *launched = v[13].buf;
    Py_ssize_t k = 0;
    Py_BEGIN_ALLOW_THREADS;
    /* Pass 1: the step rows' steps (into steps, then sorted and made distinct). */
    Py_ssize_t m = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t nc = at_int(name, i), kc = at_int(kind, i);
        if (nc < 0) nc = n_names - 1;
        if (kc < 0) kc = n_kinds - 1;
        if (nc >= n_names || kc >= n_kinds) {
            err = 1;
            break;
        }
        steps[m] = at_int(step, i); /* kept if a step row (no branch: rows of all kinds interleave) */
        m += step_name[nc] & step_kind[kc];
    }
    if (!err && m > 0) {
        qsort(steps, (size_t)m, sizeof(int64_t), cmp_i64);
        for (Py_ssize_t j = 0; j < m; j++)
            if (k == 0 || steps[j] != steps[k - 1]) steps[k++] = steps[j];
        for (Py_ssize_t j = 0; j < k; j++) {
            start[j] = INT64_MAX;
            end[j] = INT64_MIN;
            g_start[j] = INT64_MAX;
            g_end[j] = INT64_MIN;
            launched[j] = 0;
        }
        /* Pass 2: the spans of the step rows and of the activities of each step (rows of one
         * step come in runs: the last step's position is tried first). */
        int64_t last_st = 0;
        Py_ssize_t last_g = -2;
        for (Py_ssize_t i = 0; i < n; i++) {
            int64_t nc = at_int(name, i), kc = at_int(kind, i);
            if (nc < 0) nc = n_names - 1;
            if (kc < 0) kc = n_kinds - 1;
            int is_step = step_name[nc] & step_kind[kc];
            if (!(is_step | act_kind[kc])) continue;
            int64_t st = at_int(step, i);
            int is_act = act_kind[kc] && st >= 0;
            if (!is_step && !is_act) continue;
            Py_ssize_t g = last_g != -2 && st == last_st ? last_g : find_i64(steps, k, st);
            last_st = st;
            last_g = g;
            if (g < 0) continue;
            int64_t s = ts[i], e = wadd(ts[i], dur[i]);
            if (is_step) {
                if (s < start[g]) start[g] = s;
                if (e > end[g]) end[g] = e;
            }
            if (is_act) {
                if (s < g_start[g]) g_start[g] = s;
                if (e > g_end[g]) g_end[g] = e;
                launched[g]++;
            }
        }
    }
    Py_END_ALLOW_THREADS;
    release(v, 14);
    if (err) {
        PyErr_SetString(PyExc_ValueError, "iterations: a code past its table");
        return NULL;
    }
    return PyLong_FromSsize_t(k);
}

/* Whether (s, e) is a union in the strict sense: every interval of positive length, in order,
 * none touching the next. */
static int strict_union(const int64_t *s, const int64_t *e, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!(e[i] > s[i])) return 0;
        if (i > 0 && !(s[i] > e[i - 1])) return 0;
    }
    return 1;
}

PyDoc_STRVAR(subtract_doc,
             "subtract(as, ae, bs, be, out_s, out_e) -> k\n\n"
             "intervals.subtract of two unions whose intervals all have a positive length and do not touch:\n"
             "the parts of a not covered by b in out_s[:k], out_e[:k] (outputs of len(as) + len(bs) at least);\n"
             "-1 (nothing written) for other inputs (the numpy code answers those).");

static PyObject *sweep_subtract(PyObject *self, PyObject *args) {
    PyObject *objs[6];
    static const char *const what[] = {"as", "ae", "bs", "be", "out_s", "out_e"};
    Py_buffer v[6];
    if (!PyArg_ParseTuple(args, "OOOOOO:subtract", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5]))
        return NULL;
    if (get_all(objs, v, 6, 2, what) < 0) return NULL;
    Py_ssize_t na = LEN(v[0]), nb = LEN(v[2]);
    if (LEN(v[1]) != na || LEN(v[3]) != nb || LEN(v[4]) < na + nb || LEN(v[5]) < na + nb) {
        release(v, 6);
        PyErr_SetString(PyExc_ValueError, "subtract: starts and ends of one length, outputs of len(a) + len(b)");
        return NULL;
    }
    const int64_t *as = v[0].buf, *ae = v[1].buf, *bs = v[2].buf, *be = v[3].buf;
    int64_t *os = v[4].buf, *oe = v[5].buf;
    Py_ssize_t k = 0;
    Py_BEGIN_ALLOW_THREADS;
    if (!strict_union(as, ae, na) || !strict_union(bs, be, nb)) {
        k = -1;
    } else {
        Py_ssize_t j = 0;
        for (Py_ssize_t i = 0; i < na; i++) {
            int64_t cur = as[i], end = ae[i];
            while (j < nb && be[j] <= cur) j++; /* b's intervals over before this one starts */
            for (Py_ssize_t m = j; m < nb && bs[m] < end; m++) {
                if (bs[m] > cur) {
                    os[k] = cur;
                    oe[k] = bs[m];
                    k++;
                }
                if (be[m] > cur) cur = be[m];
                if (cur >= end) break;
            }
            if (cur < end) {
                os[k] = cur;
                oe[k] = end;
                k++;
            }
        }
    }
    Py_END_ALLOW_THREADS;
    release(v, 6);
    return PyLong_FromSsize_t(k);
}

static PyMethodDef sweep_methods[] = {
    {"union_sorted", sweep_union, METH_VARARGS, union_doc},
    {"at_least_two_sorted", sweep_at_least_two, METH_VARARGS, at_least_two_doc},
    {"coverage", sweep_coverage, METH_VARARGS, coverage_doc},
    {"thread_unions", sweep_thread_unions, METH_VARARGS, thread_unions_doc},
    {"span_per_group", sweep_span_per_group, METH_VARARGS, span_per_group_doc},
    {"iterations", sweep_iterations, METH_VARARGS, iterations_doc},
    {"subtract", sweep_subtract, METH_VARARGS, subtract_doc},
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
