"""Runs the reference's tank-battle-v1 auto commander and tactical whisper
parser for palaver's differential test (tests/tank_commander.rs).

Usage: python tank_commander.py --matches MATCHES.json
       python tank_commander.py --whispers CASES.json

MATCHES.json: a list of {"options", "args": {"host": [...], "guest": [...]},
"ticks": N, "events": [{"tick", "side", "set": STRATEGY} or {"tick",
"side", "whisper": TEXT}]}. Each side is a Hooks object of its own
(proto_init with the options, its role and its args; its own state
directory, so its own strategy.json). Before the commands for tick t are
made, that tick's events apply in list order: "set" writes strategy.json
whole; "whisper" does what the reference's whisper bridge does with a
player's whisper: merge {"operator_hint": TEXT}, then
proto_parse_whisper_intent(TEXT, {"role", "tick", "world"}) with the world
the side sees, and merge the intent's strategy_patch (with its _meta).
Then each side's proto_realtime_commands(world at t-1, t); an exception is
reported and, as the realtime runtime does, the side sends no commands.
The batches step the world (proto_realtime_step) until the match ends or
N ticks.

Output, one JSON line per tick: {"match", "tick", "host", "guest", "hash",
"intents": [...]}, where a side is its command list or {"error": TEXT}.

CASES.json: a list of {"text", "role", "tick", "options" (or null: no
world), "dead": [unit ids at hp 0]}. Output, one line per case:
{"intent", "clauses", "maneuvers", "targets", "hint"}.

Needs aigenora==0.1.4 importable.
"""

import json
import sys
import tempfile
from pathlib import Path

from aigenora.proto.realtime import json_hash
from aigenora.proto.sdk import _deep_merge

sys.path.insert(0, str(Path(__file__).parent))
from tank_sim import load_protocol  # noqa: E402


def emit(obj):
    sys.stdout.write(json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n")


def whisper(hooks, text, state):
    hooks.strategy.merge({"operator_hint": text})
    intent = hooks.proto_parse_whisper_intent(
        text, {"role": hooks.role, "tick": state["tick"], "world": state}
    )
    if intent is not None and isinstance(intent.get("strategy_patch"), dict):
        payload = {k: v for k, v in intent["strategy_patch"].items() if k != "_meta"}
        payload["_meta"] = {"origin": "whisper_bridge", "agent_id": None, "caused_by_whisper_id": None}
        hooks.strategy.merge(payload)
    return intent


def run_match(module, number, spec, tmp):
    options = spec.get("options") or {}
    args = spec.get("args") or {}
    sides = {}
    for side in ("host", "guest"):
        hooks = module.Hooks()
        hooks.proto_init(options, side, list(args.get(side) or []), Path(tmp) / f"m{number}" / side)
        sides[side] = hooks
    state = sides["host"].proto_realtime_initial_state()
    events = spec.get("events") or []
    for tick in range(1, int(spec["ticks"]) + 1):
        intents = []
        for event in events:
            if event["tick"] != tick:
                continue
            hooks = sides[event["side"]]
            if "set" in event:
                hooks.strategy.write(event["set"])
            else:
                intents.append(whisper(hooks, event["whisper"], state))
        batch = {}
        out = {}
        for side in ("host", "guest"):
            try:
                commands = sides[side].proto_realtime_commands(state, tick)
                batch[side] = commands
                out[side] = commands
            except Exception as error:  # the runtime sends nothing then
                batch[side] = []
                out[side] = {"error": f"{type(error).__name__}: {error}"[:200]}
        state = sides["host"].proto_realtime_step(state, tick, batch)["state"]
        emit({"match": number, "tick": tick, "hash": json_hash(state), "intents": intents, **out})
        if state["game_over"]:
            break


def run_whispers(module, cases):
    hooks_cls = module.Hooks
    choices = hooks_cls.DECISION_SCHEMA["choices"]
    for case in cases:
        world = None
        if case.get("options") is not None:
            rules_hooks = hooks_cls()
            with tempfile.TemporaryDirectory() as tmp:
                rules_hooks.proto_init(case["options"], "host", [], Path(tmp))
                world = rules_hooks.proto_realtime_initial_state()
            for tank in world["tanks"]:
                if tank["id"] in (case.get("dead") or []):
                    tank["hp"] = 0
        context = {"role": case.get("role"), "tick": case.get("tick")}
        if world is not None:
            context["world"] = world
        text = case["text"]
        intent = module.parse_tactical_whisper(text, context, choices)
        clauses = module._split_tactical_clauses(text, choices)
        rows = world["rows"] if world else 0
        cols = world["cols"] if world else 0
        emit(
            {
                "intent": intent,
                "clauses": clauses,
                "maneuvers": [module._match_maneuver(c, choices) for c in clauses],
                "targets": [module._extract_tactical_targets(c, rows, cols) for c in clauses],
                "hint": hooks_cls._hint_maneuver(text) or None,
            }
        )


def main():
    _, module = load_protocol()
    if len(sys.argv) == 3 and sys.argv[1] == "--matches":
        with open(sys.argv[2], encoding="utf-8") as handle:
            specs = json.load(handle)
        with tempfile.TemporaryDirectory() as tmp:
            for number, spec in enumerate(specs):
                run_match(module, number, spec, tmp)
        return
    if len(sys.argv) == 3 and sys.argv[1] == "--whispers":
        with open(sys.argv[2], encoding="utf-8") as handle:
            run_whispers(module, json.load(handle))
        return
    raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
