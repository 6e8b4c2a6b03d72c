#!/usr/bin/env python3
"""Top functions of a `perf record -g` profile, inclusive and self, for a Swift binary perf cannot read symbols from.

perf 6.1 on this machine resolves the shared libraries but not the oa-bridge executable (lld's single R+X segment from
offset 0); this symbolizes the executable's addresses with the toolchain's llvm-symbolizer and demangles them with
`swift demangle`, then aggregates the call chains like `perf report --children` / `--no-children`.

  bench/perf_top.py PERF_DATA BINARY [TOP] [PID]

With CALLERS=TEXT in the environment, it also prints who calls the functions whose name contains TEXT (the next
frames up each chain, aggregated): where runtime calls such as swift_getGenericMetadata come from. With CALLEES=TEXT,
what the first function whose name contains TEXT spends its time in (the frame just below it, aggregated).

With PID, only that process's samples count (perf record -p also samples the children it starts, e.g. the agent).
"""
import collections
import re
import subprocess
import sys
from pathlib import Path

SYMBOLIZER = "/opt/swift/usr/bin/llvm-symbolizer"


def main():
    data, binary = sys.argv[1], str(Path(sys.argv[2]).resolve())
    top = int(sys.argv[3]) if len(sys.argv) > 3 else 45
    only = ["--pid", sys.argv[4]] if len(sys.argv) > 4 else []
    out = subprocess.run(["perf", "script", "-i", data, *only, "--show-mmap-events", "-F", "ip,sym,dso"],
                         capture_output=True, text=True, errors="replace").stdout
    # mmap of the executable (pid-independent: one process).
    base = None
    mmap = re.compile(r"PERF_RECORD_MMAP2? .*\[0x([0-9a-f]+)\(0x[0-9a-f]+\) @ (0x[0-9a-f]+|0) .*\]: r-xp (\S+)")
    samples, current = [], []
    for line in out.splitlines():
        m = mmap.search(line)
        if m:
            if m.group(3) == binary and base is None:
                base = int(m.group(1), 16) - int(m.group(2), 16)
            continue
        if not line.strip():
            if current:
                samples.append(current)
                current = []
            continue
        parts = line.split(None, 1)
        if len(parts) != 2 or not re.fullmatch(r"[0-9a-f]+", parts[0]):
            continue
        ip, rest = int(parts[0], 16), parts[1]
        dso = rest[rest.rfind("(") + 1:rest.rfind(")")] if "(" in rest else "?"
        sym = rest[:rest.rfind("(")].strip() if "(" in rest else rest
        sym = re.sub(r"\+0x[0-9a-f]+$", "", sym)
        current.append((ip, sym, dso))
    if current:
        samples.append(current)
    # Symbolize the executable's frames.
    # perf prints the executable's unresolved addresses relative to its mapping already (when it did not, subtract
    # the mapping's base).
    def address(ip):
        return ip - base if base is not None and ip >= base else ip
    wanted = sorted({address(ip) for s in samples for ip, sym, dso in s if dso == binary})
    names = {}
    if wanted:
        res = subprocess.run([SYMBOLIZER, "--obj", binary, "--functions=linkage", "--no-inlines", "--output-style=LLVM"],
                             input="\n".join(hex(a) for a in wanted), capture_output=True, text=True)
        blocks = [b for b in res.stdout.split("\n\n") if b.strip()]
        mangled = [b.splitlines()[0].strip() for b in blocks]
        demangled = subprocess.run(["swift", "demangle", "--simplified", "--compact"], input="\n".join(mangled),
                                   capture_output=True, text=True).stdout.splitlines()
        for where, what in zip(wanted, demangled):
            names[where] = what
    def name(frame):
        ip, sym, dso = frame
        if dso == binary:
            return names.get(address(ip), hex(address(ip)))
        if sym in ("[unknown]", ""):
            return f"[{Path(dso).name}]"
        return sym
    total = len(samples)
    self_count, incl_count = collections.Counter(), collections.Counter()
    for s in samples:
        chain = [name(f) for f in s]
        self_count[chain[0]] += 1
        for n in set(chain):
            incl_count[n] += 1
    def show(counter):
        for n, c in counter.most_common(top):
            print(f"{100 * c / total:6.2f}%  {n[:170]}")
    print(f"samples: {total}")
    print(f"\n## inclusive (the function or anything it called), top {top}")
    show(incl_count)
    print(f"\n## self, top {top}")
    show(self_count)
    import os
    wanted_callers = os.environ.get("CALLERS")
    if wanted_callers:
        callers = collections.Counter()
        for s in samples:
            chain = [name(f) for f in s]
            for position, n in enumerate(chain):
                if wanted_callers in n:
                    callers[" <- ".join(c[:70] for c in chain[position:position + 5])] += 1
                    break
        print(f"\n## callers of *{wanted_callers}* (5 frames up), top {top}")
        show(callers)
    wanted_callees = os.environ.get("CALLEES")
    if wanted_callees:
        callees = collections.Counter()
        for s in samples:
            chain = [name(f) for f in s]
            for position in range(len(chain) - 1, -1, -1):
                if wanted_callees in chain[position]:
                    callees[chain[position - 1] if position > 0 else "(self)"] += 1
                    break
        print(f"\n## what *{wanted_callees}* spends its time in (the frame below it), top {top}")
        show(callees)


if __name__ == "__main__":
    main()
