"""Tabulate the exactness verdicts a test run wrote to ``PMP_EXACT_REPORT``.

    PMP_EXACT_REPORT=exact.jsonl python -m pytest
    python tests/exact_table.py exact.jsonl

One Markdown row per verdict: case, draws, ESS, TV, the TV bound (the null's
1 - 1e-4 quantile at that ESS), the worst |z| and its summary, pass/fail.
"""

import json
import sys


def main(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    print("| case | draws | ESS | TV | TV bound | worst abs z (summary) | verdict |")
    print("| --- | ---: | ---: | ---: | ---: | --- | --- |")
    for r in rows:
        case = r["label"].replace("tests/", "").replace("::", " ")
        verdict = "pass" if r["passed"] else "FAIL: " + "; ".join(r["failures"])
        print(f"| {case} | {r['draws']} | {r['ess']:.0f} | {r['tv']:.4f} | {r['tv_bound']:.4f} "
              f"| {r['worst_z']:.2f} ({r['worst_summary']}) | {verdict} |")


if __name__ == "__main__":
    main(sys.argv[1])
