"""Times the reference client (aigenora 0.1.4) on the inputs palaver's
contract benches use, so the README can put both figures side by side.

Usage: python scripts/reference_timings.py   (with aigenora importable)
"""

import json
import pathlib
import timeit

from aigenora.engine.crypto import protocol_hash_from_obj
from aigenora.proto.validate import ValidationError, validate_message_obj

ROOT = pathlib.Path(__file__).resolve().parent.parent
specs = {p.parent.name: json.loads(p.read_text()) for p in (ROOT / "assets/protocols").glob("*/spec.json")}
rps = specs["rps-v1"]

n = 20000
t = timeit.timeit(lambda: protocol_hash_from_obj(rps), number=n)
print(f"protocol_id rps-v1: {t / n * 1e6:.1f} us per id")

cases = [json.loads(l) for l in (ROOT / "tests/data/aigenora/validation_cases.jsonl").read_text().splitlines() if l]


def run_all():
    for c in cases:
        try:
            validate_message_obj(specs[c["protocol"]], c["msg"], c["direction"], c["message"])
        except ValidationError:
            pass


reps = 20
t = timeit.timeit(run_all, number=reps)
print(f"validate_message: {t / reps / len(cases) * 1e9:.0f} ns per case over {len(cases)} cases")
