"""PARL's GIL demo: N remote actors each summing range(n) in parallel, versus the same work serially.

Each ``@parl_remote.remote_class`` instance runs in its own process, so the sums run on separate cores
instead of queueing behind one GIL. Without an address, ``connect()`` starts a local cluster for this
script (one CPU per core) and stops it at exit; pass ``--address host:port`` to use an ``xparl start``
cluster.

    python examples/remote/gil_demo.py --actors 2 --n 30000000
"""

from __future__ import annotations

import argparse
import time

import parl_remote


@parl_remote.remote_class(wait=False)
class Summer:
    """Sums ``range(n)`` in its own process."""

    def total(self, n: int) -> int:
        return sum(range(n))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--actors", type=int, default=2, help="number of actors (one per core is best)")
    parser.add_argument("--n", type=int, default=3 * 10**7, help="each actor sums range(n)")
    parser.add_argument("--address", default=None, help="host:port of an xparl cluster (default: a local one)")
    args = parser.parse_args()

    start = time.perf_counter()
    serial = [sum(range(args.n)) for _ in range(args.actors)]
    serial_s = time.perf_counter() - start

    parl_remote.connect(args.address, cpu_num=None if args.address else args.actors)
    actors = [Summer() for _ in range(args.actors)]
    for actor in actors:  # warm up: the first call ships the class
        actor.total(10).get()
    start = time.perf_counter()
    futures = [actor.total(args.n) for actor in actors]
    parallel = [future.get() for future in futures]
    parallel_s = time.perf_counter() - start
    assert parallel == serial

    print(f"serial:   {serial_s:.2f} s for {args.actors} x sum(range({args.n}))")
    print(f"{args.actors} actors: {parallel_s:.2f} s  ->  {serial_s / parallel_s:.2f}x")
    parl_remote.disconnect()


if __name__ == "__main__":
    main()
