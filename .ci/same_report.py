"""Compare two ``seqgrad check`` reports by the names and statuses of their checks (CI: the installed
wheel's report against the editable install's).  Exit 0 when they agree; else print each difference."""

import json
import sys


def outcomes(path: str) -> dict[str, str]:
    with open(path, encoding="utf-8") as f:
        return {c["name"]: c["status"] for c in json.load(f)["checks"]}


def main(editable: str, wheel: str) -> int:
    a, b = outcomes(editable), outcomes(wheel)
    differences = [f"{name}: editable {a.get(name, 'absent')}, wheel {b.get(name, 'absent')}"
                   for name in sorted(a.keys() | b.keys()) if a.get(name) != b.get(name)]
    for line in differences:
        print(line, file=sys.stderr)
    print(f"reports compared: {len(a)} checks editable, {len(b)} wheel, {len(differences)} differences")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
