"""``ad.draw_dot(root)``: the graph behind a Value as a graphviz Digraph,
drawn the way micrograd's notebooks draw it (a record per Value with its
label, data and grad, an op node per operation).  graphviz is optional."""


def trace(root):
    """All Values and edges (child, parent) reachable from root via _prev."""
    nodes, edges, stack = set(), set(), [root]
    while stack:
        v = stack.pop()
        if v in nodes:
            continue
        nodes.add(v)
        for child in v._prev:
            edges.add((child, v))
            stack.append(child)
    return nodes, edges


def draw_dot(root, format="svg", rankdir="LR"):
    try:
        from graphviz import Digraph
    except ImportError as exc:
        raise ImportError("ad.draw_dot needs the graphviz package: "
                          "pip install 'pyautodiff[graphviz]'") from exc
    nodes, edges = trace(root)
    dot = Digraph(format=format, graph_attr={"rankdir": rankdir})
    for v in nodes:
        uid = str(id(v))
        label = f"{{ {v.label} | data {v.data:.4f} | grad {v.grad:.4f} }}"
        dot.node(name=uid, label=label, shape="record")
        if v._op:
            dot.node(name=uid + v._op, label=v._op)
            dot.edge(uid + v._op, uid)
    for child, parent in edges:
        dot.edge(str(id(child)), str(id(parent)) + parent._op)
    return dot
