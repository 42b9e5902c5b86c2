"""Query time per key of the Python client's ribbon decoder, on the bodies that
`examples/cheapest_bytes --write-bodies DIR` wrote: python3 ribbon_query.py DIR."""

import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "clients" / "python"))
from bloomcast_client import Ribbon, key  # noqa: E402

KEYS = 20_000


def main(directory):
    for path in sorted(pathlib.Path(directory).glob("n*-r*.ribbon"),
                       key=lambda p: int(p.stem.split("-")[0][1:])):
        ribbon = Ribbon.from_bytes(path.read_bytes())
        ids = [f"absent:{i}" for i in range(KEYS)]
        started = time.perf_counter()
        hits = sum(ribbon.contains(i) for i in ids)
        with_hash = (time.perf_counter() - started) / KEYS * 1e9
        keys = [key(i) for i in ids]
        started = time.perf_counter()
        again = sum(ribbon.contains_key(h1, h2) for h1, h2 in keys)
        pre_hashed = (time.perf_counter() - started) / KEYS * 1e9
        assert hits == again
        print(f"| Python | {ribbon.n} | {ribbon.r} | {with_hash:.0f} | {pre_hashed:.0f} |")


if __name__ == "__main__":
    main(sys.argv[1])
