"""Answers palaver's differential tests with the reference client's own code.

Reads JSON requests, one per line, on stdin and writes one JSON answer per
line on stdout. Needs `aigenora==0.1.4` importable (palaver's .ci/run installs
it into a venv).

Requests:
  {"op": "canonical", "value": V}                     -> {"text": canonical json}
  {"op": "hash", "spec": S}                           -> {"id": protocol_id}
  {"op": "validate", "spec": S, "msg": M, "direction": D|null, "message": N|null}
                                                      -> {"ok": bool, "error": str}
  {"op": "options", "spec": S, "options": O}          -> {"ok": bool, "error": str}
  {"op": "structure", "spec": S}                      -> {"ok": bool, "error": str}
"""

import json
import sys

from aigenora.engine.crypto import protocol_hash_from_obj
from aigenora.proto.validate import (
    ValidationError,
    validate_flow,
    validate_message_obj,
    validate_options,
    validate_timing,
    _validate_shadow_judge,
)


def answer(req):
    op = req["op"]
    if op == "canonical":
        text = json.dumps(req["value"], sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return {"text": text}
    if op == "hash":
        return {"id": protocol_hash_from_obj(req["spec"])}
    try:
        if op == "validate":
            validate_message_obj(req["spec"], req["msg"], req.get("direction"), req.get("message"))
        elif op == "options":
            validate_options(req["spec"], req["options"])
        elif op == "structure":
            validate_timing(req["spec"])
            validate_flow(req["spec"])
            _validate_shadow_judge(req["spec"])
        else:
            return {"error": f"unknown op {op}"}
    except ValidationError as e:
        return {"ok": False, "error": str(e)}
    except (TypeError, AttributeError, KeyError) as e:
        # The reference crashes here; palaver reports an error instead.
        return {"ok": False, "crash": type(e).__name__, "error": str(e)}
    return {"ok": True, "error": ""}


def main():
    out = sys.stdout
    for line in sys.stdin:
        if line.strip():
            out.write(json.dumps(answer(json.loads(line)), ensure_ascii=False) + "\n")
    out.flush()


if __name__ == "__main__":
    main()
