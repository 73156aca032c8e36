/* grad.h — what the tape records per op call, and the backward rules (grad.c). */
#ifndef MP_GRAD_H
#define MP_GRAD_H
#include "mixprec.h"

/* One recorded op call. inputs/output are saved (referenced) for the backward rule.
 * in_ids[k] is normally inputs[k]->id; for a variable read it is the variable's id. */
typedef struct mp_node {
    mp_op op;
    mp_attrs attrs;
    int n_in;
    int64_t *in_ids;
    mp_tensor **inputs;
    mp_tensor *output;
    /* a custom gradient (tf.custom_gradient): when set, backward calls custom_fn instead of
     * the op's rule; the node holds one reference on custom_ctx (custom_ref). */
    mp_custom_backward_fn custom_fn;
    mp_custom_ref_fn custom_ref;
    void *custom_ctx;
    /* the outputs of one custom call are custom_count consecutive nodes; the walk calls
     * custom_fn once, at the last (custom_index == custom_count - 1), with every dy */
    int custom_index, custom_count;
} mp_node;

/* Does this op carry gradients at all (comparisons, argmax, random … do not)? */
int mp_grad_is_differentiable(mp_op op);

/* dx[k] (new references or NULL) for the inputs with need[k] set, given dy = dL/d(output).
 * Each dx[k] has inputs[k]'s shape and dtype. Uses mp_op_run, so outer tapes record it. */
mp_status mp_grad_apply(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx);

/* The backward rules of the array ops (grad_array.c): GatherNd, TensorScatter*, ReverseV2, Roll. */
mp_status mp_grad_gather_nd(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx);
mp_status mp_grad_tensor_scatter(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx);
mp_status mp_grad_permute(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx);
/* ImageProjectiveTransformV3 (grad_image.c): TensorFlow's inverse-transform rule */
mp_status mp_grad_image_transform(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx);
/* grad_linalg.c: the decompositions and solves */
mp_status mp_grad_cholesky(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx);
mp_status mp_grad_matrix_triangular_solve(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx);
mp_status mp_grad_matrix_solve(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx);
mp_status mp_grad_qr(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx);
mp_status mp_grad_self_adjoint_eig(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx);
mp_status mp_grad_svd(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx);
mp_status mp_grad_log_matrix_determinant(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx);
mp_status mp_grad_matrix_band_part(const mp_node *n, mp_tensor *dy, const int *need, mp_tensor **dx);
#endif
