"""The README's Python examples run, in order, and print what they say."""
import contextlib
import io
import os
import re

README = os.path.join(os.path.dirname(__file__), os.pardir, "README.md")


def python_blocks():
    with open(README) as f:
        text = f.read()
    return re.findall(r"```python\n(.*?)```", text, re.S)


def test_readme_examples_run_and_print_what_they_promise():
    blocks = python_blocks()
    assert len(blocks) >= 5
    scope = {}
    for block in blocks:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(block, "README.md", "exec"), scope)
        # a line "print(...)  # expected" or a following "# expected" comment
        promised = re.findall(r"^print\(.*?\)\s*#\s*(.+)$|^# (\S.*)$", block, re.M)
        printed = out.getvalue().splitlines()
        for (inline, below), line in zip(promised, printed):
            expected = (inline or below).strip()
            if re.fullmatch(r"[-\d. ]+", expected):
                assert line.strip() == expected, (block, line, expected)
