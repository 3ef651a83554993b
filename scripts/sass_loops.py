#!/usr/bin/env python3
"""Summarise the loops of a kernel's SASS (cuobjdump -sass output): one line per backward branch,
with its instruction count and the instruction kinds that cost a GEMV trip its issue slots.

Usage: scripts/sass_loops.py FILE.sass [--ops]
  --ops  also print each loop's full histogram of opcodes

Why: on the H200 a warp's trips wait for HBM one after another, so the instructions between a
trip's loads and the next trip's add to every trip (docs/performance.md, "Misaligned rows").
Counting them needs no GPU (scripts/sass.sh emits, compiles and disassembles a config).
"""
import collections
import re
import sys

INSTRUCTION = re.compile(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
BRANCH = re.compile(r"\bBRA\s+(?:`?\(?)?(0x[0-9a-f]+)")
KINDS = [
    ("LDG", r"^LDG"), ("LDS", r"^LDS"), ("HMMA", r"^HMMA"), ("FFMA", r"^FFMA"),
    ("int/addr", r"^(IMAD(?!\.MOV)|IADD|VIADD|LEA|SHF|IMAD\.SHL)"), ("MOV", r"^(IMAD\.MOV|MOV)"),
    ("LOP/PRMT", r"^(LOP|PRMT)"), ("ISETP/SEL", r"^(ISETP|SEL|FSEL)"),
]


def opcode(text):
    return re.sub(r"^@!?U?P[T\d]+\s+", "", text).split()[0]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    code = []
    with open(sys.argv[1]) as f:
        for line in f:
            m = INSTRUCTION.match(line)
            if m:
                code.append((int(m.group(1), 16), m.group(2).strip()))
    if not code:
        sys.exit(f"sass_loops: no SASS instructions in {sys.argv[1]} (is it cuobjdump -sass output?)")
    index = {address: i for i, (address, _) in enumerate(code)}
    print(f"{len(code)} instructions")
    for i, (address, text) in enumerate(code):
        m = BRANCH.search(text)
        if not m or int(m.group(1), 16) > address or int(m.group(1), 16) not in index:
            continue
        body = [opcode(t) for _, t in code[index[int(m.group(1), 16)]:i + 1]]
        counts = ", ".join(f"{name} {sum(1 for op in body if re.match(rx, op))}" for name, rx in KINDS)
        print(f"loop {int(m.group(1), 16):#06x}-{address:#06x}: {len(body)} instructions; {counts}")
        if "--ops" in sys.argv:
            for op, n in collections.Counter(body).most_common():
                print(f"    {n:4d} {op}")


if __name__ == "__main__":
    main()
