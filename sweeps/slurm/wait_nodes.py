"""Wait until a Ray cluster has N alive nodes: the Slurm job's step between `ray start` and `sweep run`.

    python -m sweeps.slurm.wait_nodes HEAD_IP:PORT 4 --timeout 600   # exit 0 once 4 nodes are alive, else 4
    python -m sweeps.slurm.wait_nodes --smoke                        # its own one-node cluster: 1 of 1 joined

The token comes from RAY_AUTH_TOKEN, as for the driver. Until the head answers, connecting is retried; the
count is then read every second. Says the count once when every node is in, or on timeout how many joined.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time


def alive_nodes() -> int:
    import ray

    return sum(1 for node in ray.nodes() if node.get("Alive"))


def wait_for_nodes(address: str | None, wanted: int, timeout_s: float, local_temp: str | None = None) -> tuple[int, float]:
    """(alive nodes, seconds waited): connects to ``address`` and waits until ``wanted`` nodes are alive or
    ``timeout_s`` has passed (``address`` None: a local one-node Ray in ``local_temp``)."""
    import ray

    started = time.monotonic()
    while True:
        try:
            ray.init(address=address, logging_level="ERROR", log_to_driver=False, include_dashboard=False,
                     **({} if address else {"num_cpus": 1, "_temp_dir": local_temp}))
            break
        except ConnectionError:
            if time.monotonic() - started > timeout_s:
                return 0, time.monotonic() - started
            time.sleep(2)
    try:
        while (count := alive_nodes()) < wanted and time.monotonic() - started < timeout_s:
            time.sleep(1)
        return count, time.monotonic() - started
    finally:
        ray.shutdown()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sweeps.slurm.wait_nodes", description=__doc__.splitlines()[0])
    parser.add_argument("address", nargs="?", help="The Ray head's HEAD_IP:PORT.")
    parser.add_argument("nodes", nargs="?", type=int, help="How many nodes the cluster must have.")
    parser.add_argument("--timeout", type=float, default=600.0, help="Seconds to wait (default 600).")
    parser.add_argument("--smoke", action="store_true", help="Wait for a local one-node Ray it starts itself.")
    args = parser.parse_args(argv)
    if args.smoke:  # Ray's files in a temporary directory of $TMPDIR, removed after
        with tempfile.TemporaryDirectory(prefix="ray-") as temp:
            count, waited = wait_for_nodes(None, 1, args.timeout, local_temp=temp)
        print(f"smoke ok: {count} of 1 node(s) of a local Ray joined in {waited:.0f} s")
        return 0 if count == 1 else 4
    if not args.address or not args.nodes or args.nodes < 1:
        parser.error("give the head's HEAD_IP:PORT and the number of nodes (at least 1)")
    count, waited = wait_for_nodes(args.address, args.nodes, args.timeout)
    if count < args.nodes:
        print(f"error: {count} of {args.nodes} Ray node(s) joined {args.address} in {waited:.0f} s: see the job's "
              "ray-JOBID.log beside its output", file=sys.stderr)
        return 4
    print(f"Ray cluster: {count} of {args.nodes} node(s) joined in {waited:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
