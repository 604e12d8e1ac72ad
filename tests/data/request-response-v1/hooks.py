"""Integer Calculator (request_response), on the reference client's SDK.

Test data for palaver's interop tests (tests/reference_engine.rs): the
guest asks one question taken from its options, the host computes the
answer. A question with no answer (divmod by zero, divmod without exactly
two operands) gets no response, which ends the host with reason `abort`.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from aigenora.proto.hooks import HookResult, ProtocolHooks

OPS = ("sum", "product", "gcd", "divmod")
OPERAND_LIMIT = 10000
MAX_OPERANDS = 4


def parse_operands(text: str) -> list[int]:
    """'12, -7,3' -> [12, -7, 3]; each within +-OPERAND_LIMIT, 1..MAX_OPERANDS of them."""
    parts = [p.strip() for p in str(text).split(",")]
    if not parts or any(p == "" for p in parts):
        raise ValueError(f"operands must be comma-separated integers, got {text!r}")
    values = [int(p) for p in parts]
    if len(values) > MAX_OPERANDS:
        raise ValueError(f"at most {MAX_OPERANDS} operands, got {len(values)}")
    for v in values:
        if abs(v) > OPERAND_LIMIT:
            raise ValueError(f"operand {v} is outside -{OPERAND_LIMIT}..{OPERAND_LIMIT}")
    return values


def compute(op: str, operands: list[int]) -> dict[str, int] | None:
    """The answer's fields, or None when the question has no answer."""
    if op == "sum":
        return {"result": sum(operands)}
    if op == "product":
        return {"result": math.prod(operands)}
    if op == "gcd":
        return {"result": math.gcd(*operands)}
    if op == "divmod":
        if len(operands) != 2 or operands[1] == 0:
            return None
        quotient, remainder = divmod(operands[0], operands[1])
        return {"result": quotient, "remainder": remainder}
    return None


class Hooks(ProtocolHooks):
    SUPPORTED_CONTROL_MODES = ("autonomous", "hybrid")

    def proto_init(self, options, role, args, state_dir: Path, decision_config: dict[str, Any] | None = None):
        super().proto_init(options, role, args, state_dir, decision_config)
        self.op = options.get("op") or "sum"
        if self.op not in OPS:
            raise ValueError(f"op must be one of {', '.join(OPS)}, got {self.op!r}")
        self.operands = parse_operands(options.get("operands") or "12,30")
        self.max_operands = int(options.get("max_operands") or MAX_OPERANDS)
        self.answer = None
        self.snapshot.update(op=self.op, operands=self.operands, max_operands=self.max_operands)

    def proto_host_metadata(self):
        return ("Integer Calculator", "test,calculator", "supply", {
            "op": self.op,
            "operands": ",".join(str(v) for v in self.operands),
            "max_operands": self.max_operands,
        })

    # -- host --

    def proto_host_handle_join(self, msg):
        self.snapshot.update(phase="answering")
        return HookResult({"action": "ready", "max_operands": self.max_operands})

    def proto_host_handle(self, msg):
        op = msg["op"]
        operands = list(msg["operands"])
        fields = None if len(operands) > self.max_operands else compute(op, operands)
        self.details.append(
            type="question", id=msg["id"], op=op, operands=operands, answered=fields is not None,
            summary=f"{op}{tuple(operands)} -> {fields}",
        )
        if fields is None:
            return HookResult()
        return HookResult({"action": "answer", "id": msg["id"], "op": op, **fields})

    # -- guest --

    def proto_guest_join_message(self):
        return {"action": "join"}

    def proto_guest_handle_ready(self, msg):
        self.max_operands = int(msg["max_operands"])
        self.snapshot.update(max_operands=self.max_operands, phase="asking")

    def proto_guest_first_action(self):
        if len(self.operands) > self.max_operands:
            self.snapshot.update(last_event={
                "summary": f"The host takes at most {self.max_operands} operands",
                "structured": {"operands": len(self.operands), "max_operands": self.max_operands},
            })
            return None
        return {"action": "question", "id": "q1", "op": self.op, "operands": list(self.operands)}

    def proto_guest_handle(self, msg):
        self.answer = msg
        self.snapshot.update(answer=msg)
        return HookResult()

    def proto_display(self, msg, direction):
        if msg.get("action") == "question":
            return f"{msg['op']} of {msg['operands']}?"
        if msg.get("action") == "answer":
            rest = f" remainder {msg['remainder']}" if "remainder" in msg else ""
            return f"{msg['op']} = {msg['result']}{rest}"
        return None
