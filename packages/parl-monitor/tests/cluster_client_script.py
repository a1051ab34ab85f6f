"""A client of a real xparl cluster for the monitor's integration test.

Usage: python cluster_client_script.py ADDRESS TAG N_ACTORS RAISE(0|1)
Creates N_ACTORS actors that print a line each; with RAISE=1 the last one raises ZeroDivisionError (caught
here: the actor stays alive and the master records its last error). Prints READY, then waits for stdin to close.
"""

import sys

import parl_remote as xparl


@xparl.remote_class
class Greeter:
    def __init__(self, name):
        self.name = name

    def hello(self):
        print(f"hello from {self.name}", flush=True)
        return self.name

    def divide(self, x):
        return 1 / x


def main() -> None:
    address, tag, n, do_raise = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
    xparl.connect(address)
    actors = [Greeter(f"{tag}-{i}") for i in range(n)]
    for actor in actors:
        actor.hello()
    if do_raise:
        try:
            actors[-1].divide(0)
        except ZeroDivisionError:
            pass
    print("READY", flush=True)
    sys.stdin.read()
    xparl.disconnect()


if __name__ == "__main__":
    main()
