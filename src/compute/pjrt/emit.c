/* The StableHLO programs of the pjrt backend (emit.h), printed as MLIR text in the generic
 * operation form, which every StableHLO version since 1.0 parses the same way. Values are
 * named %vN in order of creation; a loop's results are %vN#k.
 *
 * The formulas are the CPU backend's, operation by operation and in its order of rounding
 * where it has one: the cells in src/compute/cpu/{rnn,lstm,gru}.c, the head and the MSE
 * gradient in src/compute/cpu/model.c, Adam in src/compute/cpu/backend.c. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"

struct val {
    char s[24];
};

#define TYPE_RING 24

struct emit {
    char *buf;
    size_t len, cap;
    bool oom;
    int next;
    char types[TYPE_RING][64];
    int type_next;
};

/* An empty program text with room for cap bytes (it grows); false when out of memory. */
static bool emit_init(struct emit *e, size_t cap)
{
    *e = (struct emit){ .cap = cap, .buf = malloc(cap) };
    if (e->buf == NULL)
        return false;
    e->buf[0] = '\0';
    return true;
}

static void out(struct emit *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void out(struct emit *e, const char *fmt, ...)
{
    if (e->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(e->buf + e->len, e->cap - e->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            e->oom = true;
            return;
        }
        if ((size_t)n < e->cap - e->len) {
            e->len += (size_t)n;
            return;
        }
        size_t cap = e->cap * 2 + (size_t)n;
        char *grown = realloc(e->buf, cap);
        if (grown == NULL) {
            e->oom = true;
            return;
        }
        e->buf = grown;
        e->cap = cap;
    }
}

static struct val fresh(struct emit *e)
{
    struct val v;
    snprintf(v.s, sizeof(v.s), "%%v%d", e->next++);
    return v;
}

static struct val result(struct val loop, int k)
{
    struct val v;
    snprintf(v.s, sizeof(v.s), "%.16s#%d", loop.s, k);
    return v;
}

/* tensor<d0xd1x...xf32> of rank 0..3, from a ring of buffers (valid for TYPE_RING calls). */
static const char *ty_of(struct emit *e, const char *elem, int rank, size_t d0, size_t d1,
                         size_t d2)
{
    char *t = e->types[e->type_next++ % TYPE_RING];
    size_t d[3] = { d0, d1, d2 };
    int n = snprintf(t, 64, "tensor<");
    for (int i = 0; i < rank; i++)
        n += snprintf(t + n, (size_t)(64 - n), "%zux", d[i]);
    snprintf(t + n, (size_t)(64 - n), "%s>", elem);
    return t;
}

#define T0(e)          ty_of((e), "f32", 0, 0, 0, 0)
#define T1(e, a)       ty_of((e), "f32", 1, (a), 0, 0)
#define T2(e, a, b)    ty_of((e), "f32", 2, (a), (b), 0)
#define T3(e, a, b, c) ty_of((e), "f32", 3, (a), (b), (c))
#define I32            "tensor<i32>"
#define PRED           "tensor<i1>"

static struct val op2(struct emit *e, const char *name, struct val a, struct val b, const char *t)
{
    struct val v = fresh(e);
    out(e, "    %s = stablehlo.%s %s, %s : %s\n", v.s, name, a.s, b.s, t);
    return v;
}

static struct val op1(struct emit *e, const char *name, struct val a, const char *t)
{
    struct val v = fresh(e);
    out(e, "    %s = stablehlo.%s %s : %s\n", v.s, name, a.s, t);
    return v;
}

#define ADD(e, a, b, t) op2((e), "add", (a), (b), (t))
#define SUB(e, a, b, t) op2((e), "subtract", (a), (b), (t))
#define MUL(e, a, b, t) op2((e), "multiply", (a), (b), (t))
#define DIV(e, a, b, t) op2((e), "divide", (a), (b), (t))

static struct val cst_f32(struct emit *e, float x, const char *t)
{
    uint32_t bits;
    memcpy(&bits, &x, sizeof(bits));
    struct val v = fresh(e);
    out(e, "    %s = stablehlo.constant dense<0x%08X> : %s\n", v.s, (unsigned)bits, t);
    return v;
}

static struct val cst_i32(struct emit *e, int x)
{
    struct val v = fresh(e);
    out(e, "    %s = stablehlo.constant dense<%d> : " I32 "\n", v.s, x);
    return v;
}

/* broadcast_in_dim with `dims` ("1", "0, 1", "" for a scalar). */
static struct val bcast(struct emit *e, struct val a, const char *from, const char *to,
                        const char *dims)
{
    struct val v = fresh(e);
    out(e,
        "    %s = \"stablehlo.broadcast_in_dim\"(%s) {broadcast_dimensions = array<i64%s%s>} : "
        "(%s) -> %s\n",
        v.s, a.s, dims[0] ? ": " : "", dims, from, to);
    return v;
}

static struct val reshape(struct emit *e, struct val a, const char *from, const char *to)
{
    struct val v = fresh(e);
    out(e, "    %s = \"stablehlo.reshape\"(%s) : (%s) -> %s\n", v.s, a.s, from, to);
    return v;
}

static struct val transpose(struct emit *e, struct val a, const char *from, const char *to,
                            const char *perm)
{
    struct val v = fresh(e);
    out(e, "    %s = \"stablehlo.transpose\"(%s) {permutation = array<i64: %s>} : (%s) -> %s\n",
        v.s, a.s, perm, from, to);
    return v;
}

/* A static slice [start, limit) with unit strides; the bounds as text ("0, 20"). */
static struct val slice(struct emit *e, struct val a, const char *from, const char *to,
                        const char *start, const char *limit, const char *strides)
{
    struct val v = fresh(e);
    out(e,
        "    %s = \"stablehlo.slice\"(%s) {start_indices = array<i64: %s>, limit_indices = "
        "array<i64: %s>, strides = array<i64: %s>} : (%s) -> %s\n",
        v.s, a.s, start, limit, strides, from, to);
    return v;
}

/* The 1-D slice [off, off+count) of a flat vector of n. */
static struct val slice1(struct emit *e, struct val a, size_t n, size_t off, size_t count)
{
    char s[24], l[24];
    snprintf(s, sizeof(s), "%zu", off);
    snprintf(l, sizeof(l), "%zu", off + count);
    return slice(e, a, T1(e, n), T1(e, count), s, l, "1");
}

/* Columns [c0, c0+n) of a (R, C) matrix. */
static struct val cols(struct emit *e, struct val a, size_t rows, size_t c, size_t c0, size_t n)
{
    char s[48], l[48];
    snprintf(s, sizeof(s), "0, %zu", c0);
    snprintf(l, sizeof(l), "%zu, %zu", rows, c0 + n);
    return slice(e, a, T2(e, rows, c), T2(e, rows, n), s, l, "1, 1");
}

/* Rows [r0, r0+n) of a (R, B, C) array. */
static struct val rows3(struct emit *e, struct val a, size_t r, size_t b, size_t c, size_t r0,
                        size_t n)
{
    char s[48], l[64];
    snprintf(s, sizeof(s), "%zu, 0, 0", r0);
    snprintf(l, sizeof(l), "%zu, %zu, %zu", r0 + n, b, c);
    return slice(e, a, T3(e, r, b, c), T3(e, n, b, c), s, l, "1, 1, 1");
}

/* (R, B, C)[i] as (B, C), i an i32 value. */
static struct val step_get(struct emit *e, struct val a, size_t r, size_t b, size_t c, struct val i,
                           struct val zero)
{
    struct val v = fresh(e);
    out(e,
        "    %s = \"stablehlo.dynamic_slice\"(%s, %s, %s, %s) {slice_sizes = array<i64: 1, %zu, "
        "%zu>} : (%s, " I32 ", " I32 ", " I32 ") -> %s\n",
        v.s, a.s, i.s, zero.s, zero.s, b, c, T3(e, r, b, c), T3(e, 1, b, c));
    return reshape(e, v, T3(e, 1, b, c), T2(e, b, c));
}

/* (R, B, C) with row i replaced by u (B, C). */
static struct val step_set(struct emit *e, struct val a, size_t r, size_t b, size_t c, struct val u,
                           struct val i, struct val zero)
{
    struct val u3 = reshape(e, u, T2(e, b, c), T3(e, 1, b, c));
    struct val v = fresh(e);
    out(e,
        "    %s = \"stablehlo.dynamic_update_slice\"(%s, %s, %s, %s, %s) : (%s, %s, " I32 ", " I32
        ", " I32 ") -> %s\n",
        v.s, a.s, u3.s, i.s, zero.s, zero.s, T3(e, r, b, c), T3(e, 1, b, c), T3(e, r, b, c));
    return v;
}

/* dot_general contracting `lc` of a with `rc` of b, at HIGHEST precision. */
static struct val dot(struct emit *e, struct val a, struct val b, const char *ta, const char *tb,
                      const char *tr, const char *lc, const char *rc)
{
    struct val v = fresh(e);
    out(e,
        "    %s = \"stablehlo.dot_general\"(%s, %s) {dot_dimension_numbers = "
        "#stablehlo.dot<lhs_contracting_dimensions = [%s], rhs_contracting_dimensions = [%s]>, "
        "precision_config = [#stablehlo<precision HIGHEST>, #stablehlo<precision HIGHEST>]} : "
        "(%s, %s) -> %s\n",
        v.s, a.s, b.s, lc, rc, ta, tb, tr);
    return v;
}

static struct val reduce_sum(struct emit *e, struct val a, const char *from, const char *to,
                             const char *dims)
{
    struct val zero = cst_f32(e, 0.0f, T0(e));
    struct val v = fresh(e), x = fresh(e), y = fresh(e), s = fresh(e);
    out(e, "    %s = \"stablehlo.reduce\"(%s, %s) ({\n", v.s, a.s, zero.s);
    out(e, "    ^bb0(%s: tensor<f32>, %s: tensor<f32>):\n", x.s, y.s);
    out(e, "      %s = stablehlo.add %s, %s : tensor<f32>\n", s.s, x.s, y.s);
    out(e, "      \"stablehlo.return\"(%s) : (tensor<f32>) -> ()\n", s.s);
    out(e, "    }) {dimensions = array<i64: %s>} : (%s, tensor<f32>) -> %s\n", dims, from, to);
    return v;
}

/* Concatenation along `dim` of n values of the given types. */
static struct val concat(struct emit *e, const struct val *parts, const char *const *types,
                         size_t n, int dim, const char *to)
{
    struct val v = fresh(e);
    out(e, "    %s = \"stablehlo.concatenate\"(", v.s);
    for (size_t i = 0; i < n; i++)
        out(e, "%s%s", i ? ", " : "", parts[i].s);
    out(e, ") {dimension = %d : i64} : (", dim);
    for (size_t i = 0; i < n; i++)
        out(e, "%s%s", i ? ", " : "", types[i]);
    out(e, ") -> %s\n", to);
    return v;
}

/* Along columns of (B, n*H) matrices: the n parts (B, H) joined. */
static struct val join_cols(struct emit *e, const struct val *parts, size_t n, size_t b, size_t h)
{
    char t[4][64];
    const char *ts[4];
    for (size_t i = 0; i < n; i++) {
        snprintf(t[i], sizeof(t[i]), "%s", T2(e, b, h));
        ts[i] = t[i];
    }
    return concat(e, parts, ts, n, 1, T2(e, b, n * h));
}

/* --- the model ------------------------------------------------------------------------ */

struct layer_values {
    struct val w_ih, w_hh, b_ih, b_hh; /* (GH, I), (GH, H), (GH), (GH) */
    size_t in;                         /* I */
    struct val x;                      /* (T, B, I): the layer's input */
    /* what the forward kept */
    struct val hs;             /* (T+1, B, H): h[0..T] */
    struct val cs;             /* LSTM: (T+1, B, H) c[0..T] */
    struct val a;              /* LSTM, GRU: (T, B, GH) activated gates */
    struct val aux;            /* LSTM: tanh(c[t+1]); GRU: W_hn h + b_hn; (T, B, H) */
    struct val h_last, c_last; /* (B, H) */
};

struct program {
    struct emit *e;
    const struct tsrnn_model_dims *d;
    size_t B, T, G, H, O, N;
    struct tsrnn_param_table table;
    struct val zero_i, one_i;
    struct layer_values layer[TSRNN_MODEL_MAX_LAYERS];
    struct val v_w, v_b; /* (O, H), (O) */
};

static void unpack_params(struct program *pg, struct val p)
{
    struct emit *e = pg->e;
    size_t GH = pg->G * pg->H;
    for (size_t l = 0; l < pg->d->layer_count; l++) {
        const struct tsrnn_param_entry *en = &pg->table.entries[4 * l];
        struct layer_values *lv = &pg->layer[l];
        lv->in = (size_t)en[0].shape[1];
        lv->w_ih = reshape(e, slice1(e, p, pg->N, en[0].offset, en[0].count), T1(e, en[0].count),
                           T2(e, GH, lv->in));
        lv->w_hh = reshape(e, slice1(e, p, pg->N, en[1].offset, en[1].count), T1(e, en[1].count),
                           T2(e, GH, pg->H));
        lv->b_ih = slice1(e, p, pg->N, en[2].offset, en[2].count);
        lv->b_hh = slice1(e, p, pg->N, en[3].offset, en[3].count);
    }
    const struct tsrnn_param_entry *v = &pg->table.entries[4 * pg->d->layer_count];
    pg->v_w = reshape(e, slice1(e, p, pg->N, v[0].offset, v[0].count), T1(e, v[0].count),
                      T2(e, pg->O, pg->H));
    pg->v_b = slice1(e, p, pg->N, v[1].offset, v[1].count);
}

/* The block arguments of a region: "^bb0(%a: type, ...):". */
static void block_args(struct emit *e, const struct val *arg, const char (*types)[64], size_t n)
{
    out(e, "    ^bb0(");
    for (size_t i = 0; i < n; i++)
        out(e, "%s%s: %s", i ? ", " : "", arg[i].s, types[i]);
    out(e, "):\n");
}

/* Opens a stablehlo.while over the n values init (of the given types; the first is the i32
 * step counter): emits the condition region, "counter <direction> bound", and the body's
 * block arguments, which it leaves in arg. The caller emits the body and closes the loop
 * with while_close(). The loop's results are result(loop, k). */
static struct val while_open(struct emit *e, const struct val *init, const char (*types)[64],
                             size_t n, const char *direction, struct val bound, struct val *arg)
{
    struct val loop = fresh(e);
    out(e, "    %s:%zu = \"stablehlo.while\"(", loop.s, n);
    for (size_t i = 0; i < n; i++)
        out(e, "%s%s", i ? ", " : "", init[i].s);
    out(e, ") ({\n");
    for (size_t i = 0; i < n; i++)
        arg[i] = fresh(e);
    block_args(e, arg, types, n);
    struct val cond = fresh(e);
    out(e,
        "    %s = \"stablehlo.compare\"(%s, %s) {comparison_direction = "
        "#stablehlo<comparison_direction %s>} : (" I32 ", " I32 ") -> " PRED "\n",
        cond.s, arg[0].s, bound.s, direction);
    out(e, "    \"stablehlo.return\"(%s) : (" PRED ") -> ()\n", cond.s);
    out(e, "    }, {\n");
    for (size_t i = 0; i < n; i++)
        arg[i] = fresh(e);
    block_args(e, arg, types, n);
    return loop;
}

/* Closes a loop opened by while_open(): the body returns next (m == n values, of the loop's
 * types), then the loop's signature. */
static void while_close(struct emit *e, const struct val *next, size_t m, const char (*types)[64],
                        size_t n)
{
    out(e, "    \"stablehlo.return\"(");
    for (size_t i = 0; i < m; i++)
        out(e, "%s%s", i ? ", " : "", next[i].s);
    out(e, ") : (");
    for (size_t i = 0; i < n; i++)
        out(e, "%s%s", i ? ", " : "", types[i]);
    out(e, ") -> ()\n");
    out(e, "    }) : (");
    for (size_t i = 0; i < n; i++)
        out(e, "%s%s", i ? ", " : "", types[i]);
    out(e, ") -> (");
    for (size_t i = 0; i < n; i++)
        out(e, "%s%s", i ? ", " : "", types[i]);
    out(e, ")\n");
}

/* One layer's forward over T steps from h0 (and c0), in a stablehlo.while. */
static void layer_forward(struct program *pg, size_t l, struct val h0, struct val c0)
{
    struct emit *e = pg->e;
    struct layer_values *lv = &pg->layer[l];
    size_t B = pg->B, T = pg->T, H = pg->H, G = pg->G, GH = G * H, I = lv->in;
    enum tsrnn_model_kind kind = pg->d->kind;
    bool lstm = kind == TSRNN_MODEL_LSTM, gru = kind == TSRNN_MODEL_GRU;

    /* The input projection of all steps at once: (T, B, GH). */
    struct val xg =
        dot(e, lv->x, lv->w_ih, T3(e, T, B, I), T2(e, GH, I), T3(e, T, B, GH), "2", "1");
    xg = ADD(e, xg, bcast(e, lv->b_ih, T1(e, GH), T3(e, T, B, GH), "2"), T3(e, T, B, GH));
    struct val bhh = bcast(e, lv->b_hh, T1(e, GH), T2(e, B, GH), "1");
    struct val hs0 = bcast(e, cst_f32(e, 0.0f, T0(e)), T0(e), T3(e, T + 1, B, H), "");
    hs0 = step_set(e, hs0, T + 1, B, H, h0, pg->zero_i, pg->zero_i);
    struct val gates0 = bcast(e, cst_f32(e, 0.0f, T0(e)), T0(e), T3(e, T, B, GH), "");
    struct val aux0 = bcast(e, cst_f32(e, 0.0f, T0(e)), T0(e), T3(e, T, B, H), "");
    struct val last = cst_i32(e, (int)T);

    /* carried: i, h, hs [, c, cs, a, aux (LSTM) | a, aux (GRU)] */
    struct val init[8] = { pg->zero_i, h0, hs0 };
    size_t n = 3;
    if (lstm) {
        struct val cs0 = step_set(e, hs0, T + 1, B, H, c0, pg->zero_i, pg->zero_i);
        init[n++] = c0;
        init[n++] = cs0;
    }
    if (lstm || gru) {
        init[n++] = gates0;
        init[n++] = aux0;
    }
    char types[8][64];
    snprintf(types[0], 64, I32);
    snprintf(types[1], 64, "%s", T2(e, B, H));
    snprintf(types[2], 64, "%s", T3(e, T + 1, B, H));
    size_t k = 3;
    if (lstm) {
        snprintf(types[k++], 64, "%s", T2(e, B, H));
        snprintf(types[k++], 64, "%s", T3(e, T + 1, B, H));
    }
    if (lstm || gru) {
        snprintf(types[k++], 64, "%s", T3(e, T, B, GH));
        snprintf(types[k++], 64, "%s", T3(e, T, B, H));
    }

    struct val arg[8];
    struct val loop = while_open(e, init, types, n, "LT", last, arg);

    struct val t = arg[0], h = arg[1], hs = arg[2];
    struct val xg_t = step_get(e, xg, T, B, GH, t, pg->zero_i);
    struct val hg = dot(e, h, lv->w_hh, T2(e, B, H), T2(e, GH, H), T2(e, B, GH), "1", "1");
    hg = ADD(e, hg, bhh, T2(e, B, GH));
    const char *tbh = T2(e, B, H);
    char tbh_s[64];
    snprintf(tbh_s, sizeof(tbh_s), "%s", tbh);
    struct val h_new, next[8];
    size_t m = 0;
    struct val t1 = ADD(e, t, pg->one_i, I32);
    if (kind == TSRNN_MODEL_RNN) {
        h_new = op1(e, "tanh", ADD(e, hg, xg_t, T2(e, B, GH)), tbh_s);
        next[m++] = t1;
        next[m++] = h_new;
        next[m++] = step_set(e, hs, T + 1, B, H, h_new, t1, pg->zero_i);
    } else if (lstm) {
        struct val c = arg[3], cs = arg[4], a = arg[5], aux = arg[6];
        struct val pre = ADD(e, hg, xg_t, T2(e, B, GH));
        struct val gi = op1(e, "logistic", cols(e, pre, B, GH, 0, H), tbh_s);
        struct val gf = op1(e, "logistic", cols(e, pre, B, GH, H, H), tbh_s);
        struct val gg = op1(e, "tanh", cols(e, pre, B, GH, 2 * H, H), tbh_s);
        struct val go = op1(e, "logistic", cols(e, pre, B, GH, 3 * H, H), tbh_s);
        struct val c_new = ADD(e, MUL(e, gf, c, tbh_s), MUL(e, gi, gg, tbh_s), tbh_s);
        struct val tc = op1(e, "tanh", c_new, tbh_s);
        h_new = MUL(e, go, tc, tbh_s);
        struct val parts[4] = { gi, gf, gg, go };
        next[m++] = t1;
        next[m++] = h_new;
        next[m++] = step_set(e, hs, T + 1, B, H, h_new, t1, pg->zero_i);
        next[m++] = c_new;
        next[m++] = step_set(e, cs, T + 1, B, H, c_new, t1, pg->zero_i);
        next[m++] = step_set(e, a, T, B, GH, join_cols(e, parts, 4, B, H), t, pg->zero_i);
        next[m++] = step_set(e, aux, T, B, H, tc, t, pg->zero_i);
    } else {
        struct val a = arg[3], aux = arg[4];
        struct val r =
            op1(e, "logistic", ADD(e, cols(e, hg, B, GH, 0, H), cols(e, xg_t, B, GH, 0, H), tbh_s),
                tbh_s);
        struct val z =
            op1(e, "logistic", ADD(e, cols(e, hg, B, GH, H, H), cols(e, xg_t, B, GH, H, H), tbh_s),
                tbh_s);
        struct val hn = cols(e, hg, B, GH, 2 * H, H);
        struct val nn = op1(
            e, "tanh", ADD(e, cols(e, xg_t, B, GH, 2 * H, H), MUL(e, hn, r, tbh_s), tbh_s), tbh_s);
        h_new = ADD(e, MUL(e, SUB(e, h, nn, tbh_s), z, tbh_s), nn, tbh_s);
        struct val parts[3] = { r, z, nn };
        next[m++] = t1;
        next[m++] = h_new;
        next[m++] = step_set(e, hs, T + 1, B, H, h_new, t1, pg->zero_i);
        next[m++] = step_set(e, a, T, B, GH, join_cols(e, parts, 3, B, H), t, pg->zero_i);
        next[m++] = step_set(e, aux, T, B, H, hn, t, pg->zero_i);
    }
    while_close(e, next, m, types, n);

    lv->h_last = result(loop, 1);
    lv->hs = result(loop, 2);
    if (lstm) {
        lv->c_last = result(loop, 3);
        lv->cs = result(loop, 4);
        lv->a = result(loop, 5);
        lv->aux = result(loop, 6);
    } else if (gru) {
        lv->a = result(loop, 3);
        lv->aux = result(loop, 4);
    }
}

/* The stack: x (B, T, C) batch-first in, layer l's input is layer l-1's h[1..T] (times the
 * dropout mask l-1 when `masks` is set). h0/c0: (L, B, H) or NULL for zeros. Returns the
 * head's output (T, B, O). */
static struct val model_forward(struct program *pg, struct val x, const struct val *h0,
                                const struct val *c0, const struct val *masks)
{
    struct emit *e = pg->e;
    size_t B = pg->B, T = pg->T, H = pg->H, C = pg->d->input_count, L = pg->d->layer_count;
    struct val zeros = bcast(e, cst_f32(e, 0.0f, T0(e)), T0(e), T2(e, B, H), "");
    for (size_t l = 0; l < L; l++) {
        struct layer_values *lv = &pg->layer[l];
        if (l == 0) {
            lv->x = transpose(e, x, T3(e, B, T, C), T3(e, T, B, C), "1, 0, 2");
        } else {
            lv->x = rows3(e, pg->layer[l - 1].hs, T + 1, B, H, 1, T);
            if (masks != NULL) {
                struct val mk = reshape(e, rows3(e, *masks, L - 1, T * B, H, l - 1, 1),
                                        T3(e, 1, T * B, H), T3(e, T, B, H));
                lv->x = MUL(e, lv->x, mk, T3(e, T, B, H));
            }
        }
        struct val hl = zeros, cl = zeros;
        if (h0 != NULL)
            hl = reshape(e, rows3(e, *h0, L, B, H, l, 1), T3(e, 1, B, H), T2(e, B, H));
        if (c0 != NULL)
            cl = reshape(e, rows3(e, *c0, L, B, H, l, 1), T3(e, 1, B, H), T2(e, B, H));
        layer_forward(pg, l, hl, cl);
    }
    struct val top = rows3(e, pg->layer[L - 1].hs, T + 1, B, H, 1, T);
    struct val o =
        dot(e, top, pg->v_w, T3(e, T, B, H), T2(e, pg->O, H), T3(e, T, B, pg->O), "2", "1");
    return ADD(e, o, bcast(e, pg->v_b, T1(e, pg->O), T3(e, T, B, pg->O), "2"), T3(e, T, B, pg->O));
}

/* One layer's backward over T-1..0 from dy (T, B, H) = dLoss/d(its h[1..T]); fills the four
 * gradients and returns dLoss/d(its input) (T, B, I) (unused for layer 0). */
static struct val layer_backward(struct program *pg, size_t l, struct val dy, struct val *g)
{
    struct emit *e = pg->e;
    struct layer_values *lv = &pg->layer[l];
    size_t B = pg->B, T = pg->T, H = pg->H, G = pg->G, GH = G * H, I = lv->in;
    enum tsrnn_model_kind kind = pg->d->kind;
    bool lstm = kind == TSRNN_MODEL_LSTM, gru = kind == TSRNN_MODEL_GRU;

    struct val zeros_bh = bcast(e, cst_f32(e, 0.0f, T0(e)), T0(e), T2(e, B, H), "");
    struct val d0 = bcast(e, cst_f32(e, 0.0f, T0(e)), T0(e), T3(e, T, B, GH), "");
    struct val one = bcast(e, cst_f32(e, 1.0f, T0(e)), T0(e), T2(e, B, H), "");
    struct val start = cst_i32(e, (int)T - 1);

    /* carried: t, dh_rec, dxg (T, B, GH) [, dc (LSTM) | dhg (GRU)] */
    struct val init[5] = { start, zeros_bh, d0 };
    size_t n = 3;
    if (lstm)
        init[n++] = zeros_bh;
    if (gru)
        init[n++] = d0;
    char types[5][64];
    snprintf(types[0], 64, I32);
    snprintf(types[1], 64, "%s", T2(e, B, H));
    snprintf(types[2], 64, "%s", T3(e, T, B, GH));
    if (lstm)
        snprintf(types[3], 64, "%s", T2(e, B, H));
    if (gru)
        snprintf(types[3], 64, "%s", T3(e, T, B, GH));

    struct val arg[5];
    struct val loop = while_open(e, init, types, n, "GE", pg->zero_i, arg);

    char tbh[64];
    snprintf(tbh, sizeof(tbh), "%s", T2(e, B, H));
    struct val t = arg[0], dh_rec = arg[1], dxg = arg[2];
    struct val t1 = ADD(e, t, pg->one_i, I32);
    struct val dh = ADD(e, step_get(e, dy, T, B, H, t, pg->zero_i), dh_rec, tbh);
    struct val next[5];
    size_t m = 0;
    next[m++] = SUB(e, t, pg->one_i, I32);
    if (kind == TSRNN_MODEL_RNN) {
        struct val hn = step_get(e, lv->hs, T + 1, B, H, t1, pg->zero_i);
        struct val d = MUL(e, dh, SUB(e, one, MUL(e, hn, hn, tbh), tbh), tbh);
        next[m++] = dot(e, d, lv->w_hh, T2(e, B, GH), T2(e, GH, H), tbh, "1", "0");
        next[m++] = step_set(e, dxg, T, B, GH, d, t, pg->zero_i);
    } else if (lstm) {
        struct val dc = arg[3];
        struct val a = step_get(e, lv->a, T, B, GH, t, pg->zero_i);
        struct val gi = cols(e, a, B, GH, 0, H), gf = cols(e, a, B, GH, H, H);
        struct val gg = cols(e, a, B, GH, 2 * H, H), go = cols(e, a, B, GH, 3 * H, H);
        struct val tc = step_get(e, lv->aux, T, B, H, t, pg->zero_i);
        struct val c_prev = step_get(e, lv->cs, T + 1, B, H, t, pg->zero_i);
        struct val dct = ADD(
            e, dc, MUL(e, MUL(e, dh, go, tbh), SUB(e, one, MUL(e, tc, tc, tbh), tbh), tbh), tbh);
        struct val di = MUL(e, dct, gg, tbh), df = MUL(e, dct, c_prev, tbh);
        struct val dg = MUL(e, dct, gi, tbh), d_o = MUL(e, dh, tc, tbh);
        struct val parts[4] = {
            MUL(e, MUL(e, di, gi, tbh), SUB(e, one, gi, tbh), tbh),
            MUL(e, MUL(e, df, gf, tbh), SUB(e, one, gf, tbh), tbh),
            MUL(e, dg, SUB(e, one, MUL(e, gg, gg, tbh), tbh), tbh),
            MUL(e, MUL(e, d_o, go, tbh), SUB(e, one, go, tbh), tbh),
        };
        struct val d = join_cols(e, parts, 4, B, H);
        next[m++] = dot(e, d, lv->w_hh, T2(e, B, GH), T2(e, GH, H), tbh, "1", "0");
        next[m++] = step_set(e, dxg, T, B, GH, d, t, pg->zero_i);
        next[m++] = MUL(e, dct, gf, tbh);
    } else {
        struct val dhg = arg[3];
        struct val a = step_get(e, lv->a, T, B, GH, t, pg->zero_i);
        struct val r = cols(e, a, B, GH, 0, H), z = cols(e, a, B, GH, H, H);
        struct val nn = cols(e, a, B, GH, 2 * H, H);
        struct val h_prev = step_get(e, lv->hs, T + 1, B, H, t, pg->zero_i);
        struct val hn = step_get(e, lv->aux, T, B, H, t, pg->zero_i);
        struct val dn = MUL(e, MUL(e, dh, SUB(e, one, z, tbh), tbh),
                            SUB(e, one, MUL(e, nn, nn, tbh), tbh), tbh);
        struct val dz = MUL(e, MUL(e, MUL(e, dh, SUB(e, h_prev, nn, tbh), tbh), z, tbh),
                            SUB(e, one, z, tbh), tbh);
        struct val dr = MUL(e, MUL(e, MUL(e, dn, hn, tbh), r, tbh), SUB(e, one, r, tbh), tbh);
        struct val px[3] = { dr, dz, dn };
        struct val ph[3] = { dr, dz, MUL(e, dn, r, tbh) };
        struct val dx = join_cols(e, px, 3, B, H), dhh = join_cols(e, ph, 3, B, H);
        struct val rec = dot(e, dhh, lv->w_hh, T2(e, B, GH), T2(e, GH, H), tbh, "1", "0");
        next[m++] = ADD(e, MUL(e, dh, z, tbh), rec, tbh);
        next[m++] = step_set(e, dxg, T, B, GH, dx, t, pg->zero_i);
        next[m++] = step_set(e, dhg, T, B, GH, dhh, t, pg->zero_i);
    }
    while_close(e, next, m, types, n);

    struct val dx_all = result(loop, 2);
    struct val dh_all = gru ? result(loop, 3) : dx_all;
    struct val h_prev = rows3(e, lv->hs, T + 1, B, H, 0, T);
    g[0] = dot(e, dx_all, lv->x, T3(e, T, B, GH), T3(e, T, B, I), T2(e, GH, I), "0, 1", "0, 1");
    g[1] = dot(e, dh_all, h_prev, T3(e, T, B, GH), T3(e, T, B, H), T2(e, GH, H), "0, 1", "0, 1");
    g[2] = reduce_sum(e, dx_all, T3(e, T, B, GH), T1(e, GH), "0, 1");
    g[3] = reduce_sum(e, dh_all, T3(e, T, B, GH), T1(e, GH), "0, 1");
    if (l == 0)
        return dx_all;
    return dot(e, dx_all, lv->w_ih, T3(e, T, B, GH), T2(e, GH, I), T3(e, T, B, I), "2", "0");
}

static void program_init(struct program *pg, struct emit *e, const struct tsrnn_model_dims *d,
                         size_t B, size_t T)
{
    *pg = (struct program){
        .e = e, .d = d, .B = B, .T = T, .H = d->hidden_count, .O = d->output_count
    };
    pg->G = tsrnn_model_gate_count(d->kind);
    tsrnn_param_table_init(&pg->table, d);
    pg->N = pg->table.total_count;
}

static char *finish(struct emit *e)
{
    if (e->oom) {
        free(e->buf);
        return NULL;
    }
    return e->buf;
}

char *tsrnn_pjrt_emit_train_step(const struct tsrnn_model_dims *dims, size_t batch_count,
                                 size_t step_count, size_t replica_count, bool dropout)
{
    struct emit e;
    if (!emit_init(&e, 1 << 16))
        return NULL;
    struct program pg;
    program_init(&pg, &e, dims, batch_count, step_count);
    size_t B = pg.B, T = pg.T, H = pg.H, O = pg.O, N = pg.N, L = dims->layer_count;
    size_t C = dims->input_count;
    bool masks = dropout && L > 1;

    char tn[64];
    snprintf(tn, sizeof(tn), "%s", T1(&e, N));
    out(&e,
        "module @tsrnn_train_step attributes {mhlo.num_replicas = %zu : i32, "
        "mhlo.num_partitions = 1 : i32} {\n",
        replica_count);
    struct val p = fresh(&e), m = fresh(&e), v = fresh(&e), x = fresh(&e), y = fresh(&e);
    struct val w = fresh(&e), s = fresh(&e), mk = fresh(&e);
    out(&e,
        "  func.func public @main(%s: %s {tf.aliasing_output = 0 : i32}, %s: %s "
        "{tf.aliasing_output = 1 : i32}, %s: %s {tf.aliasing_output = 2 : i32}, %s: %s, %s: %s, "
        "%s: %s, %s: tensor<8xf32>",
        p.s, tn, m.s, tn, v.s, tn, x.s, T3(&e, B, T, C), y.s, T3(&e, B, T, O), w.s, T1(&e, B), s.s);
    if (masks)
        out(&e, ", %s: %s", mk.s, T3(&e, L - 1, T * B, H));
    out(&e, ") -> (%s, %s, %s, %s, tensor<f32>) {\n", tn, tn, tn, T3(&e, T, B, O));
    pg.zero_i = cst_i32(&e, 0);
    pg.one_i = cst_i32(&e, 1);

    unpack_params(&pg, p);
    struct val o = model_forward(&pg, x, NULL, NULL, masks ? &mk : NULL);
    char tbo[64];
    snprintf(tbo, sizeof(tbo), "%s", T3(&e, T, B, O));
    struct val yt = transpose(&e, y, T3(&e, B, T, O), tbo, "1, 0, 2");
    struct val err = SUB(&e, o, yt, tbo);
    struct val sq = MUL(&e, err, err, tbo);
    /* dLoss/d(out) = (out - y) * 2/(B*T*O), B the real windows of the whole batch; a padded
     * window's weight 0 makes its contribution an exact 0. */
    struct val norm =
        bcast(&e, slice(&e, s, "tensor<8xf32>", T1(&e, 1), "7", "8", "1"), T1(&e, 1), tbo, "0");
    struct val dout = MUL(&e, MUL(&e, err, bcast(&e, w, T1(&e, B), tbo, "1"), tbo), norm, tbo);

    /* The head's backward, then the layers top to bottom. */
    struct val gv_w = dot(&e, dout, rows3(&e, pg.layer[L - 1].hs, T + 1, B, H, 1, T), tbo,
                          T3(&e, T, B, H), T2(&e, O, H), "0, 1", "0, 1");
    struct val gv_b = reduce_sum(&e, dout, tbo, T1(&e, O), "0, 1");
    struct val dy = dot(&e, dout, pg.v_w, tbo, T2(&e, O, H), T3(&e, T, B, H), "2", "0");
    struct val grads[4 * TSRNN_MODEL_MAX_LAYERS + 2];
    for (size_t l = L; l-- > 0;) {
        struct val dx = layer_backward(&pg, l, dy, &grads[4 * l]);
        if (l > 0) {
            dy = dx;
            if (masks) {
                struct val mkl = reshape(&e, rows3(&e, mk, L - 1, T * B, H, l - 1, 1),
                                         T3(&e, 1, T * B, H), T3(&e, T, B, H));
                dy = MUL(&e, dy, mkl, T3(&e, T, B, H));
            }
        }
    }
    grads[4 * L] = gv_w;
    grads[4 * L + 1] = gv_b;

    /* The flat gradient in the table's order. */
    struct val flat[4 * TSRNN_MODEL_MAX_LAYERS + 2];
    const char *ftypes[4 * TSRNN_MODEL_MAX_LAYERS + 2];
    char ftype_buf[4 * TSRNN_MODEL_MAX_LAYERS + 2][64];
    for (size_t i = 0; i < pg.table.entry_count; i++) {
        const struct tsrnn_param_entry *en = &pg.table.entries[i];
        snprintf(ftype_buf[i], 64, "%s", T1(&e, en->count));
        ftypes[i] = ftype_buf[i];
        flat[i] = en->rank == 2
                      ? reshape(&e, grads[i], T2(&e, (size_t)en->shape[0], (size_t)en->shape[1]),
                                ftype_buf[i])
                      : grads[i];
    }
    struct val g = concat(&e, flat, ftypes, pg.table.entry_count, 0, tn);
    if (replica_count > 1) {
        struct val r = fresh(&e), a = fresh(&e), b = fresh(&e), c = fresh(&e);
        out(&e, "    %s = \"stablehlo.all_reduce\"(%s) ({\n", r.s, g.s);
        out(&e, "    ^bb0(%s: tensor<f32>, %s: tensor<f32>):\n", a.s, b.s);
        out(&e, "      %s = stablehlo.add %s, %s : tensor<f32>\n", c.s, a.s, b.s);
        out(&e, "      \"stablehlo.return\"(%s) : (tensor<f32>) -> ()\n", c.s);
        out(&e, "    }) {replica_groups = dense<[[");
        for (size_t i = 0; i < replica_count; i++)
            out(&e, "%s%zu", i ? ", " : "", i);
        out(&e, "]]> : tensor<1x%zuxi64>} : (%s) -> %s\n", replica_count, tn, tn);
        g = r;
    }

    /* Whether every gradient is finite. */
    struct val fin = fresh(&e);
    out(&e, "    %s = \"stablehlo.is_finite\"(%s) : (%s) -> tensor<%zuxi1>\n", fin.s, g.s, tn, N);
    struct val yes = fresh(&e);
    out(&e, "    %s = stablehlo.constant dense<true> : " PRED "\n", yes.s);
    struct val all = fresh(&e), a1 = fresh(&e), a2 = fresh(&e), a3 = fresh(&e);
    out(&e, "    %s = \"stablehlo.reduce\"(%s, %s) ({\n", all.s, fin.s, yes.s);
    out(&e, "    ^bb0(%s: " PRED ", %s: " PRED "):\n", a1.s, a2.s);
    out(&e, "      %s = stablehlo.and %s, %s : " PRED "\n", a3.s, a1.s, a2.s);
    out(&e, "      \"stablehlo.return\"(%s) : (" PRED ") -> ()\n", a3.s);
    out(&e, "    }) {dimensions = array<i64: 0>} : (tensor<%zuxi1>, " PRED ") -> " PRED "\n", N);

    /* Adam (src/compute/cpu/backend.c's adam_update). */
    struct val sc[7];
    for (int i = 0; i < 7; i++) {
        char st[8], li[8];
        snprintf(st, sizeof(st), "%d", i);
        snprintf(li, sizeof(li), "%d", i + 1);
        struct val one = slice(&e, s, "tensor<8xf32>", T1(&e, 1), st, li, "1");
        sc[i] = bcast(&e, one, T1(&e, 1), tn, "0");
    }
    struct val m2 = ADD(&e, MUL(&e, m, sc[0], tn), MUL(&e, sc[1], g, tn), tn);
    struct val v2 = ADD(&e, MUL(&e, v, sc[2], tn), MUL(&e, MUL(&e, sc[3], g, tn), g, tn), tn);
    struct val denom = ADD(&e, DIV(&e, op1(&e, "sqrt", v2, tn), sc[4], tn), sc[5], tn);
    struct val p2 = ADD(&e, p, DIV(&e, MUL(&e, sc[6], m2, tn), denom, tn), tn);
    struct val res[3], olds[3] = { p, m, v }, news[3] = { p2, m2, v2 };
    for (int i = 0; i < 3; i++) {
        res[i] = fresh(&e);
        out(&e, "    %s = \"stablehlo.select\"(%s, %s, %s) : (" PRED ", %s, %s) -> %s\n", res[i].s,
            all.s, news[i].s, olds[i].s, tn, tn, tn);
    }
    struct val finf = fresh(&e);
    out(&e, "    %s = \"stablehlo.convert\"(%s) : (" PRED ") -> tensor<f32>\n", finf.s, all.s);
    out(&e, "    func.return %s, %s, %s, %s, %s : %s, %s, %s, %s, tensor<f32>\n", res[0].s,
        res[1].s, res[2].s, sq.s, finf.s, tn, tn, tn, tbo);
    out(&e, "  }\n}\n");
    return finish(&e);
}

char *tsrnn_pjrt_emit_forward(const struct tsrnn_model_dims *dims, size_t batch_count,
                              size_t step_count)
{
    struct emit e;
    if (!emit_init(&e, 1 << 15))
        return NULL;
    struct program pg;
    program_init(&pg, &e, dims, batch_count, step_count);
    size_t B = pg.B, T = pg.T, H = pg.H, O = pg.O, N = pg.N, L = dims->layer_count;
    size_t C = dims->input_count;
    bool lstm = dims->kind == TSRNN_MODEL_LSTM;

    char tlbh[64];
    snprintf(tlbh, sizeof(tlbh), "%s", T3(&e, L, B, H));
    out(&e, "module @tsrnn_forward attributes {mhlo.num_replicas = 1 : i32, "
            "mhlo.num_partitions = 1 : i32} {\n");
    struct val p = fresh(&e), x = fresh(&e), h0 = fresh(&e), c0 = fresh(&e);
    out(&e, "  func.func public @main(%s: %s, %s: %s, %s: %s", p.s, T1(&e, N), x.s, T3(&e, B, T, C),
        h0.s, tlbh);
    if (lstm)
        out(&e, ", %s: %s", c0.s, tlbh);
    out(&e, ") -> (%s, %s%s%s) {\n", T3(&e, T, B, O), tlbh, lstm ? ", " : "", lstm ? tlbh : "");
    pg.zero_i = cst_i32(&e, 0);
    pg.one_i = cst_i32(&e, 1);
    unpack_params(&pg, p);
    struct val o = model_forward(&pg, x, &h0, lstm ? &c0 : NULL, NULL);

    struct val hl[TSRNN_MODEL_MAX_LAYERS], cl[TSRNN_MODEL_MAX_LAYERS];
    const char *ts[TSRNN_MODEL_MAX_LAYERS];
    char t1bh[64];
    snprintf(t1bh, sizeof(t1bh), "%s", T3(&e, 1, B, H));
    for (size_t l = 0; l < L; l++) {
        ts[l] = t1bh;
        hl[l] = reshape(&e, pg.layer[l].h_last, T2(&e, B, H), t1bh);
        if (lstm)
            cl[l] = reshape(&e, pg.layer[l].c_last, T2(&e, B, H), t1bh);
    }
    struct val hT = concat(&e, hl, ts, L, 0, tlbh);
    struct val cT = lstm ? concat(&e, cl, ts, L, 0, tlbh) : hT;
    out(&e, "    func.return %s, %s%s%s : %s, %s%s%s\n", o.s, hT.s, lstm ? ", " : "",
        lstm ? cT.s : "", T3(&e, T, B, O), tlbh, lstm ? ", " : "", lstm ? tlbh : "");
    out(&e, "  }\n}\n");
    return finish(&e);
}
