"""Saved recordings: ``F.save(path)`` and ``ad.load(path)``.

    offset   size  content
    0        8     magic b"PYADTAPE"
    8        4     format version (uint32, little-endian)
    12       8     header length L (uint64, little-endian)
    20       L     header: JSON (UTF-8): arguments, leaves, output, guards,
                   and where each column and array sits in the payload
    20+L     P     payload: the tape's columns (op, a, b: int32; imm: float64;
                   flags: uint8), array shapes' leaf values and index maps,
                   little-endian, 8-byte aligned

A gather without an index map (a slice, a transpose) has its offset and
strides in the header ("strided") instead of a map in the payload (format
version 2); version 1 files, which hold maps only, still load.  Op codes
are saved as the numbers of csrc/ad.h's enum; a new op takes the next
number, so older files load unchanged, and an older pyautodiff refuses a
file with an op it lacks (unknown op code) without a new format version.
    end-32   32    SHA-256 of everything before it

The checksum is verified before anything is parsed, so a truncated or
corrupted file raises ValueError.  A file that passes it is rebuilt through
the same checked appends a recording uses (the C core validates every op,
operand and shape), so a well-formed file with a wrong tape is a ValueError
too, never a crash.  Extern entries are saved by the name of their rule;
only built-in rules (matrix products) can be saved.
"""
import hashlib
import json
import struct

import numpy as np

from . import _core
from .array import Array, _append, _mapped, matmul_rule
from .extern import record_extern
from .pytree import Structure
from .tape import Tape
from .trace import Trace
from .value import Value

MAGIC = b"PYADTAPE"
VERSION = 2          # 2: gathers may be strided (no map); 1 still loads
READABLE = (1, 2)
_PREFIX = struct.Struct("<8sIQ")
_DIGEST = 32
OPS = _core.OPS
_BUILTIN_RULES = {"matmul": matmul_rule}


class _Payload:
    """Arrays appended at 8-byte-aligned offsets."""

    def __init__(self):
        self.parts, self.size = [], 0

    def add(self, arr, dtype):
        data = np.ascontiguousarray(arr, dtype=np.dtype(dtype).newbyteorder("<"))
        offset = self.size
        raw = data.tobytes()
        pad = -len(raw) % 8
        self.parts.append(raw + bytes(pad))
        self.size += len(raw) + pad
        return [offset, int(data.size)]

    def bytes(self):
        return b"".join(self.parts)


def _encode_node(node):
    if node is None:
        return None
    if node[0] is dict:
        if not all(isinstance(k, str) for k in node[1]):
            raise ValueError("only dicts with string keys can be saved")
        return ["dict", list(node[1]), [_encode_node(n) for n in node[2]]]
    if node[0] in (list, tuple):
        return [node[0].__name__, [_encode_node(n) for n in node[1]]]
    raise ValueError(f"arguments of type {node[0].__name__} cannot be saved")


def _decode_node(enc):
    if enc is None:
        return None
    if enc[0] == "dict":
        return (dict, tuple(enc[1]), tuple(_decode_node(n) for n in enc[2]))
    return ({"list": list, "tuple": tuple}[enc[0]],
            tuple(_decode_node(n) for n in enc[1]))


def save(rec, path):
    tr = rec.trace
    tape = tr.tape
    tape.flush()
    c, n = tape._c, tape.nflushed
    payload = _Payload()
    columns = {
        "op": payload.add([c.op[i] for i in range(n)], "i4"),
        "a": payload.add([c.a[i] for i in range(n)], "i4"),
        "b": payload.add([c.b[i] for i in range(n)], "i4"),
        "imm": payload.add([c.imm[i] for i in range(n)], "f8"),
        "flags": payload.add([c.flags[i] & (_core.FLAG_VARIABLE)
                              for i in range(n)], "u1"),
    }
    arrays, externs = [], {}
    for i in range(n):
        if c.op[i] == OPS["EXTERN"]:
            rule = tape.externs[i]
            if _BUILTIN_RULES.get(rule.name, lambda: None)() is not rule:
                raise ValueError(f"cannot save a recording with the op "
                                 f"{rule.name!r}: its rules are Python code")
            externs[str(i)] = rule.name
        if c.aux[i] < 0:
            continue
        d = tape.nodes[i]._d
        entry = {"i": i, "shape": list(d.shape)}
        if c.op[i] == OPS["LEAF"]:
            entry["values"] = payload.add(d.reshape(-1), "f8")
        if c.op[i] in (OPS["GATHER"], OPS["SCATTER"]):
            bk = c.blk[c.aux[i]]
            if bk.map == _core.ffi.NULL:      # strided: offset and strides
                entry["strided"] = [bk.offset] + [bk.stride[k] for k in range(d.ndim)]
            else:
                entry["map"] = payload.add([bk.map[k] for k in range(bk.nmap)], "i8")
        arrays.append(entry)
    leaves, structure = tr.outputs()
    if structure.node is not None:
        raise ValueError("only a recording with one result (a float or an "
                         "array) can be saved")
    out = tr.output_entry()
    header = {
        "name": rec.name,
        "argnum": tr.argnum if isinstance(tr.argnum, int) else list(tr.argnum),
        "structures": [{"node": _encode_node(st.node), "kinds": st.kinds,
                        "shapes": [list(s) for s in st.shapes]}
                       for st in (tr.structures[k] for k in range(rec.nargs))],
        "leaves": [[node._i for node in tr.leaves[k]] for k in range(rec.nargs)],
        "out": out,
        "out_const": None if out is not None else
        np.asarray(tr.output_value()).tolist(),
        "guards": [[node._i, float(expected), what] if isinstance(node, Value)
                   else [node._i, payload.add(np.reshape(expected, -1), "f8"), what]
                   for node, expected, what in tape.guards],
        "entries": n, "columns": columns, "arrays": arrays, "externs": externs,
    }
    head = json.dumps(header).encode()
    body = _PREFIX.pack(MAGIC, VERSION, len(head)) + head + payload.bytes()
    with open(path, "wb") as f:
        f.write(body + hashlib.sha256(body).digest())


def load(path):
    from .record import Recorded
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < _PREFIX.size + _DIGEST:
        raise ValueError(f"{path}: too short to be a saved recording")
    body, digest = data[:-_DIGEST], data[-_DIGEST:]
    magic, version, head_len = _PREFIX.unpack_from(body)
    if magic != MAGIC:
        raise ValueError(f"{path}: not a saved pyautodiff recording")
    if version not in READABLE:
        raise ValueError(f"{path}: format version {version}; this pyautodiff "
                         f"reads versions {', '.join(map(str, READABLE))}")
    if hashlib.sha256(body).digest() != digest:
        raise ValueError(f"{path}: checksum mismatch (the file is truncated "
                         "or corrupted)")
    try:
        trace, name = _rebuild(body, head_len)
    except (MemoryError, KeyboardInterrupt):
        raise
    except Exception as exc:
        raise ValueError(f"{path}: not a valid recording ({exc})") from None
    rec = Recorded(None, (), _trace=trace)
    rec.name = name
    return rec


def _rebuild(body, head_len):
    start = _PREFIX.size
    if head_len > len(body) - start:
        raise ValueError("header runs past the end")
    header = json.loads(body[start:start + head_len].decode())
    payload = memoryview(body)[start + head_len:]

    def column(ref, dtype):
        offset, count = int(ref[0]), int(ref[1])
        size = np.dtype(dtype).itemsize * count
        if offset < 0 or count < 0 or offset + size > len(payload):
            raise ValueError("an array runs past the end")
        return np.frombuffer(payload[offset:offset + size],
                             dtype=np.dtype(dtype).newbyteorder("<")).astype(dtype)

    n = int(header["entries"])
    cols = {k: column(header["columns"][k], t) for k, t in
            (("op", "i4"), ("a", "i4"), ("b", "i4"), ("imm", "f8"), ("flags", "u1"))}
    if any(len(v) != n for v in cols.values()):
        raise ValueError("columns of the wrong length")
    arrays = {int(e["i"]): e for e in header["arrays"]}
    externs = {int(i): name for i, name in header["externs"].items()}
    tape = Tape()
    nodes = tape.nodes
    variable = _core.FLAG_VARIABLE

    def node_at(j):
        j = int(j)
        if not 0 <= j < len(nodes):
            raise ValueError(f"entry {j} out of range")
        return nodes[j]

    with tape.recording():
        for i in range(n):
            op, a, b = int(cols["op"][i]), int(cols["a"][i]), int(cols["b"][i])
            imm, flags = float(cols["imm"][i]), int(cols["flags"][i]) & variable
            if not (-1 <= a < i and -1 <= b < i):
                raise ValueError(f"entry {i}: operands {a}, {b}")
            if i not in arrays:
                if op == OPS["EXTERN"]:
                    raise ValueError(f"entry {i}: a scalar extern entry")
                tape.record(Value, op, a, b, imm, imm if op == OPS["LEAF"] else 0.0,
                            flags)
                continue
            e = arrays[i]
            shape = tuple(int(s) for s in e["shape"])
            if op == OPS["LEAF"]:
                values = column(e["values"], "f8")
                _append(tape, object.__new__(Array), op, -1, -1, 0.0,
                        values.reshape(shape).copy(), bool(flags))
            elif op == OPS["GATHER"] and "strided" in e:
                offset, *strides = (int(s) for s in e["strided"])
                if len(strides) != len(shape):
                    raise ValueError(f"entry {i}: {len(strides)} strides for "
                                     f"{len(shape)} dimensions")
                _append(tape, object.__new__(Array), op, a, -1, 0.0,
                        np.empty(shape), strided=(offset, tuple(strides)))
            elif op in (OPS["GATHER"], OPS["SCATTER"]):
                _mapped(tape, op, a, shape, column(e["map"], "i8"))
            elif op == OPS["EXTERN"]:
                rule = _BUILTIN_RULES[externs[i]]()
                operands = [nodes[j] for j in (a, b) if j >= 0]
                value = rule.forward(*[x._d for x in operands])
                if np.shape(value) != shape:
                    raise ValueError(f"entry {i}: {externs[i]} gives shape "
                                     f"{np.shape(value)}, saved {shape}")
                record_extern(rule, operands, value)
            else:
                _append(tape, object.__new__(Array), op, a, b, imm, np.empty(shape))
        tape.flush()
    c = tape._c
    _core.check(_core.lib.ad_forward(c, 0, n, 0), c, tape)

    trace = Trace.__new__(Trace)
    trace.name = "record"
    argnum = header["argnum"]
    trace.argnum = argnum if isinstance(argnum, int) else tuple(argnum)
    nargs = len(header["structures"])
    trace.argnums = [int(k) % max(nargs, 1) for k in
                     ([argnum] if isinstance(argnum, int) else argnum)]
    trace.inputs = list(range(nargs))
    trace.tape = tape
    trace.outer = []
    trace.structures, trace.leaves = {}, {}
    for k, (st, idx) in enumerate(zip(header["structures"], header["leaves"])):
        structure = Structure(_decode_node(st["node"]), list(st["kinds"]),
                              [tuple(int(d) for d in s) for s in st["shapes"]])
        leaves = []
        for j, kind, shape in zip(idx, structure.kinds, structure.shapes):
            node = node_at(j)
            is_array = isinstance(node, Array)
            if c.op[node._i] != OPS["LEAF"] or is_array != (kind == "array") \
                    or (is_array and node.shape != shape):
                raise ValueError(f"argument {k}: entry {j} is not its leaf")
            leaves.append(node)
        if len(leaves) != len(structure.kinds):
            raise ValueError(f"argument {k}: wrong number of leaves")
        trace.structures[k], trace.leaves[k] = structure, leaves
    out = header["out"]
    trace.out = node_at(out) if out is not None else header["out_const"]
    tape.guards = []
    for j, expected, what in header["guards"]:
        node = node_at(j)
        if isinstance(node, Array):
            expected = column(expected, "f8").reshape(node.shape)
        elif not isinstance(expected, float):
            raise ValueError(f"guard on entry {j}: expected a number")
        tape.guards.append((node, expected, str(what)))
    return trace, str(header["name"])
