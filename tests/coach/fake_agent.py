#!/usr/bin/env python3
"""A stand-in agent CLI for the coach tests.

Usage: fake_agent.py --log FILE [--sleep S] [--delay S] [--fail-resume] [--reply TEXT] ARGS...
Appends one JSON line to FILE: its argv (after the options), its stdin, its
cwd and pid, and the files in its cwd. Then prints three reply lines, each
followed by a flush and a pause of --delay seconds, after sleeping --sleep
seconds first. The reply names the session id that follows --session-id or
--resume, when there is one. With --fail-resume it exits 1 with "No
conversation found" when given --resume. With --reply it prints TEXT as its
last line.
"""
import json
import os
import sys
import time

args = sys.argv[1:]
log = None
sleep = 0.0
delay = 0.05
fail_resume = False
reply = None
while args and args[0].startswith("--") and args[0] in ("--log", "--sleep", "--delay", "--fail-resume", "--reply"):
    opt = args.pop(0)
    if opt == "--fail-resume":
        fail_resume = True
    elif opt == "--reply":
        reply = args.pop(0)
    elif opt == "--log":
        log = args.pop(0)
    elif opt == "--sleep":
        sleep = float(args.pop(0))
    else:
        delay = float(args.pop(0))

stdin = sys.stdin.read()
record = {
    "argv": args,
    "stdin": stdin,
    "cwd": os.getcwd(),
    "pid": os.getpid(),
    "files": sorted(os.listdir(".")),
}
if log:
    with open(log, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")

session = None
for flag in ("--session-id", "--resume"):
    if flag in args and args.index(flag) + 1 < len(args):
        session = args[args.index(flag) + 1]
if fail_resume and "--resume" in args:
    print("Error: No conversation found with session ID", file=sys.stderr)
    sys.exit(1)

time.sleep(sleep)
lines = [
    "Coach here.",
    f"session={session}" if session else "session=none",
    f"asked {len(stdin) or len(args[-1] if args else '')} chars",
]
if reply is not None:
    lines.append(reply)
for line in lines:
    print(line, flush=True)
    time.sleep(delay)
