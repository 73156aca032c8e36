/* grad_linalg.c — the backward rules of the decompositions and solves (Cholesky,
 * MatrixTriangularSolve, MatrixSolve, Qr, SelfAdjointEigV2, Svd, LogMatrixDeterminant,
 * MatrixBandPart), TensorFlow's formulas built from ops so they differentiate again and run on
 * every backend. An op with several TensorFlow outputs is one node per output here (attrs i1):
 * each rule gives its output's share, recomputing the other outputs; the shares add up to
 * TensorFlow's rule because it is linear in the incoming gradients. No kernels here. */
#include "grad.h"

#include "grad_arena.h"

static mp_tensor *mm(arena *a, mp_tensor *x, mp_tensor *y, int ta, int tb) {
    mp_tensor *in[2] = {x, y};
    mp_attrs at = {.i0 = ta, .i1 = tb};
    return run(a, MP_OP_MATMUL, 2, in, &at);
}

/* the last two axes swapped */
static mp_tensor *tr(arena *a, mp_tensor *x) {
    if (a->st != MP_OK || !x)
        return NULL;
    mp_attrs at = {.n_ints = x->ndim};
    for (int d = 0; d < x->ndim; d++)
        at.ints[d] = d;
    at.ints[x->ndim - 2] = x->ndim - 1;
    at.ints[x->ndim - 1] = x->ndim - 2;
    return run(a, MP_OP_TRANSPOSE, 1, &x, &at);
}

static mp_tensor *lin(arena *a, mp_op op, mp_tensor *x, mp_tensor *y, int64_t i0, int64_t i1) {
    mp_tensor *in[2] = {x, y};
    mp_attrs at = {.i0 = i0, .i1 = i1};
    return run(a, op, y ? 2 : 1, in, &at);
}
static mp_tensor *band(arena *a, mp_tensor *x, int64_t lo, int64_t up) {
    return lin(a, MP_OP_MATRIX_BAND_PART, x, NULL, lo, up);
}
static mp_tensor *scale(arena *a, mp_tensor *x, double v) { return bin(a, MP_OP_MUL, x, scalar(a, x, v)); }

/* x with a 1 inserted before its last axis (at = 0: (..., 1, n)) or after it (at = 1: (..., n, 1)) */
static mp_tensor *expand(arena *a, mp_tensor *x, int after) {
    if (a->st != MP_OK || !x)
        return NULL;
    int64_t s[MP_MAX_DIMS];
    int nd = x->ndim;
    for (int i = 0; i < nd; i++)
        s[i] = x->shape[i];
    if (after) {
        s[nd] = 1;
    } else {
        s[nd] = s[nd - 1];
        s[nd - 1] = 1;
    }
    return reshape(a, x, nd + 1, s);
}

/* columns [begin, begin + count) of x (along the last axis) */
static mp_tensor *cols(arena *a, mp_tensor *x, int64_t begin, int64_t count) {
    if (a->st != MP_OK || !x)
        return NULL;
    mp_attrs at = {.n_ints = x->ndim};
    for (int d = 0; d < x->ndim; d++) {
        at.ints[d] = d == x->ndim - 1 ? begin : 0;
        at.ints2[d] = d == x->ndim - 1 ? count : x->shape[d]; /* sizes, as grad.c's slice_of */
        at.ints3[d] = 1;
    }
    return run(a, MP_OP_STRIDED_SLICE, 1, &x, &at);
}

/* TensorFlow's _SafeReciprocal: x / (x^2 + 1e-20) (0 at 0) */
static mp_tensor *safe_recip(arena *a, mp_tensor *x) {
    mp_tensor *d = bin(a, MP_OP_ADD, bin(a, MP_OP_MUL, x, x), scalar(a, x, 1e-20));
    return bin(a, MP_OP_DIV, x, d);
}

/* g + g^H on the lower triangle with the diagonal halved: the symmetric-input rules' result
 * (the forward reads only the lower triangle) */
static mp_tensor *sym_lower(arena *a, mp_tensor *g) {
    mp_tensor *s = band(a, bin(a, MP_OP_ADD, g, tr(a, g)), -1, 0);
    return bin(a, MP_OP_SUB, s, scale(a, band(a, s, 0, 0), 0.5));
}

static mp_status done(arena *a, mp_tensor *g, mp_tensor **dx) {
    if (g && a->st == MP_OK)
        dx[0] = out(g);
    return finish(a);
}

/* Cholesky: phi = tril(L^H dL) with its diagonal halved; dA = sym(L^-H phi L^-1) / 2. */
mp_status mp_grad_cholesky(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    arena a = {0};
    mp_tensor *L = Y;
    mp_tensor *mid = mm(&a, L, dy, 1, 0);
    mid = bin(&a, MP_OP_SUB, band(&a, mid, -1, 0), scale(&a, band(&a, mid, 0, 0), 0.5));
    mp_tensor *t = lin(&a, MP_OP_MATRIX_TRIANGULAR_SOLVE, L, mid, 1, 1);              /* L^-H mid */
    mp_tensor *g = tr(&a, lin(&a, MP_OP_MATRIX_TRIANGULAR_SOLVE, L, tr(&a, t), 1, 1)); /* t L^-1 */
    return done(&a, scale(&a, bin(&a, MP_OP_ADD, g, tr(&a, g)), 0.5), dx);
}

/* MatrixTriangularSolve / MatrixSolve: db = solve(a, dy, !adjoint); da = -db c^H (adjoint:
 * -c db^H), on a's triangle for the triangular solve. */
static mp_status solve_grad(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx, int tri) {
    arena a = {0};
    int adj = (int)(tri ? n->attrs.i1 : n->attrs.i0), lower = (int)n->attrs.i0;
    mp_tensor *db = tri ? lin(&a, MP_OP_MATRIX_TRIANGULAR_SOLVE, IN(0), dy, lower, !adj)
                        : lin(&a, MP_OP_MATRIX_SOLVE, IN(0), dy, !adj, 0);
    if (need[0]) {
        mp_tensor *g = un(&a, MP_OP_NEG, adj ? mm(&a, Y, db, 0, 1) : mm(&a, db, Y, 0, 1));
        if (tri)
            g = lower ? band(&a, g, -1, 0) : band(&a, g, 0, -1);
        if (g && a.st == MP_OK)
            dx[0] = out(g);
    }
    if (need[1] && db && a.st == MP_OK)
        dx[1] = out(db);
    return finish(&a);
}
mp_status mp_grad_matrix_triangular_solve(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    return solve_grad(n, dy, need, dx, 1);
}
mp_status mp_grad_matrix_solve(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    return solve_grad(n, dy, need, dx, 0);
}

/* x r^-H for an upper-triangular r (TensorFlow's _TriangularSolve in _QrGrad) */
static mp_tensor *rsolve(arena *a, mp_tensor *x, mp_tensor *r) {
    return tr(a, lin(a, MP_OP_MATRIX_TRIANGULAR_SOLVE, r, tr(a, x), 0, 0));
}
/* TensorFlow's _QrGradSquareAndDeepMatrices; dq or dr may be NULL (zero) */
static mp_tensor *qr_grad_deep(arena *a, mp_tensor *q, mp_tensor *r, mp_tensor *dq, mp_tensor *dr) {
    mp_tensor *qdq = dq ? mm(a, q, dq, 1, 0) : NULL, *rdr = dr ? mm(a, r, dr, 0, 1) : NULL;
    mp_tensor *m = NULL;
    if (qdq)
        m = bin(a, MP_OP_SUB, qdq, tr(a, qdq));
    if (rdr) {
        mp_tensor *t = bin(a, MP_OP_SUB, rdr, tr(a, rdr));
        m = m ? bin(a, MP_OP_ADD, m, t) : t;
    }
    mp_tensor *tril = band(a, m, -1, 0);
    mp_tensor *inner = rsolve(a, tril, r);
    if (dr)
        inner = bin(a, MP_OP_ADD, dr, inner);
    mp_tensor *g = mm(a, q, inner, 0, 0);
    if (dq)
        g = bin(a, MP_OP_ADD, g, rsolve(a, bin(a, MP_OP_SUB, dq, mm(a, q, qdq, 0, 0)), r));
    return g;
}

/* Qr (TensorFlow's _QrGrad): the deep/square rule; a wide matrix is split a = [x, y],
 * r = [u, v] and reduced to the square case. Not for m > n with full_matrices. */
mp_status mp_grad_qr(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    mp_tensor *A = IN(0);
    int64_t m = A->shape[A->ndim - 2], nc = A->shape[A->ndim - 1];
    int full = (int)n->attrs.i0, which = (int)n->attrs.i1;
    if (m > nc && full)
        return mp_error_set(MP_ERR_NOT_IMPLEMENTED, "QrGrad not implemented when nrows > ncols and full_matrices is "
                                                    "true. Received r.shape=(%lld, %lld) with nrows=%lldand ncols=%lld.",
                            (long long)m, (long long)nc, (long long)m, (long long)nc);
    arena a = {0};
    mp_tensor *q = which == 0 ? Y : lin(&a, MP_OP_QR, A, NULL, full, 0);
    mp_tensor *r = which == 1 ? Y : lin(&a, MP_OP_QR, A, NULL, full, 1);
    mp_tensor *dq = which == 0 ? dy : NULL, *dr = which == 1 ? dy : NULL;
    if (m >= nc)
        return done(&a, qr_grad_deep(&a, q, r, dq, dr), dx);
    mp_tensor *y = cols(&a, A, m, nc - m), *u = cols(&a, r, 0, m);
    mp_tensor *dv = dr ? cols(&a, dr, m, nc - m) : NULL, *du = dr ? cols(&a, dr, 0, m) : NULL;
    mp_tensor *dq2 = dv ? mm(&a, y, dv, 0, 1) : NULL;
    if (dq)
        dq2 = dq2 ? bin(&a, MP_OP_ADD, dq, dq2) : dq;
    mp_tensor *gx = qr_grad_deep(&a, q, u, dq2, du);
    mp_tensor *gy = dv ? mm(&a, q, dv, 0, 0) : bin(&a, MP_OP_MUL, y, scalar(&a, y, 0.0));
    mp_tensor *parts[2] = {gx, gy};
    mp_attrs at = {.i0 = A->ndim - 1};
    return done(&a, run(&a, MP_OP_CONCAT, 2, parts, &at), dx);
}

/* SelfAdjointEigV2 (TensorFlow's _SelfAdjointEigV2Grad): dA = v (diag(de) + f * v^H dv) v^H with
 * f_ij = 1 / (e_j - e_i) off the diagonal, then g + g^H on the lower triangle, diagonal halved.
 * Exactly equal eigenvalues give 0 where TensorFlow's has inf. */
mp_status mp_grad_self_adjoint_eig(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    arena a = {0};
    mp_tensor *A = IN(0);
    int which = (int)n->attrs.i1;
    mp_tensor *v = which == 1 ? Y : lin(&a, MP_OP_SELF_ADJOINT_EIG, A, NULL, 0, 1);
    mp_tensor *inner;
    if (which == 0) {
        inner = bin(&a, MP_OP_MUL, expand(&a, dy, 1), tr(&a, v)); /* diag(de) v^H */
    } else {
        mp_tensor *e = lin(&a, MP_OP_SELF_ADJOINT_EIG, A, NULL, 0, 0);
        mp_tensor *diff = bin(&a, MP_OP_SUB, expand(&a, e, 0), expand(&a, e, 1)); /* e_j - e_i */
        mp_tensor *f = bin(&a, MP_OP_DIV_NO_NAN, scalar(&a, diff, 1.0), diff);
        inner = mm(&a, bin(&a, MP_OP_MUL, f, mm(&a, v, dy, 1, 0)), v, 0, 1);
    }
    return done(&a, sym_lower(&a, mm(&a, v, inner, 0, 0)), dx);
}

/* Svd (TensorFlow's _SvdGrad) for one of s, u, v's incoming gradient (the others zero). */
mp_status mp_grad_svd(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    mp_tensor *A = IN(0);
    int64_t M = A->shape[A->ndim - 2], N = A->shape[A->ndim - 1];
    int full = (int)n->attrs.i0, which = (int)n->attrs.i1;
    if (full && (M - N > 1 || N - M > 1))
        return mp_error_set(MP_ERR_NOT_IMPLEMENTED,
                            "svd gradient is not implemented for abs(m - n) > 1 when full_matrices is True. "
                            "Received: m=%lld and n=%lld",
                            (long long)(M < N ? M : N), (long long)(M < N ? N : M));
    arena a = {0};
    if (which == 0) { /* u_r diag(ds) v_r^H with the reduced factors */
        mp_tensor *u = lin(&a, MP_OP_SVD, A, NULL, 0, 1), *v = lin(&a, MP_OP_SVD, A, NULL, 0, 2);
        return done(&a, mm(&a, bin(&a, MP_OP_MUL, u, expand(&a, dy, 0)), v, 0, 1), dx);
    }
    mp_tensor *s = lin(&a, MP_OP_SVD, A, NULL, full, 0);
    mp_tensor *u = which == 1 ? Y : lin(&a, MP_OP_SVD, A, NULL, full, 1);
    mp_tensor *v = which == 2 ? Y : lin(&a, MP_OP_SVD, A, NULL, full, 2);
    mp_tensor *gu = which == 1 ? dy : NULL, *gv = which == 2 ? dy : NULL;
    int64_t m = M, nn = N;
    int adjoint = M > N;
    if (adjoint) { /* the rule for A^H = v s u^H, transposed at the end */
        mp_tensor *t = u;
        u = v;
        v = t;
        t = gu;
        gu = gv;
        gv = t;
        m = N;
        nn = M;
    }
    mp_tensor *s2 = bin(&a, MP_OP_MUL, s, s);
    mp_tensor *f = safe_recip(&a, bin(&a, MP_OP_SUB, expand(&a, s2, 0), expand(&a, s2, 1)));
    mp_tensor *v1 = cols(&a, v, 0, m);
    mp_tensor *srow = expand(&a, s, 0), *scol = expand(&a, s, 1);
    mp_tensor *nouv; /* (f_u + f_u^H) diag(s) or diag(s) (f_v + f_v^H) */
    mp_tensor *gv1 = gv ? cols(&a, gv, 0, m) : NULL;
    if (gu) {
        mp_tensor *fu = bin(&a, MP_OP_MUL, f, mm(&a, u, gu, 1, 0));
        nouv = bin(&a, MP_OP_MUL, bin(&a, MP_OP_ADD, fu, tr(&a, fu)), srow);
    } else {
        mp_tensor *fv = bin(&a, MP_OP_MUL, f, mm(&a, v1, gv1, 1, 0));
        nouv = bin(&a, MP_OP_MUL, scol, bin(&a, MP_OP_ADD, fv, tr(&a, fv)));
    }
    mp_tensor *g = mm(&a, u, mm(&a, nouv, v1, 0, 1), 0, 0);
    if (gv && m != nn) {
        mp_tensor *gv1t = tr(&a, gv1);
        mp_tensor *nous = bin(&a, MP_OP_SUB, gv1t, mm(&a, mm(&a, gv1t, v1, 0, 0), v1, 0, 1));
        if (full) {
            mp_tensor *v2 = cols(&a, v, m, nn - m), *gv2 = cols(&a, gv, m, nn - m);
            nous = bin(&a, MP_OP_SUB, nous, mm(&a, mm(&a, v1, gv2, 1, 0), v2, 0, 1));
        }
        mp_tensor *us = bin(&a, MP_OP_MUL, u, expand(&a, safe_recip(&a, s), 0));
        g = bin(&a, MP_OP_ADD, g, mm(&a, us, nous, 0, 0));
    }
    return done(&a, adjoint ? tr(&a, g) : g, dx);
}

/* LogMatrixDeterminant: the sign has no gradient (zeros); log|det|: dy[..., None, None] a^-H. */
mp_status mp_grad_log_matrix_determinant(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    arena a = {0};
    mp_tensor *A = IN(0);
    if (n->attrs.i1 == 0)
        return done(&a, bin(&a, MP_OP_MUL, A, scalar(&a, A, 0.0)), dx);
    mp_tensor *inv = lin(&a, MP_OP_MATRIX_INVERSE, A, NULL, 1, 0);
    return done(&a, bin(&a, MP_OP_MUL, expand(&a, expand(&a, dy, 1), 1), inv), dx);
}

/* MatrixBandPart: the same band of dy. */
mp_status mp_grad_matrix_band_part(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx) {
    (void)need;
    arena a = {0};
    return done(&a, band(&a, dy, n->attrs.i0, n->attrs.i1), dx);
}
