"""An Array's .grad is the gradient itself (as a torch tensor's): edits in
place and assignments reach the next backward() and step(), a reference
kept to it stays valid memory, and ad.nn.clip_grad_norm_ /
clip_grad_value_ clip it as torch's do.  Oracles: hand-derived gradients
and updates in plain NumPy, and torch's documented clipping formulas."""
import gc
import math
import threading

import numpy as np
import pytest

import pyautodiff as ad


def quadratic(W, x):
    """sum((W * x - 1)**2): d/dW = 2 x (W x - 1)."""
    return ((W * x - 1.0) ** 2).sum()


def quadratic_grad(w, x):
    return 2.0 * x * (w * x - 1.0)


X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
W0 = np.array([[1.0, 2.0, -1.0], [0.5, -2.0, 3.0]])


# -- the same storage, read and written ---------------------------------------

def test_grad_is_the_same_ndarray_at_every_read_and_zeros_before_backward():
    with ad.Tape():
        W = ad.Array(W0)
        g = W.grad
        assert isinstance(g, np.ndarray) and g.shape == W0.shape
        np.testing.assert_array_equal(g, np.zeros_like(W0))
        assert W.grad is g
        quadratic(W, X).backward()
        assert W.grad is g
        np.testing.assert_array_equal(g, quadratic_grad(W0, X))


@pytest.mark.parametrize("edit, oracle", [
    (lambda W: W.grad.__imul__(0.1), lambda g: 0.1 * g),
    (lambda W: np.clip(W.grad, -1, 1, out=W.grad), lambda g: np.clip(g, -1, 1)),
    (lambda W: W.grad.__setitem__(slice(None), 0.0), lambda g: 0 * g),
    (lambda W: setattr(W, "grad", np.full(W.shape, 0.25)), lambda g: 0 * g + 0.25),
])
def test_edits_of_the_grad_are_what_sgd_steps_with(edit, oracle):
    with ad.Tape():
        W = ad.Array(W0)
        opt = ad.optim.SGD([W], lr=0.5)
        quadratic(W, X).backward()
        edit(W)
        np.testing.assert_array_equal(W.grad, oracle(quadratic_grad(W0, X)))
        opt.step()
        np.testing.assert_array_equal(W.data, W0 - 0.5 * oracle(quadratic_grad(W0, X)))


def test_augmented_assignment_scales_the_grad_adam_steps_with():
    lr, b1, b2, eps = 0.01, 0.9, 0.999, 1e-8
    with ad.Tape():
        W = ad.Array(W0)
        opt = ad.optim.Adam([W], lr=lr, betas=(b1, b2), eps=eps)
        quadratic(W, X).backward()
        W.grad *= 0.1               # W.grad = W.grad.__imul__(0.1)
        opt.step()
    g = 0.1 * quadratic_grad(W0, X)
    m, v = (1 - b1) * g, (1 - b2) * g * g
    want = W0 - lr / (1 - b1) * m / (np.sqrt(v) / math.sqrt(1 - b2) + eps)
    np.testing.assert_allclose(W.data, want, rtol=1e-14)


def test_writing_the_grad_before_any_backward_is_the_gradient_step_uses():
    with ad.Tape():
        W = ad.Array(W0)
        opt = ad.optim.SGD([W], lr=1.0)
        W.grad = np.ones(W0.shape)          # assigned: step() uses it
        opt.step()
        np.testing.assert_array_equal(W.data, W0 - 1.0)
        W.grad[0, 0] = 3.0                  # in place, kept from the last
        opt.step()
        want = W0 - 1.0 - np.where(np.arange(6).reshape(2, 3) == 0, 3.0, 1.0)
        np.testing.assert_array_equal(W.data, want)


def test_a_second_backward_adds_into_the_edited_grad():
    with ad.Tape():
        W = ad.Array(W0)
        g = W.grad
        quadratic(W, X).backward()
        W.grad *= 0.5
        quadratic(W, X).backward()
        assert W.grad is g
        np.testing.assert_allclose(g, 1.5 * quadratic_grad(W0, X), rtol=1e-15)


def test_assigning_a_grad_copies_it_in_and_checks_its_shape():
    with ad.Tape():
        W = ad.Array(W0)
        g = W.grad
        new = np.arange(6.0).reshape(2, 3)
        W.grad = new
        assert W.grad is g and g is not new
        new[0, 0] = 99.0                    # a copy: the gradient keeps 0
        np.testing.assert_array_equal(W.grad, np.arange(6.0).reshape(2, 3))
        W.grad = [[1, 2, 3], [4, 5, 6]]     # array-likes, ints as floats
        np.testing.assert_array_equal(g, [[1.0, 2, 3], [4, 5, 6]])
        W.grad = 0                          # a number: every element
        np.testing.assert_array_equal(g, np.zeros((2, 3)))
        with pytest.raises(ValueError, match=r"\(3, 2\).*\(2, 3\)"):
            W.grad = np.zeros((3, 2))
        with pytest.raises(TypeError, match="complex"):
            W.grad = np.zeros((2, 3), complex)


def test_grad_none_zeroes_it_and_step_skips_it_as_torch_skips_none():
    with ad.Tape():
        W = ad.Array(W0)
        opt = ad.optim.SGD([W], lr=1.0, weight_decay=0.5)
        g = W.grad
        quadratic(W, X).backward()
        W.grad = None
        assert W.grad is g
        np.testing.assert_array_equal(g, np.zeros_like(W0))
        opt.step()                          # skipped: no weight decay either
        np.testing.assert_array_equal(W.data, W0)


@pytest.mark.parametrize("zero", [
    lambda W, opt: W.zero_grad(),
    lambda W, opt: opt.zero_grad(),
    lambda W, opt: opt.zero_grad(set_to_none=False),
    lambda W, opt: ad.nn.Sequential().zero_grad() or W.zero_grad(),
])
def test_zero_grad_zeroes_a_kept_reference_in_place(zero):
    with ad.Tape():
        W = ad.Array(W0)
        opt = ad.optim.SGD([W], lr=1.0)
        g = W.grad
        quadratic(W, X).backward()
        zero(W, opt)
        assert W.grad is g
        np.testing.assert_array_equal(g, np.zeros_like(W0))
        quadratic(W, X).backward()      # then the next gradient, in it
        np.testing.assert_array_equal(g, quadratic_grad(W0, X))


def test_grad_of_an_array_computed_under_no_grad_cannot_be_assigned():
    with ad.no_grad():
        A = ad.Array(W0) * 2.0
    np.testing.assert_array_equal(A.grad, np.zeros_like(W0))
    with pytest.raises(ad.TapeError, match="no_grad"):
        A.grad = np.ones(W0.shape)


def test_derivatives_are_right_when_the_function_reads_its_arguments_grad():
    def f(x):
        assert not x.grad.any()
        return (x * x * x).sum()
    x = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(ad.grad(f)(x), 3 * x * x, rtol=1e-15)


def test_scalar_value_grad_stays_a_float_and_assignable():
    x = ad.Value(2.0)
    (x * x).backward()
    assert x.grad == 4.0 and isinstance(x.grad, float)
    x.grad = 1.5
    assert x.grad == 1.5


# -- lifetimes: compaction, released tapes, dropped Arrays ---------------------

def test_the_grad_survives_compaction_in_a_long_training_loop():
    """On the thread's own tape, 100k+ entries: compactions renumber the
    entries and move their blocks, and the kept .grad stays the one that
    backward() fills and step() reads (each step against NumPy)."""
    out = {}

    def loop():
        t = ad.current_tape()
        first = ad.Array(W0)        # dropped: W's entry and block move down
        (first * 2.0).sum().backward()
        W = ad.Array(W0)
        del first
        opt = ad.optim.SGD([W], lr=0.05)
        g = W.grad
        w = W0.copy()
        for step in range(3500):
            opt.zero_grad()
            s = ad.Value(0.0)
            for _ in range(50):            # scalar entries the tape drops
                s = s + 1.0
            quadratic(W, X).backward()
            assert W.grad is g
            np.testing.assert_array_equal(g, quadratic_grad(w, X))
            np.clip(g, -0.5, 0.5, out=g)
            opt.step()
            w = w - 0.05 * np.clip(quadratic_grad(w, X), -0.5, 0.5)
            np.testing.assert_array_equal(W.data, w)
        out["generation"] = t.generation
        out["entries"] = len(t.nodes)
        out["index"] = W._i

    th = threading.Thread(target=loop)
    th.start()
    th.join()
    assert out["generation"] >= 2           # it was compacted, more than once
    assert out["entries"] < 3500 * 55 and out["index"] == 0


def test_kept_grad_stays_valid_after_the_array_is_dropped_and_compacted():
    out = {}

    def run():
        t = ad.current_tape()
        W = ad.Array(W0)
        quadratic(W, X).backward()
        g = W.grad
        del W
        gc.collect()
        t.compact()                 # the entry and its block are gone
        assert len(t.nodes) == 0
        big = [ad.Array(np.full(W0.shape, 7.0)) for _ in range(50)]
        for b in big:               # new gradient blocks, wherever they land
            (b * b).sum().backward()
            b.grad
        out["g"] = g.copy()
        g += 1.0                    # still ours to write
        out["g+1"] = g.copy()

    th = threading.Thread(target=run)
    th.start()
    th.join()
    np.testing.assert_array_equal(out["g"], quadratic_grad(W0, X))
    np.testing.assert_array_equal(out["g+1"], quadratic_grad(W0, X) + 1.0)


def test_kept_grad_after_an_explicit_tape_ends_holds_the_gradient_then():
    with ad.Tape():
        W = ad.Array(W0)
        g = W.grad
        quadratic(W, X).backward()
        V = ad.Array(W0)
        quadratic(V, X).backward()
        h = V.grad
        del V
    gc.collect()
    np.testing.assert_array_equal(g, quadratic_grad(W0, X))
    np.testing.assert_array_equal(h, quadratic_grad(W0, X))
    assert W.grad is g              # what W.grad reads after the release
    g *= 2.0                        # valid memory, read by nothing else now
    np.testing.assert_array_equal(W.grad, 2 * quadratic_grad(W0, X))
    with pytest.raises(ad.TapeError, match="released"):
        W.grad = np.zeros(W0.shape)


def test_grad_of_an_array_not_read_before_its_tape_ended():
    with ad.Tape():
        W = ad.Array(W0)
        quadratic(W, X).backward()
        U = ad.Array(W0)
    assert W.grad is W.grad
    np.testing.assert_array_equal(W.grad, quadratic_grad(W0, X))
    np.testing.assert_array_equal(U.grad, np.zeros_like(W0))
    assert U.grad is U.grad


def test_parameters_outside_a_step_block_keep_their_grad_across_steps():
    """A training loop with the parameter on the thread's tape and each
    step's graph in 'with ad.Tape()': the step's gradient reaches the
    kept .grad through the block's import of W."""
    out = []

    def loop():
        W = ad.Array(W0)
        opt = ad.optim.SGD([W], lr=0.1)
        g = W.grad
        w = W0.copy()
        for _ in range(20):
            opt.zero_grad()
            with ad.Tape():
                quadratic(W, X).backward()
            out.append(W.grad is g and np.array_equal(g, quadratic_grad(w, X)))
            g *= 0.5
            opt.step()
            w = w - 0.1 * 0.5 * quadratic_grad(w, X)
        out.append(np.array_equal(W.data, w))

    th = threading.Thread(target=loop)
    th.start()
    th.join()
    assert out == [True] * 21


# -- clipping, against the formulas of torch.nn.utils' documentation -----------

def two_params():
    W = ad.Array(W0)
    v = ad.Value(1.5)
    (quadratic(W, X) + 4.0 * v * v).backward()
    return W, v, quadratic_grad(W0, X), 12.0        # d(4 v^2)/dv = 8 v


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, math.inf])
def test_clip_grad_norm_scales_by_max_norm_over_total_norm(norm_type):
    with ad.Tape():
        W, v, gw, gv = two_params()
        flat = np.concatenate([gw.ravel(), [gv]])
        if norm_type == math.inf:
            total = np.max(np.abs(flat))
        else:
            total = np.sum(np.abs(flat) ** norm_type) ** (1 / norm_type)
        got = ad.nn.clip_grad_norm_([W, v], 2.0, norm_type=norm_type)
        assert isinstance(got, float)
        np.testing.assert_allclose(got, total, rtol=1e-14)
        coef = 2.0 / (total + 1e-6)
        np.testing.assert_allclose(W.grad, gw * coef, rtol=1e-14)
        np.testing.assert_allclose(v.grad, gv * coef, rtol=1e-14)


def test_clip_grad_norm_leaves_gradients_under_the_norm_alone():
    with ad.Tape():
        W, v, gw, gv = two_params()
        total = math.sqrt(np.sum(gw * gw) + gv * gv)
        assert ad.nn.clip_grad_norm_(iter([W, v]), total + 1.0) == pytest.approx(total, rel=1e-14)
        np.testing.assert_array_equal(W.grad, gw)
        assert v.grad == gv


def test_clip_grad_norm_takes_one_array_or_a_generator_and_steps_with_it():
    with ad.Tape():
        W = ad.Array(W0)
        opt = ad.optim.SGD([W], lr=1.0)
        quadratic(W, X).backward()
        g = quadratic_grad(W0, X)
        total = ad.nn.clip_grad_norm_(W, 1.0)
        np.testing.assert_allclose(total, np.linalg.norm(g), rtol=1e-14)
        opt.step()
        np.testing.assert_allclose(W.data, W0 - g / (np.linalg.norm(g) + 1e-6),
                                   rtol=1e-14)
        quadratic(W, X).backward()
        assert ad.nn.clip_grad_norm_((p for p in [W]), 1e9) > 0


def test_clip_grad_norm_of_a_nonfinite_norm():
    with ad.Tape():
        W = ad.Array([1.0, 2.0])
        W.grad = [np.nan, 1.0]
        with pytest.raises(RuntimeError, match="non-finite"):
            ad.nn.clip_grad_norm_([W], 1.0, error_if_nonfinite=True)
        np.testing.assert_array_equal(W.grad, [np.nan, 1.0])
        assert math.isnan(ad.nn.clip_grad_norm_([W], 1.0))
        assert np.isnan(W.grad).all()       # torch scales by NaN too


def test_clip_grad_value_clamps_every_element():
    with ad.Tape():
        W, v, gw, gv = two_params()
        assert ad.nn.clip_grad_value_([W, v], 1.0) is None
        np.testing.assert_array_equal(W.grad, np.clip(gw, -1.0, 1.0))
        assert v.grad == 1.0
        ad.nn.clip_grad_value_(W, 0.25)
        np.testing.assert_array_equal(W.grad, np.clip(gw, -0.25, 0.25))


def test_clipping_refuses_what_is_not_a_parameter():
    with pytest.raises(TypeError, match="ndarray"):
        ad.nn.clip_grad_norm_([np.zeros(3)], 1.0)
    with pytest.raises(TypeError, match="float"):
        ad.nn.clip_grad_value_([1.0], 1.0)
