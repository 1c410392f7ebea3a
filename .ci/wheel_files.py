"""Every file of the package folders is in the wheel, under its import name (``derive/NAME.py`` as
``seqgrad/derive/NAME.py``).  The wheel is built from the sdist, so a file the sdist or the package data left out
is missing here; the sdist's own tests then need not rerun the documentation's console examples, which the
README's test run ran on this tree.

Usage: python .ci/wheel_files.py WHEEL"""

import sys
import zipfile
from pathlib import Path

FOLDERS = {"seqgrad": "seqgrad", "derive": "seqgrad/derive", "numeric": "seqgrad/numeric",
           "crosscheck": "seqgrad/crosscheck"}

root = Path(__file__).resolve().parent.parent
expected = {f"{inside}/{path.relative_to(root / folder).as_posix()}"
            for folder, inside in FOLDERS.items() for path in (root / folder).rglob("*")
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"}
with zipfile.ZipFile(sys.argv[1]) as wheel:
    missing = sorted(expected - set(wheel.namelist()))
print(f"wheel files: {len(expected)} files of the package folders, {len(missing)} missing")
if missing:
    print("\n".join(missing), file=sys.stderr)
    sys.exit(1)
