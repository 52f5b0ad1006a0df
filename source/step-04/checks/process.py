"""How an answer computes, read from its source in the grader: the process checks' evidence.

Threat model. A process check ("one entry at a time", "one pass over the keys", "streamed, without
the T×T matrix") must not trust the kernel: a student's code can turn off or forge any record the
kernel keeps of its own calls (the trace of torch calls: a hook removed, work done under
`torch._C.DisableTorchFunction()`, fake per-key calls shown while the result comes from one shot),
and it can do the work in numpy or Python floats, which no torch hook sees. What the kernel cannot
change is the answer's source: the grader rebuilds the notebook from the submission and keeps the
text of every code cell (grading: autograder/grade.py; a notebook run without a grader: the
kernel's input history). So the work is judged from that text:

* the function is found by name among the student's cells; a name bound twice, bound by assignment,
  or code that reaches for the machinery (exec, eval, compile, globals(), setattr, __code__,
  sys.modules, importlib, torch._C, torch.overrides, __torch_function__, the grader's own package) in
  the function, in a helper it calls, or in what any cell runs outside its functions, makes the process
  unverifiable, and it earns nothing;
* the function's body (and the body of every helper of the student's it calls) is read by a small
  abstract interpreter that follows the axes of the inputs through names, indexing, slicing,
  transposes and conversions (numpy, lists, Python floats alike) and records every product,
  contraction, reduction and softmax with the axes of its operands. A check then says which of these
  are whole-matrix work: a product of q and k that multiplies more than one entry's d numbers at once,
  a reduction over the key axis, a (T, T) matrix. By what it multiplies, never by an op's name or
  rank: (1×d)@(d×1) and (q[b, i:i+1] * k[b, j:j+1]).sum() are one entry's work.

What this does not see: work hidden behind a function it cannot read (a library call receiving whole
inputs is reported as such, and counts against the answer), and code whose axes it cannot follow
(a reshape mixing axes, say), which it treats as whole-matrix work. The kernel's trace is still asked
for: it can only take points away (it is the student's own record), never give them.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field

UNKNOWN = "?"           # an axis the interpreter cannot follow: counted as large

# Names and attributes that reach for the interpreter's or the grader's machinery: their presence in
# any student cell makes a process unverifiable.
TAMPERING = {"exec", "eval", "compile", "globals", "locals", "vars", "setattr", "delattr", "__import__",
             "__code__", "__globals__", "__builtins__", "__dict__", "__class__", "__torch_function__",
             "DisableTorchFunction", "DisableTorchFunctionSubclass", "TorchFunctionMode", "overrides",
             "_C", "modules", "importlib", "autograder", "builtins", "ctypes", "_getframe", "f_globals",
             "f_locals", "settrace", "setprofile"}

PRODUCTS = {"matmul", "mm", "bmm", "mv", "dot", "vdot", "inner", "outer", "einsum", "tensordot", "mul", "multiply",
            "vecdot", "kron", "cdist", "linear", "bilinear", "baddbmm", "addbmm", "addmm", "addmv", "ger",
            "__matmul__", "__rmatmul__", "__mul__", "__rmul__", "__imul__", "mul_", "prod", "cross", "chain_matmul",
            "multi_dot", "matrix_power", "dist", "cosine_similarity", "pairwise_distance"}
REDUCTIONS = {"sum", "nansum", "mean", "nanmean", "max", "min", "amax", "amin", "logsumexp", "argmax", "argmin",
              "median", "std", "var", "norm", "topk", "sort", "cumsum", "cummax", "cumprod", "logcumsumexp",
              "maximum_reduce", "reduce", "prod", "all", "any", "count_nonzero", "nanmax", "nanmin", "ptp"}
SOFTMAX = {"softmax", "log_softmax", "softmin", "scaled_dot_product_attention"}
SAME_AXES = {"numpy", "tolist", "detach", "clone", "double", "float", "half", "to", "cpu", "contiguous", "copy",
             "requires_grad_", "type", "astype", "data", "real", "abs", "exp", "log", "neg", "sqrt", "tanh",
             "asarray", "array", "as_tensor", "tensor", "from_numpy", "Tensor", "asanyarray", "ascontiguousarray",
             "exp_", "sub", "add", "div", "subtract", "divide", "true_divide", "where", "masked_fill", "clamp",
             "maximum", "minimum", "fmax", "fmin", "nan_to_num", "square", "pow", "float_power", "xlogy",
             "__array__", "item"}
SHAPE_ONLY = {"shape", "dtype", "device", "ndim", "size", "dim", "numel", "new_zeros", "new_ones", "new_full",
              "new_empty", "new_tensor", "zeros_like", "ones_like", "full_like", "empty_like", "randn_like",
              "rand_like", "len", "isinstance", "type", "is_floating_point", "element_size", "nbytes", "itemsize",
              "get_device", "layout", "requires_grad", "is_contiguous", "stride", "storage_offset"}


@dataclass
class Op:
    kind: str                  # "product", "reduce", "softmax", "opaque"
    name: str
    operands: list             # axes (tuples of labels) of the operands derived from the inputs
    axes: tuple = ()           # reduce/softmax: the axes collapsed; product: the axes contracted
    result: tuple = ()
    line: int = 0


@dataclass
class Reading:
    ops: list = field(default_factory=list)
    problem: str = ""          # non-empty: the process cannot be judged from the source (and earns nothing)


def student_functions(sources: list[str]) -> tuple[dict[str, list[ast.FunctionDef]], set[str], str]:
    """({name: [definitions]}, names bound otherwise, tampering found) over every parseable cell."""
    defs: dict[str, list] = {}
    bound: set[str] = set()
    tampering = ""
    for text in sources:
        try:
            tree = ast.parse(_without_magics(text))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                same = defs.setdefault(node.name, [])
                if not any(ast.dump(d) == ast.dump(node) for d in same):   # a cell run twice defines it once
                    same.append(node)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name):
                            bound.add(n.id)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    bound.add((alias.asname or alias.name).split(".")[0])
        if not tampering:
            tampering = _tampering(_module_level(tree))
    return defs, bound, tampering


def _module_level(tree):
    """What a cell runs when it runs: everything but the bodies of the functions it defines (a function's
    body matters when it is called: the answer and its helpers are read for it on their own)."""
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            todo += list(node.decorator_list) if not isinstance(node, ast.Lambda) else []
            continue
        todo += list(ast.iter_child_nodes(node))


def _tampering(nodes) -> str:
    for node in nodes:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name.split(".")[0] in TAMPERING or (alias.asname or "") in TAMPERING:
                    return f"imports {alias.name}"
        word = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        if word in TAMPERING:
            return f"uses {word}"
    return ""


def _reached(fn, defs, seen=None) -> list:
    """The function and every function of the student's it calls, transitively."""
    seen = seen if seen is not None else {}
    if fn.name in seen:
        return list(seen.values())
    seen[fn.name] = fn
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in defs:
            _reached(defs[node.func.id][0], defs, seen)
    return list(seen.values())


def _without_magics(text: str) -> str:
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in text.splitlines())


def read(sources: list[str], name: str, inputs: dict[str, tuple]) -> Reading:
    """The operations `name(**inputs)` performs on its inputs' axes (inputs: parameter -> axis labels)."""
    defs, bound, tampering = student_functions(sources)
    if tampering:
        return Reading(problem=f"a cell {tampering}, which can change what the code does behind its text: the "
                               "process cannot be judged from it")
    found = defs.get(name, [])
    if not found:
        return Reading(problem=f"no `def {name}(...)` in the notebook's cells: the process cannot be judged")
    if len(found) > 1 or name in bound:
        return Reading(problem=f"`{name}` is defined more than once (or also assigned): the process cannot be "
                               "judged from one definition")
    fn = found[0]
    tampering = next((f"`{f.name}` {t}" for f in _reached(fn, defs) if (t := _tampering(ast.walk(f)))), "")
    if tampering:
        return Reading(problem=f"{tampering}, which can change what the code does behind its text: the process "
                               "cannot be judged from it")
    reading = Reading()
    interp = _Interpreter(defs, reading)
    env = {}
    params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    for p in params:
        env[p] = inputs.get(p)
    interp.run_function(fn, env, depth=0)
    return reading


class _Interpreter:
    def __init__(self, defs, reading: Reading):
        self.defs = defs
        self.reading = reading
        self.depth = 0

    # -- statements ------------------------------------------------------------------------
    def run_function(self, fn, env, depth):
        if depth > 4:
            self.reading.problem = f"helpers call each other too deeply (`{fn.name}`): the process cannot be judged"
            return None
        self.returns = []
        saved = self.depth
        self.depth = depth
        for stmt in fn.body:
            self.stmt(stmt, env)
        self.depth = saved
        return next((r for r in self.returns if r is not None), None)

    def stmt(self, node, env):
        if isinstance(node, ast.Assign):
            value = self.expr(node.value, env)
            for t in node.targets:
                self.bind(t, value, env, node.value)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            self.bind(node.target, self.expr(node.value, env), env, node.value)
        elif isinstance(node, ast.AugAssign):
            left = self.expr(node.target, env)
            right = self.expr(node.value, env)
            if isinstance(node.op, (ast.Mult, ast.MatMult)):
                self.product("*=" if isinstance(node.op, ast.Mult) else "@=", [left, right], node,
                             matmul=isinstance(node.op, ast.MatMult))
            if isinstance(node.target, ast.Name):
                env[node.target.id] = _broadcast(left, right)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            it = self.expr(node.iter, env)
            self.bind(node.target, it[1:] if it else None, env, None)
            for s in node.body + node.orelse:
                self.stmt(s, env)
        elif isinstance(node, ast.While):
            self.expr(node.test, env)
            for s in node.body + node.orelse:
                self.stmt(s, env)
        elif isinstance(node, ast.If):
            self.expr(node.test, env)
            for s in node.body + node.orelse:
                self.stmt(s, env)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for s in node.body:
                self.stmt(s, env)
        elif isinstance(node, ast.Try):
            for s in node.body + node.orelse + node.finalbody + [h for x in node.handlers for h in x.body]:
                self.stmt(s, env)
        elif isinstance(node, ast.Return) and node.value is not None:
            self.returns.append(self.expr(node.value, env))
        elif isinstance(node, ast.Expr):
            self.expr(node.value, env)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.defs.setdefault(node.name, [node])
        elif isinstance(node, ast.Assert):
            self.expr(node.test, env)

    def bind(self, target, value, env, source):
        if isinstance(target, ast.Name):
            env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            for n, t in enumerate(target.elts):          # B, T, d = q.shape; a, b = x, y
                part = None
                if isinstance(source, (ast.Tuple, ast.List)) and n < len(source.elts):
                    part = self.expr(source.elts[n], env, record=False)
                elif value is not None and source is not None and not _is_shape(source):
                    part = value[1:] if value else None
                self.bind(t, part, env, None)
        elif isinstance(target, ast.Subscript):
            self.expr(target.value, env)
            self.expr(target.slice, env)

    # -- expressions: the axes of what they compute from the inputs (None: nothing of the inputs) --
    def expr(self, node, env, record=True):
        if isinstance(node, ast.Name):
            return env.get(node.id)
        if isinstance(node, ast.Constant):
            return None
        if isinstance(node, ast.Attribute):
            base = self.expr(node.value, env)
            if base is None:
                return None
            if node.attr == "T":
                return tuple(reversed(base))
            if node.attr == "mT":
                return base[:-2] + (base[-1], base[-2]) if len(base) >= 2 else base
            if node.attr in SHAPE_ONLY:
                return None
            return base
        if isinstance(node, ast.Subscript):
            return self.subscript(node, env)
        if isinstance(node, ast.BinOp):
            left, right = self.expr(node.left, env), self.expr(node.right, env)
            if isinstance(node.op, ast.MatMult):
                return self.product("@", [left, right], node, matmul=True)
            if isinstance(node.op, ast.Mult):
                return self.product("*", [left, right], node)
            return _broadcast(left, right)
        if isinstance(node, ast.UnaryOp):
            return self.expr(node.operand, env)
        if isinstance(node, (ast.BoolOp, ast.Compare)):
            values = [self.expr(v, env) for v in (node.values if isinstance(node, ast.BoolOp)
                                                   else [node.left, *node.comparators])]
            return _broadcast(*values)
        if isinstance(node, ast.IfExp):
            self.expr(node.test, env)
            return _broadcast(self.expr(node.body, env), self.expr(node.orelse, env))
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            parts = [self.expr(e, env) for e in node.elts]
            big = [p for p in parts if p]
            return (UNKNOWN,) + big[0] if big else None
        if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            return self.comprehension(node, env)
        if isinstance(node, ast.Call):
            return self.call(node, env)
        if isinstance(node, ast.Lambda):
            return None
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.expr(child, env)
        return None

    def comprehension(self, node, env):
        local = dict(env)
        for gen in node.generators:
            it = self.expr(gen.iter, local)
            self.bind(gen.target, it[1:] if it else None, local, None)
            for cond in gen.ifs:
                self.expr(cond, local)
        element = self.expr(node.elt, local)
        return (UNKNOWN,) + element if element else None

    def subscript(self, node, env):
        base = self.expr(node.value, env)
        index = node.slice
        items = list(index.elts) if isinstance(index, ast.Tuple) else [index]
        for item in items:
            if not isinstance(item, ast.Slice):
                self.expr(item, env)
        if base is None:
            return None
        axes = list(base)
        out = []
        pos = 0
        for n, item in enumerate(items):
            if isinstance(item, ast.Constant) and item.value is Ellipsis:
                rest = len([i for i in items[n + 1:] if not _is_none(i)])
                keep = max(len(axes) - pos - rest, 0)
                out += axes[pos:pos + keep]
                pos += keep
            elif _is_none(item):
                out.append("1")
            elif isinstance(item, ast.Slice):
                if pos < len(axes):
                    out.append("1" if _width_one(item) else axes[pos])
                pos += 1
            else:
                idx = self.expr(item, env, record=False)
                if idx is not None:             # fancy indexing with an array of the inputs
                    out += list(idx)
                pos += 1
        out += axes[pos:]
        return tuple(out)

    def call(self, node, env):
        func = node.func
        args = [self.expr(a.value if isinstance(a, ast.Starred) else a, env) for a in node.args]
        kwargs = {k.arg: self.expr(k.value, env) for k in node.keywords if k.arg}
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        base = self.expr(func.value, env) if isinstance(func, ast.Attribute) else None
        base_is_module = isinstance(func, ast.Attribute) and base is None
        operands = ([base] if base is not None else []) + args
        dim = _dim_argument(node, method=base is not None)
        if isinstance(func, ast.Name) and name in self.defs:            # a helper of the student's
            return self.helper(self.defs[name][0], args, kwargs)
        if name in SHAPE_ONLY:
            return None
        if name in ("transpose", "swapaxes", "swapdims", "movedim") and (base or args):
            x = base if base is not None else args[0]
            ints = _int_args(node)[(0 if base is not None else 1):]
            if len(ints) >= 2 and x:
                a, b = (i % len(x) for i in ints[:2])
                y = list(x)
                y[a], y[b] = y[b], y[a]
                return tuple(y)
            return x
        if name in ("permute",) and base is not None:
            ints = _int_args(node)
            if len(ints) == len(base):
                return tuple(base[i % len(base)] for i in ints)
            return (UNKNOWN,) * len(base)
        if name == "t" and base is not None:
            return tuple(reversed(base))
        if name in ("unsqueeze",) and base is not None:
            ints = _int_args(node)
            if ints:
                y = list(base)
                i = ints[0] if ints[0] >= 0 else len(y) + 1 + ints[0]
                y.insert(i, "1")
                return tuple(y)
        if name in ("reshape", "view", "flatten", "squeeze", "expand", "repeat", "broadcast_to", "ravel",
                    "unflatten", "view_as", "reshape_as", "expand_as", "stack", "cat", "concatenate", "hstack",
                    "vstack", "split", "chunk", "unbind", "flip", "roll"):
            big = [o for o in operands if o]
            if name in ("flip", "roll") and big:
                return big[0]
            return tuple(UNKNOWN for _ in big[0]) if big else None
        if name in SOFTMAX:
            x = next((o for o in operands if o), None)
            if x is not None:
                axis = x[dim % len(x)] if isinstance(dim, int) and x else x[-1] if x else UNKNOWN
                self.op("softmax", name, [x], (axis,), x, node)
            return x
        if name in PRODUCTS:
            if name == "einsum":
                return self.einsum(node, args, env)
            if name == "prod" and len([o for o in operands if o]) == 1:
                return self.reduce(name, operands[0], dim, node)
            return self.product(name, operands, node, matmul=name in ("matmul", "mm", "bmm", "mv", "__matmul__",
                                                                      "__rmatmul__", "linear", "addmm", "baddbmm"))
        if name in REDUCTIONS:
            x = base if base is not None else (args[0] if args else None)
            if name in ("max", "min") and base is None and len(args) >= 2 and args[1] is not None:
                return _broadcast(args[0], args[1])       # torch.max(a, b): elementwise
            if name in ("max", "min") and base is not None and args and args[0] is not None:
                return _broadcast(base, args[0])
            return self.reduce(name, x, dim, node)
        if name in SAME_AXES or name in ("float", "int", "abs", "round") and not isinstance(func, ast.Attribute):
            if name in ("float", "int", "item", "round"):
                return None
            big = [o for o in operands if o] + [v for v in kwargs.values() if v]
            return _broadcast(*big) if big else None
        if name in ("range", "enumerate", "zip", "print", "len", "list", "tuple", "sorted", "reversed", "iter"):
            big = [o for o in operands if o]
            if name in ("list", "tuple", "sorted", "reversed", "iter") and big:
                return big[0]
            return None
        if name == "sum" and not isinstance(func, ast.Attribute):       # builtin sum over an iterable
            x = args[0] if args else None
            return self.reduce("sum", x, 0, node) if x else None
        big = [o for o in operands if o] + [v for v in kwargs.values() if v]
        if big and not base_is_module and base is None and name not in ("zeros", "ones", "full", "empty", "arange"):
            self.op("opaque", name or "a call", big, (), (), node)
        elif big and base_is_module and name not in ("zeros", "ones", "full", "empty", "arange", "tril", "triu",
                                                     "isinf", "isnan", "isfinite", "isclose", "equal", "allclose"):
            self.op("opaque", name, big, (), (), node)
        return _broadcast(*big) if big else None

    def helper(self, helper, args, kwargs):
        local = {}
        params = [a.arg for a in helper.args.posonlyargs + helper.args.args]
        for p, a in zip(params, args):
            local[p] = a
        for p in params[len(args):]:
            local[p] = kwargs.get(p)
        saved = self.returns
        result = self.run_function(helper, local, self.depth + 1)
        self.returns = saved
        return result

    def einsum(self, node, args, env):
        spec = node.args[0].value if node.args and isinstance(node.args[0], ast.Constant) else None
        operands = [a for a in args[1:]]
        if not isinstance(spec, str) or "->" not in spec:
            self.op("product", "einsum", [o for o in operands if o], (UNKNOWN,), (UNKNOWN,), node)
            return (UNKNOWN,)
        lhs, rhs = spec.replace(" ", "").split("->")
        letters = {}
        for term, op in zip(lhs.split(","), operands):
            if op is None:
                continue
            term = term.replace("...", "")
            for letter, axis in zip(term[::-1], op[::-1]):
                letters.setdefault(letter, axis)
        contracted = tuple(axis for letter, axis in letters.items() if letter not in rhs)
        result = tuple(letters.get(c, "1") for c in rhs)
        self.op("product", "einsum", [o for o in operands if o], contracted, result, node)
        return result

    def product(self, name, operands, node, matmul=False):
        big = [o for o in operands if o]
        if matmul and len(operands) >= 2 and operands[0] and operands[1]:
            a, b = operands[0], operands[1]
            contracted = (a[-1],) if len(b) >= 1 else ()
            result = a[:-1] + (b[-1:] if len(b) >= 2 else ())
        elif len(big) >= 2:
            contracted, result = (), _broadcast(*big)
        else:
            return big[0] if big else None      # a scaling: not a product of the inputs
        self.op("product", name, big, contracted, result, node)
        return result

    def reduce(self, name, x, dim, node):
        if x is None:
            return None
        if dim is None or dim == "all":
            self.op("reduce", name, [x], tuple(x), (), node)
            return None
        dims = dim if isinstance(dim, tuple) else (dim,)
        if not all(isinstance(d, int) for d in dims):
            self.op("reduce", name, [x], tuple(x), (), node)
            return None
        axes = tuple(x[d % len(x)] for d in dims) if x else ()
        self.op("reduce", name, [x], axes, tuple(a for n, a in enumerate(x) if n not in {d % len(x) for d in dims}),
                node)
        if name in ("cumsum", "cummax", "cumprod", "logcumsumexp", "sort"):
            return x
        return tuple(a for n, a in enumerate(x) if n not in {d % len(x) for d in dims})

    def op(self, kind, name, operands, axes, result, node):
        self.reading.ops.append(Op(kind, name, [tuple(o) for o in operands], tuple(axes), tuple(result or ()),
                                   getattr(node, "lineno", 0)))


def _is_none(node) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _is_shape(node) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "shape" or \
        isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "size"


def _width_one(s: ast.Slice) -> bool:
    """`i:i+1`, `i-1:i`, `3:4`: a slice one wide."""
    if s.step is not None or s.lower is None or s.upper is None:
        return False
    low, up = ast.dump(s.lower), s.upper
    if isinstance(up, ast.BinOp) and isinstance(up.op, ast.Add) and isinstance(up.right, ast.Constant) \
            and up.right.value == 1 and ast.dump(up.left) == low:
        return True
    if isinstance(s.lower, ast.BinOp) and isinstance(s.lower.op, ast.Sub) and isinstance(s.lower.right, ast.Constant) \
            and s.lower.right.value == 1 and ast.dump(s.lower.left) == ast.dump(up):
        return True
    if isinstance(s.lower, ast.Constant) and isinstance(up, ast.Constant) and isinstance(s.lower.value, int) \
            and isinstance(up.value, int):
        return up.value - s.lower.value == 1
    return False


def _int_value(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _int_value(node.operand)
        return -v if v is not None else None
    return None


def _int_args(node) -> list[int]:
    values = []
    for a in node.args:
        if isinstance(a, (ast.Tuple, ast.List)):
            values += [v for v in map(_int_value, a.elts) if v is not None]
        else:
            v = _int_value(a)
            if v is not None:
                values.append(v)
    for k in node.keywords:
        if k.arg in ("dim0", "dim1", "axis1", "axis2", "source", "destination"):
            v = _int_value(k.value)
            if v is not None:
                values.append(v)
    return values


def _dim_argument(node, method: bool):
    """The `dim`/`axis` of a call: an int, a tuple of ints, None (not given: all axes), or "unknown"."""
    for k in node.keywords:
        if k.arg in ("dim", "axis"):
            if isinstance(k.value, (ast.Tuple, ast.List)):
                values = tuple(_int_value(e) for e in k.value.elts)
                return values if all(v is not None for v in values) else "all"
            v = _int_value(k.value)
            return v if v is not None else "all"
    position = 0 if method else 1
    if len(node.args) > position:
        a = node.args[position]
        if isinstance(a, (ast.Tuple, ast.List)):
            values = tuple(_int_value(e) for e in a.elts)
            return values if all(v is not None for v in values) else "all"
        v = _int_value(a)
        if v is not None:
            return v
        if isinstance(a, ast.Constant) and a.value is None:
            return None
        return "all"
    return None


def _broadcast(*parts):
    """The axes of an elementwise result: the operands' axes aligned from the right, the larger kept."""
    big = [p for p in parts if p]
    if not big:
        return None
    n = max(len(p) for p in big)
    out = []
    for i in range(n):
        labels = [p[len(p) - n + i] for p in big if len(p) - n + i >= 0]
        named = [l for l in labels if l != "1"]
        out.append(named[0] if named else "1")
    return tuple(out)


# ---- what the process checks call whole-matrix work -------------------------------------------

AXIS_NAMES = {"B": "the batch", "T": "the positions", "D": "the features", "Q": "the queries", "K": "the keys",
              "E": "the value features", "*": "the leading axes", UNKNOWN: "axes the grader cannot follow",
              "1": "a width-1 axis"}


def _spans(op, big) -> list[str]:
    found = {a for o in op.operands for a in o} | set(op.axes) | set(op.result)
    return [AXIS_NAMES[a] for a in ("B", "T", "Q", "K", UNKNOWN) if a in big and a in found]


def _describe(op, big) -> str:
    spans = ", ".join(_spans(op, big))
    what = {"product": f"`{op.name}` multiplies operands spanning {spans} at once",
            "reduce": f"`{op.name}` reduces over {spans} at once",
            "softmax": f"`{op.name}` works on {spans} at once",
            "opaque": f"`{op.name}` receives whole inputs (spanning {spans}): the grader cannot tell how it computes"}[op.kind]
    return f"line {op.line} of the function: {what}" if op.line else what


def entrywise_work(sources, name: str, inputs: dict) -> tuple[str, list[str]]:
    """(problem, findings) for an answer that must compute one entry (a dot product of d numbers) at a
    time: a product (or an unreadable call) of the inputs spanning more than one entry's features."""
    reading = read(sources, name, inputs)
    if reading.problem:
        return reading.problem, []
    big = {"B", "T", UNKNOWN}
    found = [op for op in reading.ops if op.kind in ("product", "opaque")
             and {a for o in op.operands for a in o} & big]
    return "", list(dict.fromkeys(_describe(op, big) for op in found))[:3]


def streamed_work(sources, name: str, inputs: dict) -> tuple[str, list[str]]:
    """(problem, findings) for an answer that must visit the keys one at a time: a reduction, softmax or
    contraction over the key axis, a (queries, keys) matrix, or an unreadable call given the key axis."""
    reading = read(sources, name, inputs)
    if reading.problem:
        return reading.problem, []
    big = {"K", UNKNOWN}
    found = []
    for op in reading.ops:
        every = {a for o in op.operands for a in o}
        if op.kind in ("reduce", "softmax") and set(op.axes) & big:
            found.append(op)
        elif op.kind == "product" and (set(op.axes) & big or {"Q", "K"} <= set(op.result)):
            found.append(op)
        elif op.kind == "opaque" and every & big:
            found.append(op)
    return "", list(dict.fromkeys(_describe(op, big) for op in found))[:3]
