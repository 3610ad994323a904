"""Fit a damped oscillator's amplitude, damping, frequency and phase to
noisy samples from many random starts on a Dask cluster, and print the best
fit.

    python examples/multistart_dask.py [--starts 200] [--scheduler HOST:8786]

The least-squares loss has local minima at wrong frequencies, and most
starts end in one of them (about two in three here): the best of many
is the fit.  ad.dask.minimize_many records
the loss once, sends the recording once to every worker and runs one
L-BFGS-B per start there; a text progress bar follows the tasks.  Without
--scheduler it starts a LocalCluster of two worker processes on this
machine; with it, the same code runs on that cluster's workers.
"""
import argparse
import time

import numpy as np

TRUE = {"amplitude": 1.5, "damping": 0.05, "frequency": 2.7, "phase": 0.4}


def oscillator(p, t):
    amplitude, damping, frequency, phase = p[0], p[1], p[2], p[3]
    return amplitude * np.exp(-damping * t) * np.cos(frequency * t + phase)


def canonical(p):
    """One name for the fits that are the same curve: amplitude and
    frequency > 0, phase in (-pi, pi]."""
    amplitude, damping, frequency, phase = p
    if frequency < 0:
        frequency, phase = -frequency, -phase
    if amplitude < 0:
        amplitude, phase = -amplitude, phase + np.pi
    phase = np.pi - (np.pi - phase) % (2 * np.pi)
    return np.array([amplitude, damping, frequency, phase])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--starts", type=int, default=200, help="random starts")
    ap.add_argument("--scheduler", metavar="HOST:PORT",
                    help="a running cluster's scheduler (default: a LocalCluster "
                         "of two worker processes)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    # (imported here, so that --help works without Dask installed)
    import distributed
    import pyautodiff as ad
    import pyautodiff.dask  # noqa: F401

    rng = np.random.default_rng(args.seed)
    t = np.linspace(0.0, 30.0, 400)
    y = oscillator(np.array(list(TRUE.values())), t) + rng.normal(0.0, 0.05, t.size)

    def loss(p):        # a closure: it travels to the workers with its data
        return np.mean((oscillator(p, t) - y) ** 2)

    starts = np.column_stack([rng.uniform(0.5, 3.0, args.starts),      # amplitude
                              rng.uniform(0.0, 0.2, args.starts),      # damping
                              rng.uniform(0.5, 10.0, args.starts),     # frequency
                              rng.uniform(-np.pi, np.pi, args.starts)])  # phase
    if args.scheduler:
        cluster, client = None, distributed.Client(args.scheduler)
    else:
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                           processes=True, dashboard_address=None)
        client = distributed.Client(cluster)
    try:
        t0 = time.perf_counter()
        futures = ad.dask.submit_minimize(loss, starts, method="L-BFGS-B",
                                          client=client)
        distributed.progress(futures)       # a text bar, until the last one is done
        print()
        results = [res for task in client.gather(futures) for res in task]
        seconds = time.perf_counter() - t0
    finally:
        client.close()
        if cluster is not None:
            cluster.close()

    funs = np.array([r.fun for r in results])
    best = results[int(np.argmin(funs))]
    fit = canonical(best.x)
    found = np.sum(np.abs(np.array([canonical(r.x)[2] for r in results])
                          - TRUE["frequency"]) < 0.01)
    print(f"{args.starts} starts in {seconds:.1f} s; {found} of them found the "
          f"frequency; best loss {best.fun:.3e} (noise variance 2.5e-03)")
    for (name, true), value in zip(TRUE.items(), fit):
        print(f"  {name:9s} {value:8.4f}   (true {true})")
    return fit, results


if __name__ == "__main__":
    main()
