"""Checks one .ribbon2 body with the Python client's decoder (written from
docs/PROTOCOL.md section 12, independent of the server's code) and prints a table row:
ratio to the floor of the grade served, members found, false positives over 200,000 IDs never ingested
against the one-sided binomial bound for the fpp asked.

    python3 ribbon2_check.py BODY N FPP     (members are user:0 .. user:N-1)
"""
import math
import sys

from bloomcast_client.ribbon2 import Ribbon2

ABSENT = 200_000
MEMBERS_CHECKED = 300_000
Z = 3.3  # one-sided: a false alarm in 2,000


def main():
    path, n, asked = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    body = open(path, "rb").read()
    f = Ribbon2.from_bytes(body)
    # The floor of the grade served: the next stricter of the server's published set
    # (section 12, "The grade set"), at most the fpp asked.
    floor = n * math.log2(1 / f.fpp) / 8
    ratio = len(body) / floor
    step = max(1, n // MEMBERS_CHECKED)
    checked = range(0, n, step)
    missed = sum(1 for i in checked if not f.contains(f"user:{i}"))
    positives = sum(1 for i in range(ABSENT) if f.contains(f"absent:{i}"))
    bound = ABSENT * asked + Z * math.sqrt(ABSENT * asked * (1 - asked))
    ok = ratio <= 1.05 and missed == 0 and positives <= bound and f.fpp <= asked
    members = f"{len(checked) - missed}/{len(checked)}" + ("" if step == 1 else " (sample)")
    print(f"| {n} | {asked:g} | {f.fpp:.4g} | {len(body)} | {ratio:.4f} | {members} "
          f"| {positives} | {bound:.0f} | {'ok' if ok else 'FAIL'} |")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
