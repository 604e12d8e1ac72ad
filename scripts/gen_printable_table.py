"""Regenerates src/json/printable.rs: the code points Python's str.isprintable()
rejects, which decide how repr() escapes text in the reference's errors.

Run with the Python the reference client runs on:
    python scripts/gen_printable_table.py
"""

import pathlib
import sys
import unicodedata

ranges = []
start = None
for c in range(0x110000):
    non_printable = not chr(c).isprintable()
    if non_printable and start is None:
        start = c
    if not non_printable and start is not None:
        ranges.append((start, c - 1))
        start = None
if start is not None:
    ranges.append((start, 0x10FFFF))

out = [
    "//! Code points that Python's `str.isprintable()` rejects, as inclusive",
    "//! ranges, so `repr()` of text matches the reference byte for byte.",
    f"//! Generated from CPython {sys.version.split()[0]} (Unicode {unicodedata.unidata_version}), the",
    "//! interpreter the reference client runs on here; regenerate with",
    "//! `scripts/gen_printable_table.py`.",
    "",
    "/// Sorted, disjoint, inclusive ranges of non-printable code points.",
    "pub(crate) const NON_PRINTABLE: &[(u32, u32)] = &[",
]
line = "   "
for a, b in ranges:
    item = f" (0x{a:x}, 0x{b:x}),"
    if len(line) + len(item) > 100:
        out.append(line)
        line = "   "
    line += item
out.append(line)
out.append("];")
root = pathlib.Path(__file__).resolve().parent.parent
(root / "src/json/printable.rs").write_text("\n".join(out) + "\n")
print(f"{len(ranges)} ranges written")
