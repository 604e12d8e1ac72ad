"""Plays a list of steps through the reference client's group hooks (rooms
and tables).

Usage: python drive.py STEPS.jsonl [--brief] [--time]

STEPS.jsonl holds one step object per line (tests/rooms_hooks.rs writes it
and runs the same steps through palaver's native hooks).
For each step this prints one line, compact JSON in the insertion order of
the reference's own objects: {"ok": value} when the hook returned, or
{"error": text} with str() of the exception it raised.

Steps ("op"):
  new      {room, options}      load the room's hooks.py, proto_init(options);
                                prints proto_host_metadata() as a list
  init     {members}            proto_group_initial_state -> current state
  join     {member}             proto_group_member_joined
  leave    {member, reason}     proto_group_member_left
  act      {actor, action}      proto_group_handle
  view     {viewer}             proto_group_view (state unchanged)
  snapshot {}                   proto_group_recovery_snapshot (state unchanged)
  restore  {members, epoch, checkpoint?}
                                proto_group_restore of `checkpoint`, or of the
                                current state's snapshot after a JSON round trip
  leader   {old, new}           proto_group_on_leader_changed
  spec     {room}               the spec.json next to the room's hooks.py

Like the reference's GroupAuthority, every hook gets deep copies, and a hook
result's "state" becomes the current state only when the hook returned.
"""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import json
import sys
import tempfile
import time
from pathlib import Path

import aigenora

def hooks_file(room: str) -> Path:
    """The hooks.py of a bundled group protocol (a room or a table), found
    through the reference's own index of its content-addressed dirs."""
    protocols = Path(aigenora.__file__).parent / "protocols"
    index = json.loads((protocols / "index.json").read_text(encoding="utf-8"))
    paths = [p["path"] for p in index["protocols"] if p["alias"] == room]
    if len(paths) != 1:
        raise SystemExit(f"expected one protocol {room!r} in the index, found {paths}")
    found = protocols / paths[0] / "hooks.py"
    if not found.is_file():
        raise SystemExit(f"no hooks.py at {found}")
    return found


def load_hooks(room: str, options: dict, state_dir: Path):
    path = hooks_file(room)
    spec = importlib.util.spec_from_file_location(
        "room_hooks_" + room.replace("-", "_"), path
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    hooks = module.Hooks()
    hooks.proto_init(options, "host", [], state_dir)
    return hooks


def brief(out):
    """With --brief, a state is shown by the SHA-256 of its canonical JSON
    (sorted keys, compact): a table's state holds a 108-card catalog."""
    if not BRIEF:
        return out
    if isinstance(out, dict) and "state" in out:
        out = dict(out)
        out["state"] = state_digest(out["state"])
        return out
    if isinstance(out, dict) and "deck" in out:
        return state_digest(out)
    return out


def state_digest(state) -> str:
    text = json.dumps(state, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


BRIEF = "--brief" in sys.argv[2:]
# --time: also time each `act` hook call (with the deep copies the
# reference's GroupAuthority makes) and print {"timing": {...}} last.
TIME = "--time" in sys.argv[2:]


def emit(payload: dict) -> None:
    line = json.dumps(payload, ensure_ascii=False, separators=(",", ":")) + "\n"
    sys.stdout.buffer.write(line.encode("utf-8"))


def main() -> int:
    text = Path(sys.argv[1]).read_text(encoding="utf-8")
    # Only "\n" ends a step: text inside may hold other line separators.
    steps = [json.loads(line) for line in text.split("\n") if line]
    hooks = None
    state = None
    act_seconds = 0.0
    acts = 0
    with tempfile.TemporaryDirectory() as tmp:
        for index, step in enumerate(steps):
            op = step["op"]
            try:
                if op == "new":
                    state_dir = Path(tmp) / f"room-{index}"
                    state_dir.mkdir()
                    hooks = load_hooks(step["room"], step["options"], state_dir)
                    state = None
                    out = list(hooks.proto_host_metadata())
                elif op == "init":
                    state = hooks.proto_group_initial_state(
                        copy.deepcopy(step["members"])
                    )
                    out = state
                elif op == "join":
                    out = hooks.proto_group_member_joined(
                        copy.deepcopy(state), copy.deepcopy(step["member"])
                    )
                    state = out["state"]
                elif op == "leave":
                    out = hooks.proto_group_member_left(
                        copy.deepcopy(state),
                        copy.deepcopy(step["member"]),
                        step["reason"],
                    )
                    state = out["state"]
                elif op == "act":
                    began = time.perf_counter()
                    try:
                        out = hooks.proto_group_handle(
                            copy.deepcopy(state),
                            copy.deepcopy(step["actor"]),
                            copy.deepcopy(step["action"]),
                        )
                    finally:
                        act_seconds += time.perf_counter() - began
                        acts += 1
                    state = out["state"]
                elif op == "view":
                    out = hooks.proto_group_view(
                        copy.deepcopy(state), copy.deepcopy(step["viewer"])
                    )
                elif op == "snapshot":
                    out = hooks.proto_group_recovery_snapshot(copy.deepcopy(state))
                elif op == "restore":
                    if "checkpoint" in step:
                        checkpoint = copy.deepcopy(step["checkpoint"])
                    else:
                        snap = hooks.proto_group_recovery_snapshot(copy.deepcopy(state))
                        checkpoint = json.loads(json.dumps(snap))
                    state = hooks.proto_group_restore(
                        checkpoint, copy.deepcopy(step["members"]), step["epoch"]
                    )
                    out = state
                elif op == "leader":
                    out = hooks.proto_group_on_leader_changed(
                        copy.deepcopy(state), step["old"], step["new"]
                    )
                    state = out["state"]
                elif op == "spec":
                    text = (hooks_file(step["room"]).parent / "spec.json").read_text(
                        encoding="utf-8"
                    )
                    out = json.loads(text)
                else:
                    raise SystemExit(f"step {index}: unknown op {op!r}")
            except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
                emit({"error": str(exc)})
                continue
            emit({"ok": brief(out)})
    if TIME:
        emit({"timing": {"act_seconds": act_seconds, "acts": acts}})
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
