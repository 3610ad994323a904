"""The scripts in examples/ run (at a small size) and reach their goal,
and each says what it does in --help."""
import glob
import importlib.util
import os
import re

import pytest

EXAMPLES = os.path.join(os.path.dirname(__file__), os.pardir, "examples")


def load(name):
    spec = importlib.util.spec_from_file_location(
        f"example_{name}", os.path.join(EXAMPLES, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


NAMES = sorted(os.path.splitext(os.path.basename(path))[0]
               for path in glob.glob(os.path.join(EXAMPLES, "*.py")))


@pytest.mark.parametrize("name", NAMES)
def test_help_describes_the_example_in_one_sentence(name, capsys):
    example = load(name)
    with pytest.raises(SystemExit) as exit_:
        example.main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: ")
    description = " ".join(out.split("\n\n")[1].split())
    assert description == " ".join(example.__doc__.split("\n\n")[0].split())
    assert description.endswith(".")
    # one sentence: no sentence ends before the last character
    assert not re.search(r"[.!?]\s+[A-Z]", description), description


def test_linear_regression_recovers_the_line(capsys):
    w, b = load("linear_regression").main(["--steps", "200"])
    assert w == pytest.approx(1.0, abs=1e-6)
    assert b == pytest.approx(-1.0, abs=1e-6)
    assert "fitted y = 1.0000 * x + (-1.0000)" in capsys.readouterr().out


def test_tanh_neuron_gradients(capsys):
    o, grads = load("tanh_neuron").main([])
    assert o == pytest.approx(2 ** -0.5, abs=1e-12)
    expected = {"x1": -1.5, "w1": 1.0, "x2": 0.5, "w2": 0.0, "b": 0.5}
    assert grads == pytest.approx(expected, abs=1e-12)
    out = capsys.readouterr().out
    assert "= 0.7071" in out and "d o / d x1 = -1.5000" in out


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_moons_mlp_learns(optimizer, capsys):
    accuracy = load("moons_mlp").main(["--points", "40", "--steps", "20",
                                       "--optimizer", optimizer])
    assert accuracy >= 0.85
    out = capsys.readouterr().out
    assert "337 parameters" in out and "step   0" in out


def test_spiral_adam_reaches_high_training_accuracy(capsys):
    accuracy = load("spiral_adam").main(["--points", "40", "--steps", "200",
                                         "--hidden", "32"])
    assert accuracy >= 0.95
    assert "final training accuracy" in capsys.readouterr().out


def test_spiral_data_has_three_balanced_classes():
    X, y = load("spiral_adam").make_spiral(25)
    assert X.shape == (75, 2) and sorted(set(y.tolist())) == [0, 1, 2]
    assert all((y == k).sum() == 25 for k in range(3))
    assert abs(X).max() <= 1.0 + 1e-12          # radius at most 1


def test_rosenbrock_reaches_the_minimum_both_ways(capsys):
    results = load("rosenbrock").main(["--n", "50"])
    methods = {"lbfgs"} | ({"L-BFGS-B"} if _have_scipy() else set())
    assert set(results) == methods
    for res in results.values():
        assert res.success
        assert abs(res.x - 1.0).max() < 1e-3 and res.fun < 1e-8
    assert "lbfgs     f = " in capsys.readouterr().out


def test_multistart_dask_fits_the_oscillator_on_a_local_cluster(capsys):
    pytest.importorskip("distributed")
    pytest.importorskip("scipy")
    example = load("multistart_dask")
    fit, results = example.main(["--starts", "24"])
    assert len(results) == 24
    frequencies = [example.canonical(r.x)[2] for r in results]
    assert sum(abs(f - 2.7) < 0.01 for f in frequencies) < 24   # not every start
    assert fit == pytest.approx(list(example.TRUE.values()), abs=0.02)
    out = capsys.readouterr().out
    assert "100% Completed" in out and "24 starts in" in out


def test_logistic_newton_reaches_the_hand_gradients_optimum(capsys):
    pytest.importorskip("scipy")
    example = load("logistic_newton")
    res, ref = example.main(["--samples", "300", "--features", "5"])
    assert res.success and res.nhev > 0
    assert res.x == pytest.approx(ref.x, abs=1e-6)
    X, y = example.make_data(300, 5)
    _, grad = example.loss_and_grad_by_hand(res.x, X, y, 1e-2)
    assert abs(grad).max() < 1e-8
    assert "training accuracy" in capsys.readouterr().out


def _have_scipy():
    try:
        import scipy.optimize  # noqa: F401
    except ImportError:
        return False
    return True


def test_the_tour_s_optimization_part():
    from pyautodiff.demo import optimization_demo
    lines = []
    res = optimization_demo(n=10, out=lines.append)
    assert res.success and abs(res.x - 1).max() < 1e-4
    text = "\n".join(lines)
    assert "iteration" in text and "eigenvalues" in text and "replayed" in text


@pytest.mark.parametrize("method", ["ipopt", "trust-constr"])
def test_hanging_chain_tends_to_the_catenary(method, capsys):
    example = load("hanging_chain")
    if method == "ipopt" and example.method_available() != "ipopt":
        pytest.skip("no IPOPT library is installed")
    gaps = []
    for links in (25, 50):
        res, gap = example.main(["--links", str(links), "--method", method])
        assert res.success, res.message
        gaps.append(gap)
    # the discrete chain's distance from the catenary falls as 1/links^2
    assert gaps[1] < 1e-3 and 3 < gaps[0] / gaps[1] < 5, gaps
    out = capsys.readouterr().out
    assert "the constraints' Jacobian is 50 x 98 with 196 nonzeros" in out
