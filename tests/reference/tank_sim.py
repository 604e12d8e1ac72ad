"""Steps the reference's tank-battle-v1 simulation for palaver's differential
test (tests/tank_sim.rs) and prints the state hash after every tick.

Usage: python tank_sim.py STREAM.json            replay a command stream
       python tank_sim.py --record TICKS OPTIONS  play the reference's own
                                                  auto commander against itself
                                                  and print the stream it made
       python tank_sim.py --options LIST.json     for each options object: does
                                                  the reference take it (spec
                                                  check, then proto_init and the
                                                  tick-0 world), and that
                                                  world's hash

STREAM.json: {"options": {...}, "lead": L, "ticks": [{"host": [...],
"guest": [...]}, ...]}. The batch at index i targets tick i+1; like the
reference's host, each side's batch is checked by the protocol's
proto_realtime_validate_commands against the world L ticks before its target
(tick 0 at the start), and a refused batch applies as no commands. Then
proto_realtime_step advances the world. The replay stops after the tick whose
outcome is not "none".

Output, one JSON object a line: first {"tick": 0, "hash", "state"}, then for
every tick {"tick", "hash", "accepted": {"host": bool, "guest": bool},
"outcome", "state"}. The hash is aigenora.proto.realtime.json_hash of the
state: the frame's state_hash.

Needs aigenora==0.1.4 importable; the protocol directory is found inside the
installed package by its spec (family tank-battle).
"""

import importlib.util
import json
import sys
import tempfile
from pathlib import Path

import aigenora
from aigenora.proto.realtime import json_hash
from aigenora.proto.validate import validate_options


def load_protocol():
    """The tank-battle spec (a dict) and its hooks module."""
    root = Path(aigenora.__file__).parent / "protocols"
    for spec_path in sorted(root.glob("*/*/spec.json")):
        spec = json.loads(spec_path.read_text(encoding="utf-8"))
        if spec.get("family") == "tank-battle":
            hooks_path = spec_path.parent / "hooks.py"
            module_spec = importlib.util.spec_from_file_location("tank_hooks", hooks_path)
            module = importlib.util.module_from_spec(module_spec)
            module_spec.loader.exec_module(module)
            return spec, module
    raise SystemExit("no tank-battle protocol in the installed aigenora")


def new_hooks(module, options, role, state_dir):
    hooks = module.Hooks()
    hooks.proto_init(options, role, [], Path(state_dir))
    return hooks


def emit(obj):
    sys.stdout.write(json.dumps(obj, sort_keys=True, separators=(",", ":")) + "\n")


def replay(module, stream):
    options = stream.get("options") or {}
    lead = int(stream.get("lead", 1))
    with tempfile.TemporaryDirectory() as tmp:
        hooks = new_hooks(module, options, "host", tmp)
        state = hooks.proto_realtime_initial_state()
        states = [state]
        emit({"tick": 0, "hash": json_hash(state), "state": state})
        for index, batch in enumerate(stream["ticks"]):
            tick = index + 1
            seen = states[max(0, tick - lead)]
            applied = {}
            accepted = {}
            for side in ("host", "guest"):
                try:
                    applied[side] = hooks.proto_realtime_validate_commands(
                        side, batch.get(side, []), seen, tick
                    )
                    accepted[side] = True
                except ValueError:
                    applied[side] = []
                    accepted[side] = False
            result = hooks.proto_realtime_step(state, tick, applied)
            state = result["state"]
            states.append(state)
            emit(
                {
                    "tick": tick,
                    "hash": json_hash(state),
                    "accepted": accepted,
                    "outcome": result["outcome"],
                    "state": state,
                }
            )
            if result["outcome"] != "none":
                break


def record(module, ticks, options):
    """The reference's commanders (default maneuver) for both sides, each
    seeing the world one tick before the tick it commands."""
    with tempfile.TemporaryDirectory() as tmp:
        host = new_hooks(module, options, "host", Path(tmp) / "host")
        guest = new_hooks(module, options, "guest", Path(tmp) / "guest")
        state = host.proto_realtime_initial_state()
        out = []
        for tick in range(1, ticks + 1):
            batch = {
                "host": host.proto_realtime_commands(state, tick),
                "guest": guest.proto_realtime_commands(state, tick),
            }
            out.append(batch)
            state = host.proto_realtime_step(state, tick, batch)["state"]
            if state["game_over"]:
                break
        emit({"options": options, "lead": 1, "ticks": out})


def check_options(spec, module, cases):
    with tempfile.TemporaryDirectory() as tmp:
        for options in cases:
            try:
                validate_options(spec, options)
                hooks = new_hooks(module, options, "host", tmp)
                state = hooks.proto_realtime_initial_state()
            except Exception as error:  # the reference refuses with any of several types
                emit({"ok": False, "error": str(error)[:200]})
                continue
            emit({"ok": True, "hash": json_hash(state)})


def main():
    spec, module = load_protocol()
    if len(sys.argv) == 3 and sys.argv[1] == "--options":
        with open(sys.argv[2], encoding="utf-8") as handle:
            check_options(spec, module, json.load(handle))
        return
    if len(sys.argv) == 4 and sys.argv[1] == "--record":
        record(module, int(sys.argv[2]), json.loads(sys.argv[3]))
        return
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    with open(sys.argv[1], encoding="utf-8") as handle:
        replay(module, json.load(handle))


if __name__ == "__main__":
    main()
