"""Recordings on a Dask cluster: ``ad.dask.map`` and ``ad.dask.minimize_many``.

Dask's own scheduler does the scheduling, the retries and the data
movement; this module only says what one task computes:

* ``map(F, *args, method=..., in_axes=...)`` is a dask.array whose every
  block is one ``F.map`` call over that block's points (the rows of the
  batched arguments' axis 0), run in C on a worker;
* ``minimize_many(f, X0, ...)`` is one task per start, each an
  ``ad.minimize`` from that start on f's recording.

A recording travels as its saved file's bytes (tapefile.py), scattered
once to every worker (``client.scatter(..., broadcast=True)``): a task
names it by its key and never carries it.  A worker thread loads it,
validated, at its first task that needs it and keeps it for the next ones:
one copy per worker thread, since replays of one recording take turns
(record.py) and a worker's threads run tasks at once.  A copy corrupted on
the way is a ValueError in the task, raised on the client as a task's
error is.  A task's result depends on its inputs alone, so a worker lost
mid-run costs its tasks a rerun elsewhere, by Dask's scheduler.
"""
import collections
import threading
import weakref

import numpy as np

try:
    import dask.array as da
    import distributed
    from distributed.comm import get_address_host
except ImportError as exc:
    raise ImportError(
        "pyautodiff.dask runs recordings on a Dask cluster and needs "
        "dask.distributed: pip install 'pyautodiff[dask]'") from exc

from pyautodiff import batch, tapefile
from pyautodiff.minimize import minimize_recorded, record_objective
from pyautodiff.record import Function, Recorded, loads

# recordings a worker thread keeps loaded (the most recently used)
KEEP = 4
# recording -> {client id: the future of its bytes on the workers}
_SENT = weakref.WeakKeyDictionary()

# The shapes of one point's results, from the shapes of the recording's
# result and of the differentiated argument; two for the methods that
# return two arrays.
ROW_SHAPES = {
    "value": lambda out, arg: (out,),
    "grad": lambda out, arg: (arg,),
    "value_and_grad": lambda out, arg: ((), arg),
    "jacobian": lambda out, arg: (out + arg,),
    "hessian": lambda out, arg: (arg + arg,),
    "hvp": lambda out, arg: (arg,),
    "jvp": lambda out, arg: (out, out),
}


def map(F, *args, method="value", in_axes=0, threads=None, errors="raise",
        client=None):
    """F.map on a Dask cluster: a dask.array (a tuple of two for
    "value_and_grad" and "jvp") whose block k is F.map over block k of the
    batched arguments, computed on a worker.

    F is a recording (ad.record) or an @ad.function (recorded here at the
    first point).  Batched arguments (in_axes 0) are dask.arrays of points
    on axis 0, cut into blocks there; shared ones (None) are ndarrays,
    floats or dask.arrays, sent whole to every task.  threads: the C
    threads of each task's F.map (None: the cores of the worker's machine
    shared among the Dask threads of the workers on it).  errors as
    F.map's: a point where a guard flips raises BranchError naming its row
    of the whole array, or ("nan") gives a row of NaN.  client: a
    distributed.Client, by default the current one; compute the result
    with it.
    """
    client = _client(client, "map")
    batch.check_method(method, "ad.dask")
    if method.startswith("sparse"):
        raise ValueError(f"ad.dask.map: {method} gives scipy.sparse arrays, "
                         "not blocks of a dask.array: map 'jacobian' or "
                         "'hessian', or call F.map on the points")
    axes = batch.axes_of(in_axes, len(args), "ad.dask")
    if all(axis is None for axis in axes):
        raise ValueError("ad.dask.map: no argument is batched (in_axes names "
                         "none with 0)")
    if not isinstance(F, (Recorded, Function)):
        raise TypeError("ad.dask.map takes a recording (ad.record(f, x0)) or "
                        f"an @ad.function, not {type(F).__name__}")
    args = [_batched(a, axis) for a, axis in zip(args, axes)]
    rec = F if isinstance(F, Recorded) else _recording_at_first_point(
        F, args, axes, method, client)
    nargs = rec.nargs + (method in ("hvp", "jvp"))
    if len(args) != nargs:
        raise TypeError(f"ad.dask.map: {method} of the recording of {rec.name} "
                        f"takes {nargs} argument{'' if nargs == 1 else 's'}, "
                        f"not {len(args)}")
    batch.checked_options("ad.dask", errors, 1 if threads is None else threads)
    out, arg = _plain_shapes(rec)
    shapes = ROW_SHAPES[method](out, arg)
    points = [tuple(rec.trace.structures[k].shapes[0]) for k in range(rec.nargs)] + [arg]
    args = [_checked(a, axis, points[k], k, rec.name)
            for k, (a, axis) in enumerate(zip(args, axes))]
    return _rows(client, rec, args, axes, method, shapes, threads, errors)


def _rows(client, rec, args, axes, method, shapes, threads, errors):
    """map's dask.arrays: a blockwise task per block of the batched
    arguments, which gives a tuple of arrays, one per result of method
    (shapes: of one point's), and a dask.array of each."""
    rows = next(a for a, axis in zip(args, axes) if axis == 0)
    blocks = rows.chunks[0]
    index = da.arange(rows.shape[0], chunks=(blocks,))     # each block's row numbers
    pairs = [_scattered(client, rec), None, index, ("i",)]
    arg_st = rec.trace.structures[rec.trace.argnum]     # (hvp's and jvp's vector)
    floats = []
    for k, (a, axis) in enumerate(zip(args, axes)):
        if axis == 0:
            pairs += [a.rechunk((blocks,) + a.chunks[1:]), ("i",) + _axes_of(k, a, 1)]
        elif isinstance(a, da.Array):
            pairs += [a, _axes_of(k, a, 0)]
            if rec.trace.structures.get(k, arg_st).kinds[0] == "float":
                floats.append(k)        # (its block: a 0-d array)
        else:
            pairs += [a, None]
    results = da.blockwise(
        _block, ("i",), *pairs, token=f"ad-map-{method}", concatenate=True,
        dtype=object, meta=np.empty((0,), dtype=object), method=method,
        axes=axes, threads=threads, errors=errors, shapes=shapes,
        floats=floats, threads_by_host=_threads_by_host(client))
    parts = tuple(results.map_blocks(
        _pick, j, token=f"ad-map-{method}-{j}", dtype=np.float64,
        chunks=(blocks,) + tuple((d,) for d in shape),
        new_axis=list(range(1, 1 + len(shape))) or None,
        meta=np.empty((0,) * (1 + len(shape))))
        for j, shape in enumerate(shapes))
    return parts if len(parts) > 1 else parts[0]


def minimize_many(f, X0, method="L-BFGS-B", client=None, starts_per_task=1,
                  **minimize_kwargs):
    """ad.minimize(f, x0, method, **minimize_kwargs) from every start x0 in
    X0 (the rows of an array, or a list) on a Dask cluster: the
    OptimizeResults in the order of the starts.

    A task runs starts_per_task starts one after another (more of them
    where a start takes milliseconds, so that Dask's few milliseconds per
    task do not count).  f is recorded once, here, at the first start, and
    its recording sent once to every worker; a task records f again only
    where one of its guards flips (f may also be a recording itself, which
    then raises BranchError there).  client: a distributed.Client, by
    default the current one."""
    futures = submit_minimize(f, X0, method, client, starts_per_task,
                              **minimize_kwargs)
    if not futures:
        return []
    return [res for task in futures[0].client.gather(futures) for res in task]


def submit_minimize(f, X0, method="L-BFGS-B", client=None, starts_per_task=1,
                    **minimize_kwargs):
    """minimize_many's tasks, submitted: their futures in the order of the
    starts, each a list of its starts' OptimizeResults, for a progress bar
    (distributed.progress), as_completed or cancel."""
    client = _client(client, "minimize_many")
    if isinstance(starts_per_task, bool) or not isinstance(starts_per_task, int) \
            or starts_per_task < 1:
        raise ValueError("ad.dask.minimize_many: starts_per_task must be a "
                         f"positive int, not {starts_per_task!r}")
    starts = list(X0)
    if not starts:
        return []
    if isinstance(f, Recorded):
        rec, f = f, None
    else:
        rec = record_objective(f, starts[0], minimize_kwargs.get("args", ()))
    groups = [starts[i:i + starts_per_task]
              for i in range(0, len(starts), starts_per_task)]
    return client.map(_minimize_from, groups, saved=_scattered(client, rec),
                      f=f, method=method, minimize_kwargs=minimize_kwargs)


# -- on the client ---------------------------------------------------------------

def _client(client, name):
    if client is not None:
        return client
    try:
        return distributed.get_client()
    except ValueError:
        raise ValueError(
            f"ad.dask.{name}: no Dask client: start one (distributed.Client() "
            "for a LocalCluster on this machine, distributed.Client("
            "'host:8786') for a cluster's scheduler) or pass client=") from None


def _scattered(client, rec):
    """rec's saved bytes on every worker: one future, the same for every
    call while rec lives (its replays change the leaves' values in the
    bytes, not what it computes).  Scattered afresh where the data is lost
    with every worker that held it; each time under a key of its own, as
    scattering a key being released loses it."""
    sent = _SENT.setdefault(rec, {})
    future = sent.get(client.id)
    if future is None or future.status != "finished":
        future = sent[client.id] = client.scatter(
            tapefile.dumps(rec), broadcast=True, hash=False)
    return future


def _threads_by_host(client):
    """{host: Dask threads of its workers}, from which a task's F.map takes
    its share of the host's cores."""
    hosts = collections.Counter()
    for info in client.scheduler_info()["workers"].values():
        hosts[info["host"]] += info["nthreads"]
    return dict(hosts)


def _batched(a, axis):
    """A batched argument as a dask.array (an ndarray made one, in one
    block); a shared one as it is."""
    if axis == 0 and not isinstance(a, da.Array):
        return da.from_array(np.asarray(a, dtype=np.float64), chunks=-1)
    return a


def _recording_at_first_point(function, args, axes, method, client):
    """The @ad.function's recording for the first point's arguments (which
    are computed for it)."""
    nargs = len(args) - (method in ("hvp", "jvp"))
    return function.recording([client.compute(a[0]).result() if axis == 0 else a
                               for a, axis in zip(args[:nargs], axes)])


def _plain_shapes(rec):
    """(the result's shape, the differentiated argument's shape) of a
    recording of plain arguments and result; TypeError for the others."""
    tr = rec.trace
    for k, st in tr.structures.items():
        if st.node is not None:
            raise TypeError(f"ad.dask.map: argument {k} of {rec.name} is a "
                            "list, tuple or dict; ad.dask.map takes recordings "
                            "of plain arguments (a float or an ndarray each): "
                            "use F.map for the others")
    if not isinstance(tr.argnum, int):
        raise TypeError(f"ad.dask.map: the recording of {rec.name} "
                        f"differentiates a tuple of arguments ({tr.argnum}); "
                        "ad.dask.map takes one (an int argnum)")
    _, st = tr.outputs()
    if st.node is not None:
        raise TypeError(f"ad.dask.map: {rec.name} returns a list, tuple or "
                        "dict; ad.dask.map takes recordings of one result (a "
                        "float or an ndarray)")
    out = tuple(np.shape(tr.output_value()))
    return out, tuple(tr.structures[tr.argnum].shapes[0])


def _checked(a, axis, point, k, name):
    """Argument k checked against the shape of a point (ValueError naming
    it), a batched one in blocks on axis 0 alone."""
    shape = tuple(a.shape) if isinstance(a, da.Array) else np.shape(a)
    if axis == 0:
        if len(shape) == 0 or shape[1:] != point:
            raise ValueError(f"ad.dask.map: argument {k} has points of shape "
                             f"{shape[1:]}, the recording of {name} takes "
                             f"{point}")
        return a.rechunk({d: -1 for d in range(1, a.ndim)})
    if shape != point:
        raise ValueError(f"ad.dask.map: argument {k} has shape {shape}, the "
                         f"recording of {name} takes {point}")
    return a.rechunk(-1) if isinstance(a, da.Array) else a


def _axes_of(k, a, start):
    """blockwise's names for axes start.. of argument k: its own, so that
    they are never matched with another argument's."""
    return tuple(f"a{k}.{d}" for d in range(start, a.ndim))


# -- on the workers --------------------------------------------------------------

_thread = threading.local()


def _loaded(saved):
    """The recording in saved (a saved file's bytes) for this thread:
    loaded and validated at the first task that needs it, kept for the next
    (KEEP of them, the most recently used)."""
    kept = getattr(_thread, "recordings", None)
    if kept is None:
        kept = _thread.recordings = collections.OrderedDict()
    rec = kept.get(saved)
    if rec is None:
        rec = kept[saved] = loads(saved, "the recording sent to this worker")
        while len(kept) > KEEP:
            kept.popitem(last=False)
    else:
        kept.move_to_end(saved)
    return rec


def _block(saved, index, *args, method, axes, threads, errors, shapes, floats,
           threads_by_host):
    """One block of map: F.map over its points, one array per result
    (floats: the shared arguments recorded as floats that came as 0-d
    blocks of dask.arrays)."""
    args = [float(a) if k in floats else a for k, a in enumerate(args)]
    n = len(index)
    if n == 0:
        return tuple(np.empty((0,) + shape) for shape in shapes)
    if threads is None:
        threads = _share_of_cores(threads_by_host)
    out = batch.map_recording(_loaded(saved), args, method, axes, threads,
                              errors, first=int(index[0]))
    out = out if isinstance(out, tuple) else (out,)
    for got, shape in zip(out, shapes):
        if np.shape(got) != (n,) + shape:      # never a block of another shape
            raise RuntimeError(f"ad.dask.map: {method} gave rows of shape "
                               f"{np.shape(got)[1:]}, {shape} expected")
    return out


def _share_of_cores(threads_by_host):
    worker = distributed.get_worker()
    sharing = threads_by_host.get(get_address_host(worker.address),
                                  worker.state.nthreads)
    return max(1, batch.default_threads() // sharing)


def _pick(results, j):
    return results[j]


def _minimize_from(starts, saved, f, method, minimize_kwargs):
    rec = _loaded(saved)
    return [minimize_recorded(rec, f, x0, method, **minimize_kwargs)
            for x0 in starts]
