#!/usr/bin/env python3
"""Run a reference-SDK ``hooks.py`` as a palaver hooks program.

Protocols written for the reference client ship a ``hooks.py`` whose
``class Hooks`` extends the SDK's ``ProtocolHooks`` and exposes ``proto_*``
methods. palaver drives hooks through a JSON-lines contract instead
(docs/hooks.md). This program sits between the two: palaver starts it as the
hooks program of such a protocol directory, it loads ``hooks.py`` with the
installed SDK and answers each request by calling the matching ``proto_*``
method with the arguments the reference engine would pass.

Invocation (palaver sets the working directory to the protocol dir)::

    <python with aigenora 0.1.4> aigenora_bridge.py [<protocol_dir>]

Optional environment:

    PALAVER_HOOKS_STATE_DIR  writable directory used as the hooks' state_dir
                             (snapshot.json, details.jsonl, decision/, files
                             the hooks keep). Without it a private temporary
                             directory is used and swept up later.
    PALAVER_STRATEGY_FILE    the session's strategy.json; the hooks'
                             StrategyStore reads (and writes) it, so strategy
                             and whisper changes made in palaver reach them.
    PALAVER_ALLOW_SKELETON_HOOKS / AIGENORA_ALLOW_SKELETON_HOOKS
                             1/true/yes runs an unimplemented generated
                             hooks.py anyway.

Only the standard library and the reference SDK are used.
"""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import io
import json
import os
import re
import select
import shutil
import sys
import tempfile
import threading
import traceback
from pathlib import Path

PROG = "aigenora_bridge"
SDK_VERSION = "0.1.4"

# Exit statuses (palaver shows the status and the last lines of stderr).
EXIT_PROTOCOL_ERROR = 2  # palaver sent something that is not a request
EXIT_NO_SDK = 3  # the reference SDK cannot be imported
EXIT_BAD_HOOKS = 4  # hooks.py missing, broken, or an unimplemented skeleton

# Decision windows palaver knows how to open (engine/external.rs).
PALAVER_MATCH_KEYS = ("round", "turn", "attempt", "setup", "action_seq")
PALAVER_VALUE_FIELDS = ("choice", "number", "move", "bid", "secret", "text")

# Events the SDK writes around its own decision windows. palaver runs those
# windows itself and records the same kinds, so forwarding these would only
# double them up.
LOCAL_WINDOW_EVENTS = frozenset(
    {
        "local_decision_window_started",
        "local_decision_ready",
        "local_decision_updated",
        "local_decision_consumed",
        "local_decision_fallback",
        "local_decision_finalized",
    }
)


def note(text: str) -> None:
    """One diagnostic line on stderr."""
    try:
        sys.stderr.write(f"{PROG}: {text}\n")
        sys.stderr.flush()
    except Exception:
        pass


# Run before the process ends, also on the os._exit paths.
_AT_END: list = []


def finish(status: int) -> None:
    """Ends the process now: cleanup, flush the log, exit with `status`.

    os._exit rather than SystemExit, so that nothing in the hooks (a bare
    `except:`, a finally that blocks) can keep the process alive.
    """
    for fn in reversed(_AT_END):
        try:
            fn()
        except Exception:
            pass
    os._exit(status)


class StderrPump(io.TextIOBase):
    """sys.stdout and sys.stderr for the hooks: never blocks the caller.

    palaver reads the program's stderr only when something goes wrong, so a
    chatty hooks.py could fill the pipe and stall inside a hook. Text is
    queued here and written by a helper thread; past `limit` bytes the
    oldest queued text is dropped (and counted).
    """

    def __init__(self, fd: int, limit: int = 1 << 20) -> None:
        super().__init__()
        self._fd = fd
        self._limit = limit
        self._queue: list = []
        self._size = 0
        self._dropped = 0
        self._idle = True
        self._cond = threading.Condition()
        threading.Thread(target=self._run, name="stderr-pump", daemon=True).start()

    encoding = "utf-8"
    errors = "replace"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self._fd

    def write(self, s) -> int:
        if not isinstance(s, str):
            s = str(s)
        data = s.encode("utf-8", "replace")
        with self._cond:
            if self._idle and not self._queue and len(data) <= select.PIPE_BUF:
                # Fast path, in order and at once (so a line printed just
                # before os._exit is not lost): a pipe that polls writable
                # takes PIPE_BUF bytes without blocking.
                try:
                    if select.select([], [self._fd], [], 0)[1]:
                        os.write(self._fd, data)
                        return len(s)
                except (OSError, ValueError):
                    pass
            while self._queue and self._size + len(data) > self._limit:
                self._size -= len(self._queue.pop(0))
                self._dropped += 1
            self._queue.append(data)
            self._size += len(data)
            self._cond.notify()
        return len(s)

    def flush(self) -> None:
        pass

    def drain(self, timeout: float) -> None:
        """Waits up to `timeout` s for the queue to be written out."""
        import time

        end = time.monotonic() + timeout
        with self._cond:
            while (self._queue or not self._idle) and time.monotonic() < end:
                self._cond.wait(0.02)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue:
                    self._idle = True
                    self._cond.notify_all()
                    self._cond.wait()
                self._idle = False
                chunk = b"".join(self._queue)
                self._queue.clear()
                self._size = 0
                dropped, self._dropped = self._dropped, 0
            if dropped:
                chunk = f"[{PROG}: {dropped} log writes dropped]\n".encode() + chunk
            try:
                view = memoryview(chunk)
                while view:
                    n = os.write(self._fd, view)
                    view = view[n:]
            except OSError:
                pass


# --------------------------------------------------------------------------
# The protocol channel
# --------------------------------------------------------------------------


class Channel:
    """palaver's request/reply lines, on private copies of fds 0 and 1.

    Everything else in the process gets stdin from /dev/null and a stdout
    that ends up in the log (stderr): a stray ``print``, a write to fd 1 or
    a child process's output can never corrupt the JSON-lines stream, nor
    read palaver's requests.
    """

    def __init__(self) -> None:
        in_fd = os.dup(0)
        out_fd = os.dup(1)
        sys.stdout.flush()
        sys.stderr.flush()
        null_fd = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null_fd, 0)
        os.close(null_fd)
        # Python-level writes (print, tracebacks) go to the pump, which never
        # blocks. fd 1 becomes a pipe this process drains into the same pump,
        # so fd-level writes to stdout cannot block either. fd 2 stays the
        # real stderr, so a hard crash can still be reported.
        self.log = StderrPump(2)
        read_end, write_end = os.pipe()
        os.dup2(write_end, 1)
        os.close(write_end)
        threading.Thread(target=self._drain_fd1, args=(read_end,), name="fd1-drain", daemon=True).start()
        sys.stdout = sys.stderr = self.log
        sys.stdin = open(os.devnull, "r", encoding="utf-8")
        _AT_END.append(lambda: self.log.drain(1.0))
        self._in = io.TextIOWrapper(
            io.BufferedReader(io.FileIO(in_fd, "rb")), encoding="utf-8", errors="replace", newline="\n"
        )
        self._out_fd = out_fd
        self._lock = threading.Lock()
        # Id of the request being answered (decide lines carry it).
        self.current_id = None

    def _drain_fd1(self, fd: int) -> None:
        while True:
            try:
                data = os.read(fd, 65536)
            except OSError:
                return
            if not data:
                return
            self.log.write(data.decode("utf-8", "replace"))

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._out_fd, view):]

    def send(self, obj: dict) -> None:
        # ASCII-only output: a lone surrogate or odd character from the hooks
        # can never produce bytes palaver cannot decode.
        data = (json.dumps(obj, ensure_ascii=True, allow_nan=False, separators=(",", ":")) + "\n").encode()
        with self._lock:
            try:
                self._write_all(data)
            except OSError:
                # palaver is gone; nobody is left to answer.
                finish(0)

    def read_line(self) -> str | None:
        """The next non-blank line, or None at end of input."""
        while True:
            line = self._in.readline()
            if line == "":
                return None
            if line.strip():
                return line

    def report(self, obj: dict) -> None:
        """A reporting line without an id (snapshot/detail/event)."""
        try:
            text = json.dumps(obj, ensure_ascii=True, allow_nan=False, default=str, separators=(",", ":"))
        except (TypeError, ValueError) as e:
            note(f"dropped a report that is not JSON ({e})")
            return
        with self._lock:
            try:
                self._write_all((text + "\n").encode())
            except OSError:
                finish(0)


def fatal_input(what: str, line: str) -> None:
    shown = line.strip()
    if len(shown) > 200:
        shown = shown[:200] + "…"
    note(f"{what}: {shown!r}; expected one JSON object per line as in docs/hooks.md")
    finish(EXIT_PROTOCOL_ERROR)


# --------------------------------------------------------------------------
# Start-up: the SDK, the protocol dir, hooks.py
# --------------------------------------------------------------------------


def import_sdk():
    try:
        import aigenora.proto.hooks as sdk_hooks
        import aigenora.proto.sdk as sdk
    except ImportError as e:
        note(
            f"the reference SDK is not importable by {sys.executable} "
            f"(Python {sys.version.split()[0]}: {e}); install it with "
            f"`{sys.executable} -m pip install aigenora=={SDK_VERSION}`, or name a Python that "
            f"has it: hooks_python in palaver's config.toml, or PALAVER_HOOKS_PYTHON"
        )
        finish(EXIT_NO_SDK)
    try:
        from importlib.metadata import version

        found = version("aigenora")
        if found != SDK_VERSION:
            note(f"aigenora {found} found; this bridge follows {SDK_VERSION}")
    except Exception:
        pass
    return sdk_hooks, sdk


def flag_set(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes")


def skeleton_reason(proto_dir: Path, text: str) -> str | None:
    """Why hooks.py is an unimplemented generated skeleton, or None.

    palaver checks the file its command names, which is this bridge, so the
    generated-skeleton check of hooks.py itself happens here. The marker
    names are assembled at run time so that this file never looks like a
    skeleton to palaver's own scan.
    """
    for prefix in ("AIGENORA", "PALAVER"):
        flag = prefix + "_SKELETON"
        if re.search(r"^" + flag + r"\s*=\s*True\b", text, re.MULTILINE):
            return f"it still says {flag} = True"
        missing = re.findall(flag + "_NOT_" + r"IMPLEMENTED:\s*(\w+)", text)
        if missing:
            return "unimplemented hooks: " + ", ".join(dict.fromkeys(missing))
    spec_bytes = b""
    try:
        spec_bytes = (proto_dir / "spec.json").read_bytes()
    except OSError:
        pass
    for sidecar in (".aigenora-hooks.json", ".palaver-hooks.json"):
        try:
            side = json.loads((proto_dir / sidecar).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(side, dict):
            continue
        same_hooks = side.get("skeleton_hash") == hashlib.sha256(text.encode("utf-8")).hexdigest()
        same_spec = side.get("spec_hash") == hashlib.sha256(spec_bytes).hexdigest()
        if same_hooks and same_spec:
            return f"it is unchanged since it was generated ({sidecar})"
    return None


def load_hooks_class(proto_dir: Path, ProtocolHooks):
    hooks_file = proto_dir / "hooks.py"
    try:
        text = hooks_file.read_text(encoding="utf-8")
    except OSError as e:
        note(f"cannot read {hooks_file}: {e}")
        finish(EXIT_BAD_HOOKS)
    if not (flag_set("PALAVER_ALLOW_SKELETON_HOOKS") or flag_set("AIGENORA_ALLOW_SKELETON_HOOKS")):
        why = skeleton_reason(proto_dir, text)
        if why:
            note(
                f"{hooks_file} is an unimplemented hooks skeleton ({why}); implement it, or set "
                f"PALAVER_ALLOW_SKELETON_HOOKS=1 to run it anyway"
            )
            finish(EXIT_BAD_HOOKS)
    # Sibling modules of hooks.py must import; the bridge's own directory
    # (first on sys.path when run as a script) must not shadow them.
    here = str(Path(__file__).resolve().parent)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    sys.path.insert(0, str(proto_dir))
    digest = hashlib.sha256(str(hooks_file.resolve()).encode()).hexdigest()[:12]
    name = f"palaver_bridged_hooks_{digest}"
    try:
        spec = importlib.util.spec_from_file_location(name, hooks_file)
        if spec is None or spec.loader is None:
            raise ImportError(f"no loader for {hooks_file}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    except BaseException as e:  # noqa: BLE001 - anything here means the file is unusable
        if isinstance(e, KeyboardInterrupt):
            raise
        traceback.print_exc(file=sys.stderr)
        note(f"cannot load {hooks_file}: {type(e).__name__}: {e}")
        finish(EXIT_BAD_HOOKS)
    cls = getattr(module, "Hooks", None)
    if not isinstance(cls, type):
        note(f"{hooks_file} defines no class Hooks")
        finish(EXIT_BAD_HOOKS)
    if not issubclass(cls, ProtocolHooks):
        note(f"{hooks_file}: class Hooks must derive from aigenora.proto.hooks.ProtocolHooks")
        finish(EXIT_BAD_HOOKS)
    return cls


# --------------------------------------------------------------------------
# Private state dirs
# --------------------------------------------------------------------------


def scratch_state_dir() -> tuple[Path, bool]:
    """The hooks' state_dir and whether this process owns (and removes) it."""
    given = os.environ.get("PALAVER_HOOKS_STATE_DIR")
    if given:
        path = Path(given)
        path.mkdir(parents=True, exist_ok=True)
        return path, False
    base = Path(tempfile.gettempdir()) / "palaver-aigenora-bridge"
    base.mkdir(parents=True, exist_ok=True)
    # palaver may end a session with SIGKILL, leaving no chance to clean up;
    # sweep the leftovers of bridges that are no longer running.
    for entry in base.iterdir():
        pid = entry.name.split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(entry, ignore_errors=True)
        except OSError:
            pass
    return Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=base)), True


# --------------------------------------------------------------------------
# The bridge
# --------------------------------------------------------------------------


class Bridge:
    def __init__(self, channel: Channel, proto_dir: Path, sdk_hooks, sdk) -> None:
        self.ch = channel
        self.proto_dir = proto_dir
        self.HookResult = sdk_hooks.HookResult
        self.sdk = sdk
        self.spec = self._read_spec()
        self.flow_mode = ((self.spec.get("flow") or {}).get("mode")) or "session_loop"
        self.hooks_cls = None
        self.hooks = None  # the session's instance, made by `init`
        # The `state` dict the reference engine shares between round_value
        # and the judges of one side for the whole session.
        self.round_state: dict = {}
        # Reporting is off while `describe` runs its throw-away instance.
        self.reporting = False
        # Automatic values the hooks announced (strategy_applied), by round;
        # shown to palaver as the `auto` of the round's decision window.
        self.announced_auto: dict = {}
        # authoritative_realtime: the current state (the reference's
        # proto_realtime_* methods take it as an argument; the bridge keeps
        # it between palaver's calls) and the strategy palaver last passed.
        self.rt_state = None
        self.rt_strategy = None
        self.state_dir, self.owns_state_dir = scratch_state_dir()
        self.strategy_file = os.environ.get("PALAVER_STRATEGY_FILE") or None
        self._install_sdk_overrides()

    def _read_spec(self) -> dict:
        try:
            spec = json.loads((self.proto_dir / "spec.json").read_text(encoding="utf-8"))
            return spec if isinstance(spec, dict) else {}
        except (OSError, ValueError) as e:
            note(f"cannot read {self.proto_dir / 'spec.json'} ({e}); assuming session_loop without timing")
            return {}

    def cleanup(self) -> None:
        if self.owns_state_dir:
            shutil.rmtree(self.state_dir, ignore_errors=True)

    # ---- SDK overrides -----------------------------------------------------
    #
    # The base class builds its buses in proto_init with
    # `from aigenora.proto.sdk import SnapshotBus, DetailLog, StrategyStore,
    # DecisionBus` (and the helpers import EventBus the same way), so the
    # names are looked up in the sdk module at call time. Replacing them there
    # with subclasses, before hooks.py is loaded, reaches every bus the hooks
    # create, including the ones made inside proto_init, while leaving the
    # hooks' own code untouched.

    def _install_sdk_overrides(self) -> None:
        sdk = self.sdk
        bridge = self

        class ForwardingSnapshotBus(sdk.SnapshotBus):
            """snapshot.json as before, plus each change sent to palaver."""

            def update(self, patch=None, **kwargs):
                new = super().update(patch, **kwargs)
                keys = set(patch or {}) | set(kwargs)
                bridge.report_snapshot({k: new[k] for k in keys if k in new})
                return new

            def write(self, snapshot):
                super().write(snapshot)
                bridge.report_snapshot(dict(snapshot))

        class ForwardingDetailLog(sdk.DetailLog):
            """details.jsonl as before (hooks read it back), plus palaver."""

            def append(self, entry=None, **kwargs):
                record = super().append(entry, **kwargs)
                if bridge.reporting:
                    bridge.ch.report({"detail": record})
                return record

        class ForwardingEventBus(sdk.EventBus):
            """events.jsonl as before; the hooks' own event kinds go to
            palaver as hook events."""

            def emit(self, event_type, data=None, summary=None):
                super().emit(event_type, data, summary)
                bridge.note_event(event_type, data, summary)

        class SessionStrategyStore(sdk.StrategyStore):
            """Reads palaver's strategy.json when palaver names it, and the
            strategy palaver passes with `realtime_commands` once it has."""

            def __init__(self, state_dir, default=None):
                super().__init__(state_dir, default)
                if bridge.strategy_file:
                    self.path = Path(bridge.strategy_file)
                    self.events_path = self.path.with_name("strategy_events.jsonl")

            def read(self):
                if bridge.rt_strategy is not None:
                    # A copy: the hooks may change what they read.
                    return copy.deepcopy(bridge.rt_strategy)
                return super().read()

        class PalaverDecisionBus(sdk.DecisionBus):
            """Takes local decisions from palaver instead of decision/decisions.jsonl.

            Why here: every SDK decision helper funnels into this object.
            `_await_human_decision` (human) ends in `await_latest_decision`;
            `_consume_hybrid` (hybrid) ends in `consume_latest_for_match`;
            hooks on the older API call `await_decision` directly. Replacing
            those three reads keeps everything the helpers do around them
            (timing snapshot, policy/intent materialisation, the hook's own
            legality checks and fallbacks), and palaver's console, whispers
            and `session decide` supply the value. The bus is only created in
            hybrid and human modes, so autonomous play never asks.
            """

            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                self._asked = set()

            def await_latest_decision(self, match_key, match_value, release_at, deadline_at, fallback_value=None):
                # palaver's window applies the same min/max think times from
                # the spec and options; the hook's own timestamps are unused.
                body, explicit = bridge.ask(match_key, match_value, {})
                if explicit:
                    self._write_finalized(match_key, match_value, "release")
                    return body
                if self.require_explicit:
                    self._write_finalized(match_key, match_value, "timeout")
                    raise sdk.DecisionTimeoutError(
                        f"Human decision timed out waiting for {match_key}={match_value}"
                    )
                self._write_finalized(match_key, match_value, "fallback")
                if fallback_value is not None:
                    return fallback_value
                if isinstance(self.fallback_value, dict):
                    return self.fallback_value
                return {"value": self.fallback_value} if self.fallback_value is not None else {}

            def consume_latest_for_match(self, match_key, match_value, *, consumer_id=None):
                # `_consume_hybrid` polls this during min_think_seconds; palaver
                # already held its window that long, so ask once per window.
                key = (match_key, json.dumps(match_value, sort_keys=True, default=str))
                if key in self._asked:
                    return None
                self._asked.add(key)
                # A decision the hooks' own policy/intent machinery queued in
                # the private decisions.jsonl is this side's automatic choice.
                queued = super().consume_latest_for_match(match_key, match_value, consumer_id=consumer_id)
                auto = strip_meta(queued) if queued else bridge.announced(match_key, match_value)
                body, explicit = bridge.ask(match_key, match_value, auto)
                return body if explicit else queued

            def await_decision(self, match_key, match_value, timeout=None):
                body, explicit = bridge.ask(match_key, match_value, {})
                if explicit:
                    return body
                if self.timeout_action == "fallback" and self.fallback_value is not None:
                    fb = self.fallback_value
                    return fb if isinstance(fb, dict) else {"value": fb}
                raise sdk.DecisionTimeoutError(f"Decision timed out waiting for {match_key}={match_value}")

        sdk.SnapshotBus = ForwardingSnapshotBus
        sdk.DetailLog = ForwardingDetailLog
        sdk.EventBus = ForwardingEventBus
        sdk.StrategyStore = SessionStrategyStore
        sdk.DecisionBus = PalaverDecisionBus

    # ---- reporting -----------------------------------------------------------

    def report_snapshot(self, patch: dict) -> None:
        if not self.reporting:
            return
        # palaver stamps its own updated_at, and its decision windows own the
        # `timing` block (the hook's copy holds this process's clock).
        patch.pop("updated_at", None)
        patch.pop("timing", None)
        if patch:
            self.ch.report({"snapshot": patch})

    def note_event(self, kind, data, summary) -> None:
        if kind == "strategy_applied" and isinstance(data, dict) and "round" in data:
            self.announced_auto[("round", json.dumps(data.get("round"), default=str))] = data.get("result")
        if not self.reporting or kind in LOCAL_WINDOW_EVENTS or not isinstance(kind, str):
            return
        line = {"event": kind, "data": data if isinstance(data, dict) else {}}
        if summary:
            line["summary"] = str(summary)
        self.ch.report(line)

    # ---- decisions ---------------------------------------------------------------

    def schema(self) -> dict:
        hooks = self.hooks if self.hooks is not None else self.hooks_cls
        try:
            getter = getattr(hooks, "get_decision_schema", None)
            sc = getter() if callable(getter) and self.hooks is not None else getattr(hooks, "DECISION_SCHEMA", None)
        except Exception:
            sc = getattr(hooks, "DECISION_SCHEMA", None)
        return sc if isinstance(sc, dict) else {}

    def value_field(self, match_key: str) -> str:
        sc = self.schema()
        if sc.get("setup_match_key") == match_key:
            field = sc.get("setup_value_field") or ""
        elif sc.get("match_key") == match_key:
            field = sc.get("value_field") or ""
        elif self.flow_mode == "simultaneous_round" and match_key == "round":
            field = ((self.spec.get("flow") or {}).get("round") or {}).get("value_field") or "value"
        else:
            field = ""
        return field if field in PALAVER_VALUE_FIELDS else ""

    def announced(self, match_key, match_value) -> dict:
        field = self.value_field(match_key)
        key = (match_key, json.dumps(match_value, default=str))
        if field and key in self.announced_auto:
            return {field: self.announced_auto[key]}
        return {}

    def ask(self, match_key, match_value, auto: dict) -> tuple[dict, bool]:
        """One `decide` exchange: (decision body, whether it is explicit).

        palaver answers with an explicit decision, or in hybrid mode with the
        `auto` it was given (`{value_field: null}` when that was empty).
        """
        if match_key not in PALAVER_MATCH_KEYS:
            raise RuntimeError(
                f"palaver cannot open a decision window keyed by {match_key!r} "
                f"(it knows {', '.join(PALAVER_MATCH_KEYS)})"
            )
        if self.ch.current_id is None:
            raise RuntimeError("a decision was requested outside a hook call")
        field = self.value_field(match_key)
        auto = dict(auto or {})
        rid = self.ch.current_id
        self.ch.send(
            {
                "id": rid,
                "decide": {"match_key": match_key, "match_value": match_value, "auto": auto, "value_field": field},
            }
        )
        line = self.ch.read_line()
        if line is None:
            # The session ended while the window was open.
            finish(0)
        try:
            reply = json.loads(line)
        except ValueError:
            fatal_input("malformed reply to a decide request", line)
        if not isinstance(reply, dict) or reply.get("id") != rid or "decision" not in reply:
            fatal_input(f"expected {{\"id\":{rid},\"decision\":{{…}}}}", line)
        decision = reply.get("decision")
        if not isinstance(decision, dict):
            decision = {}
        if getattr(self.hooks, "control_mode", None) == "human":
            # palaver answers a human window only with an explicit decision
            # (or not at all); the hook judges whether it is legal.
            explicit = True
        else:
            # Hybrid: palaver echoes `auto` when nobody decided in the window.
            core = {k: v for k, v in decision.items() if k != "_meta" and k not in PALAVER_MATCH_KEYS}
            auto_core = {k: v for k, v in auto.items() if k != "_meta" and k not in PALAVER_MATCH_KEYS}
            explicit = bool(core) and core != auto_core and (not field or core.get(field) is not None)
        if not explicit:
            return {}, False
        body = dict(decision)
        # Records on the reference bus always carry their window key.
        body.setdefault(match_key, match_value)
        body.setdefault("_meta", {"origin": "palaver"})
        return body, True

    # ---- results -------------------------------------------------------------------

    def as_result(self, value) -> dict:
        """A hook's return in palaver's explicit hook-result shape.

        The reference engine reads a HookResult as it is, a dict as the
        response frame, anything else as no response. The explicit wrapper
        keeps a frame that has a `completed` field from being misread.
        """
        if isinstance(value, self.HookResult) or (
            hasattr(value, "response") and hasattr(value, "completed") and hasattr(value, "abort")
        ):
            response = value.response if isinstance(value.response, dict) else None
            return {"response": response, "completed": bool(value.completed), "abort": bool(value.abort)}
        if isinstance(value, dict):
            return {"response": value, "completed": False, "abort": False}
        return {"response": None, "completed": False, "abort": False}

    def as_frame(self, value):
        if isinstance(value, self.HookResult):
            value = value.response
        return value if isinstance(value, dict) else None

    def live(self):
        if self.hooks is None:
            raise RuntimeError("`init` must come before the other hooks")
        return self.hooks

    # ---- the hooks of palaver's contract ------------------------------------------------

    def h_describe(self, args: dict):
        modes_src = getattr(self.hooks_cls, "SUPPORTED_CONTROL_MODES", ("autonomous", "hybrid"))
        probe = None
        meta = None
        scratch = Path(tempfile.mkdtemp(prefix="describe-", dir=self.state_dir))
        try:
            probe = self.hooks_cls()
            provider = getattr(probe, "supported_control_modes", None)
            if callable(provider):
                modes_src = provider()
            # Like the reference host: a throw-away instance initialised in a
            # scratch dir with no decision config, asked for its metadata.
            probe.proto_init({}, "host", [], scratch, None)
            probe.timing = self.spec.get("timing")
            meta = probe.proto_host_metadata()
        except Exception as e:
            note(f"describe: metadata unavailable ({type(e).__name__}: {e}); using spec.json")
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        modes = []
        for m in modes_src or ():
            m = str(m).strip().lower()
            if m == "coach":
                m = "human"
            if m in ("autonomous", "hybrid", "human") and m not in modes:
                modes.append(m)
        name, tags, invite, defaults = self.spec.get("name") or "Protocol", self.spec.get("tags") or "", "supply", {}
        if isinstance(meta, (tuple, list)) and len(meta) >= 4:
            name, tags, invite, defaults = meta[0], meta[1], meta[2], meta[3]
        if isinstance(tags, (list, tuple)):
            tags = ",".join(str(t) for t in tags)
        schema = None
        try:
            getter = getattr(probe, "get_decision_schema", None) if probe is not None else None
            schema = getter() if callable(getter) else getattr(self.hooks_cls, "DECISION_SCHEMA", None)
        except Exception:
            schema = getattr(self.hooks_cls, "DECISION_SCHEMA", None)
        schema = dict(schema) if isinstance(schema, dict) and schema else None
        if schema and isinstance(schema.get("choices"), dict):
            # The SDK maps each choice to its whisper keywords; palaver's
            # prompt and strategy editor want the list of choices.
            schema["choice_keywords"] = schema["choices"]
            schema["choices"] = list(schema["choices"])
        return {
            "supported_control_modes": modes,
            "decision_schema": schema,
            "metadata": {
                "display_name": str(name),
                "tags": str(tags),
                "invite_type": str(invite or "supply"),
                "default_options": defaults if isinstance(defaults, dict) else {},
            },
            # Not read by palaver today; lists the bridge's extra hooks.
            "bridge": {
                "sdk": SDK_VERSION,
                "round_judge_pure": callable(getattr(self.hooks_cls, "proto_round_judge_pure", None)),
                "display": True,
            },
        }

    def h_init(self, args: dict):
        role = args.get("role")
        if role not in ("host", "guest"):
            raise ValueError(f"init: role must be host or guest, not {role!r}")
        mode = args.get("control_mode") or "hybrid"
        options = args.get("options") or {}
        if not isinstance(options, dict):
            raise ValueError("init: options must be an object")
        self.hooks = self.hooks_cls()
        self.round_state = {}
        self.rt_state = None
        self.rt_strategy = None
        self.reporting = True
        # The reference engine: free mode initialises without a decision
        # config (so the hooks run autonomous); the other modes get the
        # config of the local control mode.
        config = None if self.flow_mode == "free" else self.decision_config(mode)
        extra = [str(a) for a in (args.get("args") or [])]
        self.hooks.proto_init(dict(options), role, extra, self.state_dir, config)
        self.hooks.timing = self.spec.get("timing")
        return None

    def decision_config(self, mode: str):
        decision = self.spec.get("decision") or {}
        if not isinstance(decision, dict):
            decision = {}
        if mode == "autonomous":
            return None
        if mode == "human":
            return {
                "mode": "manual",
                "control_mode": "human",
                "timeout_seconds": decision.get("timeout_seconds", 120),
                "timeout_action": "abort",
                "require_explicit": True,
            }
        return {
            "mode": "auto",
            "control_mode": "hybrid",
            "timeout_seconds": decision.get("timeout_seconds", 120),
            "timeout_action": decision.get("timeout_action", "fallback"),
        }

    def h_host_handle_join(self, args):
        return self.as_result(self.live().proto_host_handle_join(msg_of(args)))

    def h_host_handle(self, args):
        return self.as_result(self.live().proto_host_handle(msg_of(args)))

    def h_guest_join_message(self, args):
        frame = self.as_frame(self.live().proto_guest_join_message())
        if frame is None:
            raise TypeError("proto_guest_join_message must return the join frame (a dict)")
        return frame

    def h_guest_handle_ready(self, args):
        self.live().proto_guest_handle_ready(msg_of(args))
        return None

    def h_guest_first_action(self, args):
        return self.as_frame(self.live().proto_guest_first_action())

    def h_guest_handle(self, args):
        return self.as_result(self.live().proto_guest_handle(msg_of(args)))

    def h_round_value(self, args):
        return self.live().proto_round_value(int_arg(args, "round"), self.round_state)

    def h_round_judge(self, args):
        result = self.live().proto_round_judge(
            int_arg(args, "round"), args.get("host_value"), args.get("guest_value"), self.round_state
        )
        return self.as_result(result)

    def h_round_judge_pure(self, args):
        # The guest's shadow judge (spec
        # `shadow_judge: true`); null when the hooks have no pure judge.
        judge = getattr(self.live(), "proto_round_judge_pure", None)
        if not callable(judge):
            return None
        return judge(int_arg(args, "round"), args.get("host_value"), args.get("guest_value"), self.round_state)

    def h_on_message(self, args):
        self.live().proto_on_message(msg_of(args))
        return None

    def h_on_send(self, args):
        self.live().proto_on_send(msg_of(args))
        return None

    def h_on_end(self, args):
        self.live().proto_on_end()
        return None

    def h_display(self, args):
        # Not called by palaver yet: the console line for a frame.
        text = self.live().proto_display(msg_of(args), args.get("direction") or "received")
        return text if isinstance(text, str) and text else None

    # ---- authoritative_realtime ------------------------------------------------------
    #
    # palaver's realtime runtime asks for one step of the rules at a time; the
    # reference's methods take the state as an argument. The bridge holds the
    # current state: set by the initial state and each step (host) or by
    # `realtime_observe` (guest), read by validation and the commander.

    def realtime_method(self, name: str):
        method = getattr(self.live(), "proto_realtime_" + name, None)
        if not callable(method):
            mode = self.flow_mode
            raise RuntimeError(
                f"hooks.py has no proto_realtime_{name} (its spec's flow.mode is {mode!r}, "
                f"the realtime hooks are for authoritative_realtime protocols)"
            )
        return method

    def current_state(self) -> dict:
        if not isinstance(self.rt_state, dict):
            raise RuntimeError("no realtime state yet (realtime_initial_state or realtime_observe comes first)")
        return self.rt_state

    @staticmethod
    def stepped(result, what: str) -> dict:
        """A step's result as palaver reads it, checked as the reference's runtime checks it."""
        if not isinstance(result, dict) or not isinstance(result.get("state"), dict):
            raise ValueError(f"{what} must return an object containing state")
        events = result.get("events", [])
        if events is None:
            events = []
        outcome = result.get("outcome", "none")
        if not isinstance(events, list) or not all(isinstance(e, dict) for e in events):
            raise ValueError(f"{what} events must be a list of objects")
        if outcome not in ("none", "host", "guest", "draw"):
            raise ValueError(f"{what} outcome is invalid")
        return {"state": result["state"], "events": events, "outcome": outcome}

    def h_realtime_initial_state(self, args):
        state = self.realtime_method("initial_state")()
        if not isinstance(state, dict):
            raise ValueError("proto_realtime_initial_state must return an object")
        self.rt_state = state
        return {"state": state, "events": [], "outcome": "none"}

    def h_realtime_validate_commands(self, args):
        side = args.get("side")
        if side not in ("host", "guest"):
            raise ValueError(f"realtime_validate_commands: side must be host or guest, not {side!r}")
        validate = self.realtime_method("validate_commands")
        state = self.current_state()
        target = int_arg(args, "target_tick")
        commands = args.get("commands")
        # As the reference's runtime: whatever the hooks raise refuses the
        # batch, and the peer is told why.
        try:
            if not isinstance(commands, list):
                raise ValueError("commands must be a list")
            normalized = validate(side, commands, state, target)
            if not isinstance(normalized, list):
                raise ValueError("proto_realtime_validate_commands must return a list")
        except Exception as e:
            return {"rejected": str(e)[:200]}
        return {"accepted": normalized}

    def h_realtime_step(self, args):
        step = self.realtime_method("step")
        state = self.current_state()
        host, guest = args.get("host"), args.get("guest")
        if not isinstance(host, list) or not isinstance(guest, list):
            raise TypeError("realtime_step: host and guest must be lists of commands")
        out = self.stepped(step(state, int_arg(args, "tick"), {"host": host, "guest": guest}), "proto_realtime_step")
        self.rt_state = out["state"]
        return out

    def h_realtime_observe(self, args):
        state = args.get("state")
        if not isinstance(state, dict):
            raise TypeError("realtime_observe: state must be an object")
        self.rt_state = state
        return None

    def h_realtime_commands(self, args):
        strategy = args.get("strategy")
        if strategy is None:
            strategy = {}
        if not isinstance(strategy, dict):
            raise TypeError("realtime_commands: strategy must be an object")
        commands = self.realtime_method("commands")
        state = self.current_state()
        # The hooks' self.strategy.read() now returns this.
        self.rt_strategy = strategy
        raw = commands(state, int_arg(args, "target_tick"))
        if not isinstance(raw, list):
            raise ValueError("proto_realtime_commands must return a list")
        return raw

    def h_realtime_audit_outcome(self, args):
        frame = args.get("frame")
        if not isinstance(frame, dict):
            raise TypeError("realtime_audit_outcome: frame must be an object")
        audit = self.realtime_method("audit_outcome")(frame)
        if not isinstance(audit, dict):
            raise ValueError("proto_realtime_audit_outcome must return an object")
        return audit

    def h_realtime_snapshot(self, args):
        state = args.get("state")
        if not isinstance(state, dict):
            raise TypeError("realtime_snapshot: state must be an object")
        events = args.get("events")
        # The reference passes the whole frame; its state and events are
        # what a snapshot reads.
        patch = self.realtime_method("snapshot")(state, {"state": state, "events": events if isinstance(events, list) else []})
        return patch if isinstance(patch, dict) else {"world": state}

    # ---- the loop ----------------------------------------------------------------

    def serve(self) -> None:
        handlers = {name[2:]: getattr(self, name) for name in dir(self) if name.startswith("h_")}
        while True:
            line = self.ch.read_line()
            if line is None:
                return
            try:
                req = json.loads(line)
            except ValueError:
                fatal_input("malformed request line", line)
            if not isinstance(req, dict) or "id" not in req or not isinstance(req.get("hook"), str):
                fatal_input("not a request (needs an `id` and a `hook`)", line)
            rid, hook = req["id"], req["hook"]
            args = req.get("args")
            if args is None:
                args = {}
            if not isinstance(args, dict):
                fatal_input(f"`args` of {hook} is not an object", line)
            handler = handlers.get(hook)
            if handler is None:
                self.ch.send({"id": rid, "ok": False, "error": f"unknown hook {hook!r}"})
                continue
            self.ch.current_id = rid
            try:
                result = handler(args)
                reply = {"id": rid, "ok": True, "result": result}
                try:
                    json.dumps(reply, allow_nan=False)
                except (TypeError, ValueError) as e:
                    raise TypeError(f"{hook} returned a value that is not JSON: {e}") from None
            except SystemExit as e:
                # A hook that exits means it: end the process (palaver then
                # ends the session with the exit status and this line).
                note(f"the hooks called sys.exit({e.code!r}) during {hook}")
                finish(e.code if isinstance(e.code, int) else 1)
            except Exception as e:
                note(f"{hook} raised:")
                traceback.print_exc(file=sys.stderr)
                sys.stderr.flush()
                reply = {"id": rid, "ok": False, "error": f"{type(e).__name__}: {e}"}
            finally:
                self.ch.current_id = None
            self.ch.send(reply)


def msg_of(args: dict) -> dict:
    msg = args.get("msg")
    if not isinstance(msg, dict):
        raise TypeError("`msg` must be an object")
    return msg


def int_arg(args: dict, key: str) -> int:
    v = args.get(key)
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"`{key}` must be an integer")
    return v


def strip_meta(record: dict) -> dict:
    return {k: v for k, v in record.items() if k != "_meta"}


def main(argv: list[str]) -> int:
    channel = Channel()
    proto_dir = Path(argv[1] if len(argv) > 1 else ".").resolve()
    if not (proto_dir / "hooks.py").is_file():
        note(f"{proto_dir} has no hooks.py (usage: aigenora_bridge.py [<protocol_dir>])")
        return EXIT_BAD_HOOKS
    sdk_hooks, sdk = import_sdk()
    bridge = Bridge(channel, proto_dir, sdk_hooks, sdk)
    _AT_END.append(bridge.cleanup)
    bridge.hooks_cls = load_hooks_class(proto_dir, sdk_hooks.ProtocolHooks)
    bridge.serve()
    return 0


if __name__ == "__main__":
    try:
        status = main(sys.argv)
    except BaseException:  # noqa: BLE001 - a bridge bug must still end cleanly
        traceback.print_exc(file=sys.stderr)
        note("internal error (traceback above)")
        status = 1
    finish(status)
