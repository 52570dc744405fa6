/*
 * _kscan: a column-writing scanner for the events of a Kineto JSON trace (issue 17).
 *
 * scan() reads one piece of a file's ``traceEvents`` array (``[`` + whole events + ``]``, as
 * ``pieces.plan`` cuts it) once, and writes per event: the phase, pid, tid, ts, dur, the
 * ``args`` the reader keeps (ids, device, stream, launch and copy arguments, collective and
 * memory-record fields) as numbers, and the byte ranges of category, name and the raw JSON
 * texts of the recorded operator arguments. ``loading/readers/kineto/native.py`` builds the
 * reader's per-piece columns from them.
 *
 * It handles a subset and validates what it reads as strictly as msgspec does (RFC 8259):
 * anything outside the subset, or anything it cannot prove valid, makes it give up (it says
 * where, and how many events before that it read whole), and the caller reads from that
 * event on with the msgspec path, which then gives the tables or the error it always gave. So giving up is always safe; accepting is
 * only done where the outcome equals msgspec's. Given up on: non-ASCII bytes, escapes in
 * keys and in the strings it reads (cat, name, collective name, dtype), lone-surrogate
 * escapes anywhere, duplicate known keys (msgspec keeps the last one), values of another
 * JSON type than the reader's types accept without conversion (msgspec's non-strict mode
 * would convert "12" to 12), integers over 18 digits, streams that are strings with escapes, ``args.rank``,
 * string ``Device Type``, grid/block lists that are not three ints, nesting over 64 levels.
 *
 * Numbers are exact: integers up to 18 digits exactly; a float is m * 10**e or m / 10**e with
 * m < 2**53 and |e| <= 22 (both exact doubles: one correctly rounded operation, Clinger's fast
 * path); any other float is left to the caller (``slow``: row, column, byte range) to convert
 * with Python's float(), correctly rounded like msgspec.
 *
 * Every byte read is bounds-checked (AT() reads 0 past the end, and 0 is valid nowhere in
 * JSON), so any input, however hostile, ends in a result or -1. The GIL is released while
 * scanning. Plain C99; no compiler builtins.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <float.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "../../_buffers.h" /* get_out, release */

#ifdef __FAST_MATH__
#error "_kscan.c needs IEEE arithmetic (one correctly rounded operation per float): no -ffast-math"
#endif
/* The float fast path needs each double operation rounded once (no x87 extended precision). */
#if defined(FLT_EVAL_METHOD)
#define KSCAN_FAST_FLOATS (FLT_EVAL_METHOD == 0)
#elif defined(_M_X64) || defined(_M_ARM64)
#define KSCAN_FAST_FLOATS 1
#else
#define KSCAN_FAST_FLOATS 0
#endif

/* Columns of ints[] (int64, -1 where absent except BYTES: 0). */
enum {
    I_EXTERNAL_ID, I_CORRELATION, I_DEVICE, I_STREAM, I_REGISTERS, I_SHARED_MEMORY, I_BYTES,
    I_IN_NELEMS, I_OUT_NELEMS, I_GROUP_SIZE, I_SEQ, I_WAIT_STREAM, I_WAIT_CORR,
    I_GRID, /* 3 */ I_BLOCK = I_GRID + 3, /* 3 */
    I_MEM_RESERVED = I_BLOCK + 3, I_MEM_ALLOCATED, I_MEM_BYTES, I_MEM_ADDR, I_MEM_DEVICE_ID,
    I_MEM_DEVICE_TYPE, N_INTS
};
/* Columns of floats[] (NaN where absent). */
enum { F_TS, F_DUR, F_BLOCKS_PER_SM, F_WARPS_PER_SM, F_OCCUPANCY, F_BANDWIDTH, N_FLOATS };
/* Byte ranges of spans[] (pairs [lo, hi); 0, 0 where absent). */
enum {
    S_CAT, S_NAME, S_COLLECTIVE, S_DTYPE, S_PG_NAME, S_PG_DESC, S_INPUT_DIMS, S_INPUT_TYPE,
    S_INPUT_STRIDES, S_CONCRETE_INPUTS,
    S_PID, S_TID, /* a string pid or tid (Kineto's "Spans" pseudo-events, ...); pidtid is then 0 */
    S_STREAM,     /* a string args.stream (ROCm's runtime events: "0x0"); ints[I_STREAM] is then -1 */
    N_SPANS
};

/* How an args value is read. */
enum {
    K_INT,        /* an integer token -> ints[col] */
    K_STREAM,     /* an integer token -> ints[col], or a string without escapes -> spans[S_STREAM] */
    K_DEVICE,     /* an integer in [-1, 32767] -> ints[col] */
    K_FLOAT,      /* a number -> floats[col] */
    K_TRIPLE,     /* [int, int, int] -> ints[col..col+2]; a string or null: absent */
    K_STR,        /* a string without escapes -> spans[col]; null: absent */
    K_RAW,        /* any JSON value -> spans[col] (its exact text) */
    K_OPT_STR,    /* a string or null, not kept (metadata events' name and labels) */
    K_FAIL        /* give up (args.rank, a counter's "": read by the msgspec path) */
};

typedef struct {
    const char *key;
    int kind;
    int col;
} ArgKey;

/* The args keys the reader's _Args struct decodes (kineto._Args, memory.MemoryArgs); a test
 * checks that this list and the struct name the same keys. Any other key is skipped. */
static const ArgKey ARG_KEYS[] = {
    {"External id", K_INT, I_EXTERNAL_ID},
    {"correlation", K_INT, I_CORRELATION},
    {"device", K_DEVICE, I_DEVICE},
    {"stream", K_STREAM, I_STREAM},
    {"registers per thread", K_INT, I_REGISTERS},
    {"shared memory", K_INT, I_SHARED_MEMORY},
    {"bytes", K_INT, I_BYTES},
    {"In msg nelems", K_INT, I_IN_NELEMS},
    {"Out msg nelems", K_INT, I_OUT_NELEMS},
    {"Group size", K_INT, I_GROUP_SIZE},
    {"Seq", K_INT, I_SEQ},
    {"wait_on_stream", K_INT, I_WAIT_STREAM},
    {"wait_on_cuda_event_record_corr_id", K_INT, I_WAIT_CORR},
    {"grid", K_TRIPLE, I_GRID},
    {"block", K_TRIPLE, I_BLOCK},
    {"blocks per SM", K_FLOAT, F_BLOCKS_PER_SM},
    {"warps per SM", K_FLOAT, F_WARPS_PER_SM},
    {"est. achieved occupancy %", K_FLOAT, F_OCCUPANCY},
    {"memory bandwidth (GB/s)", K_FLOAT, F_BANDWIDTH},
    {"Collective name", K_STR, S_COLLECTIVE},
    {"dtype", K_STR, S_DTYPE},
    {"Process Group Name", K_RAW, S_PG_NAME},
    {"Process Group Description", K_RAW, S_PG_DESC},
    {"Input Dims", K_RAW, S_INPUT_DIMS},
    {"Input type", K_RAW, S_INPUT_TYPE},
    {"Input Strides", K_RAW, S_INPUT_STRIDES},
    {"Concrete Inputs", K_RAW, S_CONCRETE_INPUTS},
    {"Total Reserved", K_INT, I_MEM_RESERVED},
    {"Total Allocated", K_INT, I_MEM_ALLOCATED},
    {"Bytes", K_INT, I_MEM_BYTES},
    {"Addr", K_INT, I_MEM_ADDR},
    {"Device Id", K_DEVICE, I_MEM_DEVICE_ID},
    {"Device Type", K_INT, I_MEM_DEVICE_TYPE},
    {"rank", K_FAIL, 0},
    {"", K_FAIL, 0}, /* a counter sample's value (PM sampling's "GPU N Counters"): msgspec reads it */
    {"name", K_OPT_STR, 0},
    {"labels", K_OPT_STR, 0},
};
#define N_ARG_KEYS ((int)(sizeof(ARG_KEYS) / sizeof(ARG_KEYS[0])))

/* The event keys the reader's _Event struct decodes. */
enum { E_PH, E_CAT, E_NAME, E_PID, E_TID, E_TS, E_DUR, E_ARGS, N_EVENT_KEYS };
static const char *const EVENT_KEYS[N_EVENT_KEYS] = {"ph", "cat", "name", "pid", "tid", "ts", "dur", "args"};

/* The phases of kineto._Phase (an absent ph reads as ""; code 0 here). */
static const char PHASES[] = "XBEiICbnestfPONDMVvRc()";

#define MAX_DEPTH 64
#define MAX_EXACT_DIGITS 18 /* 10**18 - 1 < 2**63 */
/* Digits (integer and fraction parts) of the longest number read here: a longer one (no real
 * trace has one; a hostile file may hold 2**31 of them) is given up on, and msgspec says what
 * is wrong with it. The counters are 64-bit: a longer run cannot wrap them. */
#define MAX_NUMBER_DIGITS 4096
#define TWO_POW_53 9007199254740992ULL

typedef struct {
    const unsigned char *b;
    Py_ssize_t n;
} Src;

/* The byte at i (i >= 0), or 0 past the end: 0 is valid nowhere in JSON. A function, not a
 * macro: its argument is evaluated once (AT(s, ++i)). */
static unsigned char AT(const Src *s, Py_ssize_t i) { return i < s->n ? s->b[i] : 0; }

/* Byte classes (filled once by init_tables): JSON whitespace; a byte that may stand as itself
 * in a string the scanner reads (printable ASCII other than the quote and the backslash). */
#define C_WS 1
#define C_PLAIN 2
static unsigned char CLS[256];

static void init_tables(void) {
    int c;
    for (c = 0; c < 256; c++) CLS[c] = (unsigned char)((c >= 0x20 && c < 0x80 && c != '"' && c != '\\') ? C_PLAIN : 0);
    CLS[' '] = CLS['\n'] = CLS['\r'] = CLS['\t'] = C_WS;
    CLS[' '] |= C_PLAIN;
}

/* The literal word (true, false, null) at i: the index after it, or -1 (bounds-checked by AT). */
static Py_ssize_t literal(const Src *s, Py_ssize_t i, const char *word) {
    Py_ssize_t k;
    for (k = 0; word[k] != 0; k++)
        if (AT(s, i + k) != (unsigned char)word[k]) return -1;
    return i + k;
}

static Py_ssize_t ws(const Src *s, Py_ssize_t i) {
    while (i < s->n && (CLS[s->b[i]] & C_WS)) i++;
    return i;
}

/* A string without escapes, control characters or non-ASCII bytes; i at its opening quote.
 * Returns the index after the closing quote, or -1. */
static Py_ssize_t plain_string(const Src *s, Py_ssize_t i) {
    i++;
    while (i < s->n && (CLS[s->b[i]] & C_PLAIN)) i++;
    return AT(s, i) == '"' ? i + 1 : -1;
}

static int hex_value(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Any valid JSON string of ASCII text (escapes allowed, except UTF-16 surrogates). */
static Py_ssize_t any_string(const Src *s, Py_ssize_t i) {
    i++;
    for (;;) {
        unsigned char c;
        while (i < s->n && (CLS[s->b[i]] & C_PLAIN)) i++;
        c = AT(s, i);
        if (c == '"') return i + 1;
        if (c == '\\') {
            unsigned char e = AT(s, i + 1);
            if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't') {
                i += 2;
                continue;
            }
            if (e != 'u') return -1;
            {
                int k, v = 0;
                for (k = 2; k < 6; k++) {
                    int h = hex_value(AT(s, i + k));
                    if (h < 0) return -1;
                    v = v * 16 + h;
                }
                if (v >= 0xD800 && v <= 0xDFFF) return -1; /* surrogates: the msgspec path */
            }
            i += 6;
            continue;
        }
        return -1; /* a control character, a non-ASCII byte or the end */
    }
}

/* Num.exact: */
#define EXACT 1     /* iv (for an integer) and fv are exact */
#define EXACT_INT 2 /* an integer: iv is exact, fv is not */

typedef struct {
    int is_int; /* no fraction and no exponent */
    int exact;  /* 0 (neither is exact), EXACT or EXACT_INT */
    int64_t iv;
    double fv;
} Num;

static const double POW10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* A JSON number at i (the full grammar); returns its end, or -1 if it is not one. */
static Py_ssize_t number(const Src *s, Py_ssize_t i, Num *out) {
    int neg = 0, has_frac = 0, has_exp = 0;
    int64_t nd = 0, frac = 0, e = 0;
    uint64_t m = 0;
    unsigned char c = AT(s, i);
    if (c == '-') {
        neg = 1;
        c = AT(s, ++i);
    }
    if (c == '0') {
        nd = 1;
        c = AT(s, ++i);
        if (c >= '0' && c <= '9') return -1; /* a leading zero */
    } else if (c >= '1' && c <= '9') {
        while (c >= '0' && c <= '9') {
            if (nd < MAX_EXACT_DIGITS) m = m * 10 + (uint64_t)(c - '0');
            nd++;
            c = AT(s, ++i);
        }
    } else {
        return -1;
    }
    if (c == '.') {
        has_frac = 1;
        c = AT(s, ++i);
        if (!(c >= '0' && c <= '9')) return -1;
        while (c >= '0' && c <= '9') {
            if (nd < MAX_EXACT_DIGITS) m = m * 10 + (uint64_t)(c - '0');
            nd++;
            frac++;
            c = AT(s, ++i);
        }
    }
    if (c == 'e' || c == 'E') {
        int eneg = 0;
        has_exp = 1;
        c = AT(s, ++i);
        if (c == '+' || c == '-') {
            eneg = c == '-';
            c = AT(s, ++i);
        }
        if (!(c >= '0' && c <= '9')) return -1;
        while (c >= '0' && c <= '9') {
            if (e < 100000) e = e * 10 + (c - '0');
            c = AT(s, ++i);
        }
        if (eneg) e = -e;
    }
    out->is_int = !has_frac && !has_exp;
    out->exact = 0;
    out->iv = 0;
    out->fv = 0.0;
    if (nd > MAX_NUMBER_DIGITS) return -1; /* give up: the msgspec path reads (and refuses) it */
    if (nd > MAX_EXACT_DIGITS) return i;   /* the caller: Python's float(), or give up */
    if (out->is_int) {
        out->iv = neg ? -(int64_t)m : (int64_t)m;
        /* "-0" is the integer 0, so +0.0 as a float, as msgspec reads it */
        out->exact = m <= TWO_POW_53 ? EXACT : EXACT_INT;
        out->fv = (double)out->iv;
        return i;
    }
#if KSCAN_FAST_FLOATS
    {
        int64_t e10 = e - frac;
        if (m <= TWO_POW_53 && e10 >= -22 && e10 <= 22) {
            double v = (double)m;
            v = e10 >= 0 ? v * POW10[e10] : v / POW10[-e10];
            out->fv = neg ? -v : v;
            out->exact = EXACT;
        }
    }
#else
    (void)e;
    (void)frac;
    (void)neg;
#endif
    return i;
}

/* Skip any JSON value at i (validated as msgspec does, ASCII only); returns its end or -1. */
static Py_ssize_t skip_value(const Src *s, Py_ssize_t i) {
    unsigned char stack[MAX_DEPTH];
    int depth = 0;
    Num num;
    for (;;) {
        unsigned char c;
        i = ws(s, i);
        c = AT(s, i);
        if (c == '{') {
            i = ws(s, i + 1);
            if (AT(s, i) == '}') {
                i++;
                goto after_value;
            }
            if (depth == MAX_DEPTH) return -1;
            stack[depth++] = '{';
            goto key;
        } else if (c == '[') {
            i = ws(s, i + 1);
            if (AT(s, i) == ']') {
                i++;
                goto after_value;
            }
            if (depth == MAX_DEPTH) return -1;
            stack[depth++] = '[';
            continue;
        } else if (c == '"') {
            i = any_string(s, i);
        } else if (c == 't') {
            i = literal(s, i, "true");
        } else if (c == 'f') {
            i = literal(s, i, "false");
        } else if (c == 'n') {
            i = literal(s, i, "null");
        } else {
            i = number(s, i, &num);
        }
        if (i < 0) return -1;
    after_value:
        if (depth == 0) return i;
        i = ws(s, i);
        c = AT(s, i);
        if (c == ',') {
            i = ws(s, i + 1);
            if (stack[depth - 1] == '[') continue;
            goto key;
        }
        if (c != (stack[depth - 1] == '{' ? '}' : ']')) return -1;
        depth--;
        i++;
        goto after_value;
    key:
        if (AT(s, i) != '"') return -1;
        i = any_string(s, i);
        if (i < 0) return -1;
        i = ws(s, i);
        if (AT(s, i) != ':') return -1;
        i++;
    }
}

static Py_ssize_t EVENT_KEY_LEN[N_EVENT_KEYS];
/* The args keys by length: ARGS_BY_LEN[len] lists their indices, -1 terminated. */
#define MAX_KEY_LEN 40
#define MAX_SAME_LEN 8
static int ARGS_BY_LEN[MAX_KEY_LEN + 1][MAX_SAME_LEN + 1];

static int init_key_lengths(void) {
    int k, len;
    for (k = 0; k < N_EVENT_KEYS; k++) EVENT_KEY_LEN[k] = (Py_ssize_t)strlen(EVENT_KEYS[k]);
    for (len = 0; len <= MAX_KEY_LEN; len++) ARGS_BY_LEN[len][0] = -1;
    for (k = 0; k < N_ARG_KEYS; k++) {
        int j = 0;
        len = (int)strlen(ARG_KEYS[k].key);
        if (len > MAX_KEY_LEN) return -1;
        while (ARGS_BY_LEN[len][j] >= 0) j++;
        if (j >= MAX_SAME_LEN) return -1;
        ARGS_BY_LEN[len][j] = k;
        ARGS_BY_LEN[len][j + 1] = -1;
    }
    return 0;
}

/* The index of the key in b[lo:lo+len] among keys[0:n], or -1. */
static int find_event_key(const Src *s, Py_ssize_t lo, Py_ssize_t len) {
    int k;
    if (len < 2 || len > 4) return -1;
    for (k = 0; k < N_EVENT_KEYS; k++)
        if (EVENT_KEY_LEN[k] == len && memcmp(s->b + lo, EVENT_KEYS[k], (size_t)len) == 0) return k;
    return -1;
}

static int find_arg_key(const Src *s, Py_ssize_t lo, Py_ssize_t len) {
    const int *k;
    if (len > MAX_KEY_LEN) return -1;
    for (k = ARGS_BY_LEN[len]; *k >= 0; k++)
        if ((len == 0 || ARG_KEYS[*k].key[0] == (char)s->b[lo]) && memcmp(s->b + lo, ARG_KEYS[*k].key, (size_t)len) == 0)
            return *k;
    return -1;
}

/* The key of the names' hash (SipHash-1-3): random per process, set by seed() from
 * os.urandom when native.py imports the module (until then, from addresses and the clock).
 * Crafted names cannot be chosen to collide without it, so a hostile file cannot make the
 * table quadratic. Codes do not depend on it (first-seen order, equal bytes compared). */
static uint64_t HASH_K0, HASH_K1;
static int HASH_SEEDED;

static void init_seed(void) {
    uint64_t x = (uint64_t)(uintptr_t)&HASH_K0 ^ ((uint64_t)(uintptr_t)&init_seed << 17) ^ (uint64_t)time(NULL);
    x ^= x >> 33;
    x *= 0xFF51AFD7ED558CCDULL;
    x ^= x >> 33;
    HASH_K0 = x;
    HASH_K1 = x * 0x9E3779B97F4A7C15ULL;
}

#define ROTL64(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                                                                    \
    do {                                                                                                           \
        v0 += v1;                                                                                                  \
        v1 = ROTL64(v1, 13);                                                                                       \
        v1 ^= v0;                                                                                                  \
        v0 = ROTL64(v0, 32);                                                                                       \
        v2 += v3;                                                                                                  \
        v3 = ROTL64(v3, 16);                                                                                       \
        v3 ^= v2;                                                                                                  \
        v0 += v3;                                                                                                  \
        v3 = ROTL64(v3, 21);                                                                                       \
        v3 ^= v0;                                                                                                  \
        v2 += v1;                                                                                                  \
        v1 = ROTL64(v1, 17);                                                                                       \
        v1 ^= v2;                                                                                                  \
        v2 = ROTL64(v2, 32);                                                                                       \
    } while (0)

/* SipHash-1-3 of len bytes under (HASH_K0, HASH_K1), as CPython hashes str and bytes
 * (little-endian words through memcpy: no unaligned reads). */
static uint64_t hash_bytes(const unsigned char *p, Py_ssize_t len) {
    uint64_t v0 = HASH_K0 ^ 0x736f6d6570736575ULL, v1 = HASH_K1 ^ 0x646f72616e646f6dULL;
    uint64_t v2 = HASH_K0 ^ 0x6c7967656e657261ULL, v3 = HASH_K1 ^ 0x7465646279746573ULL;
    uint64_t b = (uint64_t)len << 56, w;
    while (len >= 8) {
        memcpy(&w, p, 8);
        v3 ^= w;
        SIPROUND;
        v0 ^= w;
        p += 8;
        len -= 8;
    }
    w = 0;
    if (len > 0) memcpy(&w, p, (size_t)len);
    b |= w;
    v3 ^= b;
    SIPROUND;
    v0 ^= b;
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

/* Byte strings numbered in order of first appearance (a growable open-addressing table):
 * each distinct string is kept as the first row whose span (in column col) holds it. */
typedef struct {
    uint64_t *hash;
    int64_t *row; /* -1: an empty slot */
    int32_t *code;
    size_t size, count;
} Dict;

static void dict_free(Dict *d) {
    PyMem_RawFree(d->hash);
    PyMem_RawFree(d->row);
    PyMem_RawFree(d->code);
    d->hash = NULL;
    d->row = NULL;
    d->code = NULL;
}

static int dict_alloc(Dict *d, size_t size) {
    size_t k;
    d->hash = (uint64_t *)PyMem_RawMalloc(size * sizeof(uint64_t));
    d->row = (int64_t *)PyMem_RawMalloc(size * sizeof(int64_t));
    d->code = (int32_t *)PyMem_RawMalloc(size * sizeof(int32_t));
    if (d->hash == NULL || d->row == NULL || d->code == NULL) {
        dict_free(d);
        return -1;
    }
    for (k = 0; k < size; k++) d->row[k] = -1;
    d->size = size;
    return 0;
}

static int dict_grow(Dict *d) {
    Dict old = *d;
    size_t k;
    if (old.size > ((size_t)-1) / 4 || dict_alloc(d, old.size * 2) < 0) {
        *d = old;
        return -1;
    }
    d->count = old.count;
    for (k = 0; k < old.size; k++) {
        if (old.row[k] >= 0) {
            size_t slot = (size_t)old.hash[k] & (d->size - 1);
            while (d->row[slot] >= 0) slot = (slot + 1) & (d->size - 1);
            d->hash[slot] = old.hash[k];
            d->row[slot] = old.row[k];
            d->code[slot] = old.code[k];
        }
    }
    dict_free(&old);
    return 0;
}

/* Ranks of the columns the scanner numbers (cat, name, and the four operator arguments). */
#define N_CODED 6
static const int CODED_SPANS[N_CODED] = {S_CAT, S_NAME, S_INPUT_DIMS, S_INPUT_TYPE, S_INPUT_STRIDES, S_CONCRETE_INPUTS};

typedef struct {
    unsigned char *ph;  /* [cap] */
    int64_t *spans;     /* [cap][2 * N_SPANS] */
    int64_t *pidtid;    /* [cap][2] */
    int64_t *ints;      /* [cap][N_INTS] */
    double *floats;     /* [cap][N_FLOATS] */
    int64_t *ev_span;   /* [cap][2] */
    int64_t *slow;      /* [cap][4]: row, float column, lo, hi */
    int32_t *codes;     /* [cap][N_CODED]: first-seen numbers among the kept events, -1 for others */
    int64_t *firsts;    /* [N_CODED][cap]: the first row of each number */
    Dict dicts[N_CODED];
    Py_ssize_t cap;
    Py_ssize_t n_slow;
} Out;

/* The first-seen numbers of event row's cat, name and (where recorded) operator arguments,
 * for a kept event (X, i, I: what the reader numbers); -1 for any other. Returns -1 out of memory. */
static int number_event(const Src *s, Out *o, Py_ssize_t row) {
    const int64_t *spans = o->spans + row * 2 * N_SPANS;
    int32_t *codes = o->codes + row * N_CODED;
    unsigned char ph = o->ph[row];
    int c;
    if (ph != 'X' && ph != 'i' && ph != 'I') {
        for (c = 0; c < N_CODED; c++) codes[c] = -1;
        return 0;
    }
    for (c = 0; c < N_CODED; c++) {
        int col = CODED_SPANS[c];
        int64_t lo = spans[2 * col], hi = spans[2 * col + 1];
        Dict *d = &o->dicts[c];
        uint64_t h;
        size_t slot;
        if (hi == 0 && c >= 2) { /* an operator argument not recorded (cat and name: "") */
            codes[c] = -1;
            continue;
        }
        if (2 * (d->count + 1) > d->size && dict_grow(d) < 0) return -1;
        h = hash_bytes(s->b + lo, (Py_ssize_t)(hi - lo));
        slot = (size_t)h & (d->size - 1);
        for (;;) {
            int64_t r = d->row[slot];
            if (r < 0) {
                d->row[slot] = row;
                d->hash[slot] = h;
                d->code[slot] = (int32_t)d->count;
                o->firsts[(Py_ssize_t)c * o->cap + (Py_ssize_t)d->count] = row;
                codes[c] = (int32_t)d->count++;
                break;
            }
            if (d->hash[slot] == h) {
                const int64_t *first = o->spans + r * 2 * N_SPANS + 2 * col;
                if (first[1] - first[0] == hi - lo && memcmp(s->b + first[0], s->b + lo, (size_t)(hi - lo)) == 0) {
                    codes[c] = d->code[slot];
                    break;
                }
            }
            slot = (slot + 1) & (d->size - 1);
        }
    }
    return 0;
}

/* Record a number for a float column: exact here, or left to the caller. */
static int put_float(Out *o, Py_ssize_t row, int col, const Num *num, Py_ssize_t lo, Py_ssize_t hi) {
    if (num->exact == EXACT) {
        o->floats[row * N_FLOATS + col] = num->fv;
        return 0;
    }
    if (o->n_slow >= o->cap) return -1;
    o->slow[o->n_slow * 4 + 0] = row;
    o->slow[o->n_slow * 4 + 1] = col;
    o->slow[o->n_slow * 4 + 2] = lo;
    o->slow[o->n_slow * 4 + 3] = hi;
    o->n_slow++;
    return 0;
}

/* An integer token that fits int64 exactly (not a string, not a float form). */
static Py_ssize_t int_token(const Src *s, Py_ssize_t i, int64_t *v) {
    Num num;
    Py_ssize_t e = number(s, i, &num);
    if (e < 0 || !num.is_int || num.exact == 0) return -1;
    *v = num.iv;
    return e;
}

/* The args object at i of event row; returns its end or -1. */
static Py_ssize_t scan_args(const Src *s, Py_ssize_t i, Out *o, Py_ssize_t row) {
    uint64_t seen = 0;
    int64_t *ints = o->ints + row * N_INTS;
    int64_t *spans = o->spans + row * 2 * N_SPANS;
    if (AT(s, i) != '{') return -1;
    i = ws(s, i + 1);
    if (AT(s, i) == '}') return i + 1;
    for (;;) {
        Py_ssize_t ks, ke;
        int k;
        if (AT(s, i) != '"') return -1;
        ks = i + 1;
        i = plain_string(s, i);
        if (i < 0) return -1;
        ke = i - 1;
        k = find_arg_key(s, ks, ke - ks);
        i = ws(s, i);
        if (AT(s, i) != ':') return -1;
        i = ws(s, i + 1);
        if (k < 0) {
            i = skip_value(s, i);
            if (i < 0) return -1;
        } else {
            const ArgKey *a = &ARG_KEYS[k];
            unsigned char c = AT(s, i);
            if (seen & ((uint64_t)1 << k)) return -1; /* a duplicate: msgspec keeps the last */
            seen |= (uint64_t)1 << k;
            switch (a->kind) {
            case K_INT:
            case K_DEVICE: {
                int64_t v;
                i = int_token(s, i, &v);
                if (i < 0) return -1;
                if (a->kind == K_DEVICE && (v < -1 || v > 32767)) return -1;
                ints[a->col] = v;
                break;
            }
            case K_STREAM:
                if (c == '"') { /* the caller converts it as the msgspec path does, where it is read */
                    Py_ssize_t e = plain_string(s, i);
                    if (e < 0) return -1;
                    spans[2 * S_STREAM] = i + 1;
                    spans[2 * S_STREAM + 1] = e - 1;
                    i = e;
                } else {
                    int64_t v;
                    i = int_token(s, i, &v);
                    if (i < 0) return -1;
                    ints[a->col] = v;
                }
                break;
            case K_FLOAT: {
                Num num;
                Py_ssize_t lo = i;
                i = number(s, i, &num);
                if (i < 0) return -1;
                if (put_float(o, row, a->col, &num, lo, i) < 0) return -1;
                break;
            }
            case K_TRIPLE:
                if (c == '[') {
                    int j;
                    i++;
                    for (j = 0; j < 3; j++) {
                        int64_t v;
                        i = ws(s, i);
                        i = int_token(s, i, &v);
                        if (i < 0) return -1;
                        ints[a->col + j] = v > 2147483647 ? 2147483647 : v;
                        i = ws(s, i);
                        if (AT(s, i) != (j < 2 ? ',' : ']')) return -1;
                        i++;
                    }
                } else if (c == '"') {
                    i = any_string(s, i); /* a Triton launch's string grid: absent */
                } else if (c == 'n') {
                    i = literal(s, i, "null");
                } else {
                    return -1;
                }
                if (i < 0) return -1;
                break;
            case K_STR:
                if (c == '"') {
                    Py_ssize_t e = plain_string(s, i);
                    if (e < 0) return -1;
                    spans[2 * a->col] = i + 1;
                    spans[2 * a->col + 1] = e - 1;
                    i = e;
                } else if (c == 'n') {
                    i = literal(s, i, "null");
                } else {
                    return -1;
                }
                if (i < 0) return -1;
                break;
            case K_RAW: {
                Py_ssize_t e = skip_value(s, i);
                if (e < 0) return -1;
                spans[2 * a->col] = i;
                spans[2 * a->col + 1] = e;
                i = e;
                break;
            }
            case K_OPT_STR:
                if (c == '"') {
                    i = any_string(s, i);
                } else if (c == 'n') {
                    i = literal(s, i, "null");
                } else {
                    return -1;
                }
                if (i < 0) return -1;
                break;
            default:
                return -1;
            }
        }
        i = ws(s, i);
        if (AT(s, i) == '}') return i + 1;
        if (AT(s, i) != ',') return -1;
        i = ws(s, i + 1);
    }
}

/* The events of the array at b[0] (the whole buffer: "[" events "]"): returns 1 if it read
 * them all, else 0 with *at the byte where it gave up (2: where its rows ran out; -1: out of
 * memory); *n_done: the events read whole (those before the one it gave up on: their columns
 * are complete). */
static int scan_events(const Src *s, Py_ssize_t start, Out *o, Py_ssize_t *at, Py_ssize_t *n_done) {
    /* (returns -1 out of memory; the events are at s->b[start:s->n], every offset is from s->b) */
    Py_ssize_t i = ws(s, start), n = 0;
    if (AT(s, i) != '[') goto fail;
    i = ws(s, i + 1);
    if (AT(s, i) == ']') goto end;
    for (;;) {
        unsigned seen = 0;
        Py_ssize_t r;
        int64_t *spans, *ints;
        double *floats;
        if (AT(s, i) != '{') goto fail;
        if (n >= o->cap) {
            *at = i;
            *n_done = n;
            return 2; /* out of rows: the caller may give more and scan again */
        }
        o->ev_span[2 * n] = i;
        o->ph[n] = 0;
        spans = o->spans + n * 2 * N_SPANS;
        ints = o->ints + n * N_INTS;
        floats = o->floats + n * N_FLOATS;
        for (r = 0; r < 2 * N_SPANS; r++) spans[r] = 0;
        for (r = 0; r < N_INTS; r++) ints[r] = -1;
        ints[I_MEM_BYTES] = 0; /* MemoryArgs' default */
        for (r = 0; r < N_FLOATS; r++) floats[r] = Py_NAN;
        o->pidtid[2 * n] = 0;
        o->pidtid[2 * n + 1] = 0;
        i = ws(s, i + 1);
        if (AT(s, i) != '}') {
            for (;;) {
                Py_ssize_t ks, ke;
                int k;
                unsigned char c;
                if (AT(s, i) != '"') goto fail;
                ks = i + 1;
                i = plain_string(s, i);
                if (i < 0) {
                    i = ks;
                    goto fail;
                }
                ke = i - 1;
                k = find_event_key(s, ks, ke - ks);
                i = ws(s, i);
                if (AT(s, i) != ':') goto fail;
                i = ws(s, i + 1);
                c = AT(s, i);
                if (k >= 0) {
                    if (seen & (1u << k)) goto fail; /* a duplicate: msgspec keeps the last */
                    seen |= 1u << k;
                }
                switch (k) {
                case E_PH:
                    if (c != '"') goto fail;
                    if (AT(s, i + 1) == '"') {
                        i += 2;
                    } else {
                        unsigned char p = AT(s, i + 1);
                        if (p == 0 || AT(s, i + 2) != '"' || strchr(PHASES, (int)p) == NULL) goto fail;
                        o->ph[n] = p;
                        i += 3;
                    }
                    break;
                case E_CAT:
                case E_NAME: {
                    Py_ssize_t e;
                    int col = k == E_CAT ? S_CAT : S_NAME;
                    if (c != '"') goto fail;
                    e = plain_string(s, i);
                    if (e < 0) goto fail;
                    spans[2 * col] = i + 1;
                    spans[2 * col + 1] = e - 1;
                    i = e;
                    break;
                }
                case E_PID:
                case E_TID: {
                    Py_ssize_t e;
                    if (c == '"') { /* a string without escapes: its span (the caller numbers it) */
                        int col = k == E_TID ? S_TID : S_PID;
                        e = plain_string(s, i);
                        if (e < 0) goto fail;
                        spans[2 * col] = i + 1;
                        spans[2 * col + 1] = e - 1;
                    } else {
                        e = int_token(s, i, &o->pidtid[2 * n + (k == E_TID)]);
                        if (e < 0) goto fail;
                    }
                    i = e;
                    break;
                }
                case E_TS:
                case E_DUR: {
                    Num num;
                    Py_ssize_t e = number(s, i, &num);
                    if (e < 0) goto fail;
                    if (put_float(o, n, k == E_TS ? F_TS : F_DUR, &num, i, e) < 0) goto fail;
                    i = e;
                    break;
                }
                case E_ARGS: {
                    Py_ssize_t e = scan_args(s, i, o, n);
                    if (e < 0) goto fail;
                    i = e;
                    break;
                }
                default: {
                    Py_ssize_t e = skip_value(s, i);
                    if (e < 0) goto fail;
                    i = e;
                    break;
                }
                }
                i = ws(s, i);
                if (AT(s, i) == '}') break;
                if (AT(s, i) != ',') goto fail;
                i = ws(s, i + 1);
            }
        }
        i++; /* the closing brace */
        o->ev_span[2 * n + 1] = i;
        if (number_event(s, o, n) < 0) {
            *n_done = n;
            return -1;
        }
        n++;
        i = ws(s, i);
        if (AT(s, i) == ']') goto end;
        if (AT(s, i) != ',') goto fail;
        i = ws(s, i + 1);
    }
end:
    /* Nothing may follow the array before end (the caller's range is exactly "[" piece "]"). */
    *n_done = n;
    if (ws(s, i + 1) != s->n) goto fail;
    return 1;
fail:
    *at = i;
    *n_done = n;
    return 0;
}

PyDoc_STRVAR(scan_doc,
             "scan(data, ph, spans, pidtid, ints, floats, ev_span, slow, codes, firsts[, start, end])\n"
             "    -> (ok, n, at, n_slow, counts)\n\n"
             "Scan the events of data[start:end] (b'[' + events + b']'; default: all of data) into the caller's\n"
             "writable buffers (every byte offset written or returned counts from data's start), sized for\n"
             "cap = len(ph) events: ph uint8[cap], spans int64[cap, 2*N_SPANS], pidtid int64[cap, 2],\n"
             "ints int64[cap, N_INTS], floats float64[cap, N_FLOATS], ev_span int64[cap, 2],\n"
             "slow int64[cap, 4], codes int32[cap, N_CODED], firsts int64[N_CODED, cap].\n"
             "ok: 1 if it read every event, else 0 and at: the byte where it gave up (2: where the rows ran out);\n"
             "n: the events read whole (all, or those before the one it gave up on); n_slow: rows of slow;\n"
             "counts: the distinct strings of each numbered column (cat, name, Input Dims, Input type,\n"
             "Input Strides, Concrete Inputs: codes in first-seen order among the kept events, X, i, I).");

static PyObject *kscan_scan(PyObject *self, PyObject *args) {
    PyObject *objs[10];
    Py_buffer v[10];
    int k, got = 0;
    Py_ssize_t cap, n = 0, at = 0, start = 0, end = -1;
    int ok;
    PyObject *counts;
    Src src;
    Out o;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOO|nn:scan", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5],
                          &objs[6], &objs[7], &objs[8], &objs[9], &start, &end))
        return NULL;
    if (PyObject_GetBuffer(objs[0], &v[0], PyBUF_C_CONTIGUOUS) < 0) return NULL;
    got = 1;
    if (end < 0) end = v[0].len;
    if (start < 0 || start > end || end > v[0].len) {
        PyErr_Format(PyExc_ValueError, "start %zd and end %zd: not a range of %zd bytes", start, end, v[0].len);
        goto error;
    }
    if (PyObject_GetBuffer(objs[1], &v[1], PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) goto error;
    got = 2;
    cap = v[1].len;
    {
        const Py_ssize_t widths[10] = {0, 1, 16 * N_SPANS, 16, 8 * N_INTS, 8 * N_FLOATS, 16, 32, 4 * N_CODED, 8 * N_CODED};
        static const char *const names[10] = {"data",    "ph",   "spans", "pidtid", "ints",
                                              "floats", "ev_span", "slow", "codes",  "firsts"};
        for (k = 2; k < 10; k++) {
            if (cap > PY_SSIZE_T_MAX / widths[k]) {
                PyErr_SetString(PyExc_ValueError, "too many events");
                goto error;
            }
            if (get_out(objs[k], &v[k], cap * widths[k], names[k]) < 0) goto error;
            got = k + 1;
        }
    }
    src.b = (const unsigned char *)v[0].buf;
    src.n = end;
    o.ph = (unsigned char *)v[1].buf;
    o.spans = (int64_t *)v[2].buf;
    o.pidtid = (int64_t *)v[3].buf;
    o.ints = (int64_t *)v[4].buf;
    o.floats = (double *)v[5].buf;
    o.ev_span = (int64_t *)v[6].buf;
    o.slow = (int64_t *)v[7].buf;
    o.codes = (int32_t *)v[8].buf;
    o.firsts = (int64_t *)v[9].buf;
    o.cap = cap;
    o.n_slow = 0;
    memset(o.dicts, 0, sizeof(o.dicts));
    for (k = 0; k < N_CODED; k++) {
        if (dict_alloc(&o.dicts[k], 1024) < 0) {
            while (k-- > 0) dict_free(&o.dicts[k]);
            PyErr_NoMemory();
            goto error;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    ok = scan_events(&src, start, &o, &at, &n);
    Py_END_ALLOW_THREADS
    release(v, got);
    counts = PyTuple_New(N_CODED);
    for (k = 0; k < N_CODED; k++) {
        if (counts != NULL) PyTuple_SET_ITEM(counts, k, PyLong_FromSize_t(o.dicts[k].count));
        dict_free(&o.dicts[k]);
    }
    if (counts == NULL) return NULL;
    for (k = 0; k < N_CODED; k++) {
        if (PyTuple_GET_ITEM(counts, k) == NULL) {
            Py_DECREF(counts);
            return NULL;
        }
    }
    if (ok < 0) {
        Py_DECREF(counts);
        return PyErr_NoMemory();
    }
    return Py_BuildValue("innnN", ok, n, at, o.n_slow, counts);
error:
    release(v, got);
    return NULL;
}

PyDoc_STRVAR(seed_doc,
             "seed(key: bytes) -> None\n\nSet the 16-byte key of the names' hash (os.urandom(16), once per process,\n"
             "before the first scan; a second call is refused: tables built with one key\n"
             "cannot be searched with another).");

static PyObject *kscan_seed(PyObject *self, PyObject *arg) {
    Py_buffer key;
    (void)self;
    if (PyObject_GetBuffer(arg, &key, PyBUF_SIMPLE) < 0) return NULL;
    if (key.len != 16) {
        PyBuffer_Release(&key);
        PyErr_SetString(PyExc_ValueError, "seed: the key is 16 bytes");
        return NULL;
    }
    if (HASH_SEEDED) {
        PyBuffer_Release(&key);
        PyErr_SetString(PyExc_RuntimeError, "seed: the key is set once per process");
        return NULL;
    }
    memcpy(&HASH_K0, key.buf, 8);
    memcpy(&HASH_K1, (const char *)key.buf + 8, 8);
    HASH_SEEDED = 1;
    PyBuffer_Release(&key);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(nest_doc,
             "nest(start, dur, lane_a, lane_b, lane_c, depth, parent)\n\n"
             "Depth and parent of the intervals [start, start + dur) within their lanes (all int64[n]; a lane:\n"
             "the rows of one (lane_a, lane_b, lane_c), each lane's rows in (start, -dur) order), written to\n"
             "depth and parent (int64[n]; parent: a row, -1 for none). An interval's depth is the number of\n"
             "earlier intervals of its lane still open at its start (end > start), its parent the latest\n"
             "earlier interval of its lane one level up: derive._lane_nesting's definition, in one pass per\n"
             "lane (a min-heap of the open ends), the lanes found by a hash table (no sort).");

static uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xFF51AFD7ED558CCDULL;
    x ^= x >> 33;
    x *= 0xC4CEB9FE1A85EC53ULL;
    x ^= x >> 33;
    return x;
}

static PyObject *kscan_nest(PyObject *self, PyObject *args) {
    PyObject *objs[7], *result = NULL;
    Py_buffer v[7];
    int k, got = 0;
    Py_ssize_t n, i, n_lanes = 0;
    size_t size = 1, slot;
    int64_t *lane_of = NULL, *keys = NULL, *firsts = NULL, *offsets = NULL, *rows = NULL, *heap = NULL, *last = NULL;
    const int64_t *start, *dur, *la, *lb, *lc;
    int64_t *depth, *parent;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOOOOO:nest", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5], &objs[6]))
        return NULL;
    for (k = 0; k < 7; k++) {
        int flags = k >= 5 ? (PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) : PyBUF_C_CONTIGUOUS;
        if (PyObject_GetBuffer(objs[k], &v[k], flags) < 0) goto error;
        got = k + 1;
        if (v[k].len != v[0].len || v[k].len % 8 != 0 || (uintptr_t)v[k].buf % 8 != 0) {
            PyErr_SetString(PyExc_ValueError, "nest: seven int64 buffers of one length expected");
            goto error;
        }
    }
    n = v[0].len / 8;
    start = (const int64_t *)v[0].buf;
    dur = (const int64_t *)v[1].buf;
    la = (const int64_t *)v[2].buf;
    lb = (const int64_t *)v[3].buf;
    lc = (const int64_t *)v[4].buf;
    depth = (int64_t *)v[5].buf;
    parent = (int64_t *)v[6].buf;
    while (size < 2 * (size_t)n + 2) size *= 2;
    lane_of = (int64_t *)PyMem_RawMalloc(((size_t)n + 1) * sizeof(int64_t));
    keys = (int64_t *)PyMem_RawMalloc(size * sizeof(int64_t)); /* a slot's lane, -1: empty */
    firsts = (int64_t *)PyMem_RawMalloc(((size_t)n + 1) * sizeof(int64_t)); /* a lane's first row */
    offsets = (int64_t *)PyMem_RawMalloc(((size_t)n + 2) * sizeof(int64_t));
    rows = (int64_t *)PyMem_RawMalloc(((size_t)n + 1) * sizeof(int64_t));
    heap = (int64_t *)PyMem_RawMalloc(((size_t)n + 1) * sizeof(int64_t));
    last = (int64_t *)PyMem_RawMalloc(((size_t)n + 1) * sizeof(int64_t));
    if (!lane_of || !keys || !firsts || !offsets || !rows || !heap || !last) {
        PyErr_NoMemory();
        goto error;
    }
    Py_BEGIN_ALLOW_THREADS
    for (slot = 0; slot < size; slot++) keys[slot] = -1;
    /* Lanes numbered as first met (a lane is known by its first row's three keys). */
    for (i = 0; i < n; i++) {
        uint64_t h = mix64(HASH_K0 ^ mix64((uint64_t)la[i] ^ HASH_K1 ^ mix64((uint64_t)lb[i] ^ mix64((uint64_t)lc[i]))));
        slot = (size_t)h & (size - 1);
        for (;;) {
            int64_t lane = keys[slot];
            if (lane < 0) {
                keys[slot] = n_lanes;
                firsts[n_lanes] = i;
                lane_of[i] = n_lanes++;
                break;
            }
            {
                int64_t f = firsts[lane];
                if (la[f] == la[i] && lb[f] == lb[i] && lc[f] == lc[i]) {
                    lane_of[i] = lane;
                    break;
                }
            }
            slot = (slot + 1) & (size - 1);
        }
    }
    /* Each lane's rows together, in row order (a counting sort). */
    for (i = 0; i <= n_lanes; i++) offsets[i] = 0;
    for (i = 0; i < n; i++) offsets[lane_of[i] + 1]++;
    for (i = 0; i < n_lanes; i++) offsets[i + 1] += offsets[i];
    for (i = 0; i < n; i++) rows[offsets[lane_of[i]]++] = i;
    for (i = n_lanes; i > 0; i--) offsets[i] = offsets[i - 1];
    offsets[0] = 0;
    for (i = 0; i <= n; i++) last[i] = -1;
    {
        Py_ssize_t lane;
        for (lane = 0; lane < n_lanes; lane++) {
            Py_ssize_t lo = (Py_ssize_t)offsets[lane], hi = (Py_ssize_t)offsets[lane + 1], j, hs = 0;
            for (j = lo; j < hi; j++) {
                int64_t r = rows[j], s0 = start[r], d;
                /* (wrapping, as numpy's int64 start + dur: no signed overflow) */
                int64_t e = (int64_t)((uint64_t)s0 + (uint64_t)dur[r]);
                /* Close the ends at or before this start (starts do not decrease within a lane). */
                while (hs > 0 && heap[0] <= s0) {
                    int64_t x = heap[--hs];
                    Py_ssize_t at = 0;
                    for (;;) {
                        Py_ssize_t c = 2 * at + 1;
                        if (c >= hs) break;
                        if (c + 1 < hs && heap[c + 1] < heap[c]) c++;
                        if (heap[c] >= x) break;
                        heap[at] = heap[c];
                        at = c;
                    }
                    if (hs > 0) heap[at] = x;
                }
                d = (int64_t)hs;
                depth[r] = d;
                parent[r] = d > 0 && last[d - 1] >= lo ? rows[last[d - 1]] : -1;
                last[d] = j; /* (positions of earlier lanes are below lo: never a parent here) */
                {
                    Py_ssize_t at = hs++;
                    while (at > 0) {
                        Py_ssize_t up = (at - 1) / 2;
                        if (heap[up] <= e) break;
                        heap[at] = heap[up];
                        at = up;
                    }
                    heap[at] = e;
                }
            }
        }
    }
    Py_END_ALLOW_THREADS
    result = Py_None;
    Py_INCREF(result);
error: /* (and the way out after success: result set) */
    PyMem_RawFree(lane_of);
    PyMem_RawFree(keys);
    PyMem_RawFree(firsts);
    PyMem_RawFree(offsets);
    PyMem_RawFree(rows);
    PyMem_RawFree(heap);
    PyMem_RawFree(last);
    release(v, got);
    return result;
}

PyDoc_STRVAR(texts_doc,
             "texts(data, spans, rows, col) -> list[str]\n\n"
             "The texts of data in the byte ranges [spans[r, 2*col], spans[r, 2*col+1]) of the given rows\n"
             "(spans: int64[cap, 2*N_SPANS] as scan() wrote it; rows: int64[m], each below cap), decoded\n"
             "as UTF-8 (the scanner's ranges hold ASCII): one str per row, made in C.");

static PyObject *kscan_texts(PyObject *self, PyObject *args) {
    PyObject *data_obj, *spans_obj, *rows_obj, *out = NULL;
    Py_buffer data, spans, rows;
    int col;
    Py_ssize_t m, k, cap;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOi:texts", &data_obj, &spans_obj, &rows_obj, &col)) return NULL;
    if (col < 0 || col >= N_SPANS) {
        PyErr_Format(PyExc_ValueError, "col %d: not a span column", col);
        return NULL;
    }
    if (PyObject_GetBuffer(data_obj, &data, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    if (PyObject_GetBuffer(spans_obj, &spans, PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&data);
        return NULL;
    }
    if (PyObject_GetBuffer(rows_obj, &rows, PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&spans);
        PyBuffer_Release(&data);
        return NULL;
    }
    cap = spans.len / (Py_ssize_t)(16 * N_SPANS);
    m = rows.len / 8;
    if (spans.len % (16 * N_SPANS) != 0 || rows.len % 8 != 0 || (uintptr_t)spans.buf % 8 != 0 ||
        (uintptr_t)rows.buf % 8 != 0) {
        PyErr_SetString(PyExc_ValueError, "texts: spans must be int64[cap, 2*N_SPANS] and rows int64[m]");
        goto done;
    }
    out = PyList_New(m);
    if (out == NULL) goto done;
    for (k = 0; k < m; k++) {
        int64_t r = ((const int64_t *)rows.buf)[k], lo, hi;
        PyObject *text;
        if (r < 0 || r >= cap) {
            PyErr_Format(PyExc_IndexError, "texts: row %lld out of range", (long long)r);
            goto fail;
        }
        lo = ((const int64_t *)spans.buf)[r * 2 * N_SPANS + 2 * col];
        hi = ((const int64_t *)spans.buf)[r * 2 * N_SPANS + 2 * col + 1];
        if (lo < 0 || hi < lo || hi > data.len) {
            PyErr_Format(PyExc_ValueError, "texts: bytes %lld-%lld not in the data", (long long)lo, (long long)hi);
            goto fail;
        }
        text = PyUnicode_DecodeUTF8((const char *)data.buf + lo, (Py_ssize_t)(hi - lo), "strict");
        if (text == NULL) goto fail;
        PyList_SET_ITEM(out, k, text);
    }
    goto done;
fail:
    Py_CLEAR(out);
done:
    PyBuffer_Release(&rows);
    PyBuffer_Release(&spans);
    PyBuffer_Release(&data);
    return out;
}

static PyMethodDef kscan_methods[] = {
    {"scan", kscan_scan, METH_VARARGS, scan_doc},
    {"texts", kscan_texts, METH_VARARGS, texts_doc},
    {"nest", kscan_nest, METH_VARARGS, nest_doc},
    {"seed", kscan_seed, METH_O, seed_doc},
    {NULL, NULL, 0, NULL},
};

static const char *arg_key(int k) { return ARG_KEYS[k].key; }
static const char *event_key(int k) { return EVENT_KEYS[k]; }

/* m.<attr> = a tuple of the n keys (a test compares them with the reader's structs). */
static int add_key_tuple(PyObject *m, const char *attr, const char *(*key)(int), int n) {
    int k;
    PyObject *keys = PyTuple_New(n);
    if (keys == NULL) return -1;
    for (k = 0; k < n; k++) {
        PyObject *text = PyUnicode_FromString(key(k));
        if (text == NULL) {
            Py_DECREF(keys);
            return -1;
        }
        PyTuple_SET_ITEM(keys, k, text);
    }
    if (PyModule_AddObject(m, attr, keys) < 0) {
        Py_DECREF(keys);
        return -1;
    }
    return 0;
}

static int kscan_exec(PyObject *m) {
    init_tables();
    if (init_key_lengths() < 0) {
        PyErr_SetString(PyExc_SystemError, "_kscan: an args key too long, or too many of one length");
        return -1;
    }
    init_seed();
    if (PyModule_AddIntConstant(m, "N_INTS", N_INTS) < 0 || PyModule_AddIntConstant(m, "N_FLOATS", N_FLOATS) < 0 ||
        PyModule_AddIntConstant(m, "N_SPANS", N_SPANS) < 0 || PyModule_AddIntConstant(m, "N_CODED", N_CODED) < 0 ||
        /* scan() takes start and end (a module without this constant does not) */
        PyModule_AddIntConstant(m, "SCANS_RANGES", 1) < 0)
        return -1;
#ifdef TRACEVIEW_SOURCE_SHA256
    /* The build hook (hatch_build.py) passes the source's digest: a stale build fails a test. */
    if (PyModule_AddStringConstant(m, "SOURCE_SHA256", TRACEVIEW_SOURCE_SHA256) < 0) return -1;
#endif
    if (add_key_tuple(m, "ARG_KEYS", arg_key, N_ARG_KEYS) < 0) return -1;
    if (add_key_tuple(m, "EVENT_KEYS", event_key, N_EVENT_KEYS) < 0) return -1;
    return 0;
}

static PyModuleDef_Slot kscan_slots[] = {
    {Py_mod_exec, (void *)kscan_exec},
    {0, NULL},
};

static struct PyModuleDef kscan_module = {
    PyModuleDef_HEAD_INIT,
    "_kscan",
    "A column-writing scanner for Kineto JSON events (see loading/readers/kineto/native.py).",
    0,
    kscan_methods,
    kscan_slots,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__kscan(void) { return PyModuleDef_Init(&kscan_module); }
