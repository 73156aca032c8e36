"""TensorFlow's four automatic-mixed-precision op lists over mixprec's op list.

The base lists are ops.def's AMP column (TensorFlow's CUDA lists, by TfName). On top:
the oneDNN bfloat16 variant (Mean, Sum, Rsqrt, Square, SquaredDifference are infer ops)
and TensorFlow's environment variables, read each time the lists are applied. This module
must not decide how ops run: it only computes the class of each op and hands the table to C.
"""

import os

from mixprec import _core

LISTS = ("allow", "infer", "deny", "clear")
_CODE = {"allow": _core.AMP_ALLOW, "infer": _core.AMP_INFER, "deny": _core.AMP_DENY,
         "clear": _core.AMP_CLEAR}
_ENV = "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_"
# the current variable names and the ones TensorFlow still reads for backward compatibility
_ENV_NAMES = {"allow": ("ALLOWLIST", "WHITELIST"), "infer": ("INFERLIST", "GRAYLIST"),
              "deny": ("DENYLIST", "BLACKLIST"), "clear": ("CLEARLIST",)}
# AutoMixedPrecisionListsMkl: these run in bfloat16 when their inputs do
ONEDNN_BF16_INFER = ("Mean", "Sum", "Rsqrt", "Square", "SquaredDifference")


def _table():
    return _core.op_table()  # rows (code, TfName, pyname, n_inputs, class name)


def _split(value):
    return [name.strip() for name in value.split(",") if name.strip()]


def effective_lists(bf16=False, environ=None):
    """The four lists in force, as sets of TensorFlow op names mixprec has.

    An op named in a list's ``..._ADD`` variable moves to that list (it leaves the others);
    one named in ``..._REMOVE`` leaves it. ``..._LEVEL=TENSOR_CORES_ONLY`` empties the infer,
    deny and clear lists (their variables are then ignored, as in TensorFlow).
    """
    env = os.environ if environ is None else environ
    rows = _table()
    known = {row[1] for row in rows}
    lists = {name: set() for name in LISTS}
    for row in rows:
        if row[4] in lists:
            lists[row[4]].add(row[1])
    if bf16:
        for op in ONEDNN_BF16_INFER:
            if op in known:
                for name in LISTS:
                    lists[name].discard(op)
                lists["infer"].add(op)
    tensor_cores_only = env.get(_ENV + "LEVEL", "").upper() == "TENSOR_CORES_ONLY"
    if tensor_cores_only:
        for name in ("infer", "deny", "clear"):
            lists[name] = set()
    for name in LISTS:
        if tensor_cores_only and name != "allow":
            continue
        for var in _ENV_NAMES[name]:
            for op in _split(env.get(_ENV + var + "_ADD", "")):
                if op in known:
                    for other in LISTS:
                        lists[other].discard(op)
                    lists[name].add(op)
            for op in _split(env.get(_ENV + var + "_REMOVE", "")):
                lists[name].discard(op)
    return lists


def class_table(bf16=False, environ=None):
    """One class code per op code (ops.def order) for ``_core.amp_set_classes``."""
    lists = effective_lists(bf16, environ)
    codes = []
    for row in _table():
        code = _core.AMP_NONE
        for name in LISTS:
            if row[1] in lists[name]:
                code = _CODE[name]
                break
        codes.append(code)
    return codes


def apply(bf16=False, environ=None):
    """Hands the lists in force to the core (autocast and the graph pass read them)."""
    _core.amp_set_classes(class_table(bf16, environ))
