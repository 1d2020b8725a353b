"""What the scripts' tests share: running a script of this folder as a user
would (from the repository root, with this Python) or its main() in this
process, writing an input file, and reading JSON."""
import contextlib
import gzip
import io
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run_script(name, *args):
    """(returncode, stdout, stderr) of scripts/NAME with ARGS, run from the root."""
    p = subprocess.run([sys.executable, os.path.join(HERE, name), *args], capture_output=True, text=True, cwd=ROOT)
    return p.returncode, p.stdout, p.stderr


def call_main(main, *args):
    """(returncode, stdout, stderr) of a script's main(ARGS), called in this process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(args))
    return rc, out.getvalue(), err.getvalue()


def write_lines(folder, name, lines):
    """FOLDER/NAME holding LINES, one a line, gzip-compressed where NAME ends in .gz; its path."""
    path = os.path.join(folder, name)
    with (gzip.open(path, "wt") if name.endswith(".gz") else open(path, "w")) as f:
        f.write("\n".join(lines) + "\n")
    return path


def load_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)
