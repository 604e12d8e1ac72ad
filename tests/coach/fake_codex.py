#!/usr/bin/env python3
"""A stand-in for `codex exec --json`: JSONL on stdout (thread.started with a
thread id, an agent_message item), the last message in the -o file. Records
its argv to the file named by --log (first two arguments)."""
import json
import sys

args = sys.argv[1:]
log = args[1]
args = args[2:]
stdin = sys.stdin.read()
with open(log, "a", encoding="utf-8") as f:
    f.write(json.dumps({"argv": args, "stdin": stdin}) + "\n")
print(json.dumps({"type": "thread.started", "thread_id": "thread-42"}), flush=True)
print(json.dumps({"type": "item.completed", "item": {"type": "reasoning", "text": "hidden"}}), flush=True)
print(json.dumps({"type": "item.completed", "item": {"type": "agent_message", "text": "Play paper."}}), flush=True)
out = args[args.index("-o") + 1]
with open(out, "w", encoding="utf-8") as f:
    f.write("Play paper.\n")
