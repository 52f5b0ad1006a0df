"""The probe server: checks run in the grader and only call into the kernel; served heads behave
like real modules; nothing of the grader's crosses but inputs and tokens."""
import os
import socket
import tempfile

import pytest
import torch

from autograder.checks.framework import outcome
from conftest import STEP4

STEP4.package   # imports the step's checks: course_checks.step_04
from course_checks.step_04.suites import SUITES, MutantHead  # noqa: E402
from autograder.checks.probeserver import ProbeServer
from autograder.runtime import serve
from autograder.runtime.plain import to_plain
from autograder.runtime import Link
from dlcourse.grading import ServedModule
from autograder.runtime.wire import receive, send


def reference_perturbation(head, x, t):
    out = head(x)
    x2 = x.clone()
    x2[:, t, :] = torch.randn_like(x2[:, t, :])
    out2 = head(x2)
    assert torch.equal(out[:, :t], out2[:, :t])
    assert (out[:, t:] != out2[:, t:]).any(dim=-1).all()


def reference_gradient(head, x, i):
    x = x.detach().clone().requires_grad_(True)
    head(x)[0, i].sum().backward()
    assert (x.grad[0, i + 1:] == 0).all()
    assert (x.grad[0, : i + 1] != 0).any(dim=-1).all()


def reference_simplex(A):
    T = A.shape[-1]
    assert (A >= 0).all()
    assert ((A.sum(-1) - 1).abs() <= 1e-6).all()
    assert (A[..., torch.triu(torch.ones(T, T, dtype=torch.bool), 1)] == 0).all()


@pytest.fixture
def server():
    folder = tempfile.mkdtemp(prefix="ps-")
    with ProbeServer(os.path.join(folder, "s.sock"), STEP4) as srv:
        yield srv


def as_kernel_sees(server, link, obj):
    """What the kernel gets for a suite's object: a served module, or the matrix itself."""
    if isinstance(obj, torch.Tensor):
        return obj.clone()
    return ServedModule(link, server.serve(obj))


def verdicts(name, objects):
    torch.manual_seed(0)
    x = torch.randn(4, 8, 32)
    x_long = torch.randn(4, 12, 32)             # past the notebook's 8 tokens, as the hidden tests go too
    out = {}
    for key, obj in objects:
        if name == "simplex":
            out[key] = [outcome(reference_simplex, obj).split(":")[0]]
        elif name == "causal_perturbation":
            out[key] = [outcome(reference_perturbation, obj, xs, t, seed=t).split(":")[0]
                        for xs, t in [(x, 2), (x, 5), (x, 7), (x_long, 9)]]
        else:
            out[key] = [outcome(reference_gradient, obj, xs, i).split(":")[0]
                        for xs, i in [(x, 0), (x, 3), (x, 6), (x_long, 9)]]
    return out


@pytest.mark.parametrize("name", ["simplex", "causal_perturbation", "causal_gradient"])
def test_served_suite_gives_the_same_verdicts_as_the_objects_themselves(server, name):
    local = verdicts(name, [(case.name, case.build()) for case in SUITES[name]])
    link = Link(server.socket_path)                  # one connection, as a kernel has
    served = verdicts(name, [(token, as_kernel_sees(server, link, obj)) for token, obj in server.suite(name)])
    by_case = {case.name: served[token] for token, case in server.cases(name)}
    assert by_case == local


@pytest.mark.parametrize("name", ["simplex", "causal_perturbation", "causal_gradient"])
def test_reference_checks_pass_every_wheat_and_catch_every_chaff(name):
    results = verdicts(name, [(case.name, case.build()) for case in SUITES[name]])
    for case in SUITES[name]:
        if case.kind == "wheat":
            assert all(v == "returned" for v in results[case.name]), f"reference rejects wheat {case.name}"
        else:
            assert any(v.startswith("assertion") for v in results[case.name]), \
                f"reference misses chaff {case.name}: {case.description}"


def test_tokens_say_nothing_and_the_order_is_shuffled():
    orders, tokens_of_first_case = set(), set()
    for _ in range(6):
        with ProbeServer(os.path.join(tempfile.mkdtemp(prefix="ps-"), "s.sock"), STEP4) as srv:
            issued = srv.cases("causal_gradient")
            tokens = [t for t, _ in issued]
            assert len(set(tokens)) == len(tokens) == len(SUITES["causal_gradient"])
            assert all(len(t) == 16 and set(t) <= set("0123456789abcdef") for t in tokens)
            assert not any(case.name in t or t in case.name for t, case in issued)
            orders.add(tuple(c.name for _, c in issued))
            tokens_of_first_case.add(dict((c.name, t) for t, c in issued)["correct_seed0"])
    # 6 shuffles of this many cases all equal: probability below 1e-10
    assert len(orders) > 1
    assert len(tokens_of_first_case) == 6          # fresh tokens per notebook


@pytest.fixture
def served_and_local(server):
    token, case = next((t, c) for t, c in server.cases("causal_gradient") if c.name == "correct_seed0")
    return ServedModule(Link(server.socket_path), token), case.build()


def test_forward_and_backward_match_the_real_head(served_and_local):
    served, local = served_and_local
    torch.manual_seed(1)
    x = torch.randn(4, 8, 32)
    xs, xl = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    out_s, out_l = served(xs), local(xl)
    assert torch.equal(out_s, out_l) and torch.equal(served.A, local.A)
    (out_s[0, 3].sum() * 2).backward()
    (out_l[0, 3].sum() * 2).backward()
    assert torch.allclose(xs.grad, xl.grad, atol=1e-7)


def test_served_heads_work_under_every_standard_way_to_differentiate_or_call(served_and_local):
    served, local = served_and_local
    torch.manual_seed(2)
    x = torch.randn(4, 8, 32)

    def f(module):
        return lambda inp: module(inp)[0, 3].sum()

    expected = torch.func.grad(f(local))(x)
    assert torch.allclose(torch.func.grad(f(served))(x), expected, atol=1e-6)          # torch.func.grad
    _, vjp_fn = torch.func.vjp(served, x)
    (g,) = vjp_fn(torch.ones(4, 8, 16))
    _, vjp_local = torch.func.vjp(local, x)
    assert torch.allclose(g, vjp_local(torch.ones(4, 8, 16))[0], atol=1e-6)             # torch.func.vjp
    xa = x.clone().requires_grad_(True)
    (ga,) = torch.autograd.grad(served(xa)[0, 3].sum(), xa)                           # autograd.grad
    assert torch.allclose(ga, expected, atol=1e-6)
    batched = torch.func.vmap(served)(torch.stack([x, 2 * x]))                          # vmap
    assert torch.allclose(batched[1], local(2 * x), atol=1e-6)
    seen = []
    handle = served.register_forward_hook(lambda m, inp, out: seen.append(out.shape))  # hooks
    with torch.no_grad():                                                             # no_grad
        out = served(x)
    handle.remove()
    assert seen == [torch.Size([4, 8, 16])] and not out.requires_grad
    out64 = served.double()(x.double())                                               # double precision
    assert out64.dtype == torch.float64 and torch.allclose(out64, local.double()(x.double()), atol=1e-12)
    x64 = x.double().requires_grad_(True)
    served(x64)[0, 3].sum().backward()
    assert x64.grad.dtype == torch.float64 and (x64.grad[0, 4:] == 0).all() and (x64.grad[0, :4] != 0).any()


def test_served_heads_take_the_dtypes_the_notebooks_own_head_takes(server):
    """A float32 head of the suites refuses float64 input as the notebook's Head does (nn.Linear: 'mat1 and
    mat2 must have the same dtype'), until it is turned .double() (or .to(torch.float64)), as a real one."""
    from dlcourse.head import Head
    token = next(t for t, c in server.cases("causal_gradient") if c.name == "correct_seed0")
    torch.manual_seed(1)
    x64 = torch.randn(4, 8, 32, dtype=torch.float64)
    with pytest.raises(RuntimeError, match="same dtype"):
        Head(32, 16, T_max=8)(x64)                                   # the notebook's own head
    served = ServedModule(Link(server.socket_path), token)
    with pytest.raises(RuntimeError, match="same dtype"):
        served(x64)
    with pytest.raises(RuntimeError, match="same dtype"):
        served(x64.float().half())
    assert served(x64.float()).dtype == torch.float32               # float32 in: as before
    assert served.to(torch.float64)(x64).dtype == torch.float64      # converted: computes in float64
    assert served.float()(x64.float()).dtype == torch.float32        # and back
    with pytest.raises(RuntimeError, match="same dtype"):
        served(x64)


def test_server_refuses_abuse_with_an_error_not_a_crash(server):
    link = Link(server.socket_path)
    with pytest.raises(RuntimeError, match="KeyError"):
        link.request({"op": "forward", "token": "nope", "x": None})
    token = server.suite("causal_gradient")[0][0]
    with pytest.raises(RuntimeError, match="larger than any"):
        link.request({"op": "forward", "token": token, "x": to_plain(torch.zeros(1, 8, 20_000))})
    with pytest.raises(RuntimeError, match="unknown request"):
        link.request({"op": "suite", "name": "causal_gradient"})          # no way to ask for cases
    with pytest.raises(RuntimeError, match="unknown request"):
        link.request({"op": "read_file", "path": "/etc/passwd"})
    assert link.request({"op": "forward", "token": token, "x": to_plain(torch.zeros(1, 8, 32))})["out"]


def session(server, grade_id, ns):
    return serve(server.socket_path, grade_id, ns)


def test_a_session_runs_only_for_the_cell_being_graded_and_only_once(server):
    def shapes(T, d, d_k, d_v):
        return {"X": (T, d)}
    ns = {"shapes": shapes}
    assert session(server, "bonus_shapes", ns).startswith("Not recorded")     # nothing expected yet
    assert "bonus_shapes" not in server.results
    server.expect("bonus_dot_variance")
    assert session(server, "bonus_shapes", ns).startswith("Not recorded")     # another test's turn
    server.expect("bonus_shapes")
    assert session(server, "bonus_shapes", ns).startswith("Recorded")
    first = server.results["bonus_shapes"]
    ns["shapes"] = lambda *a: {}                                                # a second try changes nothing
    assert session(server, "bonus_shapes", ns).startswith("Not recorded")
    assert server.results["bonus_shapes"] == first
    server.expect(None)


def test_a_kernel_that_hangs_up_leaves_no_result(server):
    server.expect("bonus_shapes")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(server.socket_path)
        send(sock, {"op": "session", "grade_id": "bonus_shapes"})
        request = receive(sock)                      # the grader's first question ...
        assert request["op"] == "has" and request["name"] == "shapes"
    server.expect(None)                              # ... never answered
    assert "bonus_shapes" not in server.results


def test_a_hidden_test_leaves_the_kernels_random_stream_as_it_was(server):
    def dot_variance(d_k, n, seed):
        dots = torch.randn(n) * d_k ** 0.5                # unseeded: it draws from the kernel's stream
        return dots, dots.var().item()
    torch.manual_seed(3)
    expected = torch.rand(3)
    torch.manual_seed(3)
    server.expect("bonus_dot_variance")
    session(server, "bonus_dot_variance", {"dot_variance": dot_variance})
    server.expect(None)
    assert torch.equal(torch.rand(3), expected)


def test_mutant_heads_do_not_disturb_the_callers_random_stream():
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    MutantHead("correct", seed=42)
    assert torch.equal(torch.rand(3), expected)
