"""NumPy's broadcasting, the two ways round: the shape two operands
broadcast to, and a gradient summed back down to an operand's shape."""


def broadcast_shape(op, a, b):
    """The shape NumPy broadcasts shapes a and b to (NumPy's own function
    costs several microseconds, an operation on a small array's worth)."""
    n = max(len(a), len(b))
    out = []
    for x, y in zip((1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b):
        if x != y and x != 1 and y != 1:
            raise ValueError(f"{op}: operands could not be broadcast together "
                             f"with shapes {a} and {b}")
        out.append(y if x == 1 else x)
    return tuple(out)


def unbroadcast(x, shape):
    """Sum x down to shape (undo NumPy broadcasting)."""
    while x.ndim > len(shape):
        x = x.sum(axis=0)
    for d, n in enumerate(shape):
        if n == 1 and x.shape[d] != 1:
            x = x.sum(axis=d, keepdims=True)
    return x
