"""Differential driver for palaver's whispers: runs the reference client's
keyword bridge (parse_whisper_to_intent) and its materialize step on each
case's state dir, the way its whisper entry points do, and prints one JSON
result per case.

stdin: a JSON list of {"dir", "protocol", "text", "role"}.
stdout: a JSON list of {"entry", "ack_status", "applied", "intent"}.
"""
import json
import sys
from pathlib import Path

import aigenora
from aigenora.proto.loader import load_hooks
from aigenora.proto.sdk import SnapshotBus, StrategyStore, WhisperLog
from aigenora.proto.whisper_bridge import materialize_intent, parse_whisper_to_intent

PROTOCOLS = Path(aigenora.__file__).parent / "protocols"


def schemas_by_name():
    out = {}
    for spec in PROTOCOLS.glob("*/*/spec.json"):
        name = json.loads(spec.read_text(encoding="utf-8")).get("name")
        schema = None
        if (spec.parent / "hooks.py").exists():
            try:
                schema = getattr(load_hooks(spec.parent), "DECISION_SCHEMA", None)
            except Exception:
                schema = None
        out[name] = schema if isinstance(schema, dict) else None
    return out


def current_round(d):
    try:
        snap = SnapshotBus(str(d)).read() or {}
        r = snap.get("round")
        return max(0, int(r) - 1) if r is not None else 0
    except Exception:
        return 0


def run_case(case, schemas):
    d = Path(case["dir"])
    text = str(case["text"]).strip()
    role = case.get("role", "user")
    schema = schemas.get(case["protocol"])
    entry = WhisperLog(d).append(role, text, origin="cli")
    if role != "user":
        return {"entry": entry, "ack_status": "unparsed", "applied": None, "intent": None}
    StrategyStore(d).merge({"operator_hint": text})
    mk = "round"
    mv = current_round(d)
    if schema and schema.get("match_key"):
        mk = schema["match_key"]
    state_fp = d / "decision" / "state.json"
    if state_fp.exists():
        try:
            st = json.loads(state_fp.read_text(encoding="utf-8"))
            if st.get("match_key"):
                mk = st["match_key"]
            if st.get("match_value") is not None:
                mv = st["match_value"]
        except Exception:
            pass
    ck = schema.get("choices") if schema else None
    intent = parse_whisper_to_intent(text, schema, choice_keywords=ck, match_key=mk, match_value=mv)
    applied = None
    if intent is not None:
        result = materialize_intent(
            intent, state_dir=str(d), origin="whisper_bridge", agent_id=None,
            whisper_id=entry.get("id"), current_match_key=mk, current_match_value=mv,
            schema=schema,
        )
        ack_status = result.get("ack_status", "unparsed")
        applied = result.get("applied")
    else:
        ack_status = "unparsed"
    WhisperLog(d).append_ack(
        entry.get("id"), status=ack_status,
        action=applied.get("type") if applied else None,
        detail=json.dumps(applied, ensure_ascii=False) if applied else None,
    )
    return {"entry": entry, "ack_status": ack_status, "applied": applied, "intent": intent}


def main():
    cases = json.loads(sys.stdin.read())
    schemas = schemas_by_name()
    out = [run_case(c, schemas) for c in cases]
    sys.stdout.write(json.dumps(out, ensure_ascii=False))


if __name__ == "__main__":
    main()
