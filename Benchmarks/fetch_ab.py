#!/usr/bin/env python3
"""Two `webimage` binaries against each other on the per-image cost benchmark, in alternating rounds.

On a shared machine whose speed drifts from minute to minute, two binaries timed in separate
blocks (`Benchmarks/fetch_cost.py` once each) differ by more than most changes make; timed in
turn, A B B A A B…, each pair of runs meets the same minute. Writes COUNT distinct JPEGs
(`webimage-benchmarks --write-photos`), serves them from nginx on 127.0.0.1 as fetch_cost.py does,
and runs `webimage fetch` of the list with each binary in turn: bytes only (`raw`), decoded, or
both. Prints each binary's median wall and CPU time (user + system), the median of the paired
CPU differences (B − A), which is the figure to quote, and each binary's median context switches.

  python3 Benchmarks/fetch_ab.py --benchmarks Benchmarks/.build/release/webimage-benchmarks \\
      --a OLD/webimage --b NEW/webimage [--rounds 21] [--mode raw|decoded|both]
"""

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fetch_cost  # noqa: E402  (its served photos and process timing)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--a", required=True, help="the webimage binary before")
    parser.add_argument("--b", required=True, help="the webimage binary after")
    parser.add_argument("--benchmarks", required=True, help="the webimage-benchmarks binary (writes the photos)")
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--size", default="690x460")
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--concurrency", type=int, default=6)
    parser.add_argument("--mode", choices=("raw", "decoded", "both"), default="both")
    args = parser.parse_args()
    for binary in (args.a, args.b):
        if not os.access(binary, os.X_OK):
            sys.exit(f"fetch_ab: {binary}: not an executable file")

    with fetch_cost.served_photos(args.benchmarks, args.count, args.size, "webimage-fetch-ab-") as (scratch, _, urls):
        url_list = os.path.join(scratch, "urls.txt")
        with open(url_list, "w") as f:
            f.write("\n".join(urls) + "\n")
        c = str(args.concurrency)

        def fetch(binary, mode):
            argv = [binary, "fetch", "-q", "--no-disk-cache", "--memory-cache", "0", "--concurrency", c,
                    "--max-downloads", c, "--input", url_list]
            return argv + (["--options", "avoid-decode-image"] if mode == "raw" else [])

        modes = ("raw", "decoded") if args.mode == "both" else (args.mode,)
        sides = {"A": args.a, "B": args.b}
        wall = {(side, mode): [] for side in sides for mode in modes}
        cpu = {(side, mode): [] for side in sides for mode in modes}
        switches = {(side, mode): [] for side in sides for mode in modes}
        fetch_cost.run(fetch(args.a, modes[0]))  # warm the page cache and nginx
        for round_index in range(args.rounds):
            order = ("A", "B") if round_index % 2 == 0 else ("B", "A")
            for mode in modes:
                for side in order:
                    seconds, _, cpu_seconds, switched = fetch_cost.measured(fetch(sides[side], mode))
                    wall[(side, mode)].append(seconds)
                    cpu[(side, mode)].append(cpu_seconds)
                    switches[(side, mode)].append(switched)

        print(f"{args.count} JPEGs from nginx on loopback, {c} at a time, {args.rounds} alternating rounds\n")
        print("| mode | A wall s | B wall s | A CPU s | B CPU s | CPU B − A (median of pairs) "
              "| A switches | B switches |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for mode in modes:
            a_cpu, b_cpu = cpu[("A", mode)], cpu[("B", mode)]
            difference = statistics.median(b - a for a, b in zip(a_cpu, b_cpu))
            print(f"| {mode} | {statistics.median(wall[('A', mode)]):.3f} | {statistics.median(wall[('B', mode)]):.3f} "
                  f"| {statistics.median(a_cpu):.3f} | {statistics.median(b_cpu):.3f} "
                  f"| {difference:+.4f} ({100 * difference / statistics.median(a_cpu):+.1f} %) "
                  f"| {statistics.median(switches[('A', mode)]):.0f} | {statistics.median(switches[('B', mode)]):.0f} |")


if __name__ == "__main__":
    main()
