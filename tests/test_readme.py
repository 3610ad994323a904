"""The Python examples of the README and of every page in docs/ run, page by
page in order, and print what they say; the README's links lead somewhere."""
import ast
import contextlib
import glob
import io
import os
import re
import tokenize

import pytest

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), os.pardir))
PAGES = ["README.md"] + sorted(
    os.path.relpath(path, ROOT) for path in glob.glob(os.path.join(ROOT, "docs", "*.md")))

# An expected output is checked when it is one a reader could compare by eye
# with what is printed: numbers, shapes, True/False. Words ("an ndarray of
# x's shape") describe the output instead.
LITERAL = re.compile(r"[-+\d.e ,()\[\]]+|(?:(?:True|False)\s*)+")


def read(page):
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        return f.read()


def python_blocks(text):
    """(first line number, source) of every ```python block."""
    return [(text.count("\n", 0, m.start(1)) + 1, m.group(1))
            for m in re.finditer(r"^```python\n(.*?)^```", text, re.S | re.M)]


def comments(source):
    """{line: text of the comment on it}."""
    found = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            found[tok.start[0]] = tok.string[1:].strip()
    return found


def promise(stmt, lines, notes):
    """What a top-level print() says it prints: the comment on its last
    line, or a comment line of its own right below it."""
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
            and getattr(stmt.value.func, "id", None) == "print"):
        return None
    end = stmt.end_lineno
    if end in notes:
        return notes[end]
    if end < len(lines) and lines[end].startswith("# "):
        return notes[end + 1]
    return None


def run_page(page):
    """Run every block of a page in one namespace, statement by statement,
    comparing each print() with its promise; the number of checks made."""
    scope, checked = {"__name__": "__main__"}, 0
    for first, block in python_blocks(read(page)):
        tree = ast.parse(block)
        lines, notes = block.splitlines(), comments(block)
        for stmt in tree.body:
            expected = promise(stmt, lines, notes)
            where = f"{page}:{first + stmt.lineno - 1}"
            module = ast.Module([stmt], [])
            ast.increment_lineno(module, first - 1)   # tracebacks name the page's lines
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(module, page, "exec"), scope)
            if expected is not None and LITERAL.fullmatch(expected):
                assert out.getvalue().strip() == expected, where
                checked += 1
    return checked


WITH_EXAMPLES = [page for page in PAGES if python_blocks(read(page))]


def test_every_page_is_found():
    assert "docs/index.md" in PAGES and len(PAGES) > 10
    assert {"README.md", "docs/tutorial.md"} <= set(WITH_EXAMPLES)


@pytest.mark.parametrize("page", WITH_EXAMPLES)
def test_examples_run_and_print_what_they_promise(page):
    run_page(page)


def test_the_readme_shows_an_example_per_feature_and_checks_them():
    assert len(python_blocks(read("README.md"))) >= 8
    assert run_page("README.md") >= 8


def test_the_readme_links_lead_to_files_that_exist():
    text = read("README.md")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if not re.match(r"[a-z]+://", t)]
    assert any(t.startswith("docs/") for t in local)
    for target in local:
        assert os.path.exists(os.path.join(ROOT, target)), target


def test_the_quick_start_test_command_is_the_one_ci_runs():
    command = "python -m pip install -e '.[test]' && python -m pytest"
    assert command in read("README.md")
    assert command in read(os.path.join(".ci", "run"))


def test_the_tutorial_shows_the_classic_scalar_examples():
    # the examples a from-scratch scalar engine is taught with: x*y + y**2
    # at (2, 3), the tanh neuron, linear regression on y = x - 1, x + x
    text = read(os.path.join("docs", "tutorial.md"))
    for shown in ("x * y + y ** 2", "6.8813735870195432", "x - 1", "(x + x)"):
        assert shown in text, shown
    assert run_page(os.path.join("docs", "tutorial.md")) >= 6
