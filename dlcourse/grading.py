"""PyTorch in a graded kernel: what this course adds to the grader's runtime (autograder/runtime/).

The grading engine knows plain data; this module teaches it the course's kind of data, on both
sides of the wire (the grader imports it through source/course_plugin.py, a graded kernel through
$GRADER_KERNEL_HOOKS):
* tensors travel as raw bytes and come back as tensors in the kernel; a `torch.Size` as a tuple;
  an `nn.Embedding` or `nn.Linear` a check hands over is rebuilt from its weights;
* a check's seed is torch's global seed, set just before the student's function runs, and the
  kernel's torch random state is the same after a hidden test as before it;
* a traced call records which torch functions ran, on operands of which shapes (no values);
* heads and other modules the grader keeps are `ServedModule`s here.

A `ServedModule` is an `nn.Module` with no parameters and no code of its own to read: calling
it sends the input to the grader, which runs its module and sends the output back (and the
attention weights, readable as `.A` after a call). Gradients flow through it: `backward`,
`torch.autograd.grad`, `torch.func.grad`/`vjp`, `torch.func.vmap`, hooks, `no_grad` and double
precision all work as they do on a real module. Precision too is what it is on the notebook's own
module: a float32 head refuses float64 input as `nn.Linear` does, until it is turned `.double()`
(or `.to(torch.float64)`): the conversion is recorded here and the grader's module computes in it.
"""

from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode

from autograder.runtime import KernelHooks, Link, install
from autograder.runtime.plain import NotPlain, array_plain, from_plain, register_codec, to_plain


class ServedModule(torch.nn.Module):
    """A module that lives in the grader: call it like any module; `.A` holds the last weights."""

    def __init__(self, link: Link, token: str):
        super().__init__()
        self._link = link
        self._token = token
        self._last_call = None
        self._dtype = None  # the dtype a .double() / .to(dtype) gave it (None: the grader's module's own)
        self.A = None

    def forward(self, x):
        return _ServedCall.apply(self, x)

    def _apply(self, fn, *args, **kwargs):
        """.double(), .float(), .half(), .to(dtype) convert a module's floating tensors: this one has none of
        its own, so it records what the conversion does to one (and the grader converts its module)."""
        current = self._dtype or torch.float32
        converted = fn(torch.zeros((), dtype=current))
        if isinstance(converted, torch.Tensor) and converted.dtype != current:
            self._dtype = converted.dtype
        return super()._apply(fn, *args, **kwargs)

    def extra_repr(self) -> str:
        return "served by the grader"


def _plain(t: torch.Tensor) -> dict:
    """A tensor's values as plain data, also from under torch.func's wrappers (a backward run under
    torch.func.grad gets a wrapped gradient)."""
    functorch = torch._C._functorch
    with torch._C._DisableFuncTorch():
        while functorch.is_functorch_wrapped_tensor(t):
            t = functorch.get_unwrapped(t)
        return to_plain(t.detach())


class _ServedCall(torch.autograd.Function):
    @staticmethod
    def forward(module, x):
        reply = module._link.request(
            {
                "op": "forward",
                "token": module._token,
                "x": _plain(x),
                "dtype": str(module._dtype).replace("torch.", "") if module._dtype else None,
            }
        )
        module._last_call = reply["call"]
        module.A = from_plain(reply["A"], tensors=True) if reply.get("A") is not None else None
        return from_plain(reply["out"], tensors=True)

    @staticmethod
    def setup_context(ctx, inputs, output):
        module, x = inputs
        ctx.link, ctx.call = module._link, module._last_call

    @staticmethod
    def backward(ctx, grad_out):
        reply = ctx.link.request({"op": "backward", "call": ctx.call, "grad": _plain(grad_out)})
        return None, from_plain(reply["grad_x"], tensors=True)

    @staticmethod
    def vmap(info, in_dims, module, x):
        """torch.func.vmap: one call per slice of the mapped axis, stacked."""
        x = x.movedim(in_dims[1], 0)  # (N, ...)
        outs, weights = [], []
        for i in range(x.shape[0]):
            outs.append(_ServedCall.apply(module, x[i]))
            weights.append(module.A)
        if all(a is not None for a in weights):
            module.A = torch.stack(weights)  # (N, ...)
        return torch.stack(outs), 0  # (N, ...)


# ---- tensors and layers on the wire ------------------------------------------------------------


def _encode(obj, budget):
    if type(obj) is torch.Size:
        return {"__tuple__": [int(n) for n in obj]}
    if isinstance(obj, torch.Tensor):
        plain = torch.Tensor.as_subclass(obj, torch.Tensor).detach().cpu()  # a subclass: its values only
        if plain.is_complex() or plain.layout != torch.strided:
            raise NotPlain(f"a {plain.dtype} {plain.layout} tensor is not a numeric answer")
        return {"__tensor__": array_plain(plain.resolve_conj().resolve_neg().numpy(), budget)["__array__"]}
    return None


def _tensor(array, rebuild):
    return torch.from_numpy(array)


def _layer(spec: dict, rebuild):
    """A standard torch layer sent by value: nn.Embedding or nn.Linear."""
    weight = rebuild(spec.get("weight"))
    if not isinstance(weight, torch.Tensor) or weight.dim() != 2:
        raise NotPlain("a layer's weight is a matrix")
    if spec.get("type") == "Embedding":
        return torch.nn.Embedding.from_pretrained(weight, freeze=False)
    if spec.get("type") == "Linear":
        bias = rebuild(spec.get("bias"))
        layer = torch.nn.Linear(weight.shape[1], weight.shape[0], bias=bias is not None, dtype=weight.dtype)
        with torch.no_grad():
            layer.weight.copy_(weight)
            if bias is not None:
                layer.bias.copy_(bias)
        return layer
    raise NotPlain(f"unknown layer {spec.get('type')!r}")


# ---- the kernel's side of a hidden test --------------------------------------------------------

MAX_TRACE = 4000  # torch calls recorded during one traced call


class TorchHooks(KernelHooks):
    def served(self, link, token: str):
        return ServedModule(link, token)

    def seed(self, seed: int) -> None:
        # the CPU generator's seed, which is all torch.manual_seed changes on a machine without
        # accelerators (the same draws after it); torch.manual_seed also queues a seeding for every
        # device type not yet started, each with a copy of the call's stack: about 1 ms a call, a
        # fifth of judging's CPU time when every probe call seeds, and a queue that only grows
        torch.random.default_generator.manual_seed(int(seed))

    def random_state(self):
        return torch.random.get_rng_state()

    def restore_random_state(self, state) -> None:
        torch.random.set_rng_state(state)

    def trace(self, calls: list):
        class Recorder(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                if len(calls) < MAX_TRACE:
                    try:
                        calls.append([str(getattr(func, "__name__", "")), describe(args), describe(kwargs)])
                    except Exception:  # never let the record break the student's call
                        pass
                return func(*args, **kwargs)

        return Recorder()


def describe(obj, depth=0):
    """A JSON-safe description: tensors by shape, small values as they are, the rest by type."""
    if isinstance(obj, torch.Tensor):
        return {"__tensor_shape__": [int(n) for n in obj.shape]}
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj if not isinstance(obj, str) else obj[:200]
    if isinstance(obj, float):
        return obj if obj == obj and abs(obj) != float("inf") else repr(obj)
    if isinstance(obj, (list, tuple)) and depth < 3:
        return [describe(x, depth + 1) for x in list(obj)[:16]]
    if isinstance(obj, dict) and depth < 3:
        return {str(k): describe(v, depth + 1) for k, v in list(obj.items())[:16]}
    return {"type": type(obj).__name__}


register_codec(_encode, {"__tensor__": _tensor, "__module__": _layer})
install(TorchHooks())
