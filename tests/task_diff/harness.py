"""Drives the reference's task service (aigenora 0.1.4 collab.TaskService)
through a script of steps read as JSON from stdin, and prints one JSON line
per step: the answer, the error code, or the exception's type.

The script: {"data_dir": DIR, "source": DEVICE, "steps": [STEP, ...]} with
STEP one of
  {"op": "handle", "msg": {...}}       a guest message
  {"op": "dispatch"}                   one pass of the dispatcher over queued tasks
  {"op": "worker_note", "task_id": T, "text": S}
  {"op": "worker_ask", "task_id": T, "question": S}   (its id replaces "$input")
  {"op": "write", "task_id": T, "path": P, "text": S}  a workspace file
  {"op": "publish", "task_id": T, "path": P}
  {"op": "finish", "task_id": T, "state": S, "summary": S}
The dispatcher thread is not started: "dispatch" steps run it in place.
"""
import json
import sys

from aigenora.collab.errors import CollabError
from aigenora.collab.service import TaskService
from aigenora.collab.store import task_root


def substitute(value, input_id):
    if isinstance(value, str) and value == "$input":
        return input_id
    if isinstance(value, dict):
        return {k: substitute(v, input_id) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, input_id) for v in value]
    return value


def main():
    script = json.load(sys.stdin)
    data_dir = script["data_dir"]
    source = script["source"]
    svc = TaskService(data_dir, autostart_dispatcher=False)
    input_id = None
    for step in script["steps"]:
        op = step["op"]
        try:
            if op == "handle":
                out = {"answer": svc.handle(substitute(step["msg"], input_id), source_device=source)}
            elif op == "dispatch":
                for task in svc.store.list_tasks({"queued"}):
                    svc._try_dispatch(task)
                out = {"ok": True}
            elif op == "worker_note":
                svc.worker_note(source, step["task_id"], step["text"])
                out = {"ok": True}
            elif op == "worker_ask":
                svc.worker_ask(source, step["task_id"], step["question"])
                row = svc.store.pending_inputs(source, step["task_id"])[-1]
                input_id = row["input_id"]
                out = {"ok": True}
            elif op == "write":
                root = task_root(data_dir, source, step["task_id"]) / "workspace"
                target = root / step["path"]
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(step["text"], encoding="utf-8")
                out = {"ok": True}
            elif op == "publish":
                svc.worker_publish(source, step["task_id"], step["path"])
                out = {"ok": True}
            elif op == "finish":
                svc.worker_finish(source, step["task_id"], step["state"], step["summary"])
                out = {"ok": True}
            else:
                out = {"bad_step": op}
        except CollabError as exc:
            out = {"error": exc.code}
        except Exception as exc:  # the reference raises past its handlers here
            out = {"exception": type(exc).__name__}
        print(json.dumps(out, ensure_ascii=False), flush=True)
    svc.stop_dispatcher()


if __name__ == "__main__":
    main()
