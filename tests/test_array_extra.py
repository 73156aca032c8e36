"""TensorFlow's array names of mixprec/_array_extra.py against TensorFlow 2.21's own results:
the EXPECTED literals were recorded with TensorFlow 2.21 (CPU) running the same calls, values
as float64 lists, errors as TensorFlow's exception class and a fragment of its message."""

# ruff: noqa: E501  (the recorded cases and results are one line each)
import math
import re

import numpy as np
import pytest

import mixprec as tf
from mixprec.testing.tolerances import assert_close

C = tf.constant
nan = math.nan


def f32(*s):
    return tf.reshape(tf.range(float(np.prod(s))), s)


cases = {
 "sort1": lambda: tf.sort(C([3., 1., 2., 1.])),
 "sortd": lambda: tf.sort(C([[3, 1, 2], [0, 5, 5]]), direction="DESCENDING"),
 "sortax0": lambda: tf.sort(C([[3., 1.], [0., 5.], [2., 2.]]), axis=0),
 "sortint": lambda: tf.sort(C([3, -2147483648, 1, 1], tf.int32)),
 "sort_u8": lambda: tf.sort(C([3, 1, 2], tf.uint8)),
 "sort_bad_dir": lambda: tf.sort(C([1., 2.]), direction="UP"),
 "sort_bool": lambda: tf.sort(C([True, False])),
 "argsort": lambda: tf.argsort(C([3, 1, 1, 2])),
 "argsortd": lambda: tf.argsort(C([3, 1, 1, 2]), direction="DESCENDING"),
 "argsort2d": lambda: tf.argsort(C([[3., 1.], [0., 5.], [2., 2.]]), axis=0),
 "topk": lambda: tf.math.top_k(C([[1., 5., 3., 5.], [2., 2., 2., 9.]]), k=2),
 "topk_nn": lambda: tf.nn.top_k(C([1, 5, 3]), 3),
 "topk_i64": lambda: tf.math.top_k(C([1., 5., 3.]), 2, index_type=tf.int64),
 "topk_k0": lambda: tf.math.top_k(C([1., 5., 3.]), 0),
 "topk_bigk": lambda: tf.math.top_k(C([1, 2, 3]), k=4),
 "topk_negk": lambda: tf.math.top_k(C([1., 2, 3]), k=-1),
 "topk_scalar": lambda: tf.math.top_k(C(1.), k=1),
 "topk_f16": lambda: tf.math.top_k(C([[1., 2, 3], [3, 3, 1]], tf.float16), k=2),
 "unique": lambda: tf.unique(C([1, 1, 2, 4, 4, 4, 7, 8, 8])),
 "unique_f": lambda: tf.unique(C([0.0, -0.0, 1.5, 1.5])),
 "unique_i64": lambda: tf.unique(C([5, 3, 5]), out_idx=tf.int64),
 "unique_2d": lambda: tf.unique(C([[1, 2]])),
 "uwc": lambda: tf.unique_with_counts(C([1, 1, 2, 4, 4, 4, 7, 8, 8])),
 "reverse": lambda: tf.reverse(f32(2, 3), [1]),
 "reverse2": lambda: tf.reverse(f32(2, 3), [0, -1]),
 "reverse_dup": lambda: tf.reverse(f32(2, 3), [1, 1]),
 "reverse_oob": lambda: tf.reverse(f32(2, 3), [2]),
 "roll": lambda: tf.roll(f32(2, 3), 1, 1),
 "roll2": lambda: tf.roll(f32(2, 3), [1, -4], [0, 1]),
 "roll_same": lambda: tf.roll(f32(5), [2, 1], [0, 0]),
 "roll_mismatch": lambda: tf.roll(f32(5), [2, 1], [0]),
 "repeat": lambda: tf.repeat(C([[1, 2], [3, 4]]), repeats=[2, 3], axis=0),
 "repeat_s": lambda: tf.repeat(C([[1, 2], [3, 4]]), 2, axis=1),
 "repeat_flat": lambda: tf.repeat(C([[1, 2], [3, 4]]), 2),
 "repeat0": lambda: tf.repeat(C([1., 2.]), [0, 2]),
 "gnd": lambda: tf.gather_nd(f32(3, 4), [[0, 1], [2, 3]]),
 "gnd_rows": lambda: tf.gather_nd(f32(3, 4), [[2], [0]]),
 "gnd_oob": lambda: tf.gather_nd(f32(3, 4), [[0, 4]]),
 "gnd_rank": lambda: tf.gather_nd(f32(3, 4), [[0, 1, 2]]),
 "gnd_b1": lambda: tf.gather_nd(f32(2, 3, 4), [[1], [2]], batch_dims=1),
 "gnd_b1b": lambda: tf.gather_nd(f32(2, 3, 4), [[[1, 0]], [[2, 3]]], batch_dims=1),
 "gnd_empty": lambda: tf.gather_nd(f32(3, 4), tf.zeros([2, 0], tf.int32)),
 "gnd_float": lambda: tf.gather_nd(f32(3, 4), [[0., 1.]]),
 "gather_b1": lambda: tf.gather(f32(2, 3, 4), [[0, 2], [1, 1]], axis=1, batch_dims=1),
 "gather_b1ax2": lambda: tf.gather(f32(2, 3, 4), [[0, 3], [1, 1]], axis=2, batch_dims=1),
 "gather_b2": lambda: tf.gather(f32(2, 3, 4), [[[0], [3], [1]], [[1], [2], [0]]], axis=2, batch_dims=2),
 "gather_bneg": lambda: tf.gather(f32(2, 3), [[0, 2], [1, 1]], axis=1, batch_dims=-1),
 "gather_b_gt_axis": lambda: tf.gather(f32(2, 3, 4), [[0, 2], [1, 1]], axis=0, batch_dims=1),
 "gather_b_gt_neg": lambda: tf.gather(f32(2, 3, 4), [[0, 1], [1, 0]], axis=-3, batch_dims=1),
 "gather_b_mismatch": lambda: tf.gather(f32(2, 3), [[0], [1], [1]], axis=1, batch_dims=1),
 "snd": lambda: tf.scatter_nd([[1], [3], [1]], [9., 10., 11.], [4]),
 "snd2": lambda: tf.scatter_nd([[0], [2]], [[5, 5, 5], [6, 6, 6]], [4, 3]),
 "snd_oob": lambda: tf.scatter_nd([[5]], [9.], [4]),
 "snd_mismatch": lambda: tf.scatter_nd([[1]], [9., 2.], [4]),
 "snd_neg": lambda: tf.scatter_nd([[1]], [9.], [-4]),
 "snd_bool": lambda: tf.scatter_nd([[1]], [True], [3]),
 "tsu": lambda: tf.tensor_scatter_nd_update(C([1., 2, 3, 4]), [[1], [3], [1]], [9., 0., -1.]),
 "tsa": lambda: tf.tensor_scatter_nd_add(C([1., 2, 3, 4]), [[1], [3], [1]], [9., 0., -1.]),
 "tss": lambda: tf.tensor_scatter_nd_sub(C([1, 2, 3, 4]), [[1], [3], [1]], [9, 0, -1]),
 "tsmin": lambda: tf.tensor_scatter_nd_min(C([1., 2, 3, 4]), [[1], [3], [1]], [9., 0., -1.]),
 "tsmax": lambda: tf.tensor_scatter_nd_max(C([1., 2, 3, 4]), [[1], [3], [1]], [9., 0., -1.]),
 "tsu_oob": lambda: tf.tensor_scatter_nd_update(C([1., 2, 3, 4]), [[4]], [9.]),
 "tsu_neg": lambda: tf.tensor_scatter_nd_update(C([1., 2, 3, 4]), [[-1]], [9.]),
 "tsa_outer": lambda: tf.tensor_scatter_nd_add(C([1., 2, 3, 4]), [[1]], [9., 1.]),
 "tsu_rows": lambda: tf.tensor_scatter_nd_update(tf.zeros([2, 3]), [[1]], [[9., 1., 2.]]),
 "tsu_inner": lambda: tf.tensor_scatter_nd_update(tf.zeros([2, 3]), [[1]], [[9., 1.]]),
 "tsu_bool": lambda: tf.tensor_scatter_nd_update(C([True, False]), [[1]], [True]),
 "tsu_intlist": lambda: tf.tensor_scatter_nd_add(C([1., 2.]), [[1]], [9]),
 "bmask": lambda: tf.boolean_mask(f32(3, 2), [True, False, True]),
 "bmask2d": lambda: tf.boolean_mask(f32(2, 2, 3), [[True, False], [False, True]]),
 "bmask_ax": lambda: tf.boolean_mask(f32(2, 3, 2), [True, False, True], axis=1),
 "bmask_bad": lambda: tf.boolean_mask(f32(3, 2), [True, False]),
 "where1": lambda: tf.where(C([[True, False], [True, True]])),
 "where_f": lambda: tf.where(C([0., 1., -2.])),
 "eye": lambda: tf.eye(3),
 "eye2": lambda: tf.eye(2, 3, dtype=tf.int32),
 "eye_b": lambda: tf.eye(2, batch_shape=[2]),
 "linalg_eye": lambda: tf.linalg.eye(2),
 "linspace": lambda: tf.linspace(0., 1., 5),
 "linspace3": lambda: tf.linspace(-1., 7., 3),
 "linspace_nd": lambda: tf.linspace(C([0., 1.]), C([1., 3.]), 3),
 "linspace_ax": lambda: tf.linspace(C([0., 1.]), C([1., 3.]), 3, axis=-1),
 "linspace1": lambda: tf.linspace(2., 5., 1),
 "linspace_f64": lambda: tf.linspace(C(0., tf.float64), C(1., tf.float64), 7),
 "mesh_xy": lambda: tf.meshgrid([1, 2, 3], [4, 5]),
 "mesh_ij": lambda: tf.meshgrid([1, 2, 3], [4, 5], indexing="ij"),
 "mesh3": lambda: tf.meshgrid([1, 2], [3, 4, 5], [6], indexing="xy"),
 "mesh_bad": lambda: tf.meshgrid([1, 2], indexing="foo"),
 "seqmask": lambda: tf.sequence_mask([1, 3, 2], 5),
 "seqmask_none": lambda: tf.sequence_mask([[1, 3], [2, 0]]),
 "seqmask_f": lambda: tf.sequence_mask(C([1, 2]), 3, dtype=tf.float32),
 "tdot1": lambda: tf.tensordot(f32(2, 3), f32(3, 4), 1),
 "tdot0": lambda: tf.tensordot(C([1., 2.]), C([3., 4., 5.]), 0),
 "tdot_ax": lambda: tf.tensordot(f32(2, 3, 4), f32(4, 3, 5), [[1, 2], [1, 0]]),
 "tdot_bad": lambda: tf.tensordot(f32(2, 3), f32(2, 4), 1),
 "norm": lambda: tf.norm(C([[3., 4.], [0., 1.]])),
 "norm_ax": lambda: tf.norm(C([[3., 4.], [0., 1.]]), axis=1),
 "norm_1": lambda: tf.norm(C([[3., -4.], [0., 1.]]), ord=1, axis=0),
 "norm_inf": lambda: tf.norm(C([[3., -4.], [0., 1.]]), ord=np.inf),
 "norm_p3": lambda: tf.norm(C([1., 2., 3.]), ord=3),
 "norm_fro": lambda: tf.norm(f32(2, 2, 3), ord="fro", axis=[1, 2]),
 "norm_m1": lambda: tf.norm(C([[1., -2.], [3., 4.]]), ord=1, axis=[0, 1]),
 "norm_minf": lambda: tf.norm(C([[1., -2.], [3., 4.]]), ord=np.inf, axis=[-2, -1]),
 "norm_keep": lambda: tf.norm(f32(2, 3), axis=1, keepdims=True),
 "norm_bad": lambda: tf.norm(C([1., 2.]), ord=-1),
 "norm_bad_m": lambda: tf.norm(C([[1., 2.]]), ord=3, axis=[0, 1]),
 "ssorted": lambda: tf.searchsorted(C([[0., 3., 9., 9., 10.], [1., 2., 3., 4., 5.]]), C([[2., 9., 10.], [0., 2., 6.]])),
 "ssorted_r": lambda: tf.searchsorted(C([0., 3., 9., 9., 10.]), C([2., 9., 10.]), side="right"),
 "ssorted_i64": lambda: tf.searchsorted(C([1, 3]), C([2]), out_type=tf.int64),
 "s2d": lambda: tf.nn.space_to_depth(f32(1, 4, 4, 2), 2),
 "d2s": lambda: tf.nn.depth_to_space(f32(1, 2, 2, 8), 2),
 "s2d_bad": lambda: tf.nn.space_to_depth(f32(1, 3, 4, 2), 2),
 "s2b": lambda: tf.space_to_batch_nd(f32(1, 4, 4, 1), [2, 2], [[0, 0], [0, 0]]),
 "s2b_pad": lambda: tf.space_to_batch_nd(f32(2, 2, 4, 1), [2, 2], [[1, 1], [0, 0]]),
 "b2s": lambda: tf.batch_to_space(f32(4, 2, 2, 1), [2, 2], [[0, 0], [0, 0]]),
 "b2s_crop": lambda: tf.batch_to_space(f32(8, 2, 2, 1), [2, 2], [[1, 1], [0, 1]]),
 "unravel": lambda: tf.unravel_index(C([2, 5, 7]), C([3, 3])),
 "unravel_s": lambda: tf.unravel_index(C(5), [2, 3]),
 "unravel_oob": lambda: tf.unravel_index(C([9]), [3, 3]),
 "identity_n": lambda: tf.identity_n([C(1.), C([1, 2])]),
 "shape_n": lambda: tf.shape_n([f32(2, 3), C(1)]),
 "shape_n64": lambda: tf.shape_n([f32(2, 3)], out_type=tf.int64),
 "bds": lambda: tf.broadcast_dynamic_shape(C([1, 3]), C([2, 1])),
 "bds_bad": lambda: tf.broadcast_dynamic_shape(C([2]), C([3])),
 "bss": lambda: tf.broadcast_static_shape(tf.TensorShape([1, 3]), tf.TensorShape([2, 1])),
 "bss_bad": lambda: tf.broadcast_static_shape(tf.TensorShape([2]), tf.TensorShape([3])),
 "dpart": lambda: tf.dynamic_partition(C([10, 20, 30, 40, 50]), C([0, 0, 1, 1, 0]), 2),
 "dpart2": lambda: tf.dynamic_partition(f32(3, 2), C([1, 1, 1]), 3),
 "dpart_bad": lambda: tf.dynamic_partition(C([10, 20]), C([0, 5]), 2),
 "dstitch": lambda: tf.dynamic_stitch([C([6]), C([4, 1]), C([[5, 2], [0, 3]])], [C([61.]), C([41., 11.]), C([[51., 21.], [1., 31.]])]),
 "dstitch_dup": lambda: tf.dynamic_stitch([C([0, 1]), C([1])], [C([1., 2.]), C([9.])]),
 "revseq": lambda: tf.reverse_sequence(f32(2, 4), C([2, 3]), seq_axis=1, batch_axis=0),
 "revseq_t": lambda: tf.reverse_sequence(f32(4, 2, 3), C([4, 1]), seq_axis=0, batch_axis=1),
 "revseq_bad": lambda: tf.reverse_sequence(f32(2, 4), C([5, 3]), seq_axis=1),
 "mapfn": lambda: tf.map_fn(lambda x: x * 2, C([1., 2., 3.])),
 "mapfn_sig": lambda: tf.map_fn(lambda x: tf.cast(x, tf.int32), C([1.5, 2.5]), fn_output_signature=tf.int32),
 "mapfn_tuple": lambda: tf.map_fn(lambda t: t[0] + t[1], (C([1, 2]), C([10, 20]))),
 "mapfn_empty": lambda: tf.map_fn(lambda x: x, tf.zeros([0, 2])),
 "foldl": lambda: tf.foldl(lambda a, x: a + x, C([1, 2, 3, 4])),
 "foldl_init": lambda: tf.foldl(lambda a, x: a * 10 + x, C([1, 2, 3]), initializer=C(0)),
 "foldr": lambda: tf.foldr(lambda a, x: a * 10 + x, C([1, 2, 3]), initializer=C(0)),
 "scan": lambda: tf.scan(lambda a, x: a + x, C([1, 2, 3, 4])),
 "scan_rev": lambda: tf.scan(lambda a, x: a + x, C([1, 2, 3, 4]), initializer=C(10), reverse=True),
 "vmap": lambda: tf.vectorized_map(lambda x: tf.reduce_sum(x), f32(3, 2)),
 "in_top_k": lambda: tf.math.in_top_k(C([2, 2, 0]), C([[0.1, 0.9, 0.9], [0.8, 0.2, nan], [1., 2., 3.]]), 1),
 "in_top_k2": lambda: tf.nn.in_top_k(C([0, 1, 5]), C([[0.1, 0.9, 0.9], [0.8, 0.2, nan], [1., 2., 3.]]), 2),
 "in_top_k_f64": lambda: tf.math.in_top_k(C([1]), C([[1., 2.]], tf.float64), 1),
 "in_top_k_ft": lambda: tf.math.in_top_k(C([1.]), C([[1., 2.]]), 1),
 "norm_fro_vec": lambda: tf.norm(C([[3., -4.], [1., 2.]]), "fro"),
 "norm_ax1": lambda: tf.norm(C([[3., -4.], [1., 2.]]), axis=(0,)),
 "norm_ax_oob": lambda: tf.norm(C([[3., -4.], [1., 2.]]), axis=3),
 "norm_half": lambda: tf.norm(C([[3., -4.], [1., 2.]]), 0.5),
 "unravel_2d": lambda: tf.unravel_index(C([[1, 5], [2, 3]]), C([2, 3])),
 "bds_dtypes": lambda: tf.broadcast_dynamic_shape(C([5, 1, 3], tf.int64), C([4, 1])),
 "scatter_i64": lambda: tf.scatter_nd(C([[0], [0]], tf.int64), C([1, 2]), C([3], tf.int64)),
 "tdot_axes2": lambda: tf.tensordot(C([[1., 2.], [3., 4.]]), C([[1., 0.], [0., 1.]]), axes=2),
 "tdot_pair": lambda: tf.tensordot(C([1., 2.]), C([3., 4.]), axes=[0, 0]),
 "seqmask_neg": lambda: tf.sequence_mask(C([2, -1]), 3),
 "repeat_scalar": lambda: tf.repeat(C(5), 3),
 "bmask_2d": lambda: tf.boolean_mask(C([[1, 2], [3, 4]]), C([[True, False], [False, True]])),
 "eye_batch2": lambda: tf.eye(2, 3, batch_shape=[2, 1]),
 "dpart_2d": lambda: tf.dynamic_partition(C([[1, 2], [3, 4]]), C([[0, 1], [1, 0]]), 2),
 "revseq_zero": lambda: tf.reverse_sequence(C([[1, 2, 3], [4, 5, 6]]), C([3, 0], tf.int64), seq_axis=1),
 "foldr_sub": lambda: tf.foldr(lambda a, x: a - x, C([1, 2, 3])),
 "scan_sub_rev": lambda: tf.scan(lambda a, x: a - x, C([1, 2, 3]), reverse=True),
}

# TensorFlow 2.21's results: [dtype, shape, values] (nested for lists/tuples)
EXPECTED = {
    'in_top_k': ["bool", [3], [True, False, False]],
    'in_top_k2': ["bool", [3], [False, False, False]],
    'norm_half': ["float32", [], 37.77657],
    'scatter_i64': ["int32", [3], [3.0, 0.0, 0.0]],
    'tdot_axes2': ["float32", [], 5.0],
    'tdot_pair': ["float32", [], 11.0],
    'seqmask_neg': ["bool", [2, 3], [[True, True, False], [False, False, False]]],
    'repeat_scalar': ["int32", [3], [5.0, 5.0, 5.0]],
    'bmask_2d': ["int32", [2], [1.0, 4.0]],
    'eye_batch2': ["float32", [2, 1, 2, 3], [[[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]], [[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]]]],
    'dpart_2d': [["int32", [2], [1.0, 4.0]], ["int32", [2], [2.0, 3.0]]],
    'revseq_zero': ["int32", [2, 3], [[3.0, 2.0, 1.0], [4.0, 5.0, 6.0]]],
    'foldr_sub': ["int32", [], 0.0],
    'scan_sub_rev': ["int32", [3], [0.0, 1.0, 3.0]],
    'sort1': ["float32", [4], [1.0, 1.0, 2.0, 3.0]],
    'sortd': ["int32", [2, 3], [[3.0, 2.0, 1.0], [5.0, 5.0, 0.0]]],
    'sortax0': ["float32", [3, 2], [[0.0, 1.0], [2.0, 2.0], [3.0, 5.0]]],
    'sortint': ["int32", [4], [-2147483648.0, 1.0, 1.0, 3.0]],
    'sort_u8': ["uint8", [3], [1.0, 2.0, 3.0]],
    'argsort': ["int32", [4], [1.0, 2.0, 3.0, 0.0]],
    'argsortd': ["int32", [4], [0.0, 3.0, 1.0, 2.0]],
    'argsort2d': ["int32", [3, 2], [[1.0, 0.0], [2.0, 2.0], [0.0, 1.0]]],
    'topk': [["float32", [2, 2], [[5.0, 5.0], [9.0, 2.0]]], ["int32", [2, 2], [[1.0, 3.0], [3.0, 0.0]]]],
    'topk_nn': [["int32", [3], [5.0, 3.0, 1.0]], ["int32", [3], [1.0, 2.0, 0.0]]],
    'topk_i64': [["float32", [2], [5.0, 3.0]], ["int64", [2], [1.0, 2.0]]],
    'topk_k0': [["float32", [0], []], ["int32", [0], []]],
    'topk_f16': [["float16", [2, 2], [[3.0, 2.0], [3.0, 3.0]]], ["int32", [2, 2], [[2.0, 1.0], [0.0, 1.0]]]],
    'unique': [["int32", [5], [1.0, 2.0, 4.0, 7.0, 8.0]], ["int32", [9], [0.0, 0.0, 1.0, 2.0, 2.0, 2.0, 3.0, 4.0, 4.0]]],
    'unique_f': [["float32", [2], [0.0, 1.5]], ["int32", [4], [0.0, 0.0, 1.0, 1.0]]],
    'unique_i64': [["int32", [2], [5.0, 3.0]], ["int64", [3], [0.0, 1.0, 0.0]]],
    'uwc': [["int32", [5], [1.0, 2.0, 4.0, 7.0, 8.0]], ["int32", [9], [0.0, 0.0, 1.0, 2.0, 2.0, 2.0, 3.0, 4.0, 4.0]], ["int32", [5], [2.0, 1.0, 3.0, 1.0, 2.0]]],
    'reverse': ["float32", [2, 3], [[2.0, 1.0, 0.0], [5.0, 4.0, 3.0]]],
    'reverse2': ["float32", [2, 3], [[5.0, 4.0, 3.0], [2.0, 1.0, 0.0]]],
    'roll': ["float32", [2, 3], [[2.0, 0.0, 1.0], [5.0, 3.0, 4.0]]],
    'roll2': ["float32", [2, 3], [[4.0, 5.0, 3.0], [1.0, 2.0, 0.0]]],
    'roll_same': ["float32", [5], [2.0, 3.0, 4.0, 0.0, 1.0]],
    'repeat': ["int32", [5, 2], [[1.0, 2.0], [1.0, 2.0], [3.0, 4.0], [3.0, 4.0], [3.0, 4.0]]],
    'repeat_s': ["int32", [2, 4], [[1.0, 1.0, 2.0, 2.0], [3.0, 3.0, 4.0, 4.0]]],
    'repeat_flat': ["int32", [8], [1.0, 1.0, 2.0, 2.0, 3.0, 3.0, 4.0, 4.0]],
    'repeat0': ["float32", [2], [2.0, 2.0]],
    'gnd': ["float32", [2], [1.0, 11.0]],
    'gnd_rows': ["float32", [2, 4], [[8.0, 9.0, 10.0, 11.0], [0.0, 1.0, 2.0, 3.0]]],
    'gnd_b1': ["float32", [2, 4], [[4.0, 5.0, 6.0, 7.0], [20.0, 21.0, 22.0, 23.0]]],
    'gnd_b1b': ["float32", [2, 1], [[4.0], [23.0]]],
    'gnd_empty': ["float32", [2, 3, 4], [[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0]], [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0]]]],
    'gather_b1': ["float32", [2, 2, 4], [[[0.0, 1.0, 2.0, 3.0], [8.0, 9.0, 10.0, 11.0]], [[16.0, 17.0, 18.0, 19.0], [16.0, 17.0, 18.0, 19.0]]]],
    'gather_b1ax2': ["float32", [2, 3, 2], [[[0.0, 3.0], [4.0, 7.0], [8.0, 11.0]], [[13.0, 13.0], [17.0, 17.0], [21.0, 21.0]]]],
    'gather_b2': ["float32", [2, 3, 1], [[[0.0], [7.0], [9.0]], [[13.0], [18.0], [20.0]]]],
    'gather_bneg': ["float32", [2, 2], [[0.0, 2.0], [4.0, 4.0]]],
    'snd': ["float32", [4], [0.0, 20.0, 0.0, 10.0]],
    'snd2': ["int32", [4, 3], [[5.0, 5.0, 5.0], [0.0, 0.0, 0.0], [6.0, 6.0, 6.0], [0.0, 0.0, 0.0]]],
    'snd_bool': ["bool", [3], [False, True, False]],
    'tsu': ["float32", [4], [1.0, -1.0, 3.0, 0.0]],
    'tsa': ["float32", [4], [1.0, 10.0, 3.0, 4.0]],
    'tss': ["int32", [4], [1.0, -6.0, 3.0, 4.0]],
    'tsmin': ["float32", [4], [1.0, -1.0, 3.0, 0.0]],
    'tsmax': ["float32", [4], [1.0, 9.0, 3.0, 4.0]],
    'tsu_rows': ["float32", [2, 3], [[0.0, 0.0, 0.0], [9.0, 1.0, 2.0]]],
    'tsu_bool': ["bool", [2], [True, True]],
    'tsu_intlist': ["float32", [2], [1.0, 11.0]],
    'bmask': ["float32", [2, 2], [[0.0, 1.0], [4.0, 5.0]]],
    'bmask2d': ["float32", [2, 3], [[0.0, 1.0, 2.0], [9.0, 10.0, 11.0]]],
    'bmask_ax': ["float32", [2, 2, 2], [[[0.0, 1.0], [4.0, 5.0]], [[6.0, 7.0], [10.0, 11.0]]]],
    'where1': ["int64", [3, 2], [[0.0, 0.0], [1.0, 0.0], [1.0, 1.0]]],
    'where_f': ["int64", [2, 1], [[1.0], [2.0]]],
    'eye': ["float32", [3, 3], [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]],
    'eye2': ["int32", [2, 3], [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]],
    'eye_b': ["float32", [2, 2, 2], [[[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, 1.0]]]],
    'linalg_eye': ["float32", [2, 2], [[1.0, 0.0], [0.0, 1.0]]],
    'linspace': ["float32", [5], [0.0, 0.25, 0.5, 0.75, 1.0]],
    'linspace3': ["float32", [3], [-1.0, 3.0, 7.0]],
    'linspace_nd': ["float32", [3, 2], [[0.0, 1.0], [0.5, 2.0], [1.0, 3.0]]],
    'linspace_ax': ["float32", [2, 3], [[0.0, 0.5, 1.0], [1.0, 2.0, 3.0]]],
    'linspace1': ["float32", [1], [2.0]],
    'linspace_f64': ["float64", [7], [0.0, 0.16666666666666666, 0.3333333333333333, 0.5, 0.6666666666666666, 0.8333333333333333, 1.0]],
    'mesh_xy': [["int32", [2, 3], [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]], ["int32", [2, 3], [[4.0, 4.0, 4.0], [5.0, 5.0, 5.0]]]],
    'mesh_ij': [["int32", [3, 2], [[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]], ["int32", [3, 2], [[4.0, 5.0], [4.0, 5.0], [4.0, 5.0]]]],
    'mesh3': [["int32", [3, 2, 1], [[[1.0], [2.0]], [[1.0], [2.0]], [[1.0], [2.0]]]], ["int32", [3, 2, 1], [[[3.0], [3.0]], [[4.0], [4.0]], [[5.0], [5.0]]]], ["int32", [3, 2, 1], [[[6.0], [6.0]], [[6.0], [6.0]], [[6.0], [6.0]]]]],
    'seqmask': ["bool", [3, 5], [[True, False, False, False, False], [True, True, True, False, False], [True, True, False, False, False]]],
    'seqmask_none': ["bool", [2, 2, 3], [[[True, False, False], [True, True, True]], [[True, True, False], [False, False, False]]]],
    'seqmask_f': ["float32", [2, 3], [[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]]],
    'tdot1': ["float32", [2, 4], [[20.0, 23.0, 26.0, 29.0], [56.0, 68.0, 80.0, 92.0]]],
    'tdot0': ["float32", [2, 3], [[3.0, 4.0, 5.0], [6.0, 8.0, 10.0]]],
    'tdot_ax': ["float32", [2, 5], [[2200.0, 2266.0, 2332.0, 2398.0, 2464.0], [6160.0, 6370.0, 6580.0, 6790.0, 7000.0]]],
    'norm': ["float32", [], 5.099019527435303],
    'norm_ax': ["float32", [2], [5.0, 1.0]],
    'norm_1': ["float32", [2], [3.0, 5.0]],
    'norm_inf': ["float32", [], 4.0],
    'norm_p3': ["float32", [], 3.301927328109741],
    'norm_fro': ["float32", [2], [7.416198253631592, 21.23676109313965]],
    'norm_m1': ["float32", [], 6.0],
    'norm_minf': ["float32", [], 7.0],
    'norm_keep': ["float32", [2, 1], [[2.2360680103302], [7.071067810058594]]],
    'ssorted': ["int32", [2, 3], [[1.0, 2.0, 4.0], [0.0, 1.0, 5.0]]],
    'ssorted_r': ["int32", [3], [1.0, 4.0, 5.0]],
    'ssorted_i64': ["int64", [1], [1.0]],
    's2d': ["float32", [1, 2, 2, 8], [[[[0.0, 1.0, 2.0, 3.0, 8.0, 9.0, 10.0, 11.0], [4.0, 5.0, 6.0, 7.0, 12.0, 13.0, 14.0, 15.0]], [[16.0, 17.0, 18.0, 19.0, 24.0, 25.0, 26.0, 27.0], [20.0, 21.0, 22.0, 23.0, 28.0, 29.0, 30.0, 31.0]]]]],
    'd2s': ["float32", [1, 4, 4, 2], [[[[0.0, 1.0], [2.0, 3.0], [8.0, 9.0], [10.0, 11.0]], [[4.0, 5.0], [6.0, 7.0], [12.0, 13.0], [14.0, 15.0]], [[16.0, 17.0], [18.0, 19.0], [24.0, 25.0], [26.0, 27.0]], [[20.0, 21.0], [22.0, 23.0], [28.0, 29.0], [30.0, 31.0]]]]],
    's2b': ["float32", [4, 2, 2, 1], [[[[0.0], [2.0]], [[8.0], [10.0]]], [[[1.0], [3.0]], [[9.0], [11.0]]], [[[4.0], [6.0]], [[12.0], [14.0]]], [[[5.0], [7.0]], [[13.0], [15.0]]]]],
    's2b_pad': ["float32", [8, 2, 2, 1], [[[[0.0], [0.0]], [[4.0], [6.0]]], [[[0.0], [0.0]], [[12.0], [14.0]]], [[[0.0], [0.0]], [[5.0], [7.0]]], [[[0.0], [0.0]], [[13.0], [15.0]]], [[[0.0], [2.0]], [[0.0], [0.0]]], [[[8.0], [10.0]], [[0.0], [0.0]]], [[[1.0], [3.0]], [[0.0], [0.0]]], [[[9.0], [11.0]], [[0.0], [0.0]]]]],
    'b2s': ["float32", [1, 4, 4, 1], [[[[0.0], [4.0], [1.0], [5.0]], [[8.0], [12.0], [9.0], [13.0]], [[2.0], [6.0], [3.0], [7.0]], [[10.0], [14.0], [11.0], [15.0]]]]],
    'b2s_crop': ["float32", [2, 2, 3, 1], [[[[16.0], [24.0], [17.0]], [[2.0], [10.0], [3.0]]], [[[20.0], [28.0], [21.0]], [[6.0], [14.0], [7.0]]]]],
    'unravel': ["int32", [2, 3], [[0.0, 1.0, 2.0], [2.0, 2.0, 1.0]]],
    'unravel_s': ["int32", [2], [1.0, 2.0]],
    'identity_n': [["float32", [], 1.0], ["int32", [2], [1.0, 2.0]]],
    'shape_n64': [["int64", [2], [2.0, 3.0]]],
    'bds': ["int32", [2], [2.0, 3.0]],
    'dpart': [["int32", [3], [10.0, 20.0, 50.0]], ["int32", [2], [30.0, 40.0]]],
    'dpart2': [["float32", [0, 2], []], ["float32", [3, 2], [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]], ["float32", [0, 2], []]],
    'dstitch': ["float32", [7], [1.0, 11.0, 21.0, 31.0, 41.0, 51.0, 61.0]],
    'dstitch_dup': ["float32", [2], [1.0, 9.0]],
    'revseq': ["float32", [2, 4], [[1.0, 0.0, 2.0, 3.0], [6.0, 5.0, 4.0, 7.0]]],
    'revseq_t': ["float32", [4, 2, 3], [[[18.0, 19.0, 20.0], [3.0, 4.0, 5.0]], [[12.0, 13.0, 14.0], [9.0, 10.0, 11.0]], [[6.0, 7.0, 8.0], [15.0, 16.0, 17.0]], [[0.0, 1.0, 2.0], [21.0, 22.0, 23.0]]]],
    'mapfn': ["float32", [3], [2.0, 4.0, 6.0]],
    'mapfn_sig': ["int32", [2], [1.0, 2.0]],
    'mapfn_empty': ["float32", [0], []],
    'foldl': ["int32", [], 10.0],
    'foldl_init': ["int32", [], 123.0],
    'foldr': ["int32", [], 321.0],
    'scan': ["int32", [4], [1.0, 3.0, 6.0, 10.0]],
    'scan_rev': ["int32", [4], [20.0, 19.0, 17.0, 14.0]],
    'vmap': ["float32", [3], [1.0, 5.0, 9.0]],
}
# TensorFlow 2.21's errors: (exception class name, a fragment of its message)
ERRORS = {
    'in_top_k_f64': ('InvalidArgumentError', 'cannot compute InTopKV2 as input #0(zero-based) was expected to be a float'),
    'in_top_k_ft': ('InvalidArgumentError', "Value for attr 'T' of float"),
    'norm_fro_vec': ('ValueError', "'ord' must be a supported vector norm, got fro"),
    'norm_ax1': ('ValueError', "'axis' must be None, an integer, or a tuple of 2 unique integers"),
    'norm_ax_oob': ('InvalidArgumentError', "Invalid reduction dimension (3 for input with 2"),
    'unravel_2d': ('InvalidArgumentError', 'The indices can only be scalar or vector'),
    'bds_dtypes': ('InvalidArgumentError', 'cannot compute BroadcastArgs as input #1(zero-based)'),
    'gather_b_gt_neg': ('InvalidArgumentError', 'batch_dims (1) must be less than or equal to axis (0).'),
    'sort_bad_dir': ('ValueError', 'Argument `direction` should be one of ASCENDING, DESCENDING. Received:'),
    'sort_bool': ('InvalidArgumentError', "Value for attr 'T' of bool is not in the list of allowed values"),
    'topk_bigk': ('InvalidArgumentError', 'input must have at least k columns. Had 3, needed 4'),
    'topk_negk': ('InvalidArgumentError', 'Need k >= 0, got -1'),
    'topk_scalar': ('InvalidArgumentError', 'input must be >= 1-D, got shape []'),
    'unique_2d': ('InvalidArgumentError', 'unique expects a 1D vector.'),
    'reverse_dup': ('InvalidArgumentError', 'axis 1 specified more than once.'),
    'reverse_oob': ('InvalidArgumentError', "'axis'[0] = 2 is out of valid range [0, 1"),
    'roll_mismatch': ('InvalidArgumentError', 'shift and axis must have the same size'),
    'gnd_oob': ('InvalidArgumentError', 'indices[0] = [0, 4] does not index into param shape [3,4], node name: '),
    'gnd_rank': ('InvalidArgumentError', 'index innermost dimension length must be <= params rank; saw: 3 vs. 2'),
    'gnd_float': ('InvalidArgumentError', "Value for attr 'Tindices'"),
    'gather_b_gt_axis': ('InvalidArgumentError', 'indices[0,1] = 2 is not in [0, 2)'),
    'gather_b_mismatch': ('InvalidArgumentError', 'params.shape[0]: 2 should be equal to indices.shape[0]: 3'),
    'snd_oob': ('InvalidArgumentError', 'indices[0] = [5] does not index into shape [4]'),
    'snd_mismatch': ('InvalidArgumentError', 'Dimensions [0,1) of indices[shape=[1,1]] must match dimensions [0,1) o'),
    'snd_neg': ('InvalidArgumentError', 'Dimension -4 must be >= 0'),
    'tsu_oob': ('InvalidArgumentError', 'indices[0] = [4] does not index into shape [4]'),
    'tsu_neg': ('InvalidArgumentError', 'indices[0] = [-1] does not index into shape [4]'),
    'tsa_outer': ('InvalidArgumentError', 'Outer dimensions of indices and update must match. Indices shape: [1,1'),
    'tsu_inner': ('InvalidArgumentError', 'The inner 1 dimensions of output.shape=[2,3] must match the inner 1 di'),
    'bmask_bad': ('ValueError', 'Shapes (3,) and (2,) are incompatible'),
    'mesh_bad': ('ValueError', "Argument `indexing` parameter must be either 'xy' or 'ij', got 'foo'"),
    'tdot_bad': ('InvalidArgumentError', 'Matrix size-incompatible: In[0]: [2,3], In[1]: [2,4]'),
    'norm_bad': ('ValueError', "'ord' must be a supported vector norm, got -1"),
    'norm_bad_m': ('ValueError', "'ord' must be a supported matrix norm in ['euclidean', 'fro', 1, 2, in"),
    's2d_bad': ('InvalidArgumentError', 'Image width 4 and height 3 should be divisible by block_size: 2'),
    'unravel_oob': ('InvalidArgumentError', 'index is out of bound as with dims'),
    'shape_n': ('InvalidArgumentError', 'cannot compute ShapeN as input #1(zero-based) was expected to be a flo'),
    'bds_bad': ('InvalidArgumentError', 'Incompatible shapes: [2] vs. [3]'),
    'bss_bad': ('ValueError', 'Incompatible shapes for broadcasting. Two shapes are compatible if for'),
    'dpart_bad': ('InvalidArgumentError', 'partitions[1] = 5 is not in [0, 2)'),
    'revseq_bad': ('InvalidArgumentError', 'seq_lens(0) > input.dims(1)'),
    'mapfn_tuple': ('ValueError', "The two structures don't have the same nested structure"),
}


def _enc(r):
    if isinstance(r, (list, tuple)):
        return [_enc(x) for x in r]
    a = r.numpy()
    return [r.dtype.name, list(a.shape), np.asarray(a, dtype=np.float64 if a.dtype != bool else bool).tolist()]


def _is_leaf(x):
    return isinstance(x, list) and len(x) == 3 and isinstance(x[0], str) and isinstance(x[1], list)


def _check(got, want, name):
    if not _is_leaf(want):
        assert isinstance(got, list) and len(got) == len(want), "%s: %s vs %s" % (name, got, want)
        for g, w in zip(got, want):
            _check(g, w, name)
        return
    assert got[0] == want[0] and got[1] == want[1], "%s: dtype/shape %s vs TensorFlow's %s" % (
        name, got[:2], want[:2])
    assert_close(np.asarray(got[2]), np.asarray(want[2], dtype=np.asarray(got[2]).dtype), got[0],
                 "reduction", err_msg=name)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_matches_tensorflow(name):
    _check(_enc(cases[name]()), EXPECTED[name], name)


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_tensorflow(name):
    cls, fragment = ERRORS[name]
    with pytest.raises(Exception) as info:
        cases[name]()
    assert type(info.value).__name__ == cls, "%s: %r" % (name, info.value)
    words = [w for w in re.findall(r"[A-Za-z_']{4,}", fragment)][:4]
    for w in words:
        assert w in str(info.value), "%s: %r lacks %r (TensorFlow: %s)" % (name, str(info.value), w, fragment)


# ------------------------------------------------------------------ inside tf.function

R = np.random.default_rng(5)


def _rand(*shape):
    return lambda: R.uniform(-3, 3, shape).astype(np.float32)


def _ints(*shape, hi=4):
    return lambda: R.integers(0, hi, shape).astype(np.int32)


TRACED = {
    "sort": (lambda x: tf.sort(x, axis=0, direction="DESCENDING"), [_rand(4, 3)]),
    "argsort": (lambda x: tf.argsort(x), [_rand(3, 5)]),
    "top_k": (lambda x: tf.math.top_k(x, 2), [_rand(3, 5)]),
    "unique": (lambda x: tf.unique(x), [_ints(7)]),
    "boolean_mask": (lambda x: tf.boolean_mask(x, x[:, 0] > 0.0, axis=0), [_rand(5, 2)]),
    "boolean_mask_axis": (lambda x: tf.boolean_mask(x, x[0] > 0.0, axis=1), [_rand(2, 5)]),
    "where": (lambda x: tf.where(x > 0.5), [_rand(3, 3)]),
    "repeat": (lambda x, r: tf.repeat(x, r, axis=0), [_rand(3, 2), _ints(3)]),
    "gather_nd": (lambda x, i: tf.gather_nd(x, i, batch_dims=1), [_rand(2, 3, 4), _ints(2, 2, 1, hi=3)]),
    "gather_batch": (lambda x, i: tf.gather(x, i, axis=2, batch_dims=1), [_rand(2, 3, 4), _ints(2, 5)]),
    "scatter_nd": (lambda i, u: tf.scatter_nd(i, u, [4, 2]), [_ints(5, 1), _rand(5, 2)]),
    "sequence_mask": (lambda n: tf.sequence_mask(n, 5), [_ints(3, hi=6)]),
    "sequence_mask_max": (lambda n: tf.sequence_mask(n), [_ints(3, hi=6)]),
    "tensordot": (lambda a, b: tf.tensordot(a, b, [[1], [0]]), [_rand(2, 3), _rand(3, 4)]),
    "norm": (lambda x: (tf.norm(x), tf.norm(x, ord=1, axis=[0, 1]), tf.norm(x, ord=np.inf, axis=1)),
             [_rand(3, 4)]),
    "searchsorted": (lambda s, v: tf.searchsorted(tf.sort(s), v, side="right"), [_rand(2, 6), _rand(2, 3)]),
    "meshgrid": (lambda a, b: tf.meshgrid(a, b), [_rand(3), _rand(2)]),
    "linspace": (lambda a, b: tf.linspace(a, b, 4, axis=-1), [_rand(2), _rand(2)]),
    "eye": (lambda x: x + tf.eye(3, batch_shape=[2]), [_rand(2, 3, 3)]),
    "reverse_roll": (lambda x: tf.roll(tf.reverse(x, [0]), 1, 1), [_rand(3, 4)]),
    "reverse_sequence": (lambda x, n: tf.reverse_sequence(x, n, seq_axis=1), [_rand(2, 4), _ints(2, hi=5)]),
    "dynamic_partition": (lambda x, p: tf.dynamic_partition(x, p, 3), [_rand(6, 2), _ints(6, hi=3)]),
    "space_to_depth": (lambda x: tf.nn.depth_to_space(tf.nn.space_to_depth(x, 2) * 2.0, 2),
                       [_rand(1, 4, 4, 3)]),
    "space_to_batch": (lambda x: tf.batch_to_space(tf.space_to_batch_nd(x, [2, 2], [[0, 0], [2, 0]]),
                                                   [2, 2], [[0, 0], [2, 0]]), [_rand(1, 2, 4, 1)]),
    "unravel_index": (lambda i: tf.unravel_index(i, [3, 4]), [_ints(5, hi=12)]),
    "map_fn": (lambda x: tf.map_fn(lambda r: tf.reduce_sum(r * r), x), [_rand(4, 3)]),
    "scan": (lambda x: tf.scan(lambda a, r: a + r, x, reverse=True), [_rand(4, 3)]),
    "foldl_foldr": (lambda x: (tf.foldl(lambda a, r: a * 0.5 + r, x), tf.foldr(lambda a, r: a * 0.5 + r, x)),
                    [_rand(4, 3)]),
    "vectorized_map": (lambda x: tf.vectorized_map(lambda r: tf.reduce_max(r), x), [_rand(4, 3)]),
}


def _flat(x):
    if isinstance(x, (list, tuple)):
        return [a for v in x for a in _flat(v)]
    return [np.asarray(x.numpy())]


@pytest.mark.parametrize("name", sorted(TRACED))
def test_traced_equals_eager(name):
    """The names compose ops that a trace records: a replay with new values (new sizes for
    unique, where, boolean_mask, repeat) gives what eager execution gives."""
    fn, makers = TRACED[name]
    f = tf.function(fn)
    first = [tf.constant(m()) for m in makers]
    f(*first)
    assert f.get_concrete_function(*first).graph is not None, "the function broke the graph"
    for _ in range(3):
        args = [tf.constant(m()) for m in makers]
        got, want = _flat(f(*args)), _flat(fn(*args))
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape, name
            np.testing.assert_array_equal(g, w)
    assert f.experimental_get_tracing_count() == 1


# ------------------------------------------------------------------ more of TensorFlow's rules


def test_scatter_errors_and_dtypes():
    t = tf.constant([1.0, 2.0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="expected to be a float32 tensor"):
        tf.tensor_scatter_nd_update(t, [[0]], tf.constant([1], tf.int32))
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.tensor_scatter_nd_add(tf.constant([True, False]), [[1]], [True])
    # a bool update, an integer add with wrap-free values, updates converted to the tensor's dtype
    np.testing.assert_array_equal(
        tf.tensor_scatter_nd_update(tf.constant([True, False]), [[1]], [True]).numpy(), [True, True])
    np.testing.assert_array_equal(tf.tensor_scatter_nd_add(t, [[1]], [9]).numpy(), [1.0, 11.0])
    # int64 indices, whole-tensor (K = 0 ... rank) slices
    got = tf.tensor_scatter_nd_update(tf.zeros([2, 2]), tf.constant([[1, 0]], tf.int64), [5.0])
    np.testing.assert_array_equal(got.numpy(), [[0, 0], [5, 0]])
    np.testing.assert_array_equal(tf.gather_nd(f32(2, 2), tf.zeros([3, 0], tf.int32)).shape, (3, 2, 2))


def test_map_fn_signatures():
    got = tf.map_fn(lambda x: (x, x * 2), C([1.0, 2.0]), fn_output_signature=(tf.float32, tf.float32))
    np.testing.assert_array_equal(got[1].numpy(), [2.0, 4.0])
    got = tf.map_fn(lambda t: t[0] + t[1], (C([1, 2]), C([10, 20])), fn_output_signature=tf.int32)
    np.testing.assert_array_equal(got.numpy(), [11, 22])
    empty = tf.map_fn(lambda x: x, tf.zeros([0, 2]), fn_output_signature=tf.TensorSpec([2], tf.int32))
    assert empty.shape == (0, 2) and empty.dtype == tf.int32
    with pytest.raises(tf.errors.InvalidArgumentError, match="TensorArray dtype is float32"):
        tf.map_fn(lambda x: tf.cast(x, tf.int32), C([1.5, 2.5]))
    with pytest.raises(ValueError, match="1\\+ dimensional"):
        tf.map_fn(lambda x: x, C(1.0))
    got = tf.scan(lambda a, x: (a[0] + x, a[1] * x), C([1, 2, 3]), initializer=(C(0), C(1)))
    np.testing.assert_array_equal(got[0].numpy(), [1, 3, 6])
    np.testing.assert_array_equal(got[1].numpy(), [1, 2, 6])


def test_the_names_are_where_tensorflow_has_them():
    assert tf.math.top_k is tf.nn.top_k
    assert tf.linalg.norm is tf.norm and tf.linalg.eye is tf.eye
    assert tf.linalg.tensordot is tf.tensordot
    for name in ("space_to_depth", "depth_to_space"):
        assert callable(getattr(tf.nn, name))


def test_matrix_spectral_norm_matches_tensorflow():
    # TensorFlow 2.21's values for the same inputs: the largest singular value
    import numpy as np
    import mixprec as tf
    from mixprec.testing.tolerances import TOLERANCE
    # (TensorFlow's values printed to 10 decimals; the float32 matmul row covers that rounding)
    rtol, atol = TOLERANCE[("float32", "matmul")]
    x = np.arange(24, dtype="float64").reshape(2, 3, 4) / 7 - 1
    np.testing.assert_allclose(tf.norm(x, ord=2, axis=[1, 2]).numpy(),
                               [1.7947510255, 5.4673224832], rtol=rtol, atol=atol)
    k = tf.norm(x, ord=2, axis=[-1, -2], keepdims=True)
    assert k.shape == (2, 1, 1)
    np.testing.assert_allclose(k.numpy().ravel(), [1.7947510255, 5.4673224832], rtol=rtol,
                               atol=atol)
