"""What the scripts' tests share: running a script of this folder as a user
would (from the repository root, with this Python), and reading JSON."""
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


def load_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)
