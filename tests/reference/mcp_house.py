"""An agent joins a house game through `palaver mcp` (stdio) with the
official MCP Python SDK and decides every window until the session ends.

    mcp_house.py PALAVER SERVER_URL DATA_DIR PROTOCOL_ID HOUSE_PUBLIC_KEY

Prints one JSON object: the state dir, how many windows it decided, the
final window and snapshot, and the session list row. Exits 1 with a message
on the first thing that is not as it should be.
"""

import asyncio
import json
import os
import sys
import time

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client


def fail(msg):
    print(msg, file=sys.stderr)
    sys.exit(1)


async def call(s, name, args=None):
    r = await s.call_tool(name, args or {})
    if r.isError:
        fail(f"{name}({args}) refused: {r.structuredContent or r.content}")
    return r.structuredContent


async def main(palaver, server, data_dir, protocol_id, house):
    params = StdioServerParameters(
        command=palaver, args=["--data-dir", data_dir, "--server", server, "mcp"]
    )
    updates = []

    async def on_message(message):
        if isinstance(message, types.ServerNotification) and isinstance(
            message.root, types.ResourceUpdatedNotification
        ):
            updates.append(str(message.root.params.uri))

    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w, message_handler=on_message) as s:
            await s.initialize()
            post = None
            for _ in range(300):
                found = await call(s, "browse", {"protocol_id": protocol_id})
                mine = [i for i in found["invitations"] if i.get("public_key") == house]
                if mine:
                    post = mine[0]["post_id"]
                    break
                await asyncio.sleep(0.1)
            if post is None:
                fail(f"the house never offered {protocol_id}")
            joined = await call(s, "join", {"post_id": post, "control_mode": "human", "direct": True})
            state_dir = joined["state_dir"]
            watched = f"palaver://sessions/{os.path.basename(state_dir.rstrip('/'))}/snapshot"
            await s.subscribe_resource(watched)
            decided = {}
            deadline = time.monotonic() + 180
            window = None
            while time.monotonic() < deadline:
                window = await call(s, "session_window", {"state_dir": state_dir})
                if window["ended"]:
                    break
                if window["open"]:
                    key = (window["match_key"], json.dumps(window["match_value"]))
                    if key not in decided:
                        schema = window["schema"] or {}
                        choices = schema.get("choices") or ["rock"]
                        field = schema.get("value_field", "choice")
                        pick = choices[len(decided) % len(choices)]
                        d = await call(s, "session_decide", {
                            "state_dir": state_dir,
                            "decision": {window["match_key"]: window["match_value"], field: pick},
                        })
                        if d["status"] != "ok":
                            fail(f"session_decide: {d}")
                        decided[key] = pick
                await asyncio.sleep(0.05)
            else:
                fail(f"the session did not end in 180 s; last window {window}")
            snap = await call(s, "session_snapshot", {"state_dir": state_dir})
            events = await call(s, "session_events", {"state_dir": state_dir, "limit": 500})
            rows = (await call(s, "sessions"))["sessions"]
            res = await s.list_resources()
            uris = [str(x.uri) for x in res.resources]
            read = await s.read_resource(watched)
            snapshot_resource = json.loads(read.contents[0].text)
            await s.unsubscribe_resource(watched)
            print(json.dumps({
                "state_dir": state_dir,
                "decided": len(decided),
                "window": window,
                "snapshot": snap,
                "event_types": [e.get("type") for e in events["events"]],
                "row": [x for x in rows if x.get("dir") == state_dir],
                "resources": uris,
                "watched": watched,
                "updates": sum(1 for u in updates if u == watched),
                "snapshot_resource_phase": snapshot_resource.get("phase"),
            }))


if __name__ == "__main__":
    if len(sys.argv) != 6:
        fail(__doc__)
    asyncio.run(main(*sys.argv[1:]))
