"""The deep-learning course, as the grading engine sees it (autograder/plugin.py).

Its kernels read the course package `dlcourse/` and a step's data, import torch, numpy, matplotlib
and dlcourse before a student's first cell, and are handed PyTorch layers by the checks: an
embedding or a linear layer by value (its weights are an input like any other), any other module
(a head of the 4.2 suites) kept in the grader, its forward and backward run here on request.
"""

from __future__ import annotations

import copy
import importlib.util
import secrets
from pathlib import Path

import torch

import dlcourse.grading  # noqa: F401  tensors and layers on the wire, torch's seeds and traces: both sides
from autograder.plugin import CoursePlugin, NotHandled
from autograder.runtime.plain import from_plain, to_plain

# The same rounding on every CPU (defence in depth: the checks' cases keep their verdicts far from
# every tolerance, tests/test_same_grade_on_every_cpu.py): PyTorch's plain kernels (valid on any
# x86-64, unlike avx2/avx512) and MKL's vendor-independent path.
KERNEL_NUMERICS = {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE"}
MAX_ELEMENTS = 100_000  # one input tensor of a served module: the course's inputs are (4, 8, 32)
KEPT_GRAPHS = 256  # forward calls remembered for a later backward


class DeepLearningCourse(CoursePlugin):
    def kernel_files(self, step):
        package = Path(importlib.util.find_spec("dlcourse").origin).parent  # without importing it here
        return [package, *super().kernel_files(step)]

    def kernel_env(self, step):
        corpus = [str(p) for p in step.data if p.name == "tinyshakespeare.txt"]
        return {
            "GRADER_KERNEL_HOOKS": "dlcourse.grading",
            **KERNEL_NUMERICS,
            **({"DLCOURSE_CORPUS": corpus[0]} if corpus else {}),
        }

    def preimport(self, step):
        return ["torch", "numpy", "matplotlib", "matplotlib_inline.backend_inline", "dlcourse"]

    def encode(self, obj, serve):
        if type(obj) is torch.nn.Embedding:
            return {"__module__": {"type": "Embedding", "weight": to_plain(obj.weight.detach())}}
        if type(obj) is torch.nn.Linear:
            return {
                "__module__": {
                    "type": "Linear",
                    "weight": to_plain(obj.weight.detach()),
                    "bias": to_plain(obj.bias.detach()) if obj.bias is not None else None,
                }
            }
        if isinstance(obj, torch.nn.Module):
            return {"__served__": {"token": serve(obj)}}
        raise NotHandled

    def handle(self, objects, message, state):
        graphs = state.setdefault("graphs", {})  # call -> (x, out): forward calls kept for a backward
        op = message.get("op")
        if op == "forward":
            token = message.get("token")
            module = objects[token]
            if not isinstance(module, torch.nn.Module):
                raise TypeError("that token names no module")
            x = torch.from_numpy(_array(message["x"]))
            converted = message.get("dtype")  # what the kernel's .double() / .to(dtype) made of it
            if converted is not None:
                dtype = getattr(torch, str(converted), None)
                if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
                    raise TypeError(f"no floating-point dtype {str(converted)[:20]!r}")
                module = _converted(state.setdefault("typed", {}), token, module, dtype)
            if x.is_floating_point():
                x.requires_grad_(True)
            with torch.enable_grad():
                out = module(x)
            call = secrets.token_hex(8)
            graphs[call] = (x, out)
            while len(graphs) > KEPT_GRAPHS:
                graphs.pop(next(iter(graphs)))
            A = getattr(module, "A", None)
            return {
                "call": call,
                "out": to_plain(out.detach()),
                "A": to_plain(A.detach()) if isinstance(A, torch.Tensor) else None,
            }
        if op == "backward":
            x, out = graphs[message["call"]]
            grad = torch.from_numpy(_array(message["grad"]))
            if grad.shape != out.shape:
                raise ValueError(f"gradient of shape {tuple(grad.shape)} for an output of shape {tuple(out.shape)}")
            if not x.requires_grad:
                raise ValueError("this input has no gradient (it is not a floating-point tensor)")
            (grad_x,) = torch.autograd.grad(out, x, grad.to(out.dtype), retain_graph=True, allow_unused=True)
            if grad_x is None:
                grad_x = torch.zeros_like(x)
            return {"grad_x": to_plain(grad_x)}
        return super().handle(objects, message, state)


def _converted(typed, token, module, dtype):
    """The module as the kernel's `.double()` (or `.to(dtype)`) made it: a copy in `dtype`, kept. Without
    a conversion the module computes as it is, and takes what its own code takes (a float32 head
    refuses float64 input, as the notebook's own head does)."""
    current = next(
        (t.dtype for t in list(module.parameters()) + list(module.buffers()) if t.is_floating_point()), dtype
    )
    if dtype == current:
        return module
    if (token, dtype) not in typed:
        typed[(token, dtype)] = copy.deepcopy(module).to(dtype)
    return typed[(token, dtype)]


def _array(data):
    value = from_plain(data)
    if not hasattr(value, "shape"):
        raise TypeError("expected a tensor")
    if value.size > MAX_ELEMENTS:
        raise ValueError(f"a tensor of {value.size} elements is larger than any this course needs")
    return value


plugin = DeepLearningCourse()
