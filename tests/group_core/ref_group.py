"""The reference client's authoritative_group core, driven by palaver's
tests/group_core.rs. Needs aigenora==0.1.4 importable.

    ref_group.py authority   one scenario (a JSON object) on stdin; runs the
                             reference GroupAuthority with the bundled
                             community-room hooks and prints one JSON line
                             per frame-producing step, then the final views.
    ref_group.py replica     commands on stdin, one JSON object per line, for
                             reference GroupReplica instances; one answer
                             line each.
    ref_group.py delta       requests on stdin, one per line: make and apply
                             JSON deltas with the reference's json_delta.

Answers carry a refusal as {"error": {"type": <exception class>,
"message": str(exception)}}.
"""

import json
import shutil
import sys
import tempfile
from pathlib import Path

import aigenora
from aigenora.engine.keys import KeyPair
from aigenora.proto.group import GroupAuthority, GroupReplica, json_hash
from aigenora.proto.json_delta import apply_json_delta, make_json_delta
from aigenora.proto.loader import load_hooks

# Every state dir the reference writes goes under one directory, removed
# when the script ends.
SCRATCH = tempfile.mkdtemp(prefix="ref-group-")

ROOM_HOOKS = (
    Path(aigenora.__file__).parent
    / "protocols/9a8a5128/73c4ad083b2692c06221b789002ce3fd813da2c8dd71501eb8b054ec"
)


def refusal(exc):
    return {"error": {"type": type(exc).__name__, "message": str(exc)}}


def emit(obj):
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def run_authority(scenario):
    spec = scenario["spec"]
    previous = None
    for number, phase in enumerate(scenario["phases"]):
        state_dir = tempfile.mkdtemp(dir=SCRATCH)
        leader = phase["leader"]
        checkpoint = None
        if phase.get("from_previous_checkpoint"):
            checkpoint = previous.checkpoint()
        try:
            authority = GroupAuthority(
                spec=spec,
                hooks=load_hooks(ROOM_HOOKS),
                options=dict(scenario["options"]),
                state_dir=state_dir,
                group_id=scenario["group_id"],
                leader_public_key=leader["public_key"],
                leader_epoch=phase["leader_epoch"],
                membership_version=phase["membership_version"],
                members=phase["members"],
                keypair=KeyPair(leader["public_key"], leader["private_key"]),
                checkpoint=checkpoint,
            )
        except Exception as exc:  # reported to the test, which fails on it
            emit({"phase": number, "step": "init", **refusal(exc)})
            return
        emit(
            {
                "phase": number,
                "step": "init",
                "envelopes": authority._last_envelopes,
                "checkpoint": authority.checkpoint(),
            }
        )
        for index, step in enumerate(phase["steps"]):
            out = {"phase": number, "step": index}
            try:
                op = step["op"]
                if op == "input":
                    envelopes, receipt = authority.apply_input(
                        actor_public_key=step["actor"],
                        client_seq=step["client_seq"],
                        action=step["action"],
                    )
                    out["receipt"] = receipt
                    if receipt["status"] != "duplicate":
                        out["envelopes"] = envelopes
                elif op == "join":
                    out["envelopes"] = authority.add_member(
                        step["member"], membership_version=step["membership_version"]
                    )
                elif op == "leave":
                    out["envelopes"] = authority.remove_member(
                        step["public_key"],
                        membership_version=step["membership_version"],
                        reason=step["reason"],
                    )
                elif op == "leader_changed":
                    out["envelopes"] = authority.leader_changed(step["old"], step["new"])
                elif op == "bootstrap":
                    out["bootstrap"] = {
                        step["public_key"]: authority.bootstrap_envelope(step["public_key"])
                    }
                else:
                    raise RuntimeError(f"unknown step {op}")
            except Exception as exc:
                out.update(refusal(exc))
            out["seq"] = authority.seq
            out["frame_hash"] = authority.previous_hash
            emit(out)
        emit(
            {
                "phase": number,
                "step": "final",
                "view_hashes": {
                    key: json_hash(view) for key, view in authority._last_views.items()
                },
                "checkpoint": authority.checkpoint(),
                "completed": authority.completed,
            }
        )
        previous = authority


def run_replicas(lines):
    replicas = {}
    for line in lines:
        if not line.strip():
            continue
        cmd = json.loads(line)
        kind = cmd["cmd"]
        try:
            if kind == "new":
                replicas[cmd["id"]] = GroupReplica(
                    state_dir=tempfile.mkdtemp(dir=SCRATCH),
                    group_id=cmd["group_id"],
                    viewer_public_key=cmd["viewer"],
                    leader_public_key=cmd["leader"],
                    leader_epoch=cmd["epoch"],
                    protocol_name="Community Room",
                )
                emit({"ok": True})
            elif kind == "apply":
                replica = replicas[cmd["id"]]
                saved = (
                    replica.seq,
                    replica.frame_hash,
                    replica.membership_version,
                    replica.checkpoint,
                    replica.view,
                )
                try:
                    applied = replica.apply(cmd["envelope"], bootstrap=cmd["bootstrap"])
                finally:
                    if cmd.get("probe"):
                        (
                            replica.seq,
                            replica.frame_hash,
                            replica.membership_version,
                            replica.checkpoint,
                            replica.view,
                        ) = saved
                emit({"ok": True, "applied": applied})
            elif kind == "advance":
                replicas[cmd["id"]].advance_epoch(
                    leader_public_key=cmd["leader"], leader_epoch=cmd["epoch"]
                )
                emit({"ok": True})
            elif kind == "state":
                replica = replicas[cmd["id"]]
                emit(
                    {
                        "ok": True,
                        "seq": replica.seq,
                        "frame_hash": replica.frame_hash,
                        "view_hash": json_hash(replica.view),
                        "checkpoint": replica.checkpoint,
                    }
                )
            else:
                raise RuntimeError(f"unknown command {kind}")
        except Exception as exc:
            emit(refusal(exc))


def run_deltas(lines):
    for line in lines:
        if not line.strip():
            continue
        req = json.loads(line)
        try:
            if "cur" in req:
                ops = make_json_delta(req["prev"], req["cur"])
                emit({"ops": ops, "result": apply_json_delta(req["prev"], ops)})
            else:
                emit({"result": apply_json_delta(req["prev"], req["ops"])})
        except Exception as exc:
            emit(refusal(exc))


def main():
    mode = sys.argv[1]
    try:
        if mode == "authority":
            run_authority(json.load(sys.stdin))
        elif mode == "replica":
            run_replicas(sys.stdin)
        elif mode == "delta":
            run_deltas(sys.stdin)
        else:
            raise SystemExit(f"unknown mode {mode}")
    finally:
        shutil.rmtree(SCRATCH, ignore_errors=True)


if __name__ == "__main__":
    main()
