"""Instructions a URL of `webimage fetch`, counted by callgrind: the marginal cost of 600 more URLs.

    python3 Benchmarks/fetch_callgrind.py --benchmarks Benchmarks/.build/release/webimage-benchmarks \
        --webimage OLD/webimage [--webimage NEW/webimage] [--mode raw|decoded] [--top 40] [--callers REGEX]

Serves `fetch_cost`'s photos from nginx on loopback and runs each binary under `valgrind
--tool=callgrind` over 300 and then 900 of them (`--no-disk-cache --memory-cache 0 --concurrency 6
--max-downloads 6`; `--mode raw` adds `--options avoid-decode-image`). What a URL costs is
(count at 900 − count at 300) / 600: process start, thread pools and first-use metadata cancel
out. Prints the total a URL for each binary, its most costly functions by their own cost, and
with two binaries the functions whose cost changed most. `--callers REGEX` splits the calls into
the matching functions by caller (count a URL and cost a URL).

Counts are deterministic to about 0.5 % between runs of one binary: compare binaries here, then
time them with `fetch_ab.py`. Two things callgrind does differently from the CPU: `rep movsb`
copies count one instruction a byte (a body copy of 56 KB shows as about 56 K in `memcpy`), and
the kernel is not counted (context switches and system calls cost nothing here).

Valgrind 3.19 cannot read Swift 6.3's DWARF 5: each binary is profiled from a copy with its debug
sections stripped (`objcopy --strip-debug`; symbol names stay). Link the binary statically
(`scripts/build-webimage.sh` does): under valgrind the dynamically linked Swift runtime crashed.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fetch_cost import served_photos  # noqa: E402

COST_LINE = re.compile(r"^\s*([\d,]+) \([^)]*\)\s+(\S.*?)(?: \[[^\]]*\])?$")
CALLER_LINE = re.compile(r"^\s*([\d,]+) \([^)]*\)\s+<\s+(.*?) \(([\d,]+)x\)")
FOCUS_LINE = re.compile(r"^\s*[\d,]+ \([^)]*\)\s+\*\s+(.*)$")


def number(text):
    return int(text.replace(",", ""))


def self_costs(profile):
    """Total and {function: own cost} of one callgrind profile."""
    text = subprocess.run(["callgrind_annotate", "--threshold=100", profile], capture_output=True, text=True,
                          check=True).stdout
    total, costs = 0, {}
    for line in text.splitlines():
        match = COST_LINE.match(line)
        if not match:
            continue
        if "PROGRAM TOTALS" in line:
            total = number(match.group(1))
        else:
            costs[match.group(2)] = costs.get(match.group(2), 0) + number(match.group(1))
    return total, costs


def caller_split(profile, pattern):
    """{caller: (cost, calls)} of the calls into functions matching `pattern`."""
    text = subprocess.run(["callgrind_annotate", "--tree=caller", "--threshold=100", profile], capture_output=True,
                          text=True, check=True).stdout
    split, block = {}, []
    for line in text.splitlines():
        if not line.strip():
            block = []
            continue
        block.append(line)
        focus = FOCUS_LINE.match(line)
        if not focus or not re.search(pattern, focus.group(1)):
            continue
        for caller_line in block[:-1]:
            caller = CALLER_LINE.match(caller_line)
            if caller:
                cost, calls = split.get(caller.group(2), (0, 0))
                split[caller.group(2)] = (cost + number(caller.group(1)), calls + number(caller.group(3)))
    return split


def marginal(small, large, count):
    return {key: (large.get(key, 0) - small.get(key, 0)) / count for key in set(small) | set(large)}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--webimage", action="append", required=True, help="a webimage binary (once or twice)")
    parser.add_argument("--benchmarks", required=True, help="the webimage-benchmarks binary (writes the photos)")
    parser.add_argument("--mode", choices=("raw", "decoded"), default="raw")
    parser.add_argument("--size", default="690x460")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--callers", help="a regular expression naming the functions whose callers to list")
    parser.add_argument("--keep", metavar="DIR", help="keep the callgrind profiles in DIR (for callgrind_annotate "
                        "--inclusive=yes)")
    args = parser.parse_args()
    if len(args.webimage) > 2:
        sys.exit("fetch_callgrind: at most two --webimage binaries")
    for tool in ("valgrind", "callgrind_annotate", "objcopy"):
        if shutil.which(tool) is None:
            sys.exit(f"fetch_callgrind: {tool} is not installed (apt-get install valgrind binutils)")

    work = args.keep or tempfile.mkdtemp(prefix="webimage-fetch-callgrind-")
    os.makedirs(work, exist_ok=True)
    try:
        profiles = []
        with served_photos(args.benchmarks, 900, args.size, "webimage-fetch-callgrind-") as (scratch, _, urls):
            lists = {}
            for count in (300, 900):
                lists[count] = os.path.join(scratch, f"urls-{count}.txt")
                with open(lists[count], "w") as f:
                    f.write("\n".join(urls[:count]) + "\n")
            for index, binary in enumerate(args.webimage):
                stripped = os.path.join(work, f"webimage-{index}")
                subprocess.run(["objcopy", "--strip-debug", binary, stripped], check=True)
                runs = {}
                for count, url_list in lists.items():
                    argv = [stripped, "fetch", "-q", "--no-disk-cache", "--memory-cache", "0", "--concurrency", "6",
                            "--max-downloads", "6", "--input", url_list]
                    if args.mode == "raw":
                        argv += ["--options", "avoid-decode-image"]
                    runs[count] = os.path.join(work, f"callgrind-{index}-{count}.out")
                    result = subprocess.run(["valgrind", "--tool=callgrind", "--fair-sched=yes",
                                             f"--callgrind-out-file={runs[count]}"] + argv,
                                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                    if result.returncode != 0:
                        sys.exit(f"fetch_callgrind: {binary} under valgrind exited {result.returncode}: "
                                 f"{result.stderr[-2000:]}")
                profiles.append(runs)

        per_url = []
        for binary, runs in zip(args.webimage, profiles):
            (small_total, small), (large_total, large) = self_costs(runs[300]), self_costs(runs[900])
            costs = marginal(small, large, 600)
            per_url.append(costs)
            print(f"\n{binary} ({args.mode}): {(large_total - small_total) / 600:,.0f} instructions a URL\n")
            for function, cost in sorted(costs.items(), key=lambda item: -item[1])[:args.top]:
                print(f"{cost:10,.0f}  {function[:150]}")
            if args.callers:
                split_small, split_large = caller_split(runs[300], args.callers), caller_split(runs[900], args.callers)
                print(f"\ncallers of /{args.callers}/ (calls a URL, cost a URL):")
                rows = []
                for caller in set(split_small) | set(split_large):
                    cost = (split_large.get(caller, (0, 0))[0] - split_small.get(caller, (0, 0))[0]) / 600
                    calls = (split_large.get(caller, (0, 0))[1] - split_small.get(caller, (0, 0))[1]) / 600
                    rows.append((cost, calls, caller))
                for cost, calls, caller in sorted(rows, reverse=True)[:args.top]:
                    print(f"{calls:8.2f}x {cost:10,.0f}  {caller[:150]}")
        if len(per_url) == 2:
            before, after = per_url
            changes = sorted((after.get(key, 0) - before.get(key, 0), key) for key in set(before) | set(after))
            print("\nlargest changes a URL (second binary − first):\n")
            for change, function in changes[:args.top // 2] + changes[-(args.top // 2):]:
                print(f"{change:+10,.0f}  {function[:150]}")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
