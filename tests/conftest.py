import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_cli(*args: str, cwd=None, timeout: int = 600) -> subprocess.CompletedProcess:
    """Run ``python -m seqgrad ARGS`` in a subprocess and capture its output."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "seqgrad", *args], cwd=cwd or ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def cli():
    return run_cli
