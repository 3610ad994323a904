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

Loading reads no further than the file declares: the prefix gives the
header's length, the header the payload's (its arrays' extents), and the
file must end there, within its size (a regular file) or STREAM_LIMIT (a
pipe or device), so a file that never ends is a ValueError, not a hang.
Then the checksum is verified, which catches accidents, not edits: every
field is validated as well, so that a file either loads into a tape as
consistent as a recorded one or raises ValueError, never a crash.  Each
entry goes through the checks a recording's entries pass (C checks an
array's shape against its op and operands, and its index map or strides,
before its values are allocated); the rebuilt columns must then equal the
file's (an operand, constant or flag the appends would have made
otherwise means an edit: a leaf's variable bit, an operation's inherited
one); a scalar entry reads scalars only; the arguments' leaves are the
first entries, variables of their structure's kinds and shapes; the
output, guards and extern entries name entries of the right kind.  Extern
entries are saved by the name of their rule; only built-in rules (matrix
products) can be saved.
"""
import hashlib
import io
import json
import os
import stat
import struct

import numpy as np

from . import _core
from .array import Array, _append, _mapped
from .extern import record_extern
from .matmul import matmul, matmul_rule
from .pytree import Structure
from .tape import Tape
from .trace import Trace
from .value import Value

MAGIC = b"PYADTAPE"
VERSION = 2          # 2: gathers may be strided (no map); 1 still loads
READABLE = (1, 2)
_PREFIX = struct.Struct("<8sIQ")
_DIGEST = 32
_COLUMNS = (("op", "i4"), ("a", "i4"), ("b", "i4"), ("imm", "f8"), ("flags", "u1"))
STREAM_LIMIT = 1 << 28   # bytes read at most from a pipe or device (no size)
_CHUNK = 1 << 20
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
    """(node, number of leaves under it) of _encode_node's form."""
    if enc is None:
        return None, 1
    if isinstance(enc, list) and len(enc) == 3 and enc[0] == "dict" and \
            isinstance(enc[1], list) and isinstance(enc[2], list) and \
            len(enc[1]) == len(enc[2]) and all(isinstance(k, str) for k in enc[1]):
        children = [_decode_node(n) for n in enc[2]]
        return ((dict, tuple(enc[1]), tuple(n for n, _ in children)),
                sum(k for _, k in children))
    if isinstance(enc, list) and len(enc) == 2 and enc[0] in ("list", "tuple") \
            and isinstance(enc[1], list):
        children = [_decode_node(n) for n in enc[1]]
        return (({"list": list, "tuple": tuple}[enc[0]],
                 tuple(n for n, _ in children)), sum(k for _, k in children))
    raise ValueError(f"not an argument's structure: {enc!r}")


def save(rec, path):
    data = dumps(rec)
    with open(path, "wb") as f:
        f.write(data)


def dumps(rec):
    """The bytes of the saved recording (what save writes, what pickle
    carries)."""
    tr = rec.trace
    tape = tr.tape
    tape.flush()
    c, n = tape._c, tape.nflushed
    payload = _Payload()
    # of the flags, only a variable's bit: the rest are a sweep's scratch
    # or typing for micrograd
    flags = [c.flags[i] & _core.FLAG_VARIABLE for i in range(n)]
    fields = {"op": c.op, "a": c.a, "b": c.b, "imm": c.imm, "flags": flags}
    columns = {name: payload.add([fields[name][i] for i in range(n)], dtype)
               for name, dtype in _COLUMNS}
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
    return body + hashlib.sha256(body).digest()


def load(source):
    """(trace, name) of the recording saved in source (a path or a binary
    file object), validated field by field; ad.load makes it a Recorded."""
    f, limit, path, owned = _open(source)
    try:
        data, header, start = _read(f, limit, path)
    finally:
        if owned:
            f.close()
    body, digest = data[:-_DIGEST], data[-_DIGEST:]
    if hashlib.sha256(body).digest() != digest:
        raise ValueError(f"{path}: checksum mismatch (the file is truncated "
                         "or corrupted)")
    try:
        trace, name = _rebuild(header, memoryview(body)[start:])
    except (MemoryError, KeyboardInterrupt):
        raise
    except KeyError as exc:
        raise ValueError(f"{path}: not a valid recording (no field "
                         f"{exc})") from None
    except Exception as exc:
        raise ValueError(f"{path}: not a valid recording ({exc})") from None
    return trace, name


# -- reading: never further than the file says it goes ---------------------

def _open(source):
    """(binary file, bytes it may hold, its name, whether we opened it).  A
    regular file holds its size; a pipe or device at most STREAM_LIMIT."""
    if isinstance(source, (str, bytes, os.PathLike)):
        f, owned = open(source, "rb"), True
    elif hasattr(source, "read") and not isinstance(source, io.TextIOBase):
        f, owned = source, False
    else:
        raise TypeError("ad.load takes a path (str or os.PathLike) or a "
                        f"binary file object, not {type(source).__name__}")
    limit = STREAM_LIMIT
    try:
        st = os.fstat(f.fileno())
        if stat.S_ISREG(st.st_mode):
            limit = st.st_size - f.tell()
    except (AttributeError, OSError, io.UnsupportedOperation):
        pass                  # no file descriptor (BytesIO): a stream
    name = source if owned else getattr(source, "name", "the file")
    return f, limit, name, owned


def _take(f, count, path):
    """count bytes of f, read in bounded chunks; ValueError if it ends first."""
    parts, left = [], count
    while left:
        chunk = f.read(min(left, _CHUNK))
        if not isinstance(chunk, bytes):
            raise TypeError(f"{path}: ad.load needs a binary file object")
        if not chunk:
            raise ValueError(f"{path}: truncated (not a whole saved recording)")
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def _read(f, limit, path):
    """The file's bytes, its parsed header and where its payload starts.
    Every read is bounded by what the prefix and the header declare (the
    header's length, then the payload it lays out) and by limit, and the
    file must end there, so a file that never ends (/dev/zero, a FIFO) is
    a ValueError, not a hang."""
    if limit < _PREFIX.size + _DIGEST:
        raise ValueError(f"{path}: too short to be a saved recording")
    prefix = _take(f, _PREFIX.size, path)
    magic, version, head_len = _PREFIX.unpack(prefix)
    if magic != MAGIC:
        raise ValueError(f"{path}: not a saved pyautodiff recording")
    if version not in READABLE:
        raise ValueError(f"{path}: format version {version}; this pyautodiff "
                         f"reads versions {', '.join(map(str, READABLE))}")
    if head_len > limit - _PREFIX.size - _DIGEST:
        raise ValueError(f"{path}: a header of {head_len} bytes does not fit "
                         f"in {limit} (truncated or corrupted)")
    head = _take(f, head_len, path)
    try:
        header = json.loads(head.decode())
        if not isinstance(header, dict):
            raise ValueError("the header is not a JSON object")
        size = _PREFIX.size + head_len + _payload_size(header) + _DIGEST
    except (ValueError, TypeError, KeyError, IndexError, RecursionError) as exc:
        raise ValueError(f"{path}: corrupted header ({exc})") from None
    if size > limit:
        raise ValueError(f"{path}: {size} bytes declared, more than the "
                         f"{limit} it can hold (truncated or corrupted)")
    data = prefix + head + _take(f, size - len(prefix) - len(head), path)
    if f.read(1):
        raise ValueError(f"{path}: longer than the {size} bytes its header "
                         "declares (not a saved recording)")
    return data, header, len(prefix) + len(head)


def _regions(header):
    """(offset and count, dtype) of every array the header places in the
    payload: the one list of them, for its size and for reading them."""
    for name, dtype in _COLUMNS:
        yield header["columns"][name], dtype
    for e in header["arrays"]:
        if "values" in e:
            yield e["values"], "f8"
        if "map" in e:
            yield e["map"], "i8"
    for guard in header["guards"]:
        if isinstance(guard[1], list):
            yield guard[1], "f8"


def _payload_size(header):
    """The payload's length: its arrays, each padded to 8 bytes, end there."""
    end = 0
    for ref, dtype in _regions(header):
        offset, count = _ref(ref)
        end = max(end, offset + -(-count * np.dtype(dtype).itemsize // 8) * 8)
    return end


def _ref(ref):
    if not (isinstance(ref, list) and len(ref) == 2):
        raise ValueError(f"{ref!r} is not an array's offset and length")
    return _count(ref[0], "an offset"), _count(ref[1], "a length")


def _int(x, what):
    if type(x) is not int:
        raise ValueError(f"{what}: {x!r} is not an integer")
    return x


def _count(x, what="a count"):
    if _int(x, what) < 0:
        raise ValueError(f"{what}: {x} is negative")
    return x


def _ints(xs, what):
    if not isinstance(xs, list):
        raise ValueError(f"{what}: {xs!r} is not a list")
    return tuple(_int(x, what) for x in xs)


# -- rebuilding: a tape as consistent as a recorded one, or ValueError ------

# An array entry's fields besides "i" and "shape", by op: a leaf's values,
# a gather's index map or offset and strides, a scatter's map; none else.
_ARRAY_FIELDS = {OPS["LEAF"]: ({"values"},), OPS["GATHER"]: ({"map"}, {"strided"}),
                 OPS["SCATTER"]: ({"map"},)}


def _array_entries(arrays, ops, n):
    """Entry -> its array record, each with the fields its op has."""
    out = {}
    for e in _list(arrays, "arrays"):
        i = _int(e["i"], "an array entry") if isinstance(e, dict) else None
        if i is None or not 0 <= i < n or i in out:
            raise ValueError(f"array entry {e!r}: not a distinct entry of the "
                             f"{n}")
        if set(e) - {"i", "shape"} not in _ARRAY_FIELDS.get(int(ops[i]), (set(),)):
            raise ValueError(f"entry {i} (op {ops[i]}): fields "
                             f"{sorted(set(e) - {'i', 'shape'})}")
        out[i] = e
    return out


def _extern_entries(externs, ops, n):
    """Entry -> the name of its rule, for exactly the extern entries."""
    if not isinstance(externs, dict):
        raise ValueError("externs are not a mapping")
    out = {}
    for key, name in externs.items():
        if not key.isdigit() or str(int(key)) != key or int(key) >= n:
            raise ValueError(f"extern entry {key!r} out of range")
        if name not in _BUILTIN_RULES:
            raise ValueError(f"entry {key}: no built-in op {name!r}")
        out[int(key)] = name
    wanted = set(np.flatnonzero(ops == OPS["EXTERN"]).tolist())
    if set(out) != wanted:
        i = min(set(out) ^ wanted)
        raise ValueError(f"entry {i}: " + ("an extern op without a rule" if i in wanted
                                           else "a rule for an op that is not extern"))
    return out


def _rebuild(header, payload):
    def column(ref, dtype):
        offset, count = _ref(ref)
        size = np.dtype(dtype).itemsize * count
        if offset + size > len(payload):
            raise ValueError("an array runs past the end")
        return np.frombuffer(payload[offset:offset + size],
                             dtype=np.dtype(dtype).newbyteorder("<")).astype(dtype)

    n = _count(header["entries"], "entries")
    cols = {k: column(header["columns"][k], t) for k, t in _COLUMNS}
    if any(len(v) != n for v in cols.values()):
        raise ValueError("columns of the wrong length")
    arrays = _array_entries(header["arrays"], cols["op"], n)
    externs = _extern_entries(header["externs"], cols["op"], n)
    tape = Tape()
    nodes = tape.nodes
    variable = _core.FLAG_VARIABLE

    def node_at(j, what):
        if not 0 <= _int(j, what) < len(nodes):
            raise ValueError(f"{what}: entry {j} out of range")
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
                # a Value's operation reads Values; Arrays give Arrays
                if a in arrays or b in arrays:
                    raise ValueError(f"entry {i}: a scalar entry reading "
                                     f"array entry {a if a in arrays else b}")
                tape.record(Value, op, a, b, imm, imm if op == OPS["LEAF"] else 0.0,
                            flags)
                continue
            _rebuild_array(tape, i, op, a, b, imm, flags, arrays[i],
                           externs.get(i), column)
        tape.flush()
    c = tape._c
    _check_columns(c, cols, n)
    _core.check(_core.lib.ad_forward(c, 0, n, 0), c, tape)

    trace = Trace.__new__(Trace)
    trace.name = "record"
    trace.tape = tape
    trace.outer = []
    structures, leaves = header["structures"], header["leaves"]
    if not isinstance(structures, list) or not isinstance(leaves, list) or \
            not structures or len(structures) != len(leaves):
        raise ValueError("arguments: structures and leaves do not match")
    nargs = len(structures)
    argnum = header["argnum"]
    argnums = [argnum] if type(argnum) is int else _ints(argnum, "argnum")
    if any(not -nargs <= k < nargs for k in argnums):
        raise ValueError(f"argnum {argnum} for {nargs} arguments")
    trace.argnum = argnum if type(argnum) is int else tuple(argnum)
    trace.argnums = [k % nargs for k in argnums]
    trace.inputs = list(range(nargs))
    trace.structures, trace.leaves = {}, {}
    first = 0          # the arguments' leaves are the first entries, in order
    for k, (st, idx) in enumerate(zip(structures, leaves)):
        structure = _structure(st, f"argument {k}")
        idx = _ints(idx, f"argument {k}")
        if idx != tuple(range(first, first + len(idx))) or \
                len(idx) != len(structure.kinds):
            raise ValueError(f"argument {k}: leaves {list(idx)}, a recording "
                             f"gives {len(structure.kinds)} from entry {first}")
        trace.structures[k] = structure
        trace.leaves[k] = [_argument_leaf(c, node_at(j, f"argument {k}"), kind, shape)
                           for j, kind, shape in zip(idx, structure.kinds,
                                                     structure.shapes)]
        first += len(idx)
    trace.out = _output(header, node_at)
    tape.guards = [_guard(g, node_at, column) for g in _list(header["guards"], "guards")]
    name = header["name"]
    if not isinstance(name, str):
        raise ValueError(f"name {name!r}")
    return trace, name


def _rebuild_array(tape, i, op, a, b, imm, flags, e, extern, column):
    """Append array entry i as the file has it, through the checks a
    recording's entries pass (C checks its shape before its values are
    allocated)."""
    nodes = tape.nodes
    shape = _ints(e["shape"], f"entry {i}: shape")
    if op == OPS["LEAF"]:
        values = column(e["values"], "f8")
        if values.size != np.prod(shape, dtype=np.float64):
            raise ValueError(f"entry {i}: {values.size} values for shape {shape}")
        _append(tape, object.__new__(Array), op, -1, -1, 0.0,
                values.reshape(shape).copy(), bool(flags))
        return
    if extern is not None:
        rule = _BUILTIN_RULES[extern]()
        operands = [nodes[j] for j in (a, b) if j >= 0]
        value = rule.forward(*[x._d for x in operands])
        if np.shape(value) != shape:
            raise ValueError(f"entry {i}: {extern} gives shape "
                             f"{np.shape(value)}, saved {shape}")
        if extern == "matmul":
            # as a recording records it: a small product computed in C
            matmul(*operands)
        else:
            record_extern(rule, operands, value)
        return
    tape.flush()
    c = tape._c
    cshape = _core.ffi.new("int64_t[]", list(shape) or [0])
    strided = index_map = None
    if "strided" in e:
        offset, *strides = _ints(e["strided"], f"entry {i}: strided")
        if len(strides) != len(shape):
            raise ValueError(f"entry {i}: {len(strides)} strides for "
                             f"{len(shape)} dimensions")
        strided = (offset, tuple(strides))
        form = (_core.ffi.NULL, 0, _core.ffi.new("int64_t[]", strides or [0]), offset)
    elif "map" in e:
        index_map = column(e["map"], "i8")
        form = (_core.ffi.from_buffer("int64_t[]", index_map) if index_map.size
                else _core.ffi.NULL, index_map.size, _core.ffi.NULL, 0)
    else:
        form = (_core.ffi.NULL, 0, _core.ffi.NULL, 0)
    _core.check(_core.lib.ad_array_check(c, op, a, b, len(shape), cshape, *form), c)
    if index_map is not None:
        _mapped(tape, op, a, shape, index_map)
    else:
        _append(tape, object.__new__(Array), op, a, b if strided is None else -1,
                imm, np.empty(shape), strided=strided)


def _check_columns(c, cols, n):
    """The rebuilt tape is the file's: an op, operand, constant or flag the
    appends would have made otherwise (a flag a leaf does not have, or
    one its operands do not give an operation) means the file was edited."""
    ffi = _core.ffi
    rebuilt = {"op": np.frombuffer(ffi.buffer(c.op, 4 * n), np.int32),
               "a": np.frombuffer(ffi.buffer(c.a, 4 * n), np.int32),
               "b": np.frombuffer(ffi.buffer(c.b, 4 * n), np.int32),
               "imm": np.frombuffer(ffi.buffer(c.imm, 8 * n), np.int64),
               "flags": np.frombuffer(ffi.buffer(c.flags, n), np.uint8)
               & _core.FLAG_VARIABLE}
    for name, dtype in _COLUMNS:
        saved = cols[name].view(np.int64) if name == "imm" else cols[name]
        bad = np.flatnonzero(rebuilt[name] != saved)
        if bad.size:
            i = int(bad[0])
            shown = cols[name][i] if name != "imm" else repr(float(cols[name][i]))
            raise ValueError(f"entry {i} ({_core.OP_NAMES[int(rebuilt['op'][i])]}): "
                             f"{name} {shown} is not what a recording gives")


def _list(x, what):
    if not isinstance(x, list):
        raise ValueError(f"{what}: {x!r} is not a list")
    return x


def _structure(st, what):
    node, leaves = _decode_node(st["node"])
    kinds = _list(st["kinds"], what)
    shapes = [_ints(s, what) for s in _list(st["shapes"], what)]
    if len(kinds) != leaves or len(shapes) != leaves or \
            any(k not in ("float", "array") for k in kinds) or \
            any(k == "float" and s for k, s in zip(kinds, shapes)):
        raise ValueError(f"{what}: a structure of {leaves} leaves with kinds "
                         f"{kinds} and shapes {shapes}")
    return Structure(node, list(kinds), shapes)


def _argument_leaf(c, node, kind, shape):
    """An argument's leaf is a variable leaf of its kind and shape."""
    i = node._i
    if c.op[i] != OPS["LEAF"] or not c.flags[i] & _core.FLAG_VARIABLE or \
            isinstance(node, Array) != (kind == "array") or \
            (kind == "array" and node.shape != shape):
        raise ValueError(f"entry {i} is not a variable {kind} leaf of shape "
                         f"{shape}: it cannot be an argument")
    return node


def _output(header, node_at):
    out, const = header["out"], header["out_const"]
    if out is not None:
        if const is not None:
            raise ValueError("both an output entry and a constant output")
        return node_at(out, "the output")
    value = np.asarray(const)
    if value.dtype.kind not in "if":
        raise ValueError(f"constant output {const!r}")
    return float(value) if value.ndim == 0 else value.astype(np.float64)


def _guard(g, node_at, column):
    j, expected, what = _list(g, "a guard")  # (ValueError if not three)
    node = node_at(j, "a guard")
    if isinstance(node, Array):
        expected = column(expected, "f8")
        if expected.size != node.size:
            raise ValueError(f"guard on entry {j}: {expected.size} values for "
                             f"{node.size}")
        expected = expected.reshape(node.shape)
    elif type(expected) is not float:
        raise ValueError(f"guard on entry {j}: expected a number")
    if not isinstance(what, str):
        raise ValueError(f"guard on entry {j}: {what!r}")
    return node, expected, what
