"""How an answer computes, read from its source in the grader: the process checks' evidence.

Threat model. A process check ("one entry at a time", "one pass over the keys", "streamed, without
the T×T matrix") must not trust the kernel: a student's code can turn off or forge any record the
kernel keeps of its own calls (the trace of torch calls: a hook removed, work done under
`torch._C.DisableTorchFunction()`, fake per-key calls shown while the result comes from one shot),
and it can do the work in numpy or Python floats, which no torch hook sees. What the kernel cannot
change is the answer's source: the grader rebuilds the notebook from the submission and keeps the
text of every code cell the student wrote, in the order the notebook runs them (grading:
autograder/grading/grade.py; a notebook run without a grader: the kernel's input history). So the work is
judged from that text, read as the kernel runs it: as IPython's input transformers write it (a magic, a
shell line, a `?` is a call of get_ipython(); lines are Python's, not str.splitlines'; a string's text
is the string's). A magic or shell line that runs no Python of the cell's (QUIET_MAGICS, `!ls`,
`x = !ls`) is read as nothing; a timing magic at a cell's top level as the code it runs, as IPython runs
it (`%time stmt`, `%%time`: the statement, in the notebook's namespace; `%timeit stmt`, `%%timeit setup`:
a function of setup and statement, called, so what they assign binds no name of the notebook's); any
other use of get_ipython() (`%timeit -v x ...`, `%%capture`, run_cell, user_ns, push) is code the reader
cannot decide past. A cell that does not parse so does not run.

What runs. The hidden test calls the answer when its cell runs, so the reader runs the student's cells
before that cell, in order, at the level of bindings: a `def`, a class, an assignment, an import, a
decorator, and a cell's expressions (a call as a statement, an assert's or an if's test: what a function
they call stores into a list or an object is followed); a later definition replaces an earlier one, as
in Python (an earlier attempt left above, a cell copied and changed, a helper redefined later), and a
name bound by assignment is followed where it can be (`f = g`, `functools.partial(g, ...)`, a lambda, a
closure a function returns, an object whose class has `__call__`). A helper is the binding its name has
when the answer runs: the last one in cell order, wherever it is.

Which bindings it follows (an allowlist). The answer's name, and every name of the notebook the answer
relies on (one its reading reads: a helper, a library's alias, a value it uses; one read by a cell's
statement that binds such a name, or that runs a student's function or stores into a value), may be
bound only at a cell's top level, by a `def`, a class, an assignment, a loop's or a with's target, or an
import from a module it knows (IMPORTABLE_MODULES: each loaded before a student's cell runs, so not a file
a cell wrote). Any other binding of such a name anywhere in the cells, at any depth, is not followed,
and the answer is not decided: a `:=` target (in a statement, an assert, a call's argument, a
comprehension, a default), a `global` or `nonlocal` declaration of it in a function's or a class's body
(a call the reader does not follow can run it), an import of it from another module (one the kernel may
have written), and `import *` from another module, which can bind any name. Code that can change what
the code does behind its text (below) is looked for in all the code of the cells that can run: at a
cell's top level, in the answer and the helpers it reads, and in every other function or lambda, which
a cell's call may run, unless no code can call it (_Notebook.dead, an allowlist: a function defined in
a function that nothing in the cells names: not its name loaded, an attribute, a word of a string, a
decorator, nor, for a name like `_K__g`, its private spelling `__g`, which Python mangles to it in class K's
body; a method only with its class). A function at a cell's top level can always run: the grader's
hidden tests call the notebook's functions by name.

How it computes. The answer's body (and every helper of the student's it calls, with the call's
arguments bound to the helper's parameters) is run by a small abstract interpreter that follows the
axes of the inputs through names, indexing, slicing, transposes and conversions (numpy, lists, Python
floats alike), through iteration (`for`, `zip`, `enumerate`, `map`, `range(len(...))`,
comprehensions, generators, tuple unpacking, `itertools.product`, lists built by `append`, values
stored into arrays, dicts or objects, a SimpleNamespace's keywords and attributes read as a student's
object's), through branches (an `if`, a `match`'s cases: a sequence pattern
unpacks the subject, a class or mapping pattern's captures are not followed), and records every
product, contraction, reduction and softmax with the axes of its operands. A check then says which of these are whole-matrix work: a product of
q and k that multiplies more than one entry's d numbers at once, a reduction over the key axis, a
(T, T) matrix. By what it multiplies, never by an op's name or rank: (1×d)@(d×1) and
(q[b, i:i+1] * k[b, j:j+1]).sum() are one entry's work. A pass over the keys one at a time (a loop over
them, Python's sum, functools.reduce or itertools.accumulate of them) is no reduction at once; but what it
leaves, and what is computed from it (a maximum of every key), is computed from every key (Scope.summary,
followed by name), and a second such pass adding up terms computed from it is whole-row work: the sum of a
two-pass softmax, however it is written (`+`, `+=`, an `add`, a fold's adding step). A second pass that
builds the weights (stored, appended) adds nothing up; one that updates what it carries from such a
value in a way the reader does not read as an addition or not (torch.cat, a sum of a stack, a fold's
other step) is not decided.

Three outcomes, never a guess against the student:
* whole-matrix work the reader is sure of (an op in code that runs whenever the answer runs, on axes
  it followed): a finding, and the process points are lost;
* none, and nothing it could not follow: the process is as asked;
* something it cannot decide: code that can change what its text says (exec, eval, globals(),
  setattr, sys.modules, a library's function replaced, a torch function mode...: TAMPERING, in any use
  but the read-only ones below), a binding it cannot resolve, a library call it cannot read receiving
  whole inputs, axes it cannot follow (a reshape mixing them), whole-matrix work only in a branch that
  may not run, and anything it does not model.
  Then the cell goes to a person (`review`), with the reason; the points are not taken.
What it models is named (FOLLOWED_STATEMENTS, INERT_EXPRESSIONS, FOLLOWED_DUNDERS, ...), not what it
refuses: a statement of another kind in the answer or a helper is not decided, and in a cell it leaves
the names it binds unfollowed; a student's class that defines anything else (an operator, __iter__,
__enter__, __getattr__, a descriptor, a property, __new__, a metaclass) makes the code that touches the
class or its objects undecided, and only that code: a class the answer never reaches changes nothing.
Read-only uses (an allowlist): a word of TAMPERING in code that can run passes only where its value is read
and shown, never stored, called, mutated or handed to other code. `globals()`, `locals()`, `vars(x)`,
`x.__dict__`, `x.__class__` and `sys.modules` flow only into READ_ONLY_SINKS (print, repr, str, len,
sorted, list, type, ... of the builtins, none of them bound by the student), an f-string, an `in`
test as its container, an `is`, a `==` with a constant (no student code is handed the value), `.keys()`
used so in turn, or a read of `__name__`/`__qualname__`; a
module of MODULE_READS (inspect, gc, types, os, pathlib) is imported where every use of the name it binds
(of os or pathlib unbound, too) is one of its entries (inspect.signature, gc.collect, types.SimpleNamespace,
os.path.join, os.getcwd, os.environ read but never stored into, pathlib.Path, ...); `getattr(x, n)` with `n` a
loop's target over a literal list of plain names. `eval` of a constant string of plain data (constants
and arithmetic) is read as that expression, and `setattr(x, "name", v)` as the statement `x.name = v`,
which passes at a cell's top level on a plain class of the student's or one of its objects (on a
library's object, in a function, or of a dunder name, it is "uses setattr" as before).
What a cell may reach (allowlists, _unread_reach), in all the code of the cells that can run, as above:
* an attribute stored (an assignment, an augmented one, `del`, a loop's or a with's target, a setattr
  read as one) only on an object the reader knows to be the student's own: a name bound, every time,
  only to a student's class, a def, an object made by calling such a class or SimpleNamespace; `self`
  in a method of a student's class; a function's local bound only so (_own_object); and not a dunder.
  Any other base (a library's object, a name bound to one, a call's result, a parameter, anything it
  cannot tell) goes to review: it can replace what library code does (`type(t).dot = f`). So does a
  method of a student's class reached through the class (`C.m`, `type(x).m`, getattr of them), where
  any object can be its self, but `C.m(self, ...)` passing on a method's own self;
* an item stored only into a value no import reaches: not into a library's object named by path
  (`np.sctypeDict[...]`, `random._os.environ[...]`, or a name bound to one);
* a module imported only if it is in IMPORTABLE_MODULES (LIBRARY_MODULES, MODULE_READS, INERT_MODULES:
  json, re, textwrap, pprint, datetime, enum, sys for SYS_READS): pickle, runpy, timeit, code, pdb,
  ... run code from a string, a file or a pickle, and os or pathlib beyond MODULE_READS (os.system,
  os.environ stored into, pathlib.os) run code or change what torch does;
* of torch and numpy, a public function, class, dtype or constant, or a submodule of LIBRARY_SUBMODULES
  (torch.nn, torch.nn.functional, torch.linalg, torch.testing, torch.autograd, torch.special,
  numpy.random, numpy.linalg, ...), never torch.hub, torch.jit, torch.library, torch.ops, torch.utils, a
  private name, ...; of the submodules not read, only the device queries of LIBRARY_READS
  (torch.cuda.is_available, torch.cuda.device_count, torch.backends.mps.is_available); of IPython, only
  IPython.display and its public names (IPYTHON_READS: never IPython.core's InteractiveShell, whose
  instance() runs code in the kernel, nor the module handed on);
  of the other modules, a public name; numpy.load without allow_pickle=True, and torch.load only with
  weights_only=True written out (SAFE_LOADS); inspect.signature with no keyword (eval_str runs strings);
* a dunder attribute read only if READ_DUNDERS has it (`__name__`, `__qualname__`, `__doc__`, `__module__`,
  `__version__`), `__dict__`/`__class__` as the read-only uses above, `__init__` only called as
  `super().__init__(...)` or `Base.__init__(self, ...)` on a method's own self, and an operator's method the
  reader models called where it is read (`t.__matmul__(u)`): never `__func__`, `__self__`, `__wrapped__`,
  `__get__`, a method taken as a value... (they hand a method another object as its self);
* an annotation (a parameter's, a return's, an annotated assignment's, at any depth) only if it is a type
  expression (_type_expression: names, attributes, subscripts, tuples and lists of them, `X | Y`, None,
  `...`, a number, a string that parses to one): typing.get_type_hints, functools.singledispatch and
  inspect evaluate a string annotation, so a `:=`, a call or a lambda in one is code that runs.
Code that only hides work from the kernel's own record (torch._C.DisableTorchFunction) changes nothing
the text says: the text is read as usual, and a note says the record was turned off. The kernel's
trace is still asked for: it can only take points away (it is the student's own record), never give them.
"""
from __future__ import annotations

import ast
import keyword
import re
from dataclasses import dataclass, field

UNKNOWN = "?"           # an axis the interpreter cannot follow
LITERAL = "n"           # the axis of a list written out item by item: a few items, none an input's axis

# Names and attributes that can change what the code does behind its text (what a name is bound to,
# what a library function computes, which code runs): a reader cannot decide past them.
TAMPERING = {"exec", "eval", "compile", "globals", "locals", "vars", "setattr", "delattr", "__import__",
             "__code__", "__globals__", "__builtins__", "__dict__", "__class__", "__torch_function__",
             "__torch_dispatch__", "TorchFunctionMode", "TorchDispatchMode", "overrides", "_python_dispatch",
             "modules", "importlib", "autograder", "builtins", "ctypes", "_getframe", "f_globals", "f_locals",
             "settrace", "setprofile", "_C", "__setattr__", "__getattribute__", "__closure__", "__defaults__",
             "__kwdefaults__", "gc", "inspect", "types", "__main__", "get_ipython"}
# What the reader follows of a student's class (an allowlist): its methods and plain attributes, the
# special methods below, and @staticmethod. Anything else a class can define changes what Python does
# with its objects behind the code's text (an operator, iteration, a with block, attribute lookup, a
# descriptor, a metaclass, __new__...): code that touches such a class or its objects is not decided.
FOLLOWED_DUNDERS = {"__init__", "__call__", "__getitem__"}
INERT_CLASS_ATTRS = {"__slots__", "__doc__", "__module__", "__qualname__", "__annotations__"}
FOLLOWED_METHOD_DECORATORS = {"staticmethod"}
# The statements and expressions the reader models; any other kind is not decided (in an answer or a
# helper), or leaves the names it binds unfollowed (in a cell).
FOLLOWED_STATEMENTS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign, ast.AugAssign,
                       ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.AsyncWith, ast.Try, ast.Return,
                       ast.Raise, ast.Expr, ast.Assert, ast.Global, ast.Nonlocal, ast.Import, ast.ImportFrom,
                       ast.Delete, ast.Pass, ast.Break, ast.Continue, ast.Match) \
    + ((ast.TryStar,) if hasattr(ast, "TryStar") else ())
INERT_EXPRESSIONS = (ast.JoinedStr, ast.FormattedValue, ast.Slice)    # their parts are read; they make text or a slice

# ... and names that only hide work from the kernel's record of torch calls: the text still says it.
TRACE_HIDING = {"DisableTorchFunction", "DisableTorchFunctionSubclass"}

PRODUCTS = {"matmul", "mm", "bmm", "mv", "dot", "vdot", "inner", "outer", "einsum", "tensordot", "mul", "multiply",
            "vecdot", "kron", "cdist", "linear", "bilinear", "baddbmm", "addbmm", "addmm", "addmv", "ger",
            "__matmul__", "__rmatmul__", "__mul__", "__rmul__", "__imul__", "mul_", "prod", "cross", "chain_matmul",
            "multi_dot", "matrix_power", "dist", "cosine_similarity", "pairwise_distance", "matmul_", "addcmul",
            "outer_", "product"}
MATMULS = {"matmul", "mm", "bmm", "mv", "__matmul__", "__rmatmul__", "addmm", "baddbmm", "addbmm", "addmv",
           "chain_matmul", "multi_dot", "matrix_power"}
CONTRACT_LAST = {"dot", "vdot", "vecdot", "dist", "cosine_similarity", "pairwise_distance"}
REDUCTIONS = {"sum", "nansum", "mean", "nanmean", "max", "min", "amax", "amin", "logsumexp", "argmax", "argmin",
              "median", "std", "var", "norm", "topk", "sort", "cumsum", "cummax", "cumprod", "logcumsumexp",
              "maximum_reduce", "prod", "all", "any", "count_nonzero", "nanmax", "nanmin", "ptp", "fsum",
              "average", "max_reduce", "aminmax", "kthvalue", "mode", "nanmedian", "quantile", "trapz",
              "trapezoid", "cumulative_sum"}
CUMULATIVE = {"cumsum", "cummax", "cumprod", "logcumsumexp", "sort", "cumulative_sum"}
SOFTMAX = {"softmax", "log_softmax", "softmin", "scaled_dot_product_attention", "_softmax"}
SAME_AXES = {"numpy", "tolist", "detach", "clone", "double", "float", "half", "to", "cpu", "contiguous", "copy",
             "requires_grad_", "type", "astype", "data", "real", "abs", "exp", "log", "neg", "sqrt", "tanh",
             "asarray", "array", "as_tensor", "tensor", "from_numpy", "Tensor", "asanyarray", "ascontiguousarray",
             "exp_", "sub", "add", "div", "subtract", "divide", "true_divide", "where", "masked_fill", "clamp",
             "maximum", "minimum", "fmax", "fmin", "nan_to_num", "square", "pow", "float_power", "xlogy",
             "__array__", "item", "bfloat16", "float32", "float64", "expm1", "log1p", "exp2", "log2", "log10",
             "sigmoid", "relu", "negative", "reciprocal", "rsqrt", "clip", "clamp_min", "clamp_max", "sign",
             "isinf", "isnan", "isfinite", "isneginf", "isposinf", "logical_and", "logical_or", "logical_not",
             "eq", "ne", "lt", "le", "gt", "ge", "greater", "less", "equal", "not_equal", "round", "floor", "ceil",
             "trunc", "fabs", "copysign", "masked_fill_", "clamp_", "add_", "sub_", "div_", "neg_", "abs_",
             "sqrt_", "log_", "float_", "double_", "copy_", "fill_", "zero_", "masked_scatter_", "index_put_",
             "set_", "sub_", "exp2_", "logaddexp", "logaddexp2", "hypot", "atleast_1d", "atleast_2d", "atleast_3d",
             "asfarray", "fsum_", "as_strided_", "tril", "triu", "tril_", "triu_", "clone_", "requires_grad",
             "retain_grad", "cuda", "pin_memory", "share_memory_", "numpy_", "mps", "baddbmm_"}
SHAPE_ONLY = {"shape", "dtype", "device", "ndim", "size", "dim", "numel", "len", "isinstance", "type",
              "is_floating_point", "element_size", "nbytes", "itemsize", "get_device", "layout", "is_contiguous",
              "stride", "storage_offset", "finfo", "iinfo", "is_tensor", "is_complex", "result_type",
              "promote_types", "can_cast", "print", "repr", "str", "id", "hash", "callable", "hasattr", "format",
              "manual_seed", "seed", "set_printoptions", "is_grad_enabled", "isclose", "allclose", "equal",
              "array_equal", "testing", "assert_close"}
CREATION = {"zeros", "ones", "empty", "full", "arange", "zeros_like", "ones_like", "empty_like", "full_like",
            "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor", "randn_like", "rand_like", "eye",
            "linspace", "logspace", "randn", "rand", "randint", "tril_indices", "triu_indices", "ndarray",
            "empty_strided"}
RESHAPES = {"reshape", "view", "flatten", "expand", "repeat", "broadcast_to", "ravel", "unflatten", "view_as",
            "reshape_as", "expand_as", "hstack", "vstack", "dstack", "flip", "roll", "tile", "repeat_interleave",
            "narrow", "take", "take_along_dim", "take_along_axis", "gather", "index_select", "masked_select",
            "nonzero", "diagonal", "diag", "diag_embed", "trace", "as_strided", "unfold", "fliplr", "flipud",
            "rot90", "T_", "squeeze_", "unsqueeze_", "resize_", "resize"}
# library functions that only wrap a function without changing what it computes
TRANSPARENT_DECORATORS = {"no_grad", "inference_mode", "enable_grad", "set_grad_enabled", "lru_cache", "cache",
                          "wraps", "staticmethod", "classmethod", "compile", "jit", "script", "ignore", "unused",
                          "autocast", "profile", "record_function", "functools", "torch"}
DEFAULT_ALIASES = {"np": "numpy", "F": "torch.nn.functional", "nn": "torch.nn", "plt": "matplotlib.pyplot",
                   "it": "itertools", "ft": "functools", "op": "operator"}
BUILTIN_FUNCTIONS = {"sum", "max", "min", "zip", "enumerate", "map", "filter", "range", "len", "list", "tuple",
                     "sorted", "reversed", "iter", "next", "float", "int", "abs", "round", "print", "isinstance",
                     "any", "all", "pow", "divmod", "dict", "set", "str", "repr", "type", "id", "hash", "bool",
                     "callable", "hasattr", "getattr", "format", "frozenset", "complex", "object", "super",
                     "property", "staticmethod", "classmethod", "NotImplementedError", "ValueError",
                     "TypeError", "AssertionError", "Exception", "RuntimeError", "IndexError", "KeyError",
                     "ZeroDivisionError", "ArithmeticError", "StopIteration", "slice", "ord", "chr", "bin",
                     "hex", "oct", "isinstance", "issubclass", "open"}
MAX_DEPTH = 8           # helpers calling helpers
MAX_STEPS = 60_000      # statements and expressions interpreted for one answer


# ---- the abstract values -----------------------------------------------------------------------
# An array derived from the inputs is a tuple of axis labels (() for a number derived from them);
# None is anything not derived from the inputs.

@dataclass(eq=False)
class Size:              # an int: the length of an axis
    label: str


@dataclass(eq=False)
class Index:             # an int: a position along an axis
    label: str


@dataclass(eq=False)
class Shape:             # a shape (x.shape): its axes
    axes: tuple


@dataclass(eq=False)
class Rng:               # range(...): positions along an axis
    label: str


@dataclass(eq=False)
class Seq:               # a list, iterator or generator: its items are `elem`, `outer` says how many
    elem: object
    outer: str


@dataclass(eq=False)
class Tup:               # a tuple or list written out item by item
    items: list


@dataclass(eq=False)
class Blank:             # an array the answer made itself (zeros, full...): not derived from the inputs yet
    axes: tuple


@dataclass(eq=False)
class Func:              # a function of the student's (def or lambda), with the scope it was defined in
    node: object
    scope: "Scope"
    name: str
    attrs: dict = field(default_factory=dict)


@dataclass(eq=False)
class Bound:             # a function with arguments bound first (functools.partial, a method and its self)
    fn: object
    args: list
    kwargs: dict


@dataclass(eq=False)
class Cls:               # a class of the student's
    node: object
    scope: "Scope"
    attrs: dict = field(default_factory=dict)


@dataclass(eq=False)
class Inst:              # an object of a student's class
    cls: Cls
    attrs: dict = field(default_factory=dict)


@dataclass(eq=False)
class Lib:               # a library module, function or type (numpy, torch.dot, itertools.product...)
    path: str


@dataclass(eq=False)
class LibResult:         # what a library call returned (data, unless it is called: then nothing to follow)
    path: str


@dataclass(eq=False)
class Opaque:            # a value the reader cannot follow, and why
    why: str


@dataclass(eq=False)
class Choice:            # one of several bindings, depending on a branch the reader cannot decide
    options: list


def _is_arr(v) -> bool:
    return isinstance(v, tuple)


def _array_choice(v) -> bool:
    """One of several arrays (of different ranks), depending on a branch the reader could not decide."""
    return isinstance(v, Choice) and any(_is_arr(o) for o in v.options) and \
        all(_is_arr(o) or o is None for o in v.options)


def _as_arr(v, depth=0):
    """The axes of `v` used as an array operand (a list of rows is a matrix), or None."""
    if isinstance(v, tuple):
        return v
    if depth > 6:
        return None
    if isinstance(v, Seq):
        inner = _as_arr(v.elem, depth + 1)
        return None if inner is None else (v.outer,) + inner
    if isinstance(v, Tup):
        inner = [a for a in (_as_arr(i, depth + 1) for i in v.items) if a is not None]
        return (LITERAL,) + _broadcast(*inner) if inner else None
    if isinstance(v, Choice):
        inner = [a for a in (_as_arr(o, depth + 1) for o in v.options) if a is not None]
        return _broadcast(*inner) if inner else None
    return None


def _spread(value) -> list | None:
    """The items a starred tuple or shape spreads into (`*t`, `*x.shape`); None for anything else."""
    if isinstance(value, Tup):
        return list(value.items)
    if isinstance(value, Shape):
        return [Size(a) for a in value.axes]
    return None


def _merge(*values):
    """One value standing for several (the branches of an if, the items of a list)."""
    values = [v for v in values if v is not None]
    if not values:
        return None
    arrays = [v for v in values if _is_arr(v)]
    if arrays and len(arrays) == len(values):
        ranks = {len(a) for a in arrays if a}
        if len(ranks) > 1:                   # arrays of different ranks: one or the other, not a broadcast
            distinct = list({a: None for a in arrays})
            return Choice(distinct)
        return _broadcast(*arrays) if any(arrays) else ()
    if len(values) == 1:
        return values[0]
    if all(isinstance(v, Seq) for v in values):
        return Seq(_merge(*[v.elem for v in values]), _merge_labels(*[v.outer for v in values]))
    if any(isinstance(v, (Func, Bound, Inst, Cls, Lib, Opaque, LibResult)) for v in values):
        return values[-1] if all(v is values[-1] for v in values) else Choice(values)
    arrays = [a for a in (_as_arr(v) for v in values) if a is not None]
    if arrays:
        return _broadcast(*arrays)
    return values[-1]


def _merge_labels(*labels) -> str:
    parts = set()
    for label in labels:
        parts |= set(str(label).split("+"))
    parts.discard("1")
    if not parts:
        return "1"
    if UNKNOWN in parts:
        return UNKNOWN
    return "+".join(sorted(parts))


def _broadcast(*parts):
    """The axes of an elementwise result: the operands' axes aligned from the right, the larger kept."""
    big = [p for p in parts if p]
    if not big:
        return () if any(p == () for p in parts) else None
    n = max(len(p) for p in big)
    out = []
    for i in range(n):
        labels = [p[len(p) - n + i] for p in big if len(p) - n + i >= 0]
        named = [label for label in labels if label != "1"]
        out.append(named[0] if named else "1")
    return tuple(out)


# ---- scopes --------------------------------------------------------------------------------------

class Names(dict):
    """The notebook's names and their bindings, and which names the reading read (`read`)."""
    def __init__(self):
        super().__init__()
        self.read: set = set()


class Scope:
    def __init__(self, globals_: dict | None = None, parent: "Scope | None" = None, vars_: dict | None = None):
        self.vars = vars_ if vars_ is not None else Names() if globals_ is None else {}
        self.parent = parent
        self.globals = globals_ if globals_ is not None else self.vars
        self.declared_global: set = set()
        self.declared_nonlocal: set = set()
        self.comprehension = False
        self.summary: set = set()    # names bound here to a value computed from every key (_Interpreter.passes)

    def binder(self, name: str) -> dict:
        """The dict an assignment to a name binds it in: as Python does, a function's own locals unless the
        name is declared global or nonlocal there (a `:=` in a comprehension: the scope around it)."""
        if name in self.declared_global or name in self.declared_nonlocal:
            return self.owner(name)
        return self.vars

    def lookup(self, name: str):
        if name in self.declared_global:
            return self.global_(name)
        scope = self
        while scope is not None:
            if name in scope.vars:
                if scope.vars is self.globals:
                    return self.global_(name)
                return scope.vars[name]
            scope = scope.parent
        return self.global_(name)

    def global_(self, name: str):
        """A name of the notebook's (a cell's binding, a builtin, a library): remembered as read."""
        if isinstance(self.globals, Names):
            self.globals.read.add(name)
        return self.globals[name] if name in self.globals else _default(name)

    def owner(self, name: str) -> dict:
        """The dict a name is bound in (for an assignment, or a value stored into what it names)."""
        if name in self.declared_global:
            return self.globals
        if name in self.declared_nonlocal:
            scope = self.parent
            while scope is not None:
                if name in scope.vars:
                    return scope.vars
                scope = scope.parent
        if name in self.vars or self.parent is None:
            return self.vars
        scope = self.parent
        while scope is not None:           # a value stored into a name of an enclosing scope
            if name in scope.vars:
                return scope.vars
            scope = scope.parent
        return self.globals if name in self.globals else self.vars


def _default(name: str):
    """A name no cell binds: a builtin or a library the provided cells imported."""
    if name in BUILTIN_FUNCTIONS:
        return Lib(name)
    return Lib(DEFAULT_ALIASES.get(name, name))


# ---- what the reader finds ---------------------------------------------------------------------------

@dataclass
class Op:
    kind: str                  # "product", "reduce", "softmax", "combine" (elementwise, of several arrays), "opaque",
    #                            "fold" (a loop's or a fold's items added up, each computed from every key: a 2nd pass)
    name: str
    operands: list             # axes (tuples of labels) of the operands derived from the inputs
    axes: tuple = ()           # reduce/softmax: the axes collapsed; product: the axes contracted
    result: tuple = ()
    line: int = 0              # line within the function it is in
    where: str = ""            # that function's name
    certain: bool = True       # in code that runs whenever the answer runs (no branch the reader cannot decide)


@dataclass
class Reading:
    ops: list = field(default_factory=list)
    undecided: list = field(default_factory=list)   # why the reader cannot decide (the cell goes to a person)
    notes: list = field(default_factory=list)       # e.g. the kernel's record of torch calls turned off


class _TooMuch(Exception):
    pass


# IPython's magics and shell lines that run no Python of the cell's (an allowlist): a cell's `%matplotlib
# inline`, `!ls`, `x = !ls`, `len?` are read as nothing (the last binds x to the shell's output, as written).
# Any other use of `get_ipython()` (`%time x = f`, `%%timeit`, `run_cell`, `user_ns`, `push`) runs or binds
# what the reader does not read: "uses get_ipython" (TAMPERING).
QUIET_MAGICS = {"matplotlib", "pinfo", "pinfo2", "psearch", "pdoc", "pdef", "psource", "pwd", "ls", "who", "whos",
                "env", "history", "lsmagic", "magic", "precision"}


def _ipython_call(node) -> str | None:
    """'system', 'getoutput', 'run_line_magic', ... for `get_ipython().<that>(...)`, else None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        inner = node.func.value
        if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id == "get_ipython" \
                and not inner.args and not inner.keywords:
            return node.func.attr
    return None


class _QuietMagics(ast.NodeTransformer):
    """A shell line or a magic of QUIET_MAGICS with constant arguments, as IPython writes them, is None."""

    def visit_Call(self, node):
        self.generic_visit(node)
        kind = _ipython_call(node)
        constant = all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in node.args) \
            and not node.keywords
        if constant and (kind in ("system", "getoutput")
                         or (kind == "run_line_magic" and node.args and node.args[0].value in QUIET_MAGICS)):
            return ast.copy_location(ast.Constant(None), node)
        return node


def _python_of(text: str) -> str:
    """What the kernel runs of a cell: the text as IPython's input transformers write it (magics, shell
    lines and `?` as calls of get_ipython(), line by line as IPython splits lines, strings left whole)."""
    import warnings
    from IPython.core.inputtransformer2 import TransformerManager
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return TransformerManager().transform_cell(text if text.endswith("\n") else text + "\n")


# The timing magics, read as the code they run (IPython.core.magics.execution), at a cell's top level
# (in a function's or a class's body they run in a copy of its locals: not read, "uses get_ipython"):
# * `%time stmt`, `%%time` + body: the statements, run in the notebook's namespace, as if written there
#   (`x = %time expr`: x is the expression's value); its option --no-raise-error is dropped;
# * `%timeit [options] stmt`, `%%timeit [options] setup` + body: IPython compiles `setup` and the body
#   into a function (`inner`) and calls it, so what they assign binds no name of the notebook; read as
#   `def %timeit(): <setup>; <stmt>` (a name no cell can write) and `%timeit()` where the magic stood
#   (`r = %timeit -o stmt`: r is bound to that call). Its options -n -r -t -c -p -q -o are dropped.
# Options are parsed by IPython's own parsers, as the magics parse them. Left as they are, so not read
# ("uses get_ipython"): `-v NAME` (binds NAME), a statement naming the template's own locals (_it, _timer,
# _t0, _t1, _i), `%%time` with a statement on its line, anything that does not parse or that IPython's
# parser refuses, and a magic anywhere but as a statement or the whole value of an assignment.
TIMING_FUNCTION = "%timeit"
TIMEIT_LOCALS = {"_it", "_timer", "_t0", "_t1", "_i"}


def _timing_code(call) -> tuple | None:
    """For `get_ipython().run_line_magic('time'|'timeit', line)` or `.run_cell_magic(..., line, body)` with
    constant arguments: ("time", statements) or ("timeit", setup statements, statements); else None."""
    kind = _ipython_call(call)
    if kind not in ("run_line_magic", "run_cell_magic") or call.keywords \
            or len(call.args) != (2 if kind == "run_line_magic" else 3) \
            or not all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in call.args):
        return None
    name, line = call.args[0].value, call.args[1].value
    body = call.args[2].value if kind == "run_cell_magic" else None
    try:
        if name == "time":
            from IPython.core import magic_arguments
            from IPython.core.magics.execution import ExecutionMagics
            _, extra = magic_arguments.parse_argstring(ExecutionMagics.time, line, partial=True)
            line = " ".join(extra)
            if line and body:
                return None                     # IPython refuses it: nothing runs
            return ("time", _timing_statements(body if body else line))
        if name == "timeit":
            from IPython.core.magic import Magics

            class _Options:
                options_table: dict = {}
            opts, stmt = Magics.parse_options(_Options(), line, "n:r:tcp:qov:", posix=False, strict=False,
                                              preserve_non_opts=True)
            if "v" in opts:
                return None                     # binds a name of the notebook to the result
            setup, stmt = ("pass", stmt) if body is None else (stmt, body)
            code = ("timeit", _timing_statements(setup), _timing_statements(stmt))
            if any(isinstance(n, ast.Name) and n.id in TIMEIT_LOCALS for part in code[1:] for t in part
                   for n in ast.walk(t)):
                return None
            return code
    except (Exception, SystemExit):             # IPython's parsers refuse it (UsageError, ...): not read
        return None
    return None


def _timing_statements(text: str) -> list:
    """The statements a timing magic runs of `text`, as the kernel transforms and reads them (raises
    SyntaxError if they do not parse)."""
    return _QuietMagics().visit(ast.parse(_python_of(text))).body


class _TimingMagics(ast.NodeTransformer):
    """The timing magics at a cell's top level, as the code they run (see above)."""

    def visit_FunctionDef(self, node):
        return node                             # its body runs in a copy of its locals: left as it is
    visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = visit_FunctionDef

    def _read(self, node, call):
        code = _timing_code(call)
        if code is None:
            return None, None
        # the line's code is on the magic's line, a cell magic's body on the lines after it
        cell = _ipython_call(call) == "run_cell_magic"
        shifts = [node.lineno - (0 if cell and code[0] == "time" and call.args[2].value else 1)] if code[0] == "time" \
            else [node.lineno - 1, node.lineno - (0 if cell else 1)]
        for part, shift in zip(code[1:], shifts):
            for statement in part:
                ast.increment_lineno(statement, shift)
        if code[0] == "time":
            return code[1], None
        function = ast.FunctionDef(name=TIMING_FUNCTION, args=ast.arguments(
            posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
            body=(code[1] + code[2]) or [ast.Pass()], decorator_list=[], returns=None, type_comment=None,
            **({"type_params": []} if "type_params" in ast.FunctionDef._fields else {}))
        ast.copy_location(function, node)
        run = ast.copy_location(ast.Call(func=ast.copy_location(ast.Name(id=TIMING_FUNCTION, ctx=ast.Load()), node),
                                         args=[], keywords=[]), node)
        return [function], run

    def visit_Expr(self, node):
        before, run = self._read(node, node.value)
        if before is None:
            return node
        statements = before + ([ast.copy_location(ast.Expr(value=run), node)] if run is not None else [])
        return [ast.fix_missing_locations(s) for s in statements] or ast.copy_location(ast.Pass(), node)

    def visit_Assign(self, node):
        before, run = self._read(node, node.value)
        if before is None:
            return node
        if run is None:                         # %time: the value of its one expression
            if not (len(before) == 1 and isinstance(before[0], ast.Expr)):
                return node
            run = before[0].value
            before = []
        node.value = run
        return [ast.fix_missing_locations(s) for s in before + [node]]


def _parse_cells(sources) -> list:
    trees = []
    for text in sources:
        try:
            tree = ast.parse(_python_of(str(text)))
            try:
                tree = _TimingMagics().visit(tree)
            except SyntaxError:
                pass            # a timed statement that does not parse: the magic is left as it is
            trees.append(_QuietMagics().visit(tree))
        except SyntaxError:
            continue            # a cell that does not parse as the kernel runs it defines nothing when it runs
    return trees


def _module_level(tree):
    """What a cell runs when it runs: everything but the bodies of the functions it defines (a function's
    body matters when it is called: the answer and what it calls are read for it on their own)."""
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            todo += list(node.decorator_list) + list(node.args.defaults) + \
                [d for d in node.args.kw_defaults if d is not None]
            continue
        if isinstance(node, ast.Lambda):
            continue
        todo += list(ast.iter_child_nodes(node))


def _irrefutable(pattern) -> bool:
    """A pattern of a match that every subject matches (`_`, a capture, an or-pattern holding one)."""
    kind = type(pattern).__name__
    if kind == "MatchAs":
        return pattern.pattern is None or _irrefutable(pattern.pattern)
    return kind == "MatchOr" and any(_irrefutable(p) for p in pattern.patterns)


def _dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def _unread_class(node: ast.ClassDef) -> str:
    """What a class's own body defines that the reader does not follow ('' if nothing)."""
    if node.keywords:
        return "a metaclass or class keywords"
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if _dunder(item.name) and item.name not in FOLLOWED_DUNDERS:
                return f"`{item.name}`"
            for deco in item.decorator_list:
                if not (isinstance(deco, ast.Name) and deco.id in FOLLOWED_METHOD_DECORATORS):
                    return f"a method decorated with `@{ast.unparse(deco)}`"
        elif isinstance(item, (ast.Assign, ast.AnnAssign)):
            targets = item.targets if isinstance(item, ast.Assign) else [item.target]
            for target in targets:
                if not isinstance(target, ast.Name):
                    return "an attribute assigned through another target than a name"
                if _dunder(target.id) and target.id not in FOLLOWED_DUNDERS | INERT_CLASS_ATTRS:
                    return f"`{target.id}`"
            value = item.value
            if value is not None and not isinstance(value, (ast.Constant, ast.Lambda, ast.Name, ast.Attribute)) \
                    and not (isinstance(value, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Constant) for e in value.elts)):
                return "an attribute made by an expression (a call, a descriptor?)"
        elif isinstance(item, ast.Pass) or (isinstance(item, ast.Expr) and isinstance(item.value, ast.Constant)):
            continue
        else:
            return f"a `{type(item).__name__.lower()}` statement in its body"
    return ""


def _bound_names(node) -> list[str]:
    """The names a statement can bind (assignments, definitions, imports, loop and match targets)."""
    names = []
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            names.append(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(n.name)
        elif isinstance(n, ast.alias):
            names.append((n.asname or n.name).split(".")[0])
        elif type(n).__name__ in ("MatchAs", "MatchStar") and getattr(n, "name", None):
            names.append(n.name)
        elif type(n).__name__ == "MatchMapping" and getattr(n, "rest", None):
            names.append(n.rest)
    return list(dict.fromkeys(names))


def _tampering(nodes, notebook: "_Notebook") -> tuple[str, str]:
    """(what can change the code behind its text, what hides work from the kernel's record): a word of
    TAMPERING in a use other than the read-only ones of `notebook` (above)."""
    hiding = ""
    part_of_hiding: set = set()       # the `_C` of torch._C.DisableTorchFunction: part of that name
    for node in nodes:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            for full in names + [a.asname or "" for a in node.names]:
                parts = set(full.split("."))
                if parts & TRACE_HIDING:
                    hiding = hiding or f"imports {full}"
                elif parts & TAMPERING and not notebook.import_allowed(node):
                    return f"imports {full}", hiding
            continue
        if getattr(node, "from_setattr", False) and (id(node) not in notebook.setattr_ok
                                                     or id(node) in notebook.setattr_other):
            return "uses setattr", hiding
        if isinstance(node, ast.Attribute) and node.attr in TRACE_HIDING and isinstance(node.value, ast.Attribute):
            part_of_hiding.add(id(node.value))
        word = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        if word in TRACE_HIDING:
            hiding = hiding or f"uses {word}"
        elif word in TAMPERING and id(node) not in part_of_hiding and not notebook.allowed(node, word):
            return f"uses {word}", hiding
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
                and len(node.args) >= 2 and not isinstance(node.args[1], ast.Constant) \
                and not notebook.constant_names(node):
            return "uses getattr with a computed name", hiding
    return "", hiding


# Read-only uses of tampering words (allowlists). A word of TAMPERING in code that runs passes only in one
# of these uses, where its value can be read and shown but not stored, called, mutated or handed on:
# * a call of `globals()`, `locals()`, `vars(x)`, or the value `x.__dict__`, `x.__class__`, `x.modules`
#   (sys.modules), whose value flows only into READ_ONLY_SINKS: a positional argument of one of those
#   builtins (the student binds none of them), a value formatted by an f-string, the container of an
#   `in` test, an operand of `is`, or of `==` with a constant (the other operand's code is never handed
#   the value), the object of `.keys()` (whose view flows on so: a view's `.mapping` would give the dict
#   back), or the object of an attribute read of INERT_ATTRIBUTES;
# * a module of MODULE_READS imported (`import inspect`, `from types import SimpleNamespace`) where every
#   use of the name it binds, anywhere in the cells, is one of that module's entries;
# * `getattr(x, n)` where `n` is the target of the loop that holds it, the loop running over a literal
#   list of names none of which is a dunder or a TAMPERING word, and the loop's body binding `n` nowhere.
# Two more are read as the code they stand for before anything else is read (_plain_builtins):
# `eval("2 + 3")`, a constant string that parses to plain data (constants, arithmetic, tuples, lists), is
# that expression; `setattr(x, "name", v)` as a statement is `x.name = v`, which passes only at a cell's top
# level where `x` is, every time the reader runs it, a plain class of the student's or one of its objects
# (no base, no decorator, nothing the reader does not follow): on anything else it is still "uses setattr".
READ_ONLY_CALLS = {"globals", "locals", "vars"}
READ_ONLY_VALUES = {"__dict__", "__class__", "modules"}
# sink -> what its result is: "data" (None, a str, an int, a bool: nothing left to follow), or "same" (it
# still holds what it was given: a list of the keys, the type; its own use must be read-only in turn)
# (not isinstance: a metaclass's __instancecheck__ would be handed the value)
READ_ONLY_SINKS = {"print": "data", "repr": "data", "str": "data", "ascii": "data", "len": "data",
                   "id": "data", "bool": "data", "sorted": "same", "list": "same", "type": "same"}
INERT_ATTRIBUTES = {"__name__", "__qualname__"}     # a class's or a function's: always a str
# module -> {attribute: how it may be used}: "data" (called; returns a str, a bool, an int, None, or a list or
# a tuple of them), "same" (called;
# what it returns is used read-only, as above), "new" (called; a fresh plain object holding only its
# arguments), "type" (not called: only a class to test an object against, in isinstance/issubclass or `is`),
# "object" (called; an object of the module's class, used as any value), "mapping" (not called: an item read,
# `m[key]` loaded, or the container of an `in` test; never stored into, iterated, nor handed on).
# An entry's name may be dotted ("path.join": `os.path.join(...)`): the longest entry the text names is its use
MODULE_READS = {
    # reads a function's signature, source or docstring, or asks what kind of object it is: nothing runs
    # of it and nothing of it changes (inspect's frames, members and globals are not here)
    "inspect": {"signature": "same", "getdoc": "data", "getsource": "data", "cleandoc": "data",
                "isfunction": "data", "isclass": "data", "ismethod": "data", "isroutine": "data",
                "isbuiltin": "data", "ismodule": "data", "isgeneratorfunction": "data"},
    # collects garbage or reports on the collector: it frees objects, it binds and replaces nothing
    # (get_objects, get_referrers, get_referents, which hand out any object, are not here)
    "gc": {"collect": "data", "isenabled": "data", "get_count": "data", "get_threshold": "data"},
    # a namespace object holding what it is given, and the types of functions, methods, modules to test
    # against (FunctionType, CodeType, ModuleType called would make code or a module: not here)
    "types": {"SimpleNamespace": "new", "FunctionType": "type", "MethodType": "type", "LambdaType": "type",
              "BuiltinFunctionType": "type", "BuiltinMethodType": "type", "ModuleType": "type",
              "GeneratorType": "type"},
    # os and pathlib, not TAMPERING words, are read as the same allowlist (READ_MODULES: any use of the
    # name an import of them binds, or of `os`/`pathlib` unbound, that is not an entry goes to review):
    # os: where the notebook is and what its folder holds (os.path's functions of a path's text or a file's
    # existence and size, getcwd, listdir), the machine's CPU count, a folder made (makedirs): none runs
    # code or changes what torch does. The environment only read (`os.environ.get(...)`, `os.environ[...]`
    # read, `... in os.environ`): stored into, it changes what torch does (TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD
    # makes torch.load unpickle); os.system, os.exec*, os.fork, os.putenv, os.environ.update, os.path
    # itself (posixpath.os is os), ... are not here
    "os": {"path.join": "data", "path.exists": "data", "path.isfile": "data", "path.isdir": "data",
           "path.basename": "data", "path.dirname": "data", "path.abspath": "data", "path.getsize": "data",
           "path.splitext": "data", "getcwd": "data", "listdir": "data", "cpu_count": "data",
           "makedirs": "data", "environ.get": "data", "environ": "mapping"},
    # a path's object (its methods read and write files, as open() does); pathlib.os, pathlib's other
    # names are not here
    "pathlib": {"Path": "object", "PurePath": "object"},
}
# the modules of MODULE_READS that are not TAMPERING words: their names' uses are checked where a cell's
# reach is (_unread_reach), the others' where the tampering words are
READ_MODULES = {module for module in MODULE_READS if module not in TAMPERING}
# what a string given to eval may hold to be read as the expression it is (plain data)
PLAIN_DATA = (ast.Expression, ast.Constant, ast.BinOp, ast.UnaryOp, ast.Tuple, ast.List, ast.Load, ast.operator,
              ast.unaryop)


def _names_bound_by(node) -> list:
    """The names one node binds (an assignment's or a loop's target, a definition, a parameter, an import,
    a handler, a match capture, a global or nonlocal declaration); "*" for `import *`."""
    if isinstance(node, ast.Name):
        return [] if isinstance(node.ctx, ast.Load) else [node.id]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.alias):
        return ["*" if node.name == "*" else (node.asname or node.name).split(".")[0]]
    if isinstance(node, ast.ExceptHandler):
        return [node.name] if node.name else []
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return list(node.names)
    kind = type(node).__name__
    if kind in ("MatchAs", "MatchStar"):
        return [node.name] if node.name else []
    if kind == "MatchMapping":
        return [node.rest] if node.rest else []
    return []


def _binds_anywhere(trees) -> set:
    """Every name a cell binds anywhere (assignments, definitions, parameters, imports, handlers, loop
    and match targets), "*" if a cell imports * (which can bind any name)."""
    return {name for tree in trees for node in ast.walk(tree) for name in _names_bound_by(node)}


class _PlainBuiltins(ast.NodeTransformer):
    """`eval` of a constant string of plain data is that expression; `setattr(x, "name", v)` as a statement
    is `x.name = v`, marked so that the reader asks whose attribute it stores (see above)."""

    def __init__(self, bound: set):
        self.bound = bound

    def _builtin(self, node, name, n):
        return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name \
            and name not in self.bound and "*" not in self.bound and len(node.args) == n and not node.keywords \
            and not any(isinstance(a, ast.Starred) for a in node.args)

    def visit_Call(self, node):
        self.generic_visit(node)
        if self._builtin(node, "eval", 1) and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            try:
                parsed = ast.parse(node.args[0].value.strip(), mode="eval")
            except (SyntaxError, ValueError):
                return node
            if all(isinstance(n, PLAIN_DATA) for n in ast.walk(parsed)):
                return ast.fix_missing_locations(ast.copy_location(parsed.body, node))
        return node

    def visit_Expr(self, node):
        self.generic_visit(node)
        call = node.value
        if self._builtin(call, "setattr", 3) and isinstance(call.args[1], ast.Constant) \
                and isinstance(call.args[1].value, str) and call.args[1].value.isidentifier() \
                and not keyword.iskeyword(call.args[1].value) and not call.args[1].value.startswith("__"):
            target = ast.Attribute(value=call.args[0], attr=call.args[1].value, ctx=ast.Store())
            store = ast.Assign(targets=[target], value=call.args[2])
            store.from_setattr = True
            return ast.fix_missing_locations(ast.copy_location(store, node))
        return node


class _Notebook:
    """What the tampering checks need to know of all the cells: each node's parent, the names the cells
    bind, the names they reference, the modules of MODULE_READS bound by an import every use of which is
    an entry of MODULE_READS, and the setattr statements the reader ran on a plain student object."""

    def __init__(self, trees):
        self.parent: dict = {}
        self.bound: set = set()               # every name a cell binds, as _binds_anywhere
        self.referenced: set = set()
        uses: dict = {}                       # name -> the nodes loading it
        self.module_names: dict = {}          # a name bound by an import of MODULE_READS -> its tables
        self.read_module_names: set = set()   # ... of READ_MODULES (and those modules' names unbound)
        todo = list(trees)
        self.nodes: list = []                 # every node of the cells
        while todo:
            node = todo.pop()
            self.nodes.append(node)
            for child in ast.iter_child_nodes(node):
                self.parent[id(child)] = node
                todo.append(child)
            self.bound.update(_names_bound_by(node))
            if isinstance(node, ast.Name):
                if isinstance(node.ctx, ast.Load):
                    uses.setdefault(node.id, []).append(node)
                if not isinstance(node.ctx, ast.Store):
                    self.referenced.add(node.id)
            elif isinstance(node, ast.Attribute):
                self.referenced.add(node.attr)
            elif isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
                text = node.value if isinstance(node.value, str) else node.value.decode("latin-1")
                self.referenced.update(re.findall(r"[^\W\d]\w*", text))
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                self.referenced.update(node.names)
            elif isinstance(node, ast.keyword) and node.arg:
                self.referenced.add(node.arg)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    self.referenced.add(alias.name.split(".")[-1])
                    if alias.name in MODULE_READS:
                        self.module_names.setdefault(alias.asname or alias.name, []).append(MODULE_READS[alias.name])
                    if alias.name in READ_MODULES:
                        self.read_module_names.add(alias.asname or alias.name)
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    self.referenced.add(alias.name)
                    kind = MODULE_READS[node.module].get(alias.name) \
                        if node.module in MODULE_READS and not node.level else None
                    if kind is not None:
                        self.module_names.setdefault(alias.asname or alias.name, []).append({"": kind})
                        if node.module in READ_MODULES:
                            self.read_module_names.add(alias.asname or alias.name)
        for module in READ_MODULES:          # unbound in the cells: a provided cell's import, read so too
            if module not in self.bound:
                self.module_names.setdefault(module, []).append(MODULE_READS[module])
                self.read_module_names.add(module)
        # object.__subclasses__() lists every class without naming it: then no class is unreferenced
        self.enumerates_classes = "__subclasses__" in self.referenced
        self.rebound, self.every = _rebindings(trees)     # names bound in forms the reader does not follow
        self.binds_any = bool(self.every)
        self.setattr_ok: set = set()          # ids of setattr statements run on a plain student object ...
        self.setattr_other: set = set()       # ... and of those run, at least once, on anything else
        self.unclean = {name for name, tables in self.module_names.items()   # such names used otherwise
                        if any(not self._module_use(use, tables) for use in uses.get(name, []))}

    # -- read-only uses ----------------------------------------------------------------------------
    def read_only(self, node, depth=0) -> bool:
        """The value of `node` flows only into a read-only use (READ_ONLY_SINKS, ...)."""
        if depth > 20:
            return False
        parent = self.parent.get(id(node))
        if isinstance(parent, ast.Attribute) and parent.value is node and isinstance(parent.ctx, ast.Load):
            if parent.attr in INERT_ATTRIBUTES:
                return True
            call = self.parent.get(id(parent))
            return parent.attr == "keys" and isinstance(call, ast.Call) and call.func is parent \
                and not call.args and not call.keywords and self.read_only(call, depth + 1)
        if isinstance(parent, ast.Call) and any(a is node for a in parent.args) and isinstance(parent.func, ast.Name) \
                and parent.func.id in READ_ONLY_SINKS and parent.func.id not in self.bound and "*" not in self.bound:
            return READ_ONLY_SINKS[parent.func.id] == "data" or self.read_only(parent, depth + 1)
        if isinstance(parent, ast.FormattedValue) and parent.value is node:
            return True
        if not (isinstance(parent, ast.Compare) and len(parent.ops) == 1):
            return False
        op, other = parent.ops[0], parent.left if parent.comparators[0] is node else parent.comparators[0]
        if isinstance(op, (ast.In, ast.NotIn)):     # as the container only: `x in T` asks T, `T in x` hands T to x
            return parent.comparators[0] is node
        if isinstance(op, (ast.Eq, ast.NotEq)):     # `==` can hand T to the other side's __eq__: a constant's only
            return isinstance(other, ast.Constant)
        return isinstance(op, (ast.Is, ast.IsNot))

    def _module_use(self, name_node, tables) -> bool:
        """A use of a name bound to a module (or a function) of MODULE_READS that is one of its entries."""
        kinds = set()
        if all("" in t for t in tables):          # bound by `from M import f`: the name is the function
            target, kinds = name_node, {t[""] for t in tables}
        else:
            chain, node = [], name_node           # name.a.b...: each attribute read, loaded
            while True:
                parent = self.parent.get(id(node))
                if not (isinstance(parent, ast.Attribute) and parent.value is node and isinstance(parent.ctx, ast.Load)):
                    break
                chain.append(parent)
                node = parent
            entry = next((n for n in range(len(chain), 0, -1)
                          if all(".".join(a.attr for a in chain[:n]) in t for t in tables)), 0)
            if not entry:
                return False
            parent = chain[entry - 1]
            target, kinds = parent, {t[".".join(a.attr for a in chain[:entry])] for t in tables}
        if len(kinds) != 1:
            return False
        kind = kinds.pop()
        up = self.parent.get(id(target))
        if kind == "type":
            if isinstance(up, ast.Tuple):
                up, target = self.parent.get(id(up)), up
            return (isinstance(up, ast.Call) and isinstance(up.func, ast.Name) and up.func.id in ("isinstance", "issubclass")
                    and up.func.id not in self.bound and len(up.args) == 2 and up.args[1] is target) \
                or (isinstance(up, ast.Compare) and all(isinstance(op, (ast.Is, ast.IsNot, ast.Eq, ast.NotEq))
                                                        for op in up.ops))
        if kind == "mapping":
            return (isinstance(up, ast.Subscript) and up.value is target and isinstance(up.ctx, ast.Load)) \
                or (isinstance(up, ast.Compare) and len(up.ops) == 1 and isinstance(up.ops[0], (ast.In, ast.NotIn))
                    and up.comparators[0] is target)
        if not (isinstance(up, ast.Call) and up.func is target):
            return False
        return kind in ("data", "new", "object") or self.read_only(up)

    def allowed(self, node, word: str) -> bool:
        """A TAMPERING word at `node` in one of the read-only uses above."""
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            return False
        if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
            return False
        if word in READ_ONLY_CALLS and isinstance(node, ast.Name) and word not in self.bound and "*" not in self.bound:
            call = self.parent.get(id(node))
            return isinstance(call, ast.Call) and call.func is node and self.read_only(call)
        if word in READ_ONLY_VALUES:
            return self.read_only(node)
        if isinstance(node, ast.Name) and node.id in self.module_names:
            return node.id not in self.unclean
        return False

    def import_allowed(self, node) -> bool:
        """An import of MODULE_READS whose every bound name is used only as its entries."""
        if isinstance(node, ast.Import):
            return all(alias.name in MODULE_READS and (alias.asname or alias.name) not in self.unclean
                       for alias in node.names if set(alias.name.split(".")) & TAMPERING)
        return not node.level and node.module in MODULE_READS and all(
            alias.name in MODULE_READS[node.module] and (alias.asname or alias.name) not in self.unclean
            for alias in node.names)

    def constant_names(self, call) -> bool:
        """getattr(x, n) inside `for n in ["sum", "mean"]`, the loop's body binding n nowhere."""
        name = call.args[1]
        if not isinstance(name, ast.Name):
            return False
        node = call
        while True:
            node = self.parent.get(id(node))
            if node is None or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                return False
            if isinstance(node, (ast.For, ast.AsyncFor)) and isinstance(node.target, ast.Name) \
                    and node.target.id == name.id:
                break
        items = node.iter.elts if isinstance(node.iter, (ast.List, ast.Tuple, ast.Set)) else None
        if not items or not all(isinstance(e, ast.Constant) and isinstance(e.value, str) and e.value.isidentifier()
                                and not _dunder(e.value) and e.value not in TAMPERING for e in items):
            return False
        return name.id not in _binds_anywhere(node.body)

    # -- what can run ------------------------------------------------------------------------------
    def dead(self, node) -> bool:
        """A function no code can call. One defined at a cell's top level never is (the grader's hidden
        tests call the notebook's functions by name, and their cells are not among the student's), nor a
        method of a class that is not dead (methods run implicitly, through dunders). One defined in a
        function is when nothing references it: its name (or the name it is assigned to, for a lambda)
        loaded nowhere in the cells, the attribute of no object, in no string; not decorated; not a
        dunder or an IPython hook `_name_`; for a class, with no base or keyword, and no cell listing
        classes (`__subclasses__`). A lambda is one only as the whole value of an assignment to names."""
        parent = self.parent.get(id(node))
        if isinstance(node, ast.Lambda):
            if not (isinstance(parent, ast.Assign) and parent.value is node
                    and all(isinstance(t, ast.Name) for t in parent.targets)):
                return False
            names = [t.id for t in parent.targets]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.decorator_list or (isinstance(node, ast.ClassDef) and (node.bases or node.keywords
                                                                          or self.enumerates_classes)):
                return False
            names = [node.name]
        else:
            return False
        scope = parent
        while scope is not None and not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                                           ast.ClassDef)):
            scope = self.parent.get(id(scope))
        if scope is None:
            return False                     # a cell's top level: the grader can call it by name
        if isinstance(scope, ast.ClassDef):
            return self.dead(scope)          # a method, or a name of a class: with its class
        return not any(n in self.referenced or (n.startswith("_") and n.endswith("_"))
                       or any(n[i:] in self.referenced for i in range(1, len(n) - 2) if n[i:i + 2] == "__")
                       for n in names)

    def live_nodes(self, root, runs=False):
        """The nodes of `root` that can run: not the body of a function no code can call (its decorators,
        defaults and annotations run where it is defined). runs: `root` is a function the reader ran."""
        todo = [root]
        while todo:
            node = todo.pop()
            yield node
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) \
                    and not (runs and node is root) and self.dead(node):
                todo += [c for f, c in ast.iter_fields(node) if f != "body"
                         for c in (c if isinstance(c, list) else [c]) if isinstance(c, ast.AST)]
                continue
            todo += list(ast.iter_child_nodes(node))


# The libraries the reader knows (an allowlist; with MODULE_READS and INERT_MODULES, IMPORTABLE_MODULES: the
# modules a cell may import, the names the answer relies on bound from, or `import *` from), each one torch
# or numpy imports, so loaded before a student's cell runs (a cell can write a file of another name and
# import it: that import goes to review).
LIBRARY_MODULES = {"torch", "numpy", "math", "cmath", "itertools", "functools", "operator", "collections", "typing",
                   "dataclasses", "heapq", "bisect", "numbers", "random", "time", "copy", "string", "warnings",
                   "__future__",
                   # and what the course's notebooks import in the cells they provide, before any student
                   # cell runs (a notebook run without a grader reads those cells too, from the kernel's
                   # history): the course's own package, plotting, statistics, IPython's display
                   "dlcourse", "matplotlib", "statistics", "IPython"}


def _library_module(module: str | None, level: int = 0) -> bool:
    return not level and bool(module) and module.split(".")[0] in IMPORTABLE_MODULES


def _relied_on(name: str, read: set, statements: list) -> set:
    """The notebook's names the answer relies on: its own, those its reading read, those read by a cell's
    statement that binds one of these or changes an object (runs a student's function, stores into a
    value), and so on."""
    relied = {name} | read
    for _, names, changed in statements:
        if changed:
            relied |= names
    grew = True
    while grew:
        grew = False
        for binds, names, _ in statements:
            if binds & relied and not names <= relied:
                relied |= names
                grew = True
    return relied


def _rebindings(trees) -> tuple[dict, str]:
    """The bindings of the notebook's names in forms the reader does not follow, anywhere in the cells (at
    any depth: a function's body too, for a call can run it): ({name: why}, why for every name ('' if none)).
    The reader follows a name bound at a cell's top level by a `def`, a class, an assignment, a loop or
    with target, a library import; any other binding (`:=`, a `global` or `nonlocal` declaration, an import
    from a module the reader does not know, `import *` from one) is named here."""
    names: dict = {}
    every = ""

    def visit(node, where):
        nonlocal every
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            where = f"`{node.name}`"
        if isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
            names.setdefault(node.target.id, f"is bound by a `:=` expression (line {node.lineno} of a cell), which the "
                                             "grader does not follow")
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            word = "global" if isinstance(node, ast.Global) else "nonlocal"
            for n in node.names:
                names.setdefault(n, f"is declared `{word}` in {where or 'a cell'}, where a binding of it is not followed")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if not _library_module(alias.name):
                    bound = alias.asname or alias.name.split(".")[0]
                    names.setdefault(bound, f"is bound by `import {alias.name}`, a module the grader does not read")
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            if not _library_module(node.module, node.level):
                for alias in node.names:
                    if alias.name == "*":
                        every = every or f"`from {module} import *` can bind any name, from a module the grader does not read"
                    else:
                        names.setdefault(alias.asname or alias.name,
                                         f"is bound by `from {module} import {alias.name}`, a module the grader does not read")
        for child in ast.iter_child_nodes(node):
            visit(child, where)
    for tree in trees:
        visit(tree, "")
    return names, every


def _unrun_tampering(trees, scanned: set, notebook: _Notebook) -> str:
    """Code that can change what the code does behind its text in a function or lambda the reader did not
    read (a cell's call can run it, even as an expression statement the reader does not follow), unless no
    code references it (_Notebook.dead): then it cannot run, and only what its definition runs counts."""
    def visit(node):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            if id(node) in scanned:
                return ""
            tampering, _ = _tampering(notebook.live_nodes(node), notebook)
            if tampering:
                name = f"`{node.name}`" if not isinstance(node, ast.Lambda) else "a lambda"
                return f"{name} {tampering}, which a cell's call can run to change what the code does behind its text"
            return ""
        for child in ast.iter_child_nodes(node):
            found = visit(child)
            if found:
                return found
        return ""
    for tree in trees:
        found = visit(tree)
        if found:
            return found
    return ""


# ---- what a cell may reach (allowlists) ---------------------------------------------------------
# The modules a cell may import at all, anywhere (an allowlist): LIBRARY_MODULES, MODULE_READS (whose uses
# are read as above), and INERT_MODULES: modules loaded before a student's cell runs (so not a file a cell
# wrote) that only make data or text from what they are given, none running a string, a file or a pickle
# as code: json (text <-> plain data), re, textwrap, pprint, datetime, enum; and sys for SYS_READS only
# (what it reports; sys.modules as the read-only uses above allow). os and pathlib only as MODULE_READS
# allows (stored into, os.environ changes what torch does: TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD makes torch.load
# unpickle; os.system runs anything; `import os.path` binds os, and posixpath.os is os; pathlib.os). Not
# pickle, marshal, shelve, copyreg (a pickle names
# any function to call), runpy, code, pdb, cProfile, profile, timeit, doctest (each runs a string or a
# file as code), subprocess, threading, signal, nor a module not loaded before the cells run (fractions,
# decimal, ipywidgets: a cell could have written a file of that name): any other import goes to review.
INERT_MODULES = {"json", "re", "textwrap", "pprint", "datetime", "enum", "sys"}
SYS_READS = {"modules", "version", "version_info", "platform", "maxsize", "float_info", "int_info", "byteorder",
             "getsizeof", "getrecursionlimit", "setrecursionlimit", "stdout", "stderr", "argv", "executable",
             "implementation", "hexversion", "float_repr_style"}
IMPORTABLE_MODULES = LIBRARY_MODULES | set(MODULE_READS) | INERT_MODULES
# What of an importable module a cell may name (an allowlist), through a name an import binds (or np, F,
# nn... unbound), a name bound to such a path, or getattr with a constant name: of torch, numpy and the
# submodules of LIBRARY_SUBMODULES, a public name that is not a submodule (a function, a class, a dtype, a
# constant: LIBRARY_SUBMODULE_NAMES lists the submodules), or a submodule of LIBRARY_SUBMODULES. Not
# torch.hub, torch.jit, torch.library (it replaces an aten op's kernel), torch.ops, torch.utils
# (cpp_extension.load_inline), torch.package, torch.fx, torch.serialization, torch.nn.modules, numpy.lib,
# numpy.ctypeslib, ..., nor a private name (torch._C, random._os). Of the other modules, any public name.
# The deserialising calls are followed only with the keyword that keeps them from unpickling (SAFE_LOADS):
# numpy.load without allow_pickle=True (its default is False), torch.load with weights_only=True written
# out (its default can be changed by the environment; an explicit True cannot).
LIBRARY_SUBMODULES = {"torch.nn", "torch.nn.functional", "torch.nn.init", "torch.linalg", "torch.testing",
                      "torch.special", "torch.fft", "torch.func", "torch.random", "torch.autograd",
                      "torch.autograd.functional", "numpy.random", "numpy.linalg", "numpy.testing", "numpy.fft"}
# The submodules of torch, numpy and LIBRARY_SUBMODULES (the modules among their names, as the installed
# versions have them; test_process_reading checks the list against the installed libraries): a name of
# these not in LIBRARY_SUBMODULES is not read. Every other public name of theirs is a function, a class, a
# dtype or a constant, read as itself (its own attributes: a method, a class's attribute).
LIBRARY_SUBMODULE_NAMES = {
    "torch": {"accelerator", "amp", "ao", "autograd", "backends", "builtins", "classes", "compiler", "contrib",
        "cpp", "cpu", "ctypes", "cuda", "distributed", "distributions", "export", "fft", "func", "functional",
        "functools", "futures", "fx", "glob", "hub", "importlib", "inspect", "jit", "library", "linalg", "masked",
        "math", "monitor", "mps", "mtia", "multiprocessing", "nativert", "nested", "nn", "numa", "onnx", "ops",
        "optim", "os", "overrides", "package", "platform", "profiler", "quantization", "quasirandom", "random",
        "return_types", "serialization", "signal", "sparse", "special", "storage", "sys", "testing", "textwrap",
        "threading", "torch", "torch_version", "types", "utils", "version", "warnings", "windows", "xpu"},
    "numpy": {"char", "conftest", "core", "ctypeslib", "distutils", "dtypes", "emath", "exceptions", "f2py", "fft",
        "lib", "linalg", "ma", "matlib", "matrixlib", "polynomial", "random", "rec", "strings", "testing", "tests",
        "typing", "version"},
    "torch.nn": {"attention", "backends", "common_types", "cpp", "functional", "grad", "init", "intrinsic",
        "modules", "parallel", "parameter", "qat", "quantizable", "quantized", "utils"},
    "torch.linalg": set(),
    "torch.testing": set(),
    "torch.special": {"torch"},
    "torch.fft": {"torch"},
    "torch.func": set(),
    "torch.random": {"contextlib", "torch", "warnings"},
    "torch.autograd": {"anomaly_mode", "forward_ad", "function", "functional", "grad_mode", "gradcheck", "graph",
        "profiler", "profiler_legacy", "profiler_util", "torch", "variable", "warnings"},
    "numpy.random": {"bit_generator", "mtrand", "tests"},
    "numpy.linalg": {"lapack_lite", "tests"},
    "numpy.testing": {"extbuild", "overrides", "print_coercion_tables", "tests"},
    "numpy.fft": {"tests"},
    "torch.nn.functional": {"dataclasses", "grad", "importlib", "math", "np", "torch", "warnings"},
    "torch.nn.init": {"math", "torch", "warnings"},
    "torch.autograd.functional": {"fwAD", "torch"},
}
# Of the submodules not read, a few functions, each read as itself, named by its whole path (an allowlist: the
# path's submodule alone, an alias of it, another name of it stays unread): what device the machine has, as
# a notebook asks to pick one (`'cuda' if torch.cuda.is_available() else 'cpu'`); each only reports, and
# torch.cuda's other names (set_device, memory settings, streams, its random state) are not here.
LIBRARY_READS = {"torch.cuda.is_available", "torch.cuda.device_count", "torch.backends.mps.is_available"}
INERT_MODULE_DUNDERS = {"__version__", "__name__", "__doc__", "__file__"}
NAMESPACES = {"SimpleNamespace", "types.SimpleNamespace"}    # what makes a plain object of its arguments
SAFE_LOADS = {"numpy.load": ("allow_pickle", False, True), "torch.load": ("weights_only", True, False)}
# Of IPython (imported by the notebooks' provided cells for their display), only IPython.display and these
# public names of it (an allowlist): every other path of IPython (IPython.core's InteractiveShell.instance(),
# whose push, run_cell, ex, user_ns run code in the kernel's namespace, IPython.get_ipython, ...) is not read,
# nor the module IPython handed on as a value.
IPYTHON_READS = {"display": {"Audio", "Code", "DisplayHandle", "DisplayObject", "FileLink", "FileLinks", "GeoJSON",
                             "HTML", "IFrame", "Image", "JSON", "Javascript", "Latex", "Markdown", "Math", "Pretty",
                             "ProgressBar", "SVG", "ScribdDocument", "TextDisplayObject", "Video", "VimeoVideo",
                             "YouTubeVideo", "clear_output", "display", "display_html", "display_javascript",
                             "display_jpeg", "display_json", "display_latex", "display_markdown", "display_pdf",
                             "display_png", "display_pretty", "display_svg", "publish_display_data",
                             "update_display"}}
# The dunder attributes a cell may read (an allowlist): each a str (or a module's version), none of them code.
# `x.__dict__` and `x.__class__` pass only in the read-only uses above (TAMPERING), and `__init__` only called
# as `super().__init__(...)` or `Base.__init__(self, ...)` passing on a method's own self (a base class's
# constructor on the same object). Any other (`__func__`, `__self__`, `__wrapped__`, `__get__`, `__call__`
# or `__init__` taken as a value, ...) can hand a student's method another object as its self, or reach code
# behind its text: not read.
READ_DUNDERS = {"__name__", "__qualname__", "__doc__", "__module__", "__version__"}
# ... and, called where they are read (`t.__rmatmul__(e)`, never taken as a value), the operator methods the
# reader models as the operator they stand for (`__matmul__`, `__mul__`, `__array__`...: PRODUCTS, SAME_AXES)
CALLED_DUNDERS = {n for n in PRODUCTS | SAME_AXES | REDUCTIONS | RESHAPES if _dunder(n)}


def _dotted(node) -> list | None:
    """`a.b.c` (or getattr(a.b, "c")) as [a, b, c]; None if its root is not a name."""
    parts = []
    while True:
        if isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) \
                and isinstance(node.args[1].value, str):
            parts.append(node.args[1].value)
            node = node.args[0]
        elif isinstance(node, ast.Name):
            return [node.id] + parts[::-1]
        else:
            return None


def _library_names(nodes, bound: set) -> dict:
    """name -> the path of an importable module's name it is bound to anywhere in the cells (an import, a
    module's name or np/F/nn/... unbound: a provided cell's import, an assignment of such a path or of
    another such name)."""
    names: dict = {module: module for module in IMPORTABLE_MODULES if module not in bound}   # a provided cell's
    for default, path in DEFAULT_ALIASES.items():
        if default not in bound:
            names[default] = path
    assigns = []
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in IMPORTABLE_MODULES:
                    names[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else \
                        alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module \
                and node.module.split(".")[0] in IMPORTABLE_MODULES:
            for alias in node.names:
                if alias.name == "*":     # binds the module's public names: those not read among them
                    for part in LIBRARY_SUBMODULE_NAMES.get(node.module, set()) | {"load"}:
                        if part not in IMPORTABLE_MODULES:
                            names.setdefault(part, f"{node.module}.{part}")
                else:
                    names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            assigns.append(node)
    grew = True
    while grew:
        grew = False
        for node in assigns:
            parts = _dotted(node.value)
            if not parts or parts[0] not in names:
                continue
            path = ".".join([names[parts[0]]] + parts[1:])
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name) and n.id not in names:
                        names[n.id] = path
                        grew = True
    return names


def _library_path_unread(path: list) -> str:
    """Why the reader does not follow torch, numpy or sys's `path` (['torch', 'nn', 'functional', 'softmax']),
    '' if it does: each name read from torch, numpy or a module of LIBRARY_SUBMODULES is public (or an
    INERT_MODULE_DUNDERS), and a submodule only if LIBRARY_SUBMODULES has it."""
    if path[0] == "sys":
        return "" if len(path) < 2 or path[1] in SYS_READS else f"`{'.'.join(path[:2])}`"
    if path[0] == "IPython":
        if len(path) > 1 and (path[1] not in IPYTHON_READS
                              or (len(path) > 2 and path[2] not in IPYTHON_READS[path[1]])):
            return f"`{'.'.join(path[:3 if len(path) > 2 and path[1] in IPYTHON_READS else 2])}`"
        return next((f"`{'.'.join(path[:n + 1])}`" for n, part in enumerate(path) if part.startswith("_")
                     and part not in INERT_MODULE_DUNDERS), "")
    if path[0] not in ("torch", "numpy"):       # another importable module: its public names
        private = next((n for n, part in enumerate(path) if part.startswith("_") and part not in INERT_MODULE_DUNDERS), 0)
        return f"`{'.'.join(path[:private + 1])}`" if private else ""
    if path[:2] == ["torch", "_C"] and len(path) > 2 and path[2] in TRACE_HIDING:
        return ""                  # hides work from the kernel's record only: a note (above)
    if ".".join(path) in LIBRARY_READS:
        return ""
    for n in range(1, len(path)):
        parent, part = ".".join(path[:n]), path[n]
        if parent not in LIBRARY_SUBMODULE_NAMES:
            break                  # a function's or a class's attribute
        here = f"{parent}.{part}"
        if (part.startswith("_") and part not in INERT_MODULE_DUNDERS) \
                or (part in LIBRARY_SUBMODULE_NAMES[parent] and here not in LIBRARY_SUBMODULES):
            return f"`{here}`"
    return ""


def _safe_load(call, path: str) -> bool:
    keyword_, safe, _ = SAFE_LOADS[path]
    given = [k for k in call.keywords if k.arg == keyword_]
    if any(k.arg is None for k in call.keywords) or any(isinstance(a, ast.Starred) for a in call.args):
        return False
    if not given:
        return path == "numpy.load" and len(call.args) < 3
    return isinstance(given[0].value, ast.Constant) and given[0].value.value is safe


_OTHER_BINDINGS = (ast.arg, ast.alias, ast.ExceptHandler, ast.Global, ast.Nonlocal) + tuple(
    getattr(ast, kind) for kind in ("MatchAs", "MatchStar", "MatchMapping") if hasattr(ast, kind))


def _student_names(nodes) -> tuple[set, set]:
    """The cells' names bound, every time anywhere, to a student's own object: a class, a def, an object
    of one of those classes made by calling the class's name, or a SimpleNamespace; and the names bound
    only to a class of the student's."""
    bindings: dict = {}
    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bindings.setdefault(node.name, []).append(node)
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    bindings.setdefault(t.id, []).append(node)
        elif isinstance(node, ast.Name):
            if not isinstance(node.ctx, ast.Load):
                bindings.setdefault(node.id, []).append(node)      # a plain target is the Assign's
        elif isinstance(node, _OTHER_BINDINGS):
            for name in _names_bound_by(node):
                bindings.setdefault(name, []).append(None)
    classes = {name for name, binds in bindings.items() if all(isinstance(n, ast.ClassDef) for n in binds)}
    known = set()
    for name, binds in bindings.items():
        binds = [n for n in binds if not (isinstance(n, ast.Name) and any(
            isinstance(a, ast.Assign) and any(t is n for t in a.targets) for a in binds))]
        if binds and all(isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                         or (isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)
                             and ((isinstance(n.value.func, ast.Name) and n.value.func.id in classes)
                                  or (".".join(_dotted(n.value.func) or []) in NAMESPACES
                                      and all(b is None for b in bindings.get(_dotted(n.value.func)[0], [])))))
                         for n in binds):
            known.add(name)
    return known, classes


def _made_here(call, classes: set) -> bool:
    """A call that makes a student's object: of a name bound only to a student's class, or a SimpleNamespace."""
    return isinstance(call, ast.Call) and (isinstance(call.func, ast.Name) and call.func.id in classes
                                           or ".".join(_dotted(call.func) or []) in NAMESPACES)


def _own_object(base, notebook: "_Notebook", students: set, classes: set) -> bool:
    """The base of an attribute store is a student's own object: `self` (or `cls`), the first parameter of
    a method of a student's class (not a staticmethod), not rebound in it, in that method's own body; a
    name the function holding the store binds only as `name = C(...)` (a student's class called); or a
    name of `students` that the function holding the store does not bind."""
    if not isinstance(base, ast.Name):
        return False
    fn = notebook.parent.get(id(base))
    while fn is not None and not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
        fn = notebook.parent.get(id(fn))
    if isinstance(fn, ast.ClassDef):
        return False
    if fn is None:
        return base.id in students
    args = fn.args.posonlyargs + fn.args.args
    local = {n for node in ast.walk(fn) if node is not fn for n in _names_bound_by(node)}
    if isinstance(fn, ast.Lambda):
        local |= {a.arg for a in args}
    if args and args[0].arg == base.id and isinstance(notebook.parent.get(id(fn)), ast.ClassDef) \
            and not any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list):
        rebound = {n for node in ast.walk(fn) if node is not fn and not isinstance(node, ast.arg)
                   for n in _names_bound_by(node)}
        return base.id not in rebound
    if base.id in local:
        binds = [node for node in ast.walk(fn) if node is not fn and base.id in _names_bound_by(node)]
        return all(isinstance(notebook.parent.get(id(node)), ast.Assign) and _made_here(notebook.parent[id(node)].value, classes)
                   and any(t is node for t in notebook.parent[id(node)].targets) for node in binds)
    return base.id in students


def _method_through_class(node, methods: set, classes: set, notebook: "_Notebook") -> str:
    """`C.m` or `type(x).m` (or getattr of them) with m a name of a method of a student's class, C a name
    bound only to a student's class: any object can be passed as its self. Not `C.m(self, ...)` in a method
    whose own self it passes on (a base class's method on the same object)."""
    if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
        base, attr = node.value, node.attr
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
            and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
        base, attr = node.args[0], node.args[1].value
    else:
        return ""
    if attr not in methods or not ((isinstance(base, ast.Name) and base.id in classes) or (
            isinstance(base, ast.Call) and isinstance(base.func, ast.Name) and base.func.id == "type")):
        return ""
    call = notebook.parent.get(id(node))
    if isinstance(call, ast.Call) and call.func is node and call.args and isinstance(call.args[0], ast.Name):
        fn = call
        while fn is not None and not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            fn = notebook.parent.get(id(fn))
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and _own_object(call.args[0], notebook, set(), set()):
            return ""
    return f"{ast.unparse(base)}.{attr}"


def _type_expression(node, depth=0) -> bool:
    """An annotation that is a type expression (an allowlist): a name, an attribute chain, a subscript of
    type expressions, a tuple or list of them, `X | Y`, None, `...`, a number, or a string that parses to a
    type expression. What typing.get_type_hints, functools.singledispatch's register or inspect evaluate of
    it then only reads names: no `:=`, call, lambda or comprehension runs."""
    if depth > 20:
        return False
    if isinstance(node, ast.Name):
        return True
    if isinstance(node, ast.Attribute):
        return _type_expression(node.value, depth + 1)
    if isinstance(node, ast.Subscript):
        return _type_expression(node.value, depth + 1) and _type_expression(node.slice, depth + 1)
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_type_expression(e, depth + 1) for e in node.elts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _type_expression(node.left, depth + 1) and _type_expression(node.right, depth + 1)
    if isinstance(node, ast.Constant):
        if isinstance(node.value, str):
            try:
                parsed = ast.parse(node.value.strip(), mode="eval")
            except (SyntaxError, ValueError):
                return False
            return _type_expression(parsed.body, depth + 1)
        return node.value is None or node.value is Ellipsis or isinstance(node.value, (int, float))
    return False


def _annotations(node) -> list:
    """The annotations a node carries: a function's parameters' and return's, an annotated assignment's."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        args = node.args
        every = args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]
        return [a.annotation for a in every if a.annotation is not None] + ([node.returns] if node.returns else [])
    if isinstance(node, ast.AnnAssign):
        return [node.annotation]
    return []


def _init_of_own_self(node, notebook: "_Notebook") -> bool:
    """`super().__init__(...)` (or super(C, self)), or `Base.__init__(self, ...)`, passing a method's own self."""
    call = notebook.parent.get(id(node))
    if node.attr != "__init__" or not (isinstance(call, ast.Call) and call.func is node):
        return False
    base = node.value
    if isinstance(base, ast.Call) and isinstance(base.func, ast.Name) and base.func.id == "super" \
            and "super" not in notebook.bound and "*" not in notebook.bound and not base.keywords:
        return not base.args or (len(base.args) == 2 and isinstance(base.args[1], ast.Name)
                                 and _own_object(base.args[1], notebook, set(), set()))
    if not (call.args and isinstance(call.args[0], ast.Name) and _dotted(base)):
        return False
    fn = call
    while fn is not None and not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        fn = notebook.parent.get(id(fn))
    return isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and isinstance(notebook.parent.get(id(fn)), ast.ClassDef) \
        and (fn.args.posonlyargs + fn.args.args)[:1] != [] \
        and (fn.args.posonlyargs + fn.args.args)[0].arg == call.args[0].id \
        and _own_object(call.args[0], notebook, set(), set())


def _unread_dunder(node, notebook: "_Notebook") -> str:
    """A dunder attribute read (or getattr with a constant dunder name) READ_DUNDERS does not allow ('' if none)."""
    if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
        attr = node.attr
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
            and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
        attr = node.args[1].value
        if _dunder(attr) and attr not in READ_DUNDERS:
            return f"reads `{attr}` through getattr"
        return ""
    else:
        return ""
    if not _dunder(attr) or attr in READ_DUNDERS or attr in TAMPERING:    # TAMPERING's: read-only uses (above)
        return ""
    if _init_of_own_self(node, notebook):
        return ""
    call = notebook.parent.get(id(node))
    if attr in CALLED_DUNDERS and isinstance(call, ast.Call) and call.func is node:
        return ""
    return f"reads `{ast.unparse(node)}`"


def _unread_reach(trees, notebook: "_Notebook") -> str:
    """Code the reader does not follow, anywhere in the cells that can run: an import of a module not in
    IMPORTABLE_MODULES, a torch, numpy or sys name it does not read (LIBRARY_SUBMODULES, SYS_READS,
    SAFE_LOADS), a store of an attribute (or `del`) on anything but a student's own object, a store into an
    item of a torch or numpy object named by path."""
    students, classes = _student_names(notebook.nodes)
    libs = _library_names(notebook.nodes, notebook.bound)
    unrun = set()                          # the bodies of functions no code can call (_Notebook.dead)
    for fn in notebook.nodes:
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and id(fn) not in unrun \
                and notebook.dead(fn):
            body = fn.body if isinstance(fn.body, list) else [fn.body]
            unrun.update(id(n) for b in body for n in ast.walk(b))
    methods = {fn.name for fn in notebook.nodes if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
               and isinstance(notebook.parent.get(id(fn)), ast.ClassDef) and (fn.args.posonlyargs or fn.args.args)
               and not any(isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod") for d in fn.decorator_list)}
    for node in notebook.nodes:
        if id(node) in unrun:
            continue
        if methods and isinstance(node, (ast.Attribute, ast.Call)):
            through = _method_through_class(node, methods, classes, notebook)
            if through:
                return f"calls `{through}` through its class, where any object can be its `self` (what it stores " \
                       "into a library's object as self changes what library code does)"
        dunder = _unread_dunder(node, notebook)
        if dunder:
            return f"{dunder}, an attribute the grader does not read (it can hand a method another object as " \
                   "its self, or reach code behind its text)"
        if any(not _type_expression(a) for a in _annotations(node)):
            bad = next(a for a in _annotations(node) if not _type_expression(a))
            return f"has the annotation `{ast.unparse(bad)}`, which is not a type expression (typing.get_type_hints, " \
                   "functools.singledispatch or inspect can run it as code behind its text)"
        if isinstance(node, ast.Call) and node.keywords:
            parts = _dotted(node.func)
            if parts and parts[0] in libs and ".".join(libs[parts[0]].split(".") + parts[1:]) == "inspect.signature":
                return "calls `inspect.signature` with a keyword, which the grader does not read (eval_str runs the " \
                       "annotations' strings as code behind its text)"
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and libs.get(node.id) == "IPython" \
                and not isinstance(notebook.parent.get(id(node)), ast.Attribute):
            return "hands on the module `IPython`, which the grader does not read beyond IPython.display"
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] not in IMPORTABLE_MODULES:
                    return f"imports `{alias.name}`, a module the grader does not read (it can run code behind its text)"
                if alias.name.split(".")[0] in READ_MODULES and (alias.name not in READ_MODULES or
                                                                 (alias.asname or alias.name) in notebook.unclean):
                    return f"imports `{alias.name}` for more than the grader reads of it (MODULE_READS: it can run " \
                           "code behind its text or change what library code does)"
                why = _library_path_unread(alias.name.split("."))
                if why:
                    return f"imports {why}, which the grader does not read (it can change what library code does)"
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level or module.split(".")[0] not in IMPORTABLE_MODULES:
                return f"imports from `{'.' * node.level}{module}`, a module the grader does not read (it can run code behind its text)"
            if module.split(".")[0] in READ_MODULES and (module not in READ_MODULES or any(
                    alias.name not in MODULE_READS[module] or (alias.asname or alias.name) in notebook.unclean
                    for alias in node.names)):
                return f"imports from `{module}` more than the grader reads of it (MODULE_READS: it can run code " \
                       "behind its text or change what library code does)"
            for alias in node.names:
                path = f"{module}.{alias.name}".split(".") if alias.name != "*" else module.split(".")
                why = _library_path_unread(path) or ("`" + ".".join(path) + "`" if ".".join(path) in SAFE_LOADS
                                                     else "")
                if why:
                    return f"imports {why}, which the grader does not read (it can change what library code does)"
        elif isinstance(node, (ast.Attribute, ast.Call)) and not isinstance(notebook.parent.get(id(node)), ast.Attribute):
            parts = _dotted(node) if isinstance(node, ast.Attribute) or (
                isinstance(node.func, ast.Name) and node.func.id == "getattr") else None
            if parts and parts[0] in libs and len(parts) > 1:
                path = libs[parts[0]].split(".") + parts[1:]
                why = _library_path_unread(path)
                if why:
                    return f"uses {why}, which the grader does not read (it can change what library code does or run code behind its text)"
                dotted = ".".join(path)
                if dotted in SAFE_LOADS:
                    call = notebook.parent.get(id(node))
                    if not (isinstance(call, ast.Call) and call.func is node and _safe_load(call, dotted)):
                        return f"uses `{dotted}` without {SAFE_LOADS[dotted][0]}={SAFE_LOADS[dotted][1]}, which can " \
                               "run code behind its text (an unpickled object)"
            if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load) and (
                    not _own_object(node.value, notebook, students, classes)
                    or (_dunder(node.attr) and node.attr not in INERT_CLASS_ATTRS)):
                return f"stores into `{ast.unparse(node)}`, of an object the grader does not know to be the " \
                       "student's own (a library's object's attribute changes what library code does)"
        if isinstance(node, ast.Name) and node.id in notebook.read_module_names and node.id in notebook.unclean:
            return f"uses `{node.id}` for more than the grader reads of it (MODULE_READS: it can run code behind " \
                   "its text or change what library code does)"
        if isinstance(node, ast.Name) and node.id in libs and "." in libs[node.id] \
                and not isinstance(notebook.parent.get(id(node)), ast.Attribute):
            dotted = libs[node.id]
            why = _library_path_unread(dotted.split("."))
            if why:
                return f"uses {why}, which the grader does not read (it can change what library code does or run code behind its text)"
            if dotted in SAFE_LOADS:
                call = notebook.parent.get(id(node))
                if not (isinstance(call, ast.Call) and call.func is node and _safe_load(call, dotted)):
                    return f"uses `{dotted}` without {SAFE_LOADS[dotted][0]}={SAFE_LOADS[dotted][1]}, which can " \
                           "run code behind its text (an unpickled object)"
        if isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Load):
            inner = node.value
            while isinstance(inner, ast.Subscript):
                inner = inner.value
            parts = _dotted(inner)
            if parts and parts[0] in libs:
                return f"stores into an item of `{ast.unparse(inner)}`, a library's object, which changes " \
                       "what library code does"
    return ""


# ---- reading ------------------------------------------------------------------------------------

def read(sources: list[str], name: str, inputs: dict[str, tuple]) -> Reading:
    """The operations `name(*inputs)` performs on its inputs' axes, the answer being what `name` is
    bound to after `sources` (the student's cells that run before the call, in order) have run.
    inputs: parameter -> axis labels, in the order the probe passes them."""
    reading = Reading()
    trees = _parse_cells(sources)
    if any("eval" in str(text) or "setattr" in str(text) for text in sources):
        plain = _PlainBuiltins(_binds_anywhere(trees))
        trees = [plain.visit(tree) for tree in trees]
    notebook = _Notebook(trees)
    interp = _Interpreter(reading, notebook)
    module = interp.module
    statements = []             # (names a cell's statement binds, names it read, whether it changed an object)
    for tree in trees:
        try:
            interp.quiet += 1
            for stmt in tree.body:
                module.vars.read, effects = set(), interp.effects
                try:
                    if interp.stmt(stmt, module, module_level=True):
                        break
                finally:
                    statements.append((set(_bound_names(stmt)), module.vars.read, interp.effects > effects))
        except _TooMuch:
            interp.undecided("the notebook's cells are too long to follow")
        finally:
            interp.quiet -= 1
        tampering, hiding = _tampering(_module_level(tree), notebook)   # after the cell ran: its setattr's
        if tampering:
            interp.undecided(f"a cell {tampering}, which can change what the code does behind its text")
        if hiding:
            interp.note(hiding)
    if name not in module.vars:
        interp.undecided(f"no definition of `{name}` in the cells that run before this test")
        return reading
    answer = module.vars[name]
    if isinstance(answer, (Opaque, LibResult)):
        why = answer.why if isinstance(answer, Opaque) else f"the result of `{answer.path}(...)`"
        interp.undecided(f"`{name}` is bound to {why}, which the grader cannot follow")
        return reading
    interp.steps = 0
    module.vars.read = set()
    try:
        interp.apply(answer, list(inputs.values()), {}, None, module, label=name)
    except _TooMuch:
        interp.undecided(f"`{name}` does too much for the grader to follow")
    except RecursionError:
        interp.undecided(f"`{name}` nests too deeply for the grader to follow")
    rebound, every = notebook.rebound, notebook.every
    for used in sorted(_relied_on(name, module.vars.read, statements), key=lambda n: (n != name, n)):
        if used in rebound:
            interp.undecided(f"`{used}` {rebound[used]}")
    if every:
        interp.undecided(every)
    unrun = _unrun_tampering(trees, interp.scanned, notebook)
    if unrun:
        interp.undecided(unrun)
    reach = _unread_reach(trees, notebook)
    if reach:
        interp.undecided(f"a cell {reach}")
    return reading


class _Interpreter:
    def __init__(self, reading: Reading, notebook: _Notebook):
        self.reading = reading
        self.notebook = notebook
        self.module = Scope()
        self.namespace = None             # the class of the SimpleNamespace objects made (apply)
        self.quiet = 0            # > 0: evaluating the cells' bindings, not the answer: record nothing
        self.uncertain = 0        # > 0: inside a branch that may not run
        self.stack: list = []     # functions being run
        self.loops: list = []     # labels of the loops being run (innermost last)
        # passes over the keys done (a loop over them, a fold of them ended): a value computed after one, from
        # what it left, is computed from every key (Scope.summary); a loop or fold over the keys adding up
        # items computed from such a value is a second pass over the keys
        self.passes = 0
        self.carried: dict = {}   # id of a statement of a loop being run that updates what it carries -> its label
        self.steps = 0
        self.yields: list = []
        self.scanned: set = set()
        self.memo: dict = {}
        self.returns: list = []
        self.unread: dict = {}    # id of a student's class -> why the reader does not follow it ('' if it does)
        self.effects = 0          # student functions run and values stored into objects, so far

    # -- recording --------------------------------------------------------------------------------
    def undecided(self, why: str) -> None:
        if why not in self.reading.undecided:
            self.reading.undecided.append(why)

    def note(self, what: str) -> None:
        text = f"it {what}, which hides its torch calls from the kernel's record: only its source was read"
        if text not in self.reading.notes:
            self.reading.notes.append(text)

    def op(self, kind, name, operands, axes, result, node):
        if self.quiet:
            return
        where, line = "", getattr(node, "lineno", 0)
        if self.stack:
            fn = self.stack[-1]
            where = fn.name
            if isinstance(fn.node, ast.Lambda):      # a lambda: named by the function whose text holds it
                outer = next((f for f in reversed(self.stack) if not isinstance(f.node, ast.Lambda)
                              and f.node.lineno <= fn.node.lineno <= (f.node.end_lineno or f.node.lineno)), None)
                where = f"a lambda in {outer.name}" if outer is not None else "<lambda>"
                fn = outer or fn
            line = line - getattr(fn.node, "lineno", 1) + 1 if line else 0
        self.reading.ops.append(Op(kind, name, [tuple(o) for o in operands if o is not None], tuple(axes),
                                   tuple(result or ()), line, where, certain=not self.uncertain))

    def tick(self):
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise _TooMuch()

    # -- statements ---------------------------------------------------------------------------------
    def block(self, stmts, scope, module_level=False) -> bool:
        """Run statements; True if the block ends in a return or raise (what follows never runs). A case of
        a match is given as a function of module_level that runs it."""
        if callable(stmts):
            return stmts(module_level)
        for stmt in stmts:
            if self.stmt(stmt, scope, module_level):
                return True
        return False

    def branch(self, stmts, scope, module_level):
        self.uncertain += 1
        try:
            if module_level:
                return self.module_branch(stmts, scope)
            return self.block(stmts, scope)
        finally:
            self.uncertain -= 1

    def module_branch(self, stmts, scope) -> bool:
        """A branch of a cell that may or may not run: what it binds is one of two bindings."""
        before = dict(scope.vars)
        self.block(stmts, scope, module_level=True)
        for name, value in list(scope.vars.items()):
            if name in before and before[name] is not value:
                scope.vars[name] = Choice([before[name], value])
            elif name not in before and isinstance(value, (Func, Bound, Inst, Cls)):
                scope.vars[name] = Choice([value])
        return False

    def stmt(self, node, scope, module_level=False) -> bool:
        self.tick()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            value = Func(node, scope, node.name)
            for deco in reversed(node.decorator_list):
                value = self.decorate(deco, value, scope)
            self.assign(node.name, value, scope)
        elif isinstance(node, ast.ClassDef):
            cls = Cls(node, scope)
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    cls.attrs[item.name] = Func(item, scope, f"{node.name}.{item.name}")
                elif isinstance(item, ast.Assign):
                    for t in item.targets:
                        if isinstance(t, ast.Name):
                            cls.attrs[t.id] = self.quietly(item.value, scope)
            value = cls
            for deco in reversed(node.decorator_list):
                value = self.decorate(deco, value, scope)
            self.assign(node.name, value, scope)
        elif isinstance(node, ast.Assign):
            if getattr(node, "from_setattr", False):
                self.setattr_on(node, scope, module_level)
            before = self.progress()
            value = self.expr(node.value, scope)
            self.second_pass(node, node.value, value, scope)
            for t in node.targets:
                self.bind(t, value, scope, node.value)
            self.mark(node.targets, node.value, before, scope)
        elif isinstance(node, ast.AnnAssign):
            if node.value is not None:
                before = self.progress()
                self.bind(node.target, self.expr(node.value, scope), scope, node.value)
                self.mark([node.target], node.value, before, scope)
        elif isinstance(node, ast.AugAssign):
            before = self.progress()
            left = self.expr(node.target, scope)
            right = self.expr(node.value, scope)
            if isinstance(node.op, (ast.Mult, ast.MatMult)):
                value = self.product("*=" if isinstance(node.op, ast.Mult) else "@=", [left, right], node,
                                     matmul=isinstance(node.op, ast.MatMult))
            else:
                value = _merge(_as_arr(left), _as_arr(right)) if (_as_arr(left) is not None or
                                                                  _as_arr(right) is not None) else left
                self.combine(_OPERATOR_SIGNS.get(type(node.op), "an operator") + "=", [left, right],
                             _broadcast(_as_arr(left), _as_arr(right)), node)
            self.second_pass(node, node.value, value, scope)
            if isinstance(node.target, ast.Name):
                if isinstance(left, (Size, Index)) and not _is_arr(right):
                    value = left
                self.assign(node.target.id, value, scope)
                if node.target.id not in scope.summary:
                    self.mark([node.target], node.value, before, scope)
            else:
                self.store_into(node.target, value, scope)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            it = self.expr(node.iter, scope)
            elem, outer = self.iterate(it)
            self.loops.append(outer)
            carried = {i: (outer, adds) for i, adds in _carried(node.body).items()}
            self.carried.update(carried)
            every = self.from_every_key(node.iter, scope)      # items computed from every key
            try:
                for _ in range(2):          # twice: what one pass leaves behind, the next one meets
                    self.bind(node.target, elem, scope, None)
                    targets = _assigned([node.target])
                    scope.summary = scope.summary | targets if every else scope.summary - targets
                    if module_level:
                        self.branch(node.body, scope, True)
                    else:
                        self.block(node.body, scope)
            finally:
                self.loops.pop()
                for i in carried:
                    self.carried.pop(i, None)
            if _touch(outer, {"K"}) == "plain":     # a pass over the keys: what the loop leaves, from every key
                self.passes += 1
                scope.summary |= _assigned(node.body) - _assigned([node.target])
            self.branch(node.orelse, scope, module_level)
        elif isinstance(node, ast.While):
            self.expr(node.test, scope)
            self.loops.append(UNKNOWN)
            carried = {i: (UNKNOWN, adds) for i, adds in _carried(node.body).items()}   # items it cannot name
            self.carried.update(carried)
            try:
                for _ in range(2):
                    if module_level:
                        self.branch(node.body, scope, True)
                    else:
                        self.block(node.body, scope)
                    self.expr(node.test, scope)
            finally:
                self.loops.pop()
                for i in carried:
                    self.carried.pop(i, None)
            self.branch(node.orelse, scope, module_level)
        elif isinstance(node, ast.If):
            self.expr(node.test, scope)         # a test always runs: its work (and a call's effects) too
            test = self.constant_test(node.test, scope)
            if test is True:
                return self.block(node.body, scope, module_level)
            if test is False:
                return self.block(node.orelse, scope, module_level)
            if not module_level:
                return self.fork([node.body, node.orelse], scope)
            a = self.branch(node.body, scope, module_level)
            b = self.branch(node.orelse, scope, module_level)
            return a and b and bool(node.orelse)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                value = self.expr(item.context_expr, scope)
                if item.optional_vars is not None:
                    self.bind(item.optional_vars, value, scope, None)
            return self.block(node.body, scope, module_level)
        elif isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            ended = self.block(node.body, scope, module_level)
            for handler in node.handlers:
                if handler.name:
                    self.assign(handler.name, None, scope)
                self.branch(handler.body, scope, module_level)
            if not ended:
                self.branch(node.orelse, scope, module_level)
            return self.block(node.finalbody, scope, module_level) or (ended and not node.handlers)
        elif isinstance(node, ast.Return):
            if node.value is not None:
                self.returns.append(self.expr(node.value, scope))
            return True
        elif isinstance(node, ast.Raise):
            if node.exc is not None:
                self.expr(node.exc, scope)
            return True
        elif isinstance(node, ast.Expr):
            value = self.expr(node.value, scope)    # in a cell too: a call can change what a name the answer uses holds
            self.second_pass(node, node.value, value, scope)
        elif isinstance(node, ast.Assert):
            self.expr(node.test, scope)
        elif isinstance(node, ast.Match):
            return self.match(node, scope, module_level)
        elif isinstance(node, ast.Global):
            scope.declared_global.update(node.names)
        elif isinstance(node, ast.Nonlocal):
            scope.declared_nonlocal.update(node.names)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if isinstance(node, ast.ImportFrom):
                    path = f"{node.module or ''}.{alias.name}".strip(".")
                    self.assign(alias.asname or alias.name, Lib(path), scope)
                elif alias.asname:
                    self.assign(alias.asname, Lib(alias.name), scope)
                else:
                    first = alias.name.split(".")[0]
                    self.assign(first, Lib(first), scope)
        elif isinstance(node, ast.Delete):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    scope.owner(t.id).pop(t.id, None)
        elif not isinstance(node, FOLLOWED_STATEMENTS):
            kind = type(node).__name__.lower()
            if module_level:        # what it binds is not followed: an answer that uses it is not decided
                for name in _bound_names(node):
                    self.assign(name, Opaque(f"a name bound in a `{kind}` statement"), scope)
            else:
                self.undecided(f"a `{kind}` statement, which the grader does not read")
        return False

    def progress(self) -> tuple:
        return len(self.reading.ops), self.passes

    def from_every_key(self, expr, scope) -> str:
        """The first name `expr` reads that holds a value computed from every key (Scope.summary), or ''."""
        summary = set()
        while scope is not None:
            summary |= scope.summary
            scope = scope.parent
        return next((n for n in sorted(_names(expr)) if n in summary), "")

    def mark(self, targets, expr, before, scope) -> None:
        """The names an assignment binds hold a value computed from every key if `expr` reads one, or its
        evaluation passed over the keys (a loop or fold over them, in a helper too) or reduced over them;
        else not (a name bound anew)."""
        ops, passes = before
        whole = self.passes > passes or bool(self.from_every_key(expr, scope)) or any(
            op.kind in ("reduce", "softmax", "fold", "product") and "plain" in {_touch(a, {"K"}) for a in op.axes}
            for op in self.reading.ops[ops:])
        names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        if whole:
            scope.summary |= names
        else:
            scope.summary -= names

    def second_pass(self, node, expr, value, scope) -> None:
        """A statement of a loop that updates what the loop carries (_carried) from a value computed from every
        key (a max or sum over them found before the loop): the loop is a second pass over its items."""
        if id(node) not in self.carried:
            return
        name, source = _carried_node(node)
        if isinstance(node, ast.Expr) and not _is_arr(value):
            value = scope.vars.get(name)    # `z.add_(t)` on an array the answer made: z holds the result now
        if not _is_arr(value):
            return                          # a list added to (`ws + [w]`): the items built up, not added up
        used = self.from_every_key(source, scope)
        outer, adds = self.carried[id(node)]
        if used and adds:
            self.op("fold", f"{name}` from `{used}", [(outer,) + value], (outer,), value, node)
        elif used and _touch(outer, {"K"}) and not self.quiet:
            self.undecided(f"`{name}` is updated key by key from `{used}`, computed from every key: whether it "
                           "adds the keys up (a second pass over them) the grader cannot tell")

    def setattr_on(self, node, scope, module_level) -> None:
        """`setattr(x, "name", v)` (read as `x.name = v`) passes where it runs at a cell's top level on a
        name bound, as the reader followed it, to a plain class of the student's or one of its objects."""
        base = node.targets[0].value
        value = self.quietly(base, scope) if isinstance(base, ast.Name) else None
        cls = value.cls if isinstance(value, Inst) else value
        plain = module_level and not self.stack and isinstance(cls, Cls) and isinstance(cls.node, ast.ClassDef) \
            and not (cls.node.bases or cls.node.keywords or cls.node.decorator_list) and not _unread_class(cls.node) \
            and base.id not in self.notebook.rebound and not self.notebook.binds_any
        (self.notebook.setattr_ok if plain else self.notebook.setattr_other).add(id(node))

    def match(self, node, scope, module_level) -> bool:
        """A match: the subject, then each case as a branch of which one runs (its pattern's captures bound
        to the parts of the subject a sequence pattern unpacks, or to the subject itself; what a class or
        mapping pattern captures is not followed: in the answer, not decided), and none if no case is
        irrefutable. A first case that
        is irrefutable (`case _`, `case x`, without a guard) is the code that runs."""
        subject = self.expr(node.subject, scope)
        cases = []
        for case in node.cases:
            cases.append(case)
            if case.guard is None and _irrefutable(case.pattern):
                break                           # the cases after it never run
        exhaustive = bool(cases) and cases[-1].guard is None and _irrefutable(cases[-1].pattern)

        def arm(case):
            def run(module):
                self.match_bind(case.pattern, subject, scope)
                if case.guard is not None:
                    self.expr(case.guard, scope)
                return self.block(case.body, scope, module)
            return run
        arms = [arm(case) for case in cases] + ([] if exhaustive else [lambda module: False])
        if len(arms) == 1:
            return arms[0](module_level)
        if not module_level:
            return self.fork(arms, scope)
        ended = [self.branch(run, scope, True) for run in arms]
        return all(ended) and exhaustive

    def match_bind(self, pattern, value, scope) -> None:
        kind = type(pattern).__name__
        unread = Opaque("a value a class or mapping pattern of a `match` captures")
        if kind == "MatchAs":
            if pattern.pattern is not None:
                self.match_bind(pattern.pattern, value, scope)
            if pattern.name:
                self.assign(pattern.name, value, scope)
        elif kind == "MatchSequence":
            if any(type(p).__name__ == "MatchStar" for p in pattern.patterns):
                elem, outer = self.iterate(value)
                for p in pattern.patterns:
                    if type(p).__name__ == "MatchStar":
                        if p.name:
                            self.assign(p.name, Seq(elem, UNKNOWN), scope)
                    else:
                        self.match_bind(p, elem, scope)
            else:
                for p, part in zip(pattern.patterns, self.unpack(value, len(pattern.patterns), None, scope)):
                    self.match_bind(p, part, scope)
        elif kind == "MatchValue":
            self.expr(pattern.value, scope)
        elif kind == "MatchOr":
            bound: dict = {}
            for p in pattern.patterns:
                self.match_bind(p, value, scope)
                for name in _bound_names(p):
                    bound.setdefault(name, []).append(scope.lookup(name))
            for name, values in bound.items():
                self.assign(name, _merge(*values), scope)
        elif kind in ("MatchClass", "MatchMapping") and _bound_names(pattern) and not self.quiet:
            self.undecided("a class or mapping pattern of a `match` captures values the grader does not follow")
        if kind == "MatchClass":
            self.expr(pattern.cls, scope)
            for p in list(pattern.patterns) + list(pattern.kwd_patterns):
                self.match_bind(p, unread, scope)
        elif kind == "MatchMapping":
            for key in pattern.keys:
                self.expr(key, scope)
            for p in pattern.patterns:
                self.match_bind(p, unread, scope)
            if pattern.rest:
                self.assign(pattern.rest, unread, scope)

    def fork(self, branches, scope) -> bool:
        """Branches of which one runs (an if and its else): each from the same start, then each name bound
        to what it is after either (one value, or a choice of two); True if every branch returns."""
        start = dict(scope.vars)
        outs = []
        self.uncertain += 1
        try:
            for stmts in branches:
                scope.vars.clear()
                scope.vars.update(start)
                ended = self.block(stmts, scope)
                outs.append((dict(scope.vars), ended))
        finally:
            self.uncertain -= 1
        flowing = [v for v, ended in outs if not ended]
        scope.vars.clear()
        if not flowing:
            scope.vars.update(outs[-1][0])
            return True
        for name in set().union(*flowing):
            values = [v.get(name) for v in flowing]
            first = values[0]
            scope.vars[name] = first if all(v is first for v in values) else _merge(*values)
        return False

    def constant_test(self, test, scope):
        """True or False where the reader can tell (a constant, the rank of an input of known rank), else None."""
        if isinstance(test, ast.Constant):
            return bool(test.value)
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            inner = self.constant_test(test.operand, scope)
            return None if inner is None else not inner
        if isinstance(test, ast.BoolOp):
            values = [self.constant_test(v, scope) for v in test.values]
            if isinstance(test.op, ast.And):
                return False if False in values else (True if all(v is True for v in values) else None)
            return True if True in values else (False if all(v is False for v in values) else None)
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            left, right = self.known_int(test.left, scope), self.known_int(test.comparators[0], scope)
            if left is None or right is None:
                return None
            op = type(test.ops[0])
            table = {ast.Eq: left == right, ast.NotEq: left != right, ast.Lt: left < right, ast.LtE: left <= right,
                     ast.Gt: left > right, ast.GtE: left >= right}
            return table.get(op)
        return None

    def known_int(self, node, scope):
        """An int the reader knows: a constant, or the rank of an array whose rank is known."""
        value = _int_value(node)
        if value is not None:
            return value
        target = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("dim", "ndimension") \
                and not node.args:
            target = node.func.value
        elif isinstance(node, ast.Attribute) and node.attr == "ndim":
            target = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len" and node.args \
                and isinstance(node.args[0], ast.Attribute) and node.args[0].attr == "shape":
            target = node.args[0].value
        if target is None:
            return None
        value = self.quietly(target, scope)
        if isinstance(value, Blank):
            value = value.axes
        if _is_arr(value) and "*" not in value and UNKNOWN not in value:
            return len(value)
        return None

    def decorate(self, deco, value, scope):
        """What a decorator makes of a function: the same function for those that only wrap it (no_grad,
        lru_cache...), what a decorator of the student's returns, else something the reader cannot follow."""
        target = deco.func if isinstance(deco, ast.Call) else deco
        d = self.quietly(target, scope)
        if isinstance(d, Lib):
            last = d.path.split(".")[-1]
            if last in TRANSPARENT_DECORATORS or d.path in TRANSPARENT_DECORATORS:
                return value
            return Opaque(f"what the decorator `{d.path}` makes of it")
        if isinstance(deco, ast.Call):
            d = self.quietly(deco, scope)
        if isinstance(d, (Func, Bound, Cls)):
            self.quiet += 1
            try:
                out = self.apply(d, [value], {}, deco, scope, label="a decorator")
            finally:
                self.quiet -= 1
            return out if out is not None else Opaque("what a decorator returns")
        return Opaque("what its decorator makes of it")

    def quietly(self, node, scope):
        self.quiet += 1
        try:
            return self.expr(node, scope)
        finally:
            self.quiet -= 1

    def assign(self, name, value, scope):
        scope.binder(name)[name] = value

    def bind(self, target, value, scope, source):
        if isinstance(target, ast.Name):
            self.assign(target.id, value, scope)
        elif isinstance(target, (ast.Tuple, ast.List)):
            parts = self.unpack(value, len(target.elts), source, scope)
            starred = next((n for n, t in enumerate(target.elts) if isinstance(t, ast.Starred)), None)
            for n, t in enumerate(target.elts):
                if isinstance(t, ast.Starred):
                    rest = parts[n:len(parts) - (len(target.elts) - n - 1)] if starred is not None else []
                    self.bind(t.value, Seq(_merge(*rest), UNKNOWN) if rest else None, scope, None)
                else:
                    k = n if starred is None or n < starred else len(parts) - (len(target.elts) - n)
                    self.bind(t, parts[k] if 0 <= k < len(parts) else None, scope, None)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, value, scope, source)
        elif isinstance(target, ast.Subscript):
            self.expr(target.slice, scope) if not isinstance(target.slice, ast.Slice) else None
            self.store_into(target.value, value, scope)
        elif isinstance(target, ast.Attribute):
            base = self.expr(target.value, scope)
            if isinstance(base, Lib):
                if isinstance(value, (Func, Bound, Inst, Cls, Lib, LibResult, Opaque, Choice)):
                    self.undecided(f"it replaces `{base.path}.{target.attr}`, which changes what library code does")
            elif isinstance(base, (Inst, Cls, Func)):
                base.attrs[target.attr] = _merge(base.attrs.get(target.attr), value)
            else:
                self.store_into(target.value, value, scope)

    def unpack(self, value, n, source, scope) -> list:
        """The parts of `value` unpacked into n names (a, b = ...)."""
        if isinstance(source, (ast.Tuple, ast.List)) and len(source.elts) == n and \
                not any(isinstance(e, ast.Starred) for e in source.elts) and isinstance(value, Tup):
            return list(value.items)
        if isinstance(value, Tup):
            return list(value.items) + [None] * max(0, n - len(value.items))
        if isinstance(value, Shape):
            return [Size(a) for a in value.axes] if len(value.axes) == n else [Size(UNKNOWN)] * n
        elem, _ = self.iterate(value)
        return [elem] * n

    def store_into(self, target, value, scope):
        """A value stored into an array, list, dict or object (x[...] = v, x.attr = v, x.append(v)): what
        the container holds is then derived from the inputs too."""
        self.effects += 1
        if value is None or isinstance(value, (Size, Index, Shape, Rng)):
            return
        if isinstance(target, ast.Name):
            old = scope.lookup(target.id)
            new = self.holding(old, value)
            if new is not old:
                scope.owner(target.id)[target.id] = new
        elif isinstance(target, ast.Attribute):
            base = self.quietly(target.value, scope)
            if isinstance(base, (Inst, Cls, Func)):
                old = base.attrs.get(target.attr)
                base.attrs[target.attr] = self.holding(old, value) if old is not None else Seq(value, UNKNOWN)
            else:
                self.store_into(target.value, value, scope)
        elif isinstance(target, (ast.Subscript, ast.Starred)):
            self.store_into(target.value, value, scope)
        elif isinstance(target, ast.Call) and isinstance(target.func, ast.Attribute):
            self.store_into(target.func.value, value, scope)

    def holding(self, container, value):
        if isinstance(container, Blank):
            return tuple(container.axes)
        if _is_arr(container):
            return container
        if isinstance(container, Seq):
            return Seq(_merge(container.elem, value), container.outer)
        if isinstance(container, (Inst, Cls, Func)):
            container.attrs["[]"] = _merge(container.attrs.get("[]"), value)
            return container
        if isinstance(container, Tup):
            return Seq(_merge(*container.items, value), UNKNOWN)
        return Seq(value, UNKNOWN)

    # -- iteration -------------------------------------------------------------------------------
    def iterate(self, value):
        """(what each item is, the axis along which they come) for `for x in value`."""
        if _is_arr(value):
            return (value[1:] if value else ()), (value[0] if value else UNKNOWN)
        if isinstance(value, Blank):
            return (Blank(value.axes[1:]) if value.axes else None), (value.axes[0] if value.axes else UNKNOWN)
        if isinstance(value, Seq):
            return value.elem, value.outer
        if isinstance(value, Rng):
            return Index(value.label), value.label
        if isinstance(value, Tup):
            return _merge(*value.items), LITERAL
        if isinstance(value, Shape):
            return Size(UNKNOWN), LITERAL
        if isinstance(value, Choice):
            parts = [self.iterate(o) for o in value.options]
            return _merge(*[p[0] for p in parts]), _merge_labels(*[p[1] for p in parts])
        return None, UNKNOWN

    # -- expressions -------------------------------------------------------------------------------
    def expr(self, node, scope):
        value = self._expr(node, scope)
        if not self.quiet and isinstance(value, (Inst, Cls, Bound)):
            self.followed(value)
        return value

    def followed(self, value) -> None:
        """A student's class (or object, or bound method) whose class defines what the reader does not
        follow: the code that uses it is not decided."""
        obj = value.args[0] if isinstance(value, Bound) and value.args else value
        if not isinstance(obj, (Inst, Cls)):
            return
        top = obj.cls if isinstance(obj, Inst) else obj
        if id(top) not in self.unread:          # read once per class (and its bases), not at every use
            self.unread[id(top)] = ""
            todo, seen = [top], 0
            while todo and seen < 10:
                cls = todo.pop()
                seen += 1
                why = _unread_class(cls.node)
                if why:
                    self.unread[id(top)] = f"the class `{cls.node.name}` defines {why}, which the grader does not follow"
                    break
                bases = [(base, self.quietly(base, cls.scope)) for base in cls.node.bases]
                # followed: bases that are the student's own classes, and `object`; any other (NamedTuple, a
                # library's class, a builtin container) makes methods and attributes the reader cannot see
                other = next((base for base, value in bases if not isinstance(value, Cls)
                              and not (isinstance(base, ast.Name) and base.id == "object")), None)
                if other is not None:
                    self.unread[id(top)] = (f"the class `{cls.node.name}` derives from `{ast.unparse(other)}`, "
                                            "which the grader does not follow")
                    break
                todo += [value for _, value in bases if isinstance(value, Cls)]
        if self.unread[id(top)]:
            self.undecided(self.unread[id(top)])

    def _expr(self, node, scope):
        self.tick()
        if isinstance(node, ast.Name):
            return scope.lookup(node.id)
        if isinstance(node, ast.Constant):
            return None
        if isinstance(node, ast.Attribute):
            return self.attribute(node, scope)
        if isinstance(node, ast.Subscript):
            return self.subscript(node, scope)
        if isinstance(node, ast.BinOp):
            left, right = self.expr(node.left, scope), self.expr(node.right, scope)
            return self.each([left, right], lambda lr: self.binop(node, *lr))
        if isinstance(node, ast.UnaryOp):
            return self.expr(node.operand, scope)
        return self.expr_rest(node, scope)

    def each(self, values, fn):
        """fn(values), or, where some of them are a choice of arrays (one or the other, by a branch the
        reader could not decide), fn of each combination, as work that may not run, the results merged."""
        picks = [i for i, v in enumerate(values) if _array_choice(v)]
        if not picks:
            return fn(values)
        combos = [[]]
        for i, v in enumerate(values):
            combos = [c + [o] for c in combos for o in (v.options if i in picks else [v])][:8]
        self.uncertain += 1
        try:
            return _merge(*[fn(c) for c in combos])
        finally:
            self.uncertain -= 1

    def binop(self, node, left, right):
        if isinstance(node.op, ast.MatMult):
            return self.product("@", [left, right], node, matmul=True)
        if isinstance(node.op, ast.Mult):
            if isinstance(left, (Tup, Seq)) and not _is_arr(right) or \
                    isinstance(right, (Tup, Seq)) and not _is_arr(left):
                return left if isinstance(left, (Tup, Seq)) else right       # [x] * n: a list repeated
            return self.product("*", [left, right], node)
        result = self.arith(left, right)
        self.combine(_OPERATOR_SIGNS.get(type(node.op), "an operator"), [left, right], result, node)
        return result

    def combine(self, name, values, result, node):
        """Record an elementwise combination (+, -, /, maximum, where...) of two or more arrays derived from
        the inputs, with the axes of its result: one that pairs axes no operand paired (q's positions
        broadcast against k's) is whole-matrix work whatever follows it (a square, a log, a sum)."""
        arrays = [a for a in (None if isinstance(v, (Size, Index, Blank)) else _as_arr(v) for v in values)
                  if a is not None]
        result = _as_arr(result)
        if len(arrays) >= 2 and result is not None:
            self.op("combine", name, arrays, (), result, node)

    def expr_rest(self, node, scope):
        if isinstance(node, ast.BoolOp):
            values = [self.expr(node.values[0], scope)]
            self.uncertain += 1
            try:
                values += [self.expr(v, scope) for v in node.values[1:]]
            finally:
                self.uncertain -= 1
            return _merge(*values)
        if isinstance(node, ast.Compare):
            values = [self.expr(v, scope) for v in [node.left, *node.comparators]]
            arrays = [_as_arr(v) for v in values if not isinstance(v, (Seq, Tup)) or _as_arr(v) is not None]
            return _broadcast(*[a for a in arrays if a is not None]) if any(a is not None for a in arrays) else None
        if isinstance(node, ast.IfExp):
            test = self.constant_test(node.test, scope)
            if test is not None:
                return self.expr(node.body if test else node.orelse, scope)
            self.expr(node.test, scope)
            self.uncertain += 1
            try:
                return _merge(self.expr(node.body, scope), self.expr(node.orelse, scope))
            finally:
                self.uncertain -= 1
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            items = []
            for e in node.elts:
                if isinstance(e, ast.Starred):
                    inner = self.expr(e.value, scope)
                    spread = _spread(inner)
                    if spread is not None:
                        items += spread
                    else:
                        elem, _ = self.iterate(inner)
                        items.append(elem)
                else:
                    items.append(self.expr(e, scope))
            return Tup(items)
        if isinstance(node, ast.Dict):
            values = [self.expr(v, scope) for v in node.values if v is not None]
            for k in node.keys:
                if k is not None:
                    self.expr(k, scope)
            merged = _merge(*values)
            return Seq(merged, UNKNOWN) if merged is not None else Seq(None, UNKNOWN)
        if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp)):
            return self.comprehension(node, scope)
        if isinstance(node, ast.Call):
            return self.call(node, scope)
        if isinstance(node, ast.Lambda):
            return Func(node, scope, "<lambda>")
        if isinstance(node, ast.NamedExpr):
            value = self.expr(node.value, scope)
            around = scope
            while around.comprehension and around.parent is not None:
                around = around.parent
            self.bind(node.target, value, around, node.value)
            return value
        if isinstance(node, ast.Starred):
            return self.expr(node.value, scope)
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            value = self.expr(node.value, scope) if node.value is not None else None
            if isinstance(node, ast.YieldFrom):
                value, _ = self.iterate(value)
            self.yields.append((value, self.loops[-1] if self.loops else LITERAL))
            return None
        if isinstance(node, ast.Await):
            return self.expr(node.value, scope)
        if not isinstance(node, INERT_EXPRESSIONS) and not self.quiet:
            self.undecided(f"a `{type(node).__name__}` expression, which the grader does not read")
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.expr(child, scope)
        return None

    def arith(self, left, right):
        """+, -, /, //, %, ** of two values."""
        if isinstance(left, (Size, Index)) and not _is_arr(right):
            return left
        if isinstance(right, (Size, Index)) and not _is_arr(left):
            return right
        if isinstance(left, Tup) and isinstance(right, Tup):
            return Tup(left.items + right.items)
        if isinstance(left, Seq) and isinstance(right, (Seq, Tup)) or isinstance(right, Seq) and isinstance(left, Tup):
            a, b = [Seq(_merge(*v.items), LITERAL) if isinstance(v, Tup) else v for v in (left, right)]
            return Seq(_merge(a.elem, b.elem), _merge_labels(a.outer, b.outer))
        a, b = _as_arr(left), _as_arr(right)
        if a is None and b is None:
            return None
        return _broadcast(a, b)

    def attribute(self, node, scope):
        base = self.expr(node.value, scope)
        attr = node.attr
        if isinstance(base, Lib):
            why = _library_path_unread(f"{base.path}.{attr}".split("."))     # reached where the text hides it
            outer = self.notebook.parent.get(id(node))
            path, up = f"{base.path}.{attr}", node      # on the way to an entry of LIBRARY_READS the text names
            while path not in LIBRARY_READS and isinstance(self.notebook.parent.get(id(up)), ast.Attribute) \
                    and self.notebook.parent.get(id(up)).value is up:
                up = self.notebook.parent.get(id(up))
                path = f"{path}.{up.attr}"
            if why and path not in LIBRARY_READS and not (isinstance(outer, ast.Attribute) and outer.attr in TRACE_HIDING):
                self.undecided(f"it uses {why}, which the grader does not read (it can change what library code "
                               "does or run code behind its text)")
            return Lib(f"{base.path}.{attr}")
        if isinstance(base, (Inst, Cls)):
            return self.member(base, attr)
        if isinstance(base, Func):
            return base.attrs.get(attr)
        if isinstance(base, Blank):
            if attr == "shape":
                return Shape(base.axes)
            if attr in ("T", "H", "mT", "mH", "real", "data"):      # still an array the answer made
                axes = tuple(reversed(base.axes)) if attr in ("T", "H") else \
                    base.axes[:-2] + base.axes[-2:][::-1] if attr in ("mT", "mH") else base.axes
                return Blank(axes)
            return None
        if _array_choice(base):
            return _merge(*[self.array_attribute(o, attr) for o in base.options])
        if isinstance(base, Choice):
            return _merge(*[self.attribute_of(o, attr) for o in base.options])
        if not _is_arr(base):
            if isinstance(base, (Seq, Tup)) and _as_arr(base) is not None and attr in ("T", "mT", "shape"):
                base = _as_arr(base)
            else:
                return None
        return self.array_attribute(base, attr)

    def array_attribute(self, base, attr):
        if base is None:
            return None
        if attr == "T":
            return tuple(reversed(base))
        if attr == "mT":
            return base[:-2] + (base[-1], base[-2]) if len(base) >= 2 else base
        if attr == "shape":
            return Shape(base)
        if attr in ("real", "data", "values", "imag", "grad"):
            return base
        if attr in SHAPE_ONLY or attr in ("indices", "requires_grad", "is_leaf"):
            return None
        return base

    def attribute_of(self, value, attr):
        if isinstance(value, Lib):
            return Lib(f"{value.path}.{attr}")
        if isinstance(value, (Inst, Cls)):
            return self.member(value, attr)
        if _is_arr(value):
            return value
        return None

    def member(self, obj, attr):
        """obj.attr of a student's object or class: what was stored there, or a method bound to it."""
        if attr in obj.attrs:
            return obj.attrs[attr]
        cls = obj.cls if isinstance(obj, Inst) else obj
        seen = 0
        while cls is not None and seen < 10:
            seen += 1
            if attr in cls.attrs:
                value = cls.attrs[attr]
                if isinstance(value, Func) and isinstance(obj, Inst):
                    if any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in value.node.decorator_list):
                        return value
                    return Bound(value, [obj], {})
                return value
            cls = self.base_class(cls)
        return None

    def base_class(self, cls):
        for b in cls.node.bases:
            value = self.quietly(b, cls.scope)
            if isinstance(value, Cls):
                return value
        return None

    def subscript(self, node, scope):
        base = self.expr(node.value, scope)
        index = node.slice
        items = list(index.elts) if isinstance(index, ast.Tuple) else [index]
        values = [None if isinstance(i, ast.Slice) else self.expr(i, scope) for i in items]
        for i in items:
            if isinstance(i, ast.Slice):
                for part in (i.lower, i.upper, i.step):
                    if part is not None:
                        self.expr(part, scope)
        if isinstance(base, Shape):
            if len(items) == 1 and not isinstance(items[0], ast.Slice):
                n = _int_value(items[0])
                if n is not None and -len(base.axes) <= n < len(base.axes):
                    return Size(base.axes[n])
                return Size(UNKNOWN)
            if len(items) == 1 and isinstance(items[0], ast.Slice):
                lower, upper = _int_value(items[0].lower) if items[0].lower else 0, \
                    _int_value(items[0].upper) if items[0].upper else len(base.axes)
                if lower is not None and upper is not None and items[0].step is None:
                    return Shape(base.axes[lower:upper])
            return Shape((UNKNOWN,))
        if isinstance(base, Tup):
            if len(items) == 1 and not isinstance(items[0], ast.Slice):
                n = _int_value(items[0])
                if n is not None and -len(base.items) <= n < len(base.items):
                    return base.items[n]
                return _merge(*base.items)
            return base
        if isinstance(base, Seq):
            if len(items) == 1 and isinstance(items[0], ast.Slice):
                return base
            rest = Seq(base.elem, base.outer)
            value = base.elem
            for item in items[1:]:                 # a[i, j] of a list of arrays: numpy-style
                if _is_arr(value):
                    rest = None
                    break
            if len(items) > 1 and _is_arr(value):
                return self.index_array((base.outer,) + value, items, values)
            return value if rest is not None else value
        if isinstance(base, Blank):
            return None
        if isinstance(base, (Inst, Cls, Func)):
            method = self.member(base, "__getitem__") if isinstance(base, Inst) else None
            if method is not None:              # obj[i] runs its class's __getitem__(i)
                key = values[0] if len(values) == 1 else Tup(list(values))
                return self.apply(method, [key], {}, node, scope, "`__getitem__`")
            return base.attrs.get("[]")
        if isinstance(base, Choice):
            arrays = [o for o in base.options if _is_arr(o)]
            return _merge(*[self.index_array(a, items, values) for a in arrays]) if arrays else None
        if not _is_arr(base):
            return None
        return self.index_array(base, items, values)

    def index_array(self, axes, items, values):
        axes = list(axes or ())
        out = []
        pos = 0
        for n, (item, value) in enumerate(zip(items, values)):
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
                fancy = _as_arr(value)
                if fancy is not None and not isinstance(value, (Size, Index)):
                    out += list(fancy)           # fancy indexing with an array of the inputs
                elif isinstance(value, (Seq, Tup)):
                    out.append(value.outer if isinstance(value, Seq) else LITERAL)
                pos += 1
        out += axes[pos:]
        return tuple(out)

    def comprehension(self, node, scope):
        local = Scope(scope.globals, scope, {})
        local.comprehension = True
        outers = []
        for gen in node.generators:
            it = self.expr(gen.iter, local)
            elem, outer = self.iterate(it)
            outers.append(outer)
            self.bind(gen.target, elem, local, None)
            self.loops.append(outer)
        try:
            for gen in node.generators:
                for cond in gen.ifs:
                    self.expr(cond, local)
            if isinstance(node, ast.DictComp):
                self.expr(node.key, local)
                element = self.expr(node.value, local)
            else:
                element = self.expr(node.elt, local)
        finally:
            for _ in node.generators:
                self.loops.pop()
        return Seq(element, _merge_labels(*outers) if len(outers) > 1 else outers[0])

    # -- calls ---------------------------------------------------------------------------------------
    def call(self, node, scope):
        func = node.func
        args, stars = [], []
        for a in node.args:
            if isinstance(a, ast.Starred):
                value = self.expr(a.value, scope)
                spread = _spread(value)
                if spread is not None:
                    args += spread
                else:
                    stars.append((len(args), value))
                    args.append(Seq(*self.iterate(value)) if not _is_arr(value) else value)
            else:
                args.append(self.expr(a, scope))
        kwargs = {k.arg: self.expr(k.value, scope) for k in node.keywords if k.arg}
        for k in node.keywords:
            if not k.arg and _as_arr(self.expr(k.value, scope)) is not None and not self.quiet:
                # f(**mapping) with arrays in the mapping: which parameter gets which array is not followed
                self.undecided(f"line {node.lineno}: a call passes arrays through `**`, which the grader does not follow")
        if isinstance(func, ast.Attribute):
            base = self.expr(func.value, scope)
            if _array_choice(base) or any(_array_choice(a) for a in args):
                return self.each([base] + args, lambda v: self.method(func.attr, v[0], v[1:], kwargs, node, scope)
                                 if _is_arr(v[0]) or v[0] is None or isinstance(v[0], (Blank, Size, Index))
                                 else self.apply(self.attribute_of(v[0], func.attr), v[1:], kwargs, node, scope,
                                                 label=func.attr))
            if _is_arr(base) or isinstance(base, Blank) or base is None or isinstance(base, (Size, Index)):
                return self.method(func.attr, base, args, kwargs, node, scope)
            if isinstance(base, (Seq, Tup)):
                return self.list_method(func.attr, base, args, node, scope)
            if isinstance(base, Shape):
                if func.attr == "numel":
                    return Size(_merge_labels(*base.axes))
                return None
            callee = self.attribute_of(base, func.attr) if not isinstance(base, Func) else base.attrs.get(func.attr)
            if isinstance(base, Choice):
                callee = _merge(*[self.attribute_of(o, func.attr) for o in base.options])
        else:
            callee = self.expr(func, scope)
        if stars and isinstance(callee, Lib) and callee.path.split(".")[-1] == "zip" and len(args) == 1:
            # zip(*x): the columns of x
            value = stars[0][1]
            arr = _as_arr(value)
            if arr is not None and len(arr) >= 2:
                return Seq(Tup([(arr[0],) + arr[2:]]), arr[1])
            return Seq(None, UNKNOWN)
        if any(_array_choice(a) for a in args):
            return self.each(args, lambda v: self.apply(callee, v, kwargs, node, scope, label=_call_name(func)))
        return self.apply(callee, args, kwargs, node, scope, label=_call_name(func))

    def apply(self, callee, args, kwargs, node, scope, label=""):
        """The value of callee(*args, **kwargs)."""
        if isinstance(callee, Func):
            return self.run(callee, args, kwargs, node)
        if isinstance(callee, Bound):
            return self.apply(callee.fn, list(callee.args) + list(args), {**callee.kwargs, **kwargs}, node, scope,
                              label)
        if isinstance(callee, Lib) and callee.path in NAMESPACES:
            # a SimpleNamespace is followed as an object of an empty class of the student's: what is stored on
            # it (its keywords, its attributes) is what a later read of them finds
            if args or (isinstance(node, ast.Call) and any(k.arg is None for k in node.keywords)):
                return Opaque("a SimpleNamespace made from a mapping, whose attributes the grader does not follow")
            if self.namespace is None:
                self.namespace = Cls(ast.ClassDef(name="SimpleNamespace", bases=[], keywords=[], body=[],
                                                  decorator_list=[]), self.module)
            return Inst(self.namespace, dict(kwargs))
        if isinstance(callee, Cls):
            inst = Inst(callee)
            init = self.member(inst, "__init__")
            if init is not None:
                self.apply(init, args, kwargs, node, scope, label)
            return inst
        if isinstance(callee, Inst):
            method = self.member(callee, "__call__")
            if method is None:
                return self.cannot_follow(label or "an object", args, kwargs, node)
            return self.apply(method, args, kwargs, node, scope, label)
        if isinstance(callee, Choice):
            self.uncertain += 1
            try:
                return _merge(*[self.apply(o, args, kwargs, node, scope, label) for o in callee.options])
            finally:
                self.uncertain -= 1
        if isinstance(callee, Lib):
            return self.library(callee.path, args, kwargs, node, scope)
        if isinstance(callee, (LibResult, Opaque)):
            what = f"the result of `{callee.path}(...)`" if isinstance(callee, LibResult) else callee.why
            return self.cannot_follow(label or "a call", args, kwargs, node, what)
        return self.cannot_follow(label or "a call", args, kwargs, node)

    def cannot_follow(self, name, args, kwargs, node, what=""):
        big = [a for a in (_as_arr(v) for v in list(args) + list(kwargs.values())) if a]
        if big:
            self.op("opaque", name + (f" ({what})" if what else ""), big, (), (), node)
        return _broadcast(*big) if big else None

    def run(self, fn: Func, args, kwargs, node):
        if len(self.stack) > MAX_DEPTH:
            if not self.quiet:
                self.undecided(f"helpers call each other too deeply (`{fn.name}`)")
            return None
        if any(f.node is fn.node for f in self.stack):
            return None                    # a recursive call: its body is being read already
        self.scan(fn)
        self.effects += 1
        key = (id(fn.node), id(fn.scope), _signature(args), _signature(kwargs), bool(self.uncertain), self.quiet > 0)
        if key in self.memo:
            return self.memo[key]
        local = Scope(fn.scope.globals, fn.scope, {})
        a = fn.node.args
        positional = [p.arg for p in a.posonlyargs + a.args]
        defaults = list(a.defaults)
        for n, p in enumerate(positional):
            if n < len(args):
                local.vars[p] = args[n]
            elif p in kwargs:
                local.vars[p] = kwargs[p]
            else:
                d = n - (len(positional) - len(defaults))
                local.vars[p] = self.quietly(defaults[d], fn.scope) if 0 <= d < len(defaults) else None
        if a.vararg is not None:
            local.vars[a.vararg.arg] = Tup(list(args[len(positional):]))
        for p, d in zip(a.kwonlyargs, a.kw_defaults):
            local.vars[p.arg] = kwargs.get(p.arg, self.quietly(d, fn.scope) if d is not None else None)
        if a.kwarg is not None:
            extra = [v for k, v in kwargs.items() if k not in positional]
            local.vars[a.kwarg.arg] = Seq(_merge(*extra), LITERAL) if extra else Seq(None, LITERAL)
        saved = (self.returns, self.yields, self.loops)
        self.returns, self.yields, self.loops = [], [], []
        self.stack.append(fn)
        try:
            if isinstance(fn.node, ast.Lambda):
                result = self.expr(fn.node.body, local)
            else:
                self.block(fn.node.body, local)
                if self.yields:
                    result = Seq(_merge(*[v for v, _ in self.yields]),
                                 _merge_labels(*[label for _, label in self.yields]))
                else:
                    result = _merge(*self.returns) if self.returns else None
        finally:
            self.stack.pop()
            self.returns, self.yields, self.loops = saved
        self.memo[key] = result
        return result

    def scan(self, fn: Func):
        """Code that can change what a function does behind its text: the reader cannot decide past it."""
        if id(fn.node) in self.scanned:
            return
        self.scanned.add(id(fn.node))
        tampering, hiding = _tampering(self.notebook.live_nodes(fn.node, runs=True), self.notebook)
        if tampering:
            self.undecided(f"`{fn.name}` {tampering}, which can change what the code does behind its text")
        if hiding:
            self.note(hiding)

    def list_method(self, name, base, args, node, scope):
        if name in ("append", "extend", "insert", "add", "appendleft", "update", "setdefault", "__setitem__"):
            value = args[-1] if args else None
            if name in ("extend", "update"):
                value, _ = self.iterate(value)
            if value is not None and not isinstance(value, (Size, Index, Shape, Rng)):
                target = node.func.value
                if isinstance(target, ast.Name):
                    old = scope.lookup(target.id)
                    outer = self.loops[-1] if self.loops else LITERAL
                    if isinstance(old, Tup):
                        new = Seq(_merge(*old.items, value), _merge_labels(LITERAL, outer))
                    elif isinstance(old, Seq):
                        new = Seq(_merge(old.elem, value), old.outer if old.elem is not None and old.outer != UNKNOWN
                                  and old.outer == outer else outer if old.elem is None else _merge_labels(old.outer, outer))
                    else:
                        new = Seq(value, outer)
                    scope.owner(target.id)[target.id] = new
                else:
                    self.store_into(target, value, scope)
            return None
        if name in ("pop", "popleft", "get", "__getitem__"):
            return base.elem if isinstance(base, Seq) else _merge(*base.items)
        if name in ("values", "copy", "items", "keys"):
            return base
        if name in ("index", "count"):
            return None
        arr = _as_arr(base)
        if arr is not None:
            return self.method(name, arr, args, {}, node, scope)
        return None

    def method(self, name, base, args, kwargs, node, scope):
        """x.name(...) on an array (or on a number or on something not derived from the inputs)."""
        made = base if isinstance(base, Blank) else None
        if isinstance(base, Blank):
            if name in ("new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"):
                return self.creation(name, args, kwargs, None)
            if name.endswith("_") and any(_as_arr(a) is not None for a in args) and isinstance(node.func, ast.Attribute):
                self.store_into(node.func.value, _as_arr(next(a for a in args if _as_arr(a) is not None)), scope)
            if name in ("size",):
                return self.size_of(Shape(base.axes), node, method=True)
            if name in ("copy_", "add_", "index_put_", "masked_scatter_", "set_", "index_copy_", "scatter_",
                        "put_", "index_add_", "scatter_add_"):
                return None
            base = None
        if base is None or isinstance(base, (Size, Index)):
            if name.endswith("_") and any(_as_arr(a) is not None for a in args) and isinstance(node.func, ast.Attribute):
                self.store_into(node.func.value, _as_arr(next(a for a in args if _as_arr(a) is not None)), scope)
            if name in ("new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"):
                return self.creation(name, args, kwargs, None)
            big = [a for a in (_as_arr(v) for v in args + list(kwargs.values())) if a is not None]
            if not big:
                # still an array the answer made (ones(...).float(), .squeeze(), .T): its axes not followed
                return Blank(tuple(UNKNOWN for _ in made.axes)) if made is not None else None
            if made is not None and name in PRODUCTS:
                # a product of an array the answer made with inputs (ones.__rmatmul__(e)): as the operator's
                pair = list(args[:1]) + [made] if name.startswith("__r") else [made] + list(args[:1])
                return self.product(name, pair, node, matmul=name in MATMULS, contract_last=name in CONTRACT_LAST,
                                    inner=name == "inner")
            # a method of something not derived from the inputs, given inputs: read as the library's
            return self.library(f"<method>.{name}", args, kwargs, node, scope, method_base=None)
        return self.library(name, args, kwargs, node, scope, method_base=base)

    def size_of(self, shape: Shape, node, method: bool):
        ints = _int_args(node)
        if ints and shape.axes:
            try:
                return Size(shape.axes[ints[0]])
            except IndexError:
                return Size(UNKNOWN)
        return shape

    def creation(self, name, args, kwargs, like):
        """An array the answer makes (zeros, full, arange...): its axes where its sizes are followed."""
        if name.endswith("_like") or name in ("empty_like",):
            src = _as_arr(args[0]) if args else None
            return Blank(src) if src is not None else None
        shape_args = args[:1] if name in ("full", "new_full", "tensor", "new_tensor") else args
        if name in ("arange", "linspace", "logspace"):
            shape_args = [args[-1]] if len(args) == 1 else args[1:2]
        if name in ("eye",):
            shape_args = args[:1] * 2 if len(args) == 1 else args[:2]
        labels = []
        for a in shape_args:
            if isinstance(a, Size):
                labels.append(a.label)
            elif isinstance(a, Index):
                labels.append(a.label)
            elif isinstance(a, Shape):
                labels += list(a.axes)
            elif isinstance(a, Tup):
                for item in a.items:
                    labels.append(item.label if isinstance(item, (Size, Index)) else
                                  "+".join(item.axes) if isinstance(item, Shape) else UNKNOWN)
            elif a is None:
                labels.append(UNKNOWN)
            else:
                labels.append(UNKNOWN)
        return Blank(tuple(labels))

    def library(self, path, args, kwargs, node, scope, method_base=None):
        """A library function (or an array's method, with its array `method_base`) on abstract values."""
        name = path.split(".")[-1]
        module = path.rsplit(".", 1)[0] if "." in path else ""
        by_keyword = [k for k, v in kwargs.items() if _as_arr(v) is not None]
        if by_keyword and name not in SAME_AXES:
            # the reader reads a library call's arrays by position; one passed by keyword (input=, other=,
            # mat2=...) is not followed: the call cannot be decided
            return self.cannot_follow(path, ([method_base] if method_base is not None else []) + list(args), kwargs,
                                      node, f"an array passed by keyword ({', '.join(by_keyword)})")
        base = method_base
        operands = ([base] if base is not None else []) + [_as_arr(a) for a in args]
        dim = _dim_argument(node, method=base is not None) if node is not None and isinstance(node, ast.Call) else None
        # -- Python's iteration helpers -----------------------------------------------------------
        if method_base is None and module in ("", "builtins", "itertools", "it", "functools", "ft", "operator",
                                              "op", "math", "statistics"):
            handled, value = self.iteration_helper(path, name, module, args, kwargs, node, scope)
            if handled:
                return value
        if name in ("partial", "partialmethod") and module in ("functools", "ft"):
            if args:
                return Bound(args[0], list(args[1:]), dict(kwargs))
            return Opaque("functools.partial()")
        if name in ("vmap", "vectorize", "jit", "script", "trace", "frompyfunc", "compile") and method_base is None:
            if name in ("compile", "jit", "script") and args and isinstance(args[0], (Func, Bound, Inst)):
                return args[0]
            return LibResult(path)
        if name == "__call__":
            return self.cannot_follow(path, args, kwargs, node)
        if name in ("size",) and base is not None:
            return self.size_of(Shape(base), node, method=True)
        if name in ("dim", "ndimension") and base is not None:
            return None
        if name in SHAPE_ONLY and name not in ("type",):
            if name == "len" and args:
                return self.length(args[0])
            return None
        if name in CREATION and base is None:
            return self.creation(name, args, kwargs, None)
        if name in CREATION and base is not None and name.startswith("new_"):
            return self.creation(name, args, kwargs, None)
        if name in ("transpose", "swapaxes", "swapdims") and (base or operands):
            x = base if base is not None else operands[0]
            ints = _dims_given(node, method=base is not None)
            if not x:
                return x
            if ints is None or None in ints:
                return tuple(UNKNOWN for _ in x)           # dims it cannot tell: axes it cannot follow
            if not ints and name == "transpose":
                return tuple(reversed(x))                  # numpy's transpose() and torch's of a matrix
            if len(ints) == 2:
                a, b = (i % len(x) for i in ints)
                y = list(x)
                y[a], y[b] = y[b], y[a]
                return tuple(y)
            if name == "transpose" and len(ints) == len(x):     # numpy's transpose(axes): a permutation
                return tuple(x[i % len(x)] for i in ints)
            return tuple(UNKNOWN for _ in x)
        if name in ("movedim", "moveaxis") and (base or operands):
            x = base if base is not None else operands[0]
            ints = _dims_given(node, method=base is not None) or []
            if x and len(ints) == 2 and None not in ints:
                src, dst = ints[0] % len(x), ints[1] % len(x)
                y = list(x)
                label = y.pop(src)
                y.insert(dst, label)
                return tuple(y)
            return tuple(UNKNOWN for _ in x) if x else x
        if name in ("permute",) and base is not None:
            ints = _int_args(node)
            if len(ints) == len(base):
                return tuple(base[i % len(base)] for i in ints)
            return (UNKNOWN,) * len(base)
        if name in ("t",) and base is not None:
            return tuple(reversed(base))
        if name == "unsqueeze" and (base is not None or operands):
            x = base if base is not None else operands[0]
            ints = _int_args(node)[(0 if base is not None else 1):]
            if x is not None and ints:
                y = list(x)
                i = ints[0] if ints[0] >= 0 else len(y) + 1 + ints[0]
                y.insert(max(0, min(i, len(y))), "1")
                return tuple(y)
            return x
        if name == "squeeze" and (base is not None or operands):
            x = base if base is not None else operands[0]
            ints = _int_args(node)[(0 if base is not None else 1):]
            if x is None:
                return None
            if ints:
                drop = {i % len(x) for i in ints} if x else set()
                return tuple(a for n, a in enumerate(x) if n not in drop)
            return tuple(a for a in x if a != "1")
        if name in ("unbind", "split", "chunk", "tensor_split", "hsplit", "vsplit", "array_split"):
            x = base if base is not None else (operands[0] if operands else None)
            if x is None:
                return None
            d = dim if isinstance(dim, int) else 0
            if name == "unbind":
                d = _int_args(node)[0 if base is not None else 1] if len(_int_args(node)) > (0 if base is not None else 1) else d
                d = d % len(x) if x else 0
                return Seq(tuple(a for n, a in enumerate(x) if n != d), x[d] if x else UNKNOWN)
            d = d % len(x) if x else 0
            return Seq(tuple(UNKNOWN if n == d else a for n, a in enumerate(x)), UNKNOWN)
        if name in ("stack", "cat", "concatenate", "concat", "row_stack", "column_stack"):
            seq = args[0] if args else None
            if isinstance(seq, Tup):
                items = [_as_arr(i) for i in seq.items]
                parts = [i for i in items if i is not None]
                if not parts:
                    return None
                elem, outer = _broadcast(*parts), LITERAL
            elif isinstance(seq, Seq):
                elem, outer = _as_arr(seq.elem), seq.outer
                if elem is None:
                    return None
            else:
                arr = _as_arr(seq)
                return tuple(UNKNOWN for _ in arr) if arr else None
            d = dim if isinstance(dim, int) else 0
            if name == "stack":
                y = list(elem)
                i = d if d >= 0 else len(y) + 1 + d
                y.insert(max(0, min(i, len(y))), outer)
                return tuple(y)
            if not elem:
                return (outer,)
            y = list(elem)
            i = d % len(y)
            y[i] = outer if y[i] == "1" else _merge_labels(y[i], outer, UNKNOWN) if outer != LITERAL else y[i]
            return tuple(y)
        if name in RESHAPES and name not in ("flip", "roll", "fliplr", "flipud", "narrow", "diagonal", "trace",
                                             "diag", "tile", "repeat_interleave", "take", "gather",
                                             "index_select", "masked_select", "nonzero", "take_along_dim",
                                             "take_along_axis", "rot90", "diag_embed"):
            x = base if base is not None else next((o for o in operands if o is not None), None)
            if x is None:
                return None
            mixed = _merge_labels(*x) if x else "1"
            n = self.reshape_rank(name, node, base is not None, x)
            wanted = _shape_labels(node, args if base is not None else args[1:], base is not None)
            if name in ("view_as", "reshape_as", "expand_as"):
                other = _as_arr(args[-1]) if args else None
                wanted = list(other) if other is not None else None
            if wanted is not None and x is not None:
                if len(wanted) == len(x) and all(w in (a, "-1") for w, a in zip(wanted, x)):
                    return tuple(x)                      # the same shape: nothing mixed
                merged = _merged_lead(wanted, x) if name in ("reshape", "view") else None
                if merged is not None:
                    return merged                        # (B, T, D) -> (B * T, D): D kept
                if name in ("expand", "broadcast_to", "expand_as") and len(wanted) >= len(x):
                    lead = len(wanted) - len(x)
                    return tuple(wanted[:lead]) + tuple(a if w in ("-1", a) or a != "1" else w
                                                        for w, a in zip(wanted[lead:], x))
            if name in ("expand", "broadcast_to", "expand_as", "repeat"):
                return tuple(x) if n is None or n == len(x) else (UNKNOWN,) * (n or len(x))
            if mixed in ("1",) or all(a in ("1", "D", "E", LITERAL) for a in x):
                return (mixed,) * (n if n is not None else max(len(x), 1))
            return (_mixed(mixed),) * (n if n is not None else max(len(x), 1))
        if name in ("flip", "roll", "fliplr", "flipud", "narrow", "rot90", "tile", "repeat_interleave"):
            x = base if base is not None else next((o for o in operands if o is not None), None)
            return x
        if name in ("diagonal", "diag", "trace", "take", "gather", "index_select", "masked_select", "nonzero",
                    "take_along_dim", "take_along_axis", "diag_embed"):
            x = base if base is not None else next((o for o in operands if o is not None), None)
            return tuple(UNKNOWN for _ in x) if x else x
        if name == "scaled_dot_product_attention" and len(operands) >= 3 and operands[1] is not None:
            q, k, v = operands[:3]
            self.op("product", "scaled_dot_product_attention", [o for o in (q, k) if o is not None],
                    (k[-1],) if k else (), ((q or k)[:-1] + (k[-2],)) if k and len(k) >= 2 else (), node)
            self.op("softmax", name, [k], (k[-2],) if len(k) >= 2 else (UNKNOWN,), k, node)
            return (q[:-1] if q else k[:-1]) + ((v[-1],) if v else (UNKNOWN,))
        if name in SOFTMAX:
            x = next((o for o in operands if o is not None), None)
            if x is not None:
                axis = x[dim % len(x)] if isinstance(dim, int) and x else x[-1] if x else UNKNOWN
                self.op("softmax", name, [x], (axis,), x, node)
            return x
        if name in PRODUCTS and not (name == "product" and module in ("itertools",)):
            # an array the answer made (ones, a basis) stays in its place: a product of an input with it can
            # be a reduction (e @ ones sums the keys)
            if name == "multi_dot" and len(args) == 1:
                if not isinstance(args[0], Tup):
                    # a list made elsewhere: which arrays it multiplies, and how many, the reader cannot tell
                    self.undecided(f"`{name}` of a list the grader cannot read item by item")
                    return self.cannot_follow(name, args, kwargs, node)
                args = list(args[0].items)              # multi_dot([a, b, c]) is a @ b @ c
            operands = ([base] if base is not None else []) + [a if isinstance(a, Blank) else _as_arr(a) for a in args]
            if name == "einsum":
                return self.einsum(node, args)
            if name in ("prod", "product") and len([o for o in operands if _is_arr(o)]) == 1:
                return self.reduce(name, next(o for o in operands if _is_arr(o)), dim, node)
            if name == "mul_" and base is not None and isinstance(node.func, ast.Attribute):
                value = self.product(name, operands, node)
                return value
            if name in CONTRACT_LAST:
                return self.product(name, operands, node, contract_last=True)
            if name == "inner":
                return self.product(name, operands, node, inner=True)
            if name == "outer" or name == "ger":
                return self.product(name, operands, node, outer=True)
            if name == "linear":
                return self.product(name, operands[:2], node, linear=True)
            if name in ("addmm", "baddbmm", "addbmm", "addmv", "addcmul"):
                operands = operands[1:]             # the first is what the product is added to
            if name == "tensordot":
                big = [o for o in operands if _is_arr(o)]
                if len(big) >= 2:
                    mixed = _mixed(_merge_labels(*big[0], *big[1]))
                    self.op("product", name, big, (UNKNOWN,), (mixed,) * max(len(big[0]) + len(big[1]) - 2, 1), node)
                    return (mixed,) * max(len(big[0]) + len(big[1]) - 2, 1)
            return self.product(name, operands, node, matmul=name in MATMULS)
        if name in REDUCTIONS:
            x = base if base is not None else (operands[0] if operands else None)
            if name in ("max", "min") and base is None and len(operands) >= 2 and operands[1] is not None:
                return _broadcast(operands[0], operands[1])          # torch.max(a, b): elementwise
            if name in ("max", "min") and base is not None and len(operands) >= 2 and operands[1] is not None:
                return _broadcast(base, operands[1])
            if x is None:
                return None
            return self.reduce(name, x, dim, node)
        if name in SAME_AXES or name in ("float", "int", "abs", "round", "bool", "complex") and module == "":
            if name in ("float", "int", "item", "round", "bool", "complex") and base is None and module == "":
                arr = _as_arr(args[0]) if args else None
                return () if arr == () else (None if arr is None else arr)
            if name == "item":
                return ()
            big = [o for o in operands if o is not None] + [a for a in (_as_arr(v) for v in kwargs.values()) if a is not None]
            if name in ("tensor", "as_tensor", "array", "asarray", "from_numpy", "Tensor") and args and base is None:
                return _as_arr(args[0])
            if len(big) > 1:
                self.combine(name, big, _broadcast(*big), node)
            if name.endswith("_") and base is not None and isinstance(node.func, ast.Attribute) and len(big) > 1:
                return _broadcast(*big)
            return _broadcast(*big) if big else None
        if name in ("print", "display", "repr", "str", "format", "isinstance", "callable", "hasattr", "type",
                    "warn", "debug", "info", "log_info"):
            return None
        # a library call the reader knows nothing about
        big = [o for o in operands if o is not None] + [a for a in (_as_arr(v) for v in kwargs.values()) if a is not None]
        funcs = [a for a in list(args) + list(kwargs.values()) if isinstance(a, (Func, Bound, Inst))]
        if funcs and not self.quiet:
            for f in funcs:        # a function of the student's handed to a library: what it does is read too
                self.uncertain += 1
                try:
                    self.apply(f, [None], {}, node, scope)
                finally:
                    self.uncertain -= 1
        if big:
            self.op("opaque", path if base is None else name, big, (), (), node)
            return tuple(UNKNOWN for _ in max(big, key=len)) if any(big) else ()
        return LibResult(path) if method_base is None else None

    def folded(self, name, outer, value, node, scope, adding) -> None:
        """functools.reduce or itertools.accumulate over items `outer`: a pass over them; adding them up (a
        step that adds, _adding_step), a second pass over the keys if what it adds is computed from every key
        (a name the call reads, Scope.summary)."""
        used = self.from_every_key(node, scope) if node is not None else ""
        if used and adding:
            axes = _as_arr(value) if _is_arr(_as_arr(value)) else ()
            self.op("fold", f"{name}` from `{used}", [(outer,) + axes], (outer,), axes, node)
        elif used and _touch(outer, {"K"}) and not self.quiet:
            self.undecided(f"`{name}` folds, key by key, items computed from every key (`{used}`) with a step "
                           "the grader cannot tell adds them up or not")
        if _touch(outer, {"K"}) == "plain":
            self.passes += 1

    def length(self, value):
        if _is_arr(value):
            return Size(value[0]) if value else Size(UNKNOWN)
        if isinstance(value, Blank):
            return Size(value.axes[0]) if value.axes else Size(UNKNOWN)
        if isinstance(value, Seq):
            return Size(value.outer)
        if isinstance(value, Shape):
            return Size(LITERAL)
        if isinstance(value, Rng):
            return Size(value.label)
        if isinstance(value, Tup):
            return Size(LITERAL)
        return None

    def reshape_rank(self, name, node, method, x):
        if name in ("flatten", "ravel"):
            return 1
        if name in ("view_as", "reshape_as", "expand_as"):
            return None
        if not isinstance(node, ast.Call):
            return None
        args = node.args[(0 if method else 1):]
        if len(args) == 1 and isinstance(args[0], (ast.Tuple, ast.List)):
            return len(args[0].elts)
        if len(args) == 1 and not isinstance(args[0], ast.Starred):
            return 1
        if args and not any(isinstance(a, ast.Starred) for a in args):
            return len(args)
        return None

    def iteration_helper(self, path, name, module, args, kwargs, node, scope):
        """(handled, value) for Python's builtins and itertools/functools/operator that carry data."""
        if module in ("", "builtins"):
            if name == "range":
                bound = args[1] if len(args) >= 2 else (args[0] if args else None)
                if isinstance(bound, (Size, Index)):
                    return True, Rng(bound.label)
                if len(args) >= 2 and isinstance(args[0], (Size, Index)) and bound is None:
                    return True, Rng(args[0].label)
                return True, Rng(LITERAL if all(a is None for a in args) and node is not None
                                 and all(isinstance(a, ast.Constant) for a in node.args) else UNKNOWN)
            if name == "len":
                return True, self.length(args[0]) if args else None
            if name == "zip":
                parts = [self.iterate(a) for a in args]
                if not parts:
                    return True, Seq(None, LITERAL)
                return True, Seq(Tup([p[0] for p in parts]), _zip_label([p[1] for p in parts]))
            if name == "enumerate":
                elem, outer = self.iterate(args[0]) if args else (None, UNKNOWN)
                return True, Seq(Tup([Index(outer), elem]), outer)
            if name == "map":
                if len(args) < 2:
                    return True, None
                parts = [self.iterate(a) for a in args[1:]]
                value = self.apply(args[0], [p[0] for p in parts], {}, node, scope, label=_label(args[0]))
                return True, Seq(value, _zip_label([p[1] for p in parts]))
            if name == "filter":
                if len(args) < 2:
                    return True, None
                elem, outer = self.iterate(args[1])
                if args[0] is not None:
                    self.apply(args[0], [elem], {}, node, scope, label=_label(args[0]))
                return True, Seq(elem, outer)
            if name in ("list", "tuple", "sorted", "reversed", "iter", "set", "frozenset"):
                if not args:
                    return True, Seq(None, LITERAL)
                value = args[0]
                if isinstance(value, Tup) and name in ("list", "tuple", "reversed", "sorted"):
                    if name == "sorted" and "key" in kwargs and kwargs["key"] is not None:
                        self.apply(kwargs["key"], [_merge(*value.items)], {}, node, scope)
                    return True, value
                if _is_arr(value):
                    return True, Seq(*self.iterate(value))
                if isinstance(value, (Seq, Rng)):
                    elem, outer = self.iterate(value)
                    if name == "sorted" and kwargs.get("key") is not None:
                        self.apply(kwargs["key"], [elem], {}, node, scope)
                    return True, Seq(elem, outer)
                if isinstance(value, Blank):
                    return True, Seq(*self.iterate(value))
                return True, value if isinstance(value, Shape) else None
            if name == "next":
                elem, _ = self.iterate(args[0]) if args else (None, UNKNOWN)
                return True, elem
            if name == "dict":
                values = [self.iterate(a)[0] for a in args] + list(kwargs.values())
                return True, Seq(_merge(*values), UNKNOWN)
            if name in ("sum", "max", "min", "any", "all"):
                if not args:
                    return True, None
                if name in ("max", "min") and len(args) >= 2:            # max(a, b): elementwise
                    arrays = [_as_arr(a) for a in args]
                    if "key" in kwargs and kwargs["key"] is not None:
                        self.apply(kwargs["key"], [_merge(*args)], {}, node, scope)
                    return True, _broadcast(*[a for a in arrays if a is not None]) if any(a is not None for a in arrays) else None
                value = args[0]
                if isinstance(value, (Size, Index)) or value is None:
                    return True, None
                if isinstance(value, Tup):
                    arrays = [a for a in (_as_arr(i) for i in value.items) if a is not None]
                    return True, _broadcast(*arrays) if arrays else None
                elem, outer = self.iterate(value)
                if name in ("max", "min") and kwargs.get("key") is not None:
                    self.apply(kwargs["key"], [elem], {}, node, scope)
                elem = _as_arr(elem)
                if _is_arr(value) or elem is not None or isinstance(value, Blank):
                    whole = (outer,) + (elem or ())
                    fold = isinstance(value, (Seq, Rng)) and not _is_arr(value)
                    if (_is_arr(value) or elem is not None) and not (
                            name == "sum" and fold and not self.from_every_key(node, scope)):
                        # Python's sum of a list, or of what a loop yields, adds the items one at a time, as
                        # a loop does: a second pass over the keys only if the items are computed from every
                        # key (self.second_pass); of an array's rows, or max and min, a reduction
                        self.op("reduce", name, [whole], (outer,), elem or (), node)
                    if _touch(outer, {"K"}) == "plain":
                        self.passes += 1
                    return True, elem if elem is not None else None
                return True, None
            if name in ("abs", "round", "float", "int", "bool", "complex", "pow", "divmod"):
                return False, None
            if name == "getattr" and len(args) >= 2:
                target = node.args[1] if node is not None and len(node.args) >= 2 else None
                if isinstance(target, ast.Constant) and isinstance(target.value, str):
                    return True, self.attribute_of(args[0], target.value) if not _is_arr(args[0]) else args[0]
                return True, Opaque("an attribute looked up by a computed name")
            return False, None
        if module in ("itertools", "it"):
            if name == "product":
                repeat = 1
                if node is not None:
                    for k in node.keywords:
                        if k.arg == "repeat" and _int_value(k.value):
                            repeat = _int_value(k.value)
                parts = [self.iterate(a) for a in args] * repeat
                return True, Seq(Tup([p[0] for p in parts]), _merge_labels(*[p[1] for p in parts]) if parts else LITERAL)
            if name in ("starmap",):
                if len(args) < 2:
                    return True, None
                elem, outer = self.iterate(args[1])
                unpacked = elem.items if isinstance(elem, Tup) else [elem, elem]
                return True, Seq(self.apply(args[0], list(unpacked), {}, node, scope, label=_label(args[0])), outer)
            if name in ("chain",):
                parts = [self.iterate(a) for a in args]
                return True, Seq(_merge(*[p[0] for p in parts]), _merge_labels(*[p[1] for p in parts]) if parts else LITERAL)
            if name in ("accumulate",):
                elem, outer = self.iterate(args[0]) if args else (None, UNKNOWN)
                fn = None
                if len(args) >= 2 or kwargs.get("func") is not None:
                    fn = args[1] if len(args) >= 2 else kwargs.get("func")
                    elem = _merge(elem, self.apply(fn, [elem, elem], {}, node, scope, label=_label(fn)))
                self.folded("accumulate", outer, elem, node, scope, fn is None or _adding_step(fn))
                return True, Seq(elem, outer)
            if name in ("combinations", "permutations", "combinations_with_replacement", "pairwise"):
                elem, outer = self.iterate(args[0]) if args else (None, UNKNOWN)
                return True, Seq(Tup([elem, elem]), outer)
            if name in ("islice", "takewhile", "dropwhile", "cycle", "repeat", "compress", "zip_longest",
                        "tee", "groupby", "count", "filterfalse"):
                if name == "zip_longest":
                    parts = [self.iterate(a) for a in args]
                    return True, Seq(Tup([p[0] for p in parts]), _zip_label([p[1] for p in parts]))
                if name in ("count",):
                    return True, Rng(UNKNOWN)
                elem, outer = self.iterate(args[0] if name not in ("takewhile", "dropwhile", "filterfalse")
                                           else (args[1] if len(args) > 1 else None))
                return True, Seq(elem, outer)
            return False, None
        if module in ("functools", "ft"):
            if name == "reduce":
                if len(args) < 2:
                    return True, None
                elem, outer = self.iterate(args[1])
                start = args[2] if len(args) >= 3 else elem
                value = self.apply(args[0], [start, elem], {}, node, scope, label=_label(args[0]))
                value = self.apply(args[0], [_merge(start, value), elem], {}, node, scope, label=_label(args[0]))
                self.folded("reduce", outer, value, node, scope, _adding_step(args[0]))
                return True, value
            return False, None
        if module in ("operator", "op"):
            if name in ("mul", "matmul", "imul", "imatmul", "__mul__", "__matmul__"):
                return True, self.product(name, [_as_arr(a) for a in args], node, matmul="matmul" in name)
            if name in ("add", "sub", "truediv", "neg", "pos", "iadd", "isub", "itemgetter", "attrgetter",
                        "getitem", "pow", "abs"):
                if name == "getitem" and len(args) >= 2:
                    return True, self.iterate(args[0])[0]
                arrays = [a for a in (_as_arr(v) for v in args) if a is not None]
                return True, _broadcast(*arrays) if arrays else None
            return False, None
        if module in ("math",) and name in ("fsum", "prod", "sumprod"):
            if name == "sumprod" and len(args) >= 2:
                a, outer_a = self.iterate(args[0])
                b, _ = self.iterate(args[1])
                whole_a, whole_b = _as_arr(args[0]), _as_arr(args[1])
                self.op("product", "sumprod", [x for x in (whole_a, whole_b) if x is not None], (outer_a,), (), node)
                return True, ()
            if not args:
                return True, None
            elem, outer = self.iterate(args[0])
            elem = _as_arr(elem)
            if _is_arr(args[0]) or elem is not None:
                self.op("reduce", name, [(outer,) + (elem or ())], (outer,), elem or (), node)
                return True, elem if elem is not None else ()
            return True, None
        if module in ("statistics",) and name in ("fmean", "mean", "median", "stdev", "variance", "pvariance",
                                                   "pstdev"):
            elem, outer = self.iterate(args[0]) if args else (None, UNKNOWN)
            elem = _as_arr(elem)
            if args and (_is_arr(args[0]) or elem is not None):
                self.op("reduce", name, [(outer,) + (elem or ())], (outer,), elem or (), node)
                return True, elem if elem is not None else ()
            return True, None
        if module in ("math",):
            arrays = [a for a in (_as_arr(v) for v in args) if a is not None]
            return True, (_broadcast(*arrays) if arrays else None)
        return False, None

    def einsum(self, node, args):
        spec = node.args[0].value if node is not None and node.args and isinstance(node.args[0], ast.Constant) else None
        operands = [_as_arr(a) for a in args[1:]]
        if len(args) == 2 and isinstance(args[1], (Tup, Seq)):
            operands = [_as_arr(i) for i in args[1].items] if isinstance(args[1], Tup) else [_as_arr(args[1].elem)]
        if not isinstance(spec, str) or "->" not in spec:
            big = [o for o in operands if o is not None]
            if big:
                self.op("product", "einsum", big, (UNKNOWN,), (UNKNOWN,), node)
            return (UNKNOWN,) if big else None
        lhs, rhs = spec.replace(" ", "").split("->")
        letters = {}
        for term, op in zip(lhs.split(","), operands):
            if op is None:
                continue
            term = term.replace("...", "")
            for letter, axis in zip(term[::-1], op[::-1]):
                if letters.get(letter, "1") == "1":
                    letters[letter] = axis
        contracted = tuple(axis for letter, axis in letters.items() if letter not in rhs)
        result = tuple(letters.get(c, "1") for c in rhs)
        big = [o for o in operands if o is not None]
        if big:
            self.op("product", "einsum", big, contracted, result, node)
            return result
        return None

    def product(self, name, operands, node, matmul=False, contract_last=False, inner=False, outer=False,
                linear=False):
        made = any(isinstance(o, Blank) for o in operands)
        operands = [_as_arr(o) if not isinstance(o, (Size, Index, Blank)) else None for o in operands]
        big = [o for o in operands if o is not None]
        if len(big) == 1 and made and (matmul or contract_last or inner or linear) and big[0]:
            # an input contracted with an array the answer made (e @ ones, an inner product with a basis):
            # a reduction over the input's contracted axis
            x, first = big[0], operands[0] is not None
            axis = x[-1] if (first or not matmul or len(x) < 2) else x[-2]
            self.op("reduce", name, [x], (axis,), (), node)
        if len(big) < 2:
            return big[0] if big else None      # a scaling: not a product of the inputs
        a, b = operands[0], operands[1] if len(operands) > 1 else None
        if name in ("dot",) and a is not None and b is not None and (len(a) >= 2 or len(b) >= 2):
            matmul = True               # numpy's dot of matrices is a matrix product
        if matmul and a is not None and b is not None:
            contracted = (a[-1],) if a else ()
            if len(b) <= 1:
                result = a[:-1]
            elif len(a) <= 1:
                result = b[:-2] + b[-1:]
            else:
                result = tuple(_broadcast(a[:-2], b[:-2]) or ()) + (a[-2], b[-1])
        elif contract_last:
            whole = _broadcast(*big)
            contracted, result = (whole[-1],) if whole else (), (whole[:-1] if whole else ())
        elif inner and a is not None and b is not None:
            contracted, result = (a[-1],) if a else (), a[:-1] + b[:-1]
        elif outer and a is not None and b is not None:
            contracted, result = (), a + b
        elif linear and a is not None and b is not None:
            contracted, result = (a[-1],) if a else (), a[:-1] + (b[0],) if b else a[:-1]
        else:
            contracted, result = (), _broadcast(*big)
        self.op("product", name, big, contracted, result, node)
        return tuple(result) if result is not None else ()

    def reduce(self, name, x, dim, node):
        if x is None:
            return None
        if dim is None or dim == "all":
            self.op("reduce", name, [x], tuple(x), (), node)
            return ()
        dims = dim if isinstance(dim, tuple) else (dim,)
        if not all(isinstance(d, int) for d in dims) or not x:
            self.op("reduce", name, [x], tuple(x), (), node)
            return ()
        drop = {d % len(x) for d in dims}
        axes = tuple(x[d] for d in sorted(drop))
        kept = tuple(a for n, a in enumerate(x) if n not in drop)
        self.op("reduce", name, [x], axes, kept, node)
        if name in CUMULATIVE or _keepdim(node):
            return tuple("1" if n in drop else a for n, a in enumerate(x)) if name not in CUMULATIVE else x
        return kept


_OPERATOR_SIGNS = {ast.Add: "+", ast.Sub: "-", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**",
                   ast.LShift: "<<", ast.RShift: ">>", ast.BitOr: "|", ast.BitXor: "^", ast.BitAnd: "&"}


def _pairs(result, operands, big: set) -> bool:
    """The result holds one of `big` at more places than any operand does (positions paired with positions)
    or holds axes of `big` together that no operand held together (queries with keys)."""
    def plain(axes):
        return [a for a in axes if _touch(a, big) == "plain"]
    held = plain(result)
    if not held:
        return False
    for label in set(held):
        if held.count(label) > max((plain(o).count(label) for o in operands), default=0):
            return True
    return len(set(held)) > max((len(set(plain(o))) for o in operands), default=0)


def _mixed(label: str) -> str:
    """An axis made by mixing others (a reshape): a label the checks cannot read as any one axis."""
    return label if label in (UNKNOWN, "1") else f"~{label}"


def _shape_labels(node, values, method: bool):
    """The axes a reshape asks for, as labels ("-1": the rest), or None where they cannot be read."""
    if not isinstance(node, ast.Call):
        return None
    nodes = node.args[(0 if method else 1):]
    if len(nodes) == 1 and isinstance(nodes[0], (ast.Tuple, ast.List)):
        nodes = list(nodes[0].elts)
        values = values[0].items if values and isinstance(values[0], Tup) else [None] * len(nodes)
    if len(nodes) == 1 and values and isinstance(values[0], Shape):
        return list(values[0].axes)
    labels = []
    for i, (n, v) in enumerate(zip(nodes, values)):
        if isinstance(n, ast.Starred):
            return None
        if _int_value(n) == -1:
            labels.append("-1")
        elif isinstance(v, (Size, Index)):
            labels.append(v.label)
        elif _int_value(n) == 1:
            labels.append("1")
        elif i == 0:
            labels.append("-1")          # a first size it cannot read (B * T): what the others leave, as -1 is
        else:
            return None
    if labels.count("-1") > 1:
        return None                      # an unread first size beside a -1: neither is known
    return labels if len(labels) == len(nodes) else None


def _merged_lead(wanted, x):
    """The axes of a reshape that merges the leading axes of `x` into one and keeps its last ones, as
    (B, T, D) -> (B * T, D): the target's first size is the rest ("-1", or one it cannot read) and every
    other is the label of the source axis in the same place from the end (the same size, so row-major
    order keeps those axes whole). None for any other reshape."""
    tail = len(wanted) - 1
    if not (1 <= tail < len(x)) or wanted[0] != "-1":
        return None
    if any(w != a or a in (UNKNOWN, LITERAL, "1") or a.startswith("~") for w, a in zip(wanted[1:], x[-tail:])):
        return None
    return (_mixed(_merge_labels(*x[:-tail])),) + tuple(x[-tail:])


def _zip_label(labels) -> str:
    named = [label for label in labels if label not in (LITERAL, UNKNOWN)]
    if named:
        return named[0]
    return UNKNOWN if UNKNOWN in labels else LITERAL


def _label(value) -> str:
    if isinstance(value, Func):
        return value.name
    if isinstance(value, Lib):
        return value.path
    return "a function"


def _call_name(func) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return "a call"


def _signature(values) -> str:
    def one(v, depth=0):
        if depth > 4:
            return "…"
        if v is None or _is_arr(v):
            return repr(v)
        if isinstance(v, (Size, Index, Rng)):
            return f"{type(v).__name__}({v.label})"
        if isinstance(v, Shape):
            return f"Shape{v.axes}"
        if isinstance(v, Blank):
            return f"Blank{v.axes}"
        if isinstance(v, Seq):
            return f"Seq({one(v.elem, depth + 1)},{v.outer})"
        if isinstance(v, Tup):
            return "Tup(" + ",".join(one(i, depth + 1) for i in v.items) + ")"
        if isinstance(v, Lib):
            return f"Lib({v.path})"
        return f"{type(v).__name__}@{id(v)}"
    if isinstance(values, dict):
        return ";".join(f"{k}={one(v)}" for k, v in sorted(values.items()))
    return ";".join(one(v) for v in values)


def _keepdim(node) -> bool:
    return isinstance(node, ast.Call) and any(k.arg in ("keepdim", "keepdims") and isinstance(k.value, ast.Constant)
                                              and k.value.value is True for k in node.keywords)


def _is_none(node) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


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


def _dims_given(node, method: bool) -> list | None:
    """The dims a transpose, swapaxes or movedim call names after its array (the receiver of a method, the
    first positional argument of a function unless given by keyword), in order, a tuple's spread: each an
    int, or None where it is not a constant; None if they cannot be listed (a `*` or `**` argument)."""
    if not isinstance(node, ast.Call):
        return None
    by_keyword = any(k.arg in ("input", "a") for k in node.keywords)
    given = node.args[(0 if method or by_keyword else 1):] + [
        k.value for k in node.keywords if k.arg not in ("input", "a")]
    if any(k.arg is None for k in node.keywords):
        return None
    dims: list = []
    for a in given:
        if isinstance(a, ast.Starred):
            return None
        dims += [_int_value(e) for e in a.elts] if isinstance(a, (ast.Tuple, ast.List)) else [_int_value(a)]
    return dims


def _int_args(node) -> list[int]:
    values = []
    if not isinstance(node, ast.Call):
        return values
    for a in node.args:
        if isinstance(a, (ast.Tuple, ast.List)):
            values += [v for v in map(_int_value, a.elts) if v is not None]
        else:
            v = _int_value(a)
            if v is not None:
                values.append(v)
    for k in node.keywords:
        if k.arg in ("dim0", "dim1", "axis1", "axis2", "source", "destination", "dim", "axis"):
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
            if v is None and isinstance(k.value, ast.Constant) and k.value.value is None:
                return None
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


SHAPE_READS = {"shape", "dtype", "device", "ndim", "size", "numel", "dim", "layout"}


def _names(node) -> set:
    """The names an expression (or statement) reads values of, at any depth (a lambda's or a generator's
    included): not a name whose shape, dtype or size only is read (`x.shape`, `len(x)`, `zeros_like(x)`,
    `x.new_zeros(...)`: no number of x's is in the result)."""
    names, todo = set(), [node]
    while todo:
        n = todo.pop()
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            names.add(n.id)
            continue
        if isinstance(n, ast.Attribute) and n.attr in SHAPE_READS and isinstance(n.value, ast.Name):
            continue
        if isinstance(n, ast.Call):
            func = n.func
            called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if called == "len" or called.endswith("_like"):
                todo.extend(list(n.args[1:]) + [k.value for k in n.keywords] + [func])
                continue
            if called.startswith("new_") and isinstance(func, ast.Attribute):
                todo.extend(list(n.args) + [k.value for k in n.keywords])
                continue
        todo.extend(ast.iter_child_nodes(n))
    return names


def _adds(expr) -> bool:
    """An expression whose last operation is an addition: `a + b` (`z * f + t` too), `add(a, b)`, `a.add(b)`."""
    if isinstance(expr, ast.BinOp):
        return isinstance(expr.op, ast.Add)
    return isinstance(expr, ast.Call) and isinstance(expr.func, (ast.Name, ast.Attribute)) and (
        expr.func.id if isinstance(expr.func, ast.Name) else expr.func.attr) == "add"


def _adding_step(fn) -> bool:
    """A fold's step that adds: a library's `add` (torch.add, operator.add, numpy.add), or a lambda or def of
    the student's whose whole body returns an addition."""
    if isinstance(fn, Lib):
        return fn.path.rsplit(".", 1)[-1] in ("add", "iadd", "__add__", "__iadd__")
    if not isinstance(fn, Func):
        return False
    if isinstance(fn.node, ast.Lambda):
        return _adds(fn.node.body)
    body = [s for s in getattr(fn.node, "body", []) if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    return len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None and _adds(body[0].value)


def _carried(body) -> dict:
    """{id(statement): adds} for the statements of a loop's body (in it, or in an `if` or `with` of it; not in
    a nested loop or function) that update a value the loop carries from one item to the next: `z = f(z,
    ...)`, `z op= ...`, `z.method_(...)` (in place). `adds`: the update is an addition, `z = z + ...` (`z =
    z * f + ...`, `z = torch.add(z, ...)`: the last operation an addition), `z += ...`, `z.add_(...)`."""
    found = {}

    def direct(block):
        for stmt in block:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                    and stmt.targets[0].id in _names(stmt.value):
                found[id(stmt)] = _adds(stmt.value)
            elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
                found[id(stmt)] = isinstance(stmt.op, ast.Add)
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) \
                    and isinstance(stmt.value.func, ast.Attribute) and stmt.value.func.attr.endswith("_") \
                    and isinstance(stmt.value.func.value, ast.Name):
                found[id(stmt)] = stmt.value.func.attr == "add_"
            elif isinstance(stmt, ast.If):
                direct(stmt.body)
                direct(stmt.orelse)
            elif isinstance(stmt, (ast.With, ast.AsyncWith)):
                direct(stmt.body)
    direct(body)
    return found


def _carried_node(stmt) -> tuple:
    """(name, expression) of a statement _carried found."""
    if isinstance(stmt, ast.Assign):
        return stmt.targets[0].id, stmt.value
    if isinstance(stmt, ast.AugAssign):
        return stmt.target.id, stmt.value
    return stmt.value.func.value.id, stmt.value


def _assigned(body) -> set:
    """The names statements bind by assignment (`=`, `+=`, an annotated one, a loop's target), at any depth
    but not in a nested function or class."""
    names, todo = set(), list(body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        todo.extend(ast.iter_child_nodes(node))
    return names


# ---- what the process checks call whole-matrix work -------------------------------------------

AXIS_NAMES = {"B": "the batch", "T": "the positions", "D": "the features", "Q": "the queries", "K": "the keys",
              "E": "the value features", "*": "the leading axes", UNKNOWN: "axes the grader cannot follow",
              "1": "a width-1 axis"}


def _touch(label: str, big: set) -> str:
    """"plain" if the axis is (or gathers) one of `big` as the reader followed it, "mixed" if it may hold
    one of them (an axis the reader could not follow, or one a reshape made by mixing others), ""
    otherwise."""
    if label in big:
        return "plain"
    if label == UNKNOWN:
        return "mixed"
    parts = set(label.lstrip("~").split("+"))
    if label.startswith("~") or UNKNOWN in parts:
        return "mixed" if parts & (big | {UNKNOWN}) else ""
    return "plain" if parts & big else ""


def _labels(op) -> list[str]:
    return [a for o in op.operands for a in o] + list(op.axes) + list(op.result)


def _spans(op, big) -> list[str]:
    found = set()
    for label in _labels(op):
        for part in label.lstrip("~").split("+"):
            found.add(part)
    names = [AXIS_NAMES[a] for a in ("B", "T", "Q", "K") if a in big and a in found]
    if any(_touch(label, big) == "mixed" for label in _labels(op)):
        names.append(AXIS_NAMES[UNKNOWN])
    return names


def _describe(op, big) -> str:
    spans = ", ".join(_spans(op, big))
    kinds = {_touch(label, big) for label in _labels(op)}
    if "mixed" in kinds and "plain" not in kinds and op.kind != "opaque":
        made = [AXIS_NAMES[a] for a in ("B", "T", "Q", "K") if a in big and any(
            a in label.lstrip("~").split("+") for label in _labels(op))]
        what = (f"`{op.name}` works on axes the grader cannot follow"
                + (f" (made by mixing {', '.join(made)})" if made else ""))
        return f"line {op.line} of {_where(op)}: {what}" if op.line else what
    what = {"product": f"`{op.name}` multiplies operands spanning {spans} at once",
            "reduce": f"`{op.name}` reduces over {spans} at once",
            "softmax": f"`{op.name}` works on {spans} at once",
            "fold": f"`{op.name}` adds up, one by one, terms computed from all of {spans} (a max or sum over them"
                    f" taken before): a second pass over {spans}",
            "combine": f"`{op.name}` pairs every {'query with every key' if 'K' in big else 'position with every position'}"
                       " at once (a whole matrix, entry by entry)",
            "opaque": f"`{op.name}` receives whole inputs (spanning {spans}): the grader cannot tell how it computes"}[op.kind]
    return f"line {op.line} of {_where(op)}: {what}" if op.line else what


def _where(op) -> str:
    if op.where == "<lambda>":
        return "a lambda"
    if op.where.startswith("a lambda in "):
        return f"a lambda in `{op.where[len('a lambda in '):]}`"
    return f"`{op.where}`" if op.where else "the function"


def _judged(reading: Reading, whole, big: set) -> dict:
    """{"found": whole-matrix work the reader is sure of, "review": why it cannot decide ('' if it can),
    "notes": what else the student should know}; whole(op) -> "plain" | "mixed" | "" for each op."""
    sure, unsure = [], []
    for op in reading.ops:
        kind = whole(op)
        if not kind:
            continue
        if kind == "plain" and op.certain and op.kind != "opaque":
            sure.append(op)
        else:
            unsure.append(op)
    review = ""
    if reading.undecided:
        review = "; ".join(dict.fromkeys(reading.undecided))
        sure = []                 # the text may not be what runs: nothing in it is sure
    elif not sure and unsure:
        parts = []
        for op in unsure:
            text = _describe(op, big)
            if not op.certain:
                text += " (in a branch the grader cannot tell runs)"
            parts.append(text)
        review = "; ".join(list(dict.fromkeys(parts))[:3])
    found = list(dict.fromkeys(_describe(op, big) for op in sure))[:3]
    return {"found": found, "review": review, "notes": list(reading.notes)}



def entrywise_work(sources, name: str, inputs: dict) -> dict:
    """For an answer that must compute one entry (a dot product of d numbers) at a time: a product of the
    inputs spanning more than one entry's features is whole-matrix work; a library call the reader cannot
    read, given them, cannot be decided."""
    reading = read(sources, name, inputs)
    big = {"B", "T"}

    def whole(op):
        if op.kind == "combine":
            return "plain" if _pairs(op.result, op.operands, {"T"}) else ""
        if op.kind not in ("product", "opaque"):
            return ""
        kinds = {_touch(a, big) for o in op.operands for a in o}
        return "plain" if "plain" in kinds else "mixed" if "mixed" in kinds else ""
    return _judged(reading, whole, big)


def streamed_work(sources, name: str, inputs: dict) -> dict:
    """For an answer that must visit the keys one at a time: a reduction, softmax or contraction over the
    key axis, or a (queries, keys) matrix, is one-shot work, and so is a second pass over the keys adding
    up terms computed from every key ("fold"); a library call the reader cannot read, given the key axis,
    cannot be decided."""
    reading = read(sources, name, inputs)
    big = {"K"}

    def whole(op):
        every = [a for o in op.operands for a in o]
        if op.kind == "combine":
            return "plain" if _pairs(op.result, op.operands, {"Q", "K"}) else ""
        if op.kind in ("reduce", "softmax", "fold"):
            kinds = {_touch(a, big) for a in op.axes}
        elif op.kind == "product":
            kinds = {_touch(a, big) for a in op.axes}
            result = {_touch(a, {"Q"}) for a in op.result}, {_touch(a, big) for a in op.result}
            if "plain" in result[0] and "plain" in result[1]:
                kinds.add("plain")
            elif result[0] - {""} and result[1] - {""}:
                kinds.add("mixed")
        else:
            kinds = {_touch(a, big) for a in every}
        return "plain" if "plain" in kinds else "mixed" if "mixed" in kinds else ""
    return _judged(reading, whole, big)


def source_reading(entry) -> tuple[list[str], str, list[str]]:
    """(found, review, notes) of a probe's reading of an answer's source (entrywise_work, streamed_work):
    anything else came back (a probe that failed) is a reading the grader cannot decide on."""
    if isinstance(entry, dict) and isinstance(entry.get("found"), list) and isinstance(entry.get("review"), str):
        return [str(f) for f in entry["found"]], entry["review"], [str(n) for n in entry.get("notes") or []]
    return [], "the grader could not read the answer's source", []
