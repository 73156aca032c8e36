"""AutoGraph for the common case: a Python ``if`` on a traced tensor inside a function.

Owns the source rewrite (``ast``) of a ``mixprec.function``'s Python function and the
run-time ``if_stmt`` it calls: a traced predicate runs both branches (tf.cond's way), a
Python one runs only the taken branch. It must not compute tensor values itself, and it
leaves every construct it does not handle as plain Python (the graph break then applies).
"""

import ast
import inspect
import textwrap
import types
import weakref

import numpy as np

from mixprec import _core, _nest

__all__ = ["convert", "if_stmt", "for_stmt", "while_stmt", "do_not_convert", "to_graph",
           "to_code"]

_AG = "ag__"


class _Undefined:
    """A name not bound (yet) when an ``if`` starts or at the end of a branch."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "<undefined %s>" % self.name


def ld(thunk, name):
    """The current value of a local name, or an _Undefined when it is unbound."""
    try:
        return thunk()
    except NameError:
        return _Undefined(name)


def is_undefined(x):
    return isinstance(x, _Undefined)


def for_stmt(iterable, body, init, names, n_targets=0, brk=None):
    from mixprec import _loops
    return _loops.for_stmt(iterable, body, init, names, n_targets, brk)


def loop_test(broken, test):
    from mixprec import _loops
    return _loops.loop_test(broken, test)


def range_(f, *args, **kwargs):
    from mixprec import _loops
    return _loops.range_(f, *args, **kwargs)


def while_stmt(test, body, init, names):
    from mixprec import _loops
    return _loops.while_stmt(test, body, init, names)


def if_stmt(pred, true_fn, false_fn, init, names, live):
    """Runs a converted ``if``. ``true_fn``/``false_fn`` take the names' values before the
    ``if`` and return them after (followed by the returned value when the branches end in
    ``return``). ``live``: the names read after the ``if`` (one bound in a single branch is
    then TensorFlow's error)."""
    from mixprec import _control
    if isinstance(pred, _core.Variable):
        pred = pred.read_value()
    # both branches are traced (their Python side effects happen); the branch this call does
    # not take runs with its variable writes and prints recorded only, so a branch that
    # writes state can still break the graph without having changed anything
    run = _control.traced_branches(pred, (lambda: true_fn(*init), lambda: false_fn(*init)),
                                   "an `if`")
    if run is None:
        return true_fn(*init) if pred else false_fn(*init)
    taken, (a, b), broke = run
    if broke:
        return (a, b)[taken]
    taken = taken == 0
    outs_a, outs_b = [], []
    for i, (x, y) in enumerate(zip(a, b)):
        if i < len(names):
            name = names[i]
            ux, uy = is_undefined(x), is_undefined(y)
            if ux and uy or ((ux or uy) and name not in live):
                x = y = None if ux or uy else x
            elif ux or uy:
                raise ValueError("'%s' must also be initialized in the %s branch" % (
                    name, "main" if ux else "else"))
            elif (x is None) != (y is None) and isinstance(
                    x if y is None else y, (_core.Tensor, _core.Variable)):
                raise ValueError("'%s' is None at the end of the %s branch" % (
                    name, "main" if x is None else "else"))
        if type(x) is type(y) and type(x) in (int, float, bool) and x != y or \
                isinstance(x, (np.ndarray, np.generic)) or isinstance(y, (np.ndarray, np.generic)):
            # as tf.cond: Python numbers that differ between the branches, and NumPy
            # values, become tensors
            x, y = _core.convert_to_tensor(x), _core.convert_to_tensor(y)
        elif not _same_python_value(x, y):
            # a Python value that depends on the predicate needs its value: the graph
            # breaks, and this call goes on eagerly with the branch it takes
            _core.graph_break("a Python value that differs between the branches of an `if` "
                              "on a traced tensor")
            return a if taken else b
        outs_a.append(x)
        outs_b.append(y)
    out = _control.cond(pred, lambda: tuple(outs_a), lambda: tuple(outs_b))
    return tuple(_Undefined(names[i]) if i < len(names) and (is_undefined(a[i]) or
                                                             is_undefined(b[i])) else v
                 for i, v in enumerate(out))


def _same_python_value(x, y):
    """False when the branches produced Python values (not tensors) that differ."""
    if x is y:
        return True
    if isinstance(x, (_core.Tensor, _core.Variable)) or isinstance(y, (_core.Tensor,
                                                                       _core.Variable)):
        return True  # tf.cond's selection (or its structure error)
    if _nest.is_nested(x) or _nest.is_nested(y):
        try:
            _nest.map_structure(lambda p, q: None, x, y)
        except (ValueError, TypeError):
            return False
        return all(_same_python_value(p, q) for p, q in zip(_nest.flatten(x), _nest.flatten(y)))
    try:
        return bool(x == y)
    except Exception:  # noqa: BLE001 - values without a plain equality differ
        return False


# ---------------------------------------------------------------------------- the rewrite

class _Unsupported(Exception):
    pass


_NO_DESCEND = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
               ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _walk(node):
    """ast.walk that does not enter nested scopes."""
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        for c in ast.iter_child_nodes(n):
            if not isinstance(c, _NO_DESCEND):
                todo.append(c)


def _walk_stmts(stmts):
    for s in stmts:
        yield from _walk(s)


def _stored(stmts):
    out = []
    for n in _walk_stmts(stmts):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id not in out:
            out.append(n.id)
    return out


def _loaded(stmts):
    """Every name these statements read (nested scopes included: closures read too)."""
    return {n.id for st in stmts for n in ast.walk(st) if isinstance(n, ast.Name) and
            isinstance(n.ctx, (ast.Load, ast.Del))}


def _check_branch(stmts):
    """Raises _Unsupported for what a branch function cannot hold."""
    loops = 0

    def visit(n, in_loop):
        if getattr(n, "_ag_gen", False):
            return  # written by this rewrite (a nested converted if)
        if isinstance(n, _NO_DESCEND[:4]) or isinstance(n, (ast.Import, ast.ImportFrom,
                                                              ast.Global, ast.Nonlocal,
                                                              ast.Try, ast.Delete, ast.Yield,
                                                              ast.YieldFrom, ast.Await)):
            raise _Unsupported(type(n).__name__)
        if isinstance(n, (ast.Break, ast.Continue)) and not in_loop:
            raise _Unsupported("break")
        if isinstance(n, ast.Return):
            raise _Unsupported("return")
        if isinstance(n, (ast.Attribute, ast.Subscript, ast.Starred)) and \
                isinstance(n.ctx, ast.Store):
            # an object mutated by both traced branches would keep the else branch's value
            raise _Unsupported("attribute")
        for c in ast.iter_child_nodes(n):
            if isinstance(c, _NO_DESCEND):
                if isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    raise _Unsupported("def")
                continue
            visit(c, in_loop or isinstance(n, (ast.For, ast.While)) and c not in
                  (getattr(n, "iter", None), getattr(n, "test", None)))
    for s in stmts:
        visit(s, loops > 0)


def _jumps(stmts):
    """Break/Continue statements of this loop level (not of nested loops or scopes)."""
    out = []

    def visit(n):
        if isinstance(n, (ast.Break, ast.Continue)):
            out.append(n)
            return
        if isinstance(n, (ast.For, ast.While, ast.AsyncFor)):
            for c in n.orelse:
                visit(c)
            return
        for c in ast.iter_child_nodes(n):
            if not isinstance(c, _NO_DESCEND):
                visit(c)
    for st in stmts:
        visit(st)
    return out


def _always_jumps(stmts):
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (ast.Break, ast.Continue)):
        return True
    return isinstance(last, ast.If) and _always_jumps(last.body) and _always_jumps(last.orelse)


def _lower_jumps(stmts, brk, budget):
    """The loop body without break/continue (TensorFlow AutoGraph's canonicalisation): the
    statements after an `if` that may jump move into its branches that fall through, and
    `break` sets the flag `brk` the loop's condition reads. Raises _Unsupported for a jump
    elsewhere (inside with/try, in a nested loop's else)."""
    out = []
    for i, st in enumerate(stmts):
        budget[0] -= 1
        if budget[0] < 0:
            raise _Unsupported("too many statements after jumps")
        if isinstance(st, (ast.Break, ast.Continue)):
            if isinstance(st, ast.Break):
                out.append(ast.copy_location(ast.Assign([ast.Name(brk, ast.Store())],
                                                        ast.Constant(True)), st))
            return out
        if isinstance(st, ast.If) and _jumps([st]):
            rest = stmts[i + 1:]
            body = st.body if _always_jumps(st.body) else st.body + rest
            orelse = st.orelse if _always_jumps(st.orelse) else st.orelse + rest
            new = ast.If(st.test, _lower_jumps(body, brk, budget) or [ast.Pass()],
                         _lower_jumps(orelse, brk, budget))
            out.append(ast.copy_location(new, st))
            return out
        if _jumps([st]):
            raise _Unsupported("jump")
        out.append(st)
    return out


def _check_loop_body(stmts):
    """Raises _Unsupported for what a loop body function cannot hold: return, break and
    continue of this loop, yield, global/nonlocal, del, import (they stay Python's loop)."""
    def visit(n, in_loop):
        if getattr(n, "_ag_gen", False):
            return  # written by this rewrite (a converted if or loop, checked on its own)
        if isinstance(n, (ast.Return, ast.Yield, ast.YieldFrom, ast.Await, ast.Global,
                          ast.Nonlocal, ast.Delete, ast.Import, ast.ImportFrom)):
            raise _Unsupported(type(n).__name__)
        if isinstance(n, (ast.Break, ast.Continue)) and not in_loop:
            raise _Unsupported("break")
        for c in ast.iter_child_nodes(n):
            if isinstance(c, _NO_DESCEND):
                continue
            visit(c, in_loop or isinstance(n, (ast.For, ast.While)) and c not in
                  (getattr(n, "iter", None), getattr(n, "test", None)) and
                  c not in getattr(n, "orelse", ()))
    for st in stmts:
        visit(st, False)


def _ends_in_return(stmts):
    return bool(stmts) and isinstance(stmts[-1], ast.Return)


class _Rewriter:
    def __init__(self):
        self.n = 0
        self.converted = 0

    def block(self, stmts, live_after, in_loop):
        """The statements rewritten; live_after: names read after this block."""
        stmts = list(stmts)
        out = []
        i = 0
        while i < len(stmts):
            s = stmts[i]
            rest = stmts[i + 1:]
            if isinstance(s, ast.If) and not s.orelse and _ends_in_return(s.body) and rest \
                    and _ends_in_return(rest) and not in_loop:
                # `if c: ...; return a` then `...; return b`: the rest is the else branch
                s = ast.If(test=s.test, body=s.body, orelse=rest)
                ast.copy_location(s, stmts[i])
                rest = []
                stmts = stmts[:i + 1]
            live = live_after | _loaded(rest) | (in_loop or set())
            if isinstance(s, ast.If):
                out.extend(self.if_(s, live, in_loop))
            elif isinstance(s, (ast.For, ast.While)):
                brk = None
                if _jumps(s.body) and not s.orelse:
                    self.n += 1
                    name = "loop_break_%d__" % self.n
                    has_break = any(isinstance(j, ast.Break) for j in _jumps(s.body))
                    try:
                        lowered = _lower_jumps(s.body, name, [200])
                    except _Unsupported:
                        lowered = None
                    if lowered is not None:
                        s.body = lowered or [ast.Pass()]
                        if has_break:
                            brk = name
                            init = ast.copy_location(ast.Assign([ast.Name(name, ast.Store())],
                                                                 ast.Constant(False)), s)
                            ast.fix_missing_locations(init)
                            out.append(init)
                body_live = live | _loaded(s.body) | _loaded([s.test] if isinstance(s, ast.While)
                                                            else [s.iter])
                s.body = self.block(s.body, body_live, body_live)
                s.orelse = self.block(s.orelse, live, in_loop)
                out.extend(self.loop_(s, brk))
            elif isinstance(s, ast.With):
                s.body = self.block(s.body, live, in_loop)
                out.append(s)
            else:
                out.append(s)
            i += 1
        return out

    def loop_(self, s, brk=None):
        """``for``/``while`` -> ``ag__.for_stmt``/``ag__.while_stmt`` with the body (and the
        condition) as functions of the names the loop assigns (src/mixprec/_loops.py: a
        dataset, a tensor or a traced condition makes a loop node; else Python's loop)."""
        if s.orelse or isinstance(s, ast.AsyncFor):
            return [s]
        targets = []
        if isinstance(s, ast.For):
            tnodes = [s.target] if isinstance(s.target, ast.Name) else \
                list(s.target.elts) if isinstance(s.target, (ast.Tuple, ast.List)) else None
            if tnodes is None or any(not isinstance(t, ast.Name) for t in tnodes):
                return [s]
            targets = [t.id for t in tnodes]
        try:
            _check_loop_body(s.body)
        except _Unsupported:
            return [s]
        self.n += 1
        self.converted += 1
        k = self.n
        names = targets + [x for x in _stored(s.body) if x not in targets]

        def ld(x):
            return ast.Call(ast.Attribute(ast.Name(_AG, ast.Load()), "ld", ast.Load()),
                            [ast.Lambda(ast.arguments(posonlyargs=[], args=[], vararg=None,
                                                      kwonlyargs=[], kw_defaults=[], kwarg=None,
                                                      defaults=[]), ast.Name(x, ast.Load())),
                             ast.Constant(x)], [])

        def fn(name, params, body):
            args = ast.arguments(posonlyargs=[], args=[ast.arg(x) for x in params], vararg=None,
                                 kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
            return ast.FunctionDef(name=name, args=args, body=body or [ast.Pass()],
                                   decorator_list=[], returns=None, type_comment=None)

        ret = ast.Return(ast.Tuple([ld(x) for x in names], ast.Load()))
        bname, tname, res = "loop_body_%d__" % k, "loop_test_%d__" % k, "loop_res_%d__" % k
        init = ast.Tuple([ld(x) for x in names], ast.Load())
        consts = ast.Tuple([ast.Constant(x) for x in names], ast.Load())
        new = []
        if isinstance(s, ast.For):
            elem = "loop_elem_%d__" % k
            body = [ast.Assign([s.target], ast.Name(elem, ast.Load()))] + list(s.body) + [ret]
            new.append(fn(bname, [elem] + names, body))
            it = s.iter
            if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and \
                    isinstance(it.func.value, ast.Name) and it.func.value.id == _AG and \
                    it.func.attr == "call" and it.args and \
                    isinstance(it.args[0], ast.Attribute) and it.args[0].attr == "range":
                # `for i in tf.range(n)`: a counted loop (n may be traced: no range tensor)
                it = ast.Call(ast.Attribute(ast.Name(_AG, ast.Load()), "range_", ast.Load()),
                              it.args, it.keywords)
            call = ast.Call(ast.Attribute(ast.Name(_AG, ast.Load()), "for_stmt", ast.Load()),
                            [it, ast.Name(bname, ast.Load()), init, consts,
                             ast.Constant(len(targets)),
                             ast.Constant(names.index(brk) if brk in names else None)], [])
        else:
            test = s.test
            if brk in names:  # `not broken and test`, on tensors too
                test = ast.Call(ast.Attribute(ast.Name(_AG, ast.Load()), "loop_test",
                                              ast.Load()),
                                [ast.Name(brk, ast.Load()),
                                 ast.Lambda(ast.arguments(posonlyargs=[], args=[], vararg=None,
                                                          kwonlyargs=[], kw_defaults=[],
                                                          kwarg=None, defaults=[]), test)], [])
            new.append(fn(tname, names, [ast.Return(test)]))
            new.append(fn(bname, names, list(s.body) + [ret]))
            call = ast.Call(ast.Attribute(ast.Name(_AG, ast.Load()), "while_stmt", ast.Load()),
                            [ast.Name(tname, ast.Load()), ast.Name(bname, ast.Load()), init,
                             consts], [])
        new.append(ast.Assign([ast.Name(res, ast.Store())], call))
        new += _unpack_results(res, names)
        return _located(new, s)

    def if_(self, s, live, in_loop):
        body = self.block(s.body, live, in_loop)
        orelse = self.block(s.orelse, live, in_loop)
        returns = _ends_in_return(body) and _ends_in_return(orelse)
        try:
            _check_branch(body[:-1] if returns else body)
            _check_branch(orelse[:-1] if returns else orelse)
            for st in (body[-1:] + orelse[-1:]) if returns else []:
                _check_branch([ast.Expr(st.value)] if st.value is not None else [])
        except _Unsupported:
            s.body, s.orelse = body, orelse
            return [s]
        self.n += 1
        self.converted += 1
        k = self.n
        names = _stored(body + orelse)
        tname, fname = "if_true_%d__" % k, "if_false_%d__" % k

        def ld(x):
            return ast.Call(ast.Attribute(ast.Name(_AG, ast.Load()), "ld", ast.Load()),
                            [ast.Lambda(ast.arguments(posonlyargs=[], args=[], vararg=None,
                                                      kwonlyargs=[], kw_defaults=[], kwarg=None,
                                                      defaults=[]), ast.Name(x, ast.Load())),
                             ast.Constant(x)], [])

        def branch_fn(name, stmts):
            ret_names = ast.Tuple([ld(x) for x in names], ast.Load())
            if returns:
                last = stmts[-1]
                val = last.value if last.value is not None else ast.Constant(None)
                stmts = stmts[:-1] + [ast.Return(ast.Tuple(ret_names.elts + [val], ast.Load()))]
            else:
                stmts = stmts + [ast.Return(ret_names)]
            args = ast.arguments(posonlyargs=[], args=[ast.arg(x) for x in names],
                                 vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                                 defaults=[])
            return ast.FunctionDef(name=name, args=args, body=stmts or [ast.Pass()],
                                   decorator_list=[], returns=None, type_comment=None)

        init = ast.Tuple([ld(x) for x in names], ast.Load())
        call = ast.Call(ast.Attribute(ast.Name(_AG, ast.Load()), "if_stmt", ast.Load()),
                        [s.test, ast.Name(tname, ast.Load()), ast.Name(fname, ast.Load()), init,
                         ast.Tuple([ast.Constant(x) for x in names], ast.Load()),
                         ast.Tuple([ast.Constant(x) for x in names if x in live and
                                    not returns], ast.Load())], [])
        res = "if_res_%d__" % k
        new = [branch_fn(tname, body), branch_fn(fname, orelse),
               ast.Assign([ast.Name(res, ast.Store())], call)]
        new += _unpack_results(res, names)
        if returns:
            new.append(ast.Return(ast.Subscript(ast.Name(res, ast.Load()),
                                                ast.Constant(len(names)), ast.Load())))
        return _located(new, s)


def _unpack_results(res, names):
    """``x = res[j]`` for each name; a name the converted statement left unbound is deleted
    again (Python's UnboundLocalError if it is read)."""
    out = []
    for j, x in enumerate(names):
        item = ast.Subscript(ast.Name(res, ast.Load()), ast.Constant(j), ast.Load())
        out.append(ast.Assign([ast.Name(x, ast.Store())], item))
        out.append(ast.If(ast.Call(ast.Attribute(ast.Name(_AG, ast.Load()), "is_undefined",
                                                 ast.Load()), [ast.Name(x, ast.Load())], []),
                          [ast.Delete([ast.Name(x, ast.Del())])], []))
    return out


def _located(new, s):
    """Marks generated statements and gives them the converted statement's line, so a
    graph break's warning names that line."""
    for n in new:
        n._ag_gen = True
        ast.copy_location(n, s)
        for c in ast.walk(n):
            if getattr(c, "lineno", None) is None:
                c.lineno = c.end_lineno = s.lineno
                c.col_offset, c.end_col_offset = s.col_offset, s.col_offset + 2
    return new


# builtins that act on their caller's frame: called directly, never through ag__.call
_FRAME_BUILTINS = {"super", "locals", "globals", "vars", "eval", "exec", "dir"}


class _CallRewriter(ast.NodeTransformer):
    """``f(a, b=c)`` -> ``ag__.call(f, a, b=c)``: a user function called while tracing is
    converted too (TensorFlow's recursive conversion). Nested scopes are left alone."""

    def __init__(self):
        self.n = 0

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id in _FRAME_BUILTINS:
            return node
        self.n += 1
        new = ast.Call(ast.Attribute(ast.Name(_AG, ast.Load()), "call", ast.Load()),
                       [node.func] + node.args, node.keywords)
        return ast.copy_location(new, node)

    def _leave(self, node):
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = _leave
    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _leave


class _ExprRewriter(ast.NodeTransformer):
    """AutoGraph's expressions: ``a and b`` -> ``ag__.and_(lambda: a, lambda: b)``, ``a or
    b`` -> ``ag__.or_(...)``, ``not a`` -> ``ag__.not_(a)``, ``a if c else b`` ->
    ``ag__.if_exp(c, lambda: a, lambda: b)``: on traced tensors they become logical ops and
    a cond; on anything else Python's own (short-circuit) semantics. Nested scopes and
    expressions with ``:=``, ``yield`` or ``await`` are left alone."""

    def __init__(self):
        self.n = 0

    @staticmethod
    def _plain(node):
        return not any(isinstance(n, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await))
                       for n in ast.walk(node))

    @staticmethod
    def _thunk(e):
        return ast.Lambda(ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[],
                                        kw_defaults=[], kwarg=None, defaults=[]), e)

    def _ag(self, name, args, node):
        self.n += 1
        new = ast.Call(ast.Attribute(ast.Name(_AG, ast.Load()), name, ast.Load()), args, [])
        return ast.copy_location(new, node)

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        if not self._plain(node):
            return node
        return self._ag("and_" if isinstance(node.op, ast.And) else "or_",
                        [self._thunk(v) for v in node.values], node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if not isinstance(node.op, ast.Not):
            return node
        return self._ag("not_", [node.operand], node)

    def visit_IfExp(self, node):
        self.generic_visit(node)
        if not self._plain(node):
            return node
        return self._ag("if_exp", [node.test, self._thunk(node.body), self._thunk(node.orelse)],
                        node)

    def _leave(self, node):
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = _leave
    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _leave


def _traced_tensor(x):
    if isinstance(x, _core.Variable):
        x = x.read_value()
    return isinstance(x, _core.Tensor) and _core.graph_recording() is not None and \
        _core.graph_is_traced(x)


def and_(*thunks):
    """``a and b ...`` in converted code (TensorFlow's lazy and on tensors)."""
    v = thunks[0]()
    for i, t in enumerate(thunks[1:], 1):
        if _traced_tensor(v):
            from mixprec import _ops
            rest = and_(*thunks[i:])
            return _ops.logical_and(v, rest)
        if not v:
            return v
        v = t()
    return v


def or_(*thunks):
    """``a or b ...`` in converted code."""
    v = thunks[0]()
    for i, t in enumerate(thunks[1:], 1):
        if _traced_tensor(v):
            from mixprec import _ops
            rest = or_(*thunks[i:])
            return _ops.logical_or(v, rest)
        if v:
            return v
        v = t()
    return v


def not_(x):
    """``not x`` in converted code: a traced tensor's logical_not."""
    if _traced_tensor(x):
        from mixprec import _ops
        return _ops.logical_not(x)
    return not x


def if_exp(cond, if_true, if_false):
    """``a if c else b`` in converted code: a cond on a traced tensor."""
    if _traced_tensor(cond):
        from mixprec import _control
        return _control.cond(cond, if_true, if_false)
    return if_true() if cond else if_false()


def _library_dirs():
    import os
    import sysconfig
    dirs = {os.path.dirname(os.path.abspath(__file__))}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            dirs.add(os.path.abspath(p))
    return tuple(d + os.sep for d in dirs)


_LIBRARY_DIRS = None
_converted_cache = weakref.WeakKeyDictionary()  # function -> its converted form
# code objects of functions marked do_not_convert ("in user code:" frames, _user_errors.py)
no_convert_codes = set()


def _library_dirs_cached():
    global _LIBRARY_DIRS
    if _LIBRARY_DIRS is None:
        _LIBRARY_DIRS = _library_dirs()
    return _LIBRARY_DIRS


def _user_function(fn):
    """True for a Python function written by the user (not mixprec's, the standard
    library's nor an installed package's): those are converted when called while
    tracing."""
    global _LIBRARY_DIRS
    import os
    if not isinstance(fn, types.FunctionType):
        return False
    name = fn.__code__.co_filename
    if name.startswith("<"):
        return False
    if _LIBRARY_DIRS is None:
        _LIBRARY_DIRS = _library_dirs()
    return not os.path.abspath(name).startswith(_LIBRARY_DIRS)


def _builtin_override(f, args, kwargs):
    """AutoGraph's builtins on graph values while tracing: ``enumerate(dataset)`` is
    ``dataset.enumerate()``, ``range(n)`` of a traced tensor is ``tf.range(n)`` (a loop
    over it is then a loop node). None when the builtin applies as is."""
    import builtins
    if f is builtins.enumerate and args and not kwargs.keys() - {"start"}:
        from mixprec.data.dataset import Dataset
        if isinstance(args[0], Dataset):
            start = args[1] if len(args) > 1 else kwargs.get("start", 0)
            return args[0].enumerate(start)
    if f is builtins.range and args and not kwargs and any(
            isinstance(a, (_core.Tensor, _core.Variable)) for a in args):
        from mixprec import _loops, _ops
        return _loops.range_(_ops.range, *args)
    if f in (builtins.float, builtins.int, builtins.len) and len(args) == 1 and not kwargs \
            and _traced_tensor(args[0]):
        # TensorFlow's AutoGraph: float(x) / int(x) are casts (float32, int32) and len(x)
        # the first dimension as an int32 tensor, instead of host reads
        from mixprec import _ops
        x = args[0].read_value() if isinstance(args[0], _core.Variable) else args[0]
        if f is builtins.len:
            if x.ndim == 0:
                return None  # Python's own TypeError
            return _ops.shape(x)[0]
        return _core.cast(x, "float32" if f is builtins.float else "int32")
    return None


def call(f, *args, **kwargs):
    """A call in converted code: a user function is converted (once) while tracing."""
    if _core.graph_recording() is not None:
        if f is enumerate or f is range or f is float or f is int or f is len:
            r = _builtin_override(f, args, kwargs)
            if r is not None:
                return r
        target = f.__func__ if isinstance(f, types.MethodType) else f
        if _user_function(target):
            try:
                conv = _converted_cache[target]
            except KeyError:
                conv = convert(target)
                # (None: left as written; the value must not refer back to its key)
                _converted_cache[target] = None if conv is target else conv
            if conv is not None and conv is not target:
                f = types.MethodType(conv, f.__self__) if isinstance(
                    f, types.MethodType) else conv
    return f(*args, **kwargs)


def _source_tree(fn):
    try:
        src = textwrap.dedent(inspect.getsource(fn))
        filename = inspect.getsourcefile(fn) or "<autograph>"
        _, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return None
    try:
        mod = ast.parse(src)
    except SyntaxError:
        return None
    if not mod.body or not isinstance(mod.body[0], ast.FunctionDef) or \
            mod.body[0].name != fn.__code__.co_name or \
            filename != fn.__code__.co_filename:
        return None
    ast.increment_lineno(mod, first - 1)
    return mod, filename


def _rewrite(fn):
    """(converted function, its source) or None when fn stays as it is."""
    if getattr(fn, "__ag_do_not_convert__", False) or not isinstance(fn, types.FunctionType):
        return None
    if inspect.unwrap(fn) is not fn:
        return None  # a decorator's wrapper: its source is not the wrapped function's
    code = fn.__code__
    if code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE |
                        inspect.CO_ASYNC_GENERATOR):
        return None
    parsed = _source_tree(fn)
    if parsed is None:
        return None
    mod, filename = parsed
    fdef = mod.body[0]
    if any(isinstance(n, (ast.Global, ast.Nonlocal)) for n in _walk_stmts(fdef.body)):
        return None
    calls = _CallRewriter()
    fdef.body = [calls.visit(st) for st in fdef.body]
    exprs = _ExprRewriter()
    fdef.body = [exprs.visit(st) for st in fdef.body]
    rw = _Rewriter()
    fdef.body = rw.block(fdef.body, set(), None)
    if not rw.converted and not calls.n and not exprs.n:
        return None
    fdef.decorator_list = []
    freevars = list(code.co_freevars)
    factory = ast.FunctionDef(
        name="ag_factory__",
        args=ast.arguments(posonlyargs=[], args=[ast.arg(x) for x in freevars + [_AG]],
                           vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                           defaults=[]),
        body=[fdef, ast.Return(ast.Name(fdef.name, ast.Load()))], decorator_list=[],
        returns=None, type_comment=None)
    ast.copy_location(factory, fdef)
    module = ast.Module([factory], [])
    ast.fix_missing_locations(module)
    try:
        compiled = compile(module, filename, "exec")
    except (SyntaxError, ValueError, TypeError):
        return None
    ns = {}
    exec(compiled, dict(fn.__globals__), ns)  # defines the factory only
    import sys
    inner = ns["ag_factory__"](*([None] * len(freevars)), sys.modules[__name__])
    new_code = inner.__code__
    cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
    closure = []
    for name in new_code.co_freevars:
        if name == _AG:
            closure.append(types.CellType(sys.modules[__name__]))
        elif name in cells:
            closure.append(cells[name])
        else:
            return None
    out = types.FunctionType(new_code, fn.__globals__, fn.__name__, fn.__defaults__,
                             tuple(closure) or None)
    out.__kwdefaults__ = fn.__kwdefaults__
    out.__dict__.update(fn.__dict__)
    return out, ast.unparse(fdef)


def convert(fn):
    """The converted form of ``fn`` (a function or bound method), or ``fn`` itself when
    there is nothing to convert or its source is unavailable."""
    if isinstance(fn, types.MethodType):
        inner = convert(fn.__func__)
        return fn if inner is fn.__func__ else types.MethodType(inner, fn.__self__)
    if not _user_function(fn):
        return fn  # mixprec's own functions, the standard library's, installed packages'
    try:
        r = _rewrite(fn)
    except Exception:  # noqa: BLE001 - a rewrite failure leaves the function as written
        from mixprec.autograph import _verbosity
        _verbosity.log(1, "Error transforming entity %s", fn, exc_info=True)
        r = None
    return fn if r is None else r[0]


# ---------------------------------------------------------------------------- tf.autograph

def do_not_convert(func=None):
    """``tf.autograph.experimental.do_not_convert``: the function keeps its Python
    control flow when a ``mixprec.function`` traces it."""
    def mark(f):
        try:
            f.__ag_do_not_convert__ = True
        except AttributeError:
            pass
        code = getattr(f, "__code__", None)
        if code is not None:
            no_convert_codes.add(code)
        return f
    return mark if func is None else mark(func)


def to_graph(entity, recursive=True, experimental_optional_features=None):
    """``tf.autograph.to_graph``: the converted function."""
    return convert(entity)


def to_code(entity, recursive=True, experimental_optional_features=None):
    """``tf.autograph.to_code``: the converted function's source (the source as written
    when nothing is converted)."""
    fn = entity.__func__ if isinstance(entity, types.MethodType) else entity
    r = None
    try:
        r = _rewrite(fn)
    except Exception:  # noqa: BLE001
        r = None
    if r is not None:
        return r[1]
    return textwrap.dedent(inspect.getsource(fn))
