"""``havln-robot policy-server CKPT --port N``: serve any :class:`Policy` over HTTP (stdlib, no ROS).

Runs on the inference machine (a workstation GPU) in any Python environment with this package and
torch; the robot's agent_node or ``eval`` reach it with the policy spec ``http://HOST:PORT``
(:class:`havln_robot.policy.remote.RemotePolicy`, which documents the wire format).

One session at a time: a ``/reset`` starts a new session and ends the previous one (a client still
acting in the old one gets HTTP 409). Policy calls are serialised by one lock (a policy holds one
episode's recurrent state). A repeated ``/act`` of the current decision (``seq``; the client retries
after a timeout) is answered from the cache, so the policy is stepped once per decision.
Binds 127.0.0.1 unless ``--host`` says otherwise: the server has no authentication, bind it only to
the robot's network (docs/two_machines.md).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from havln_robot import jsonio
from havln_robot.policy.api import Policy, PolicyError, check_action
from havln_robot.policy.remote import MAX_BODY_BYTES, decode_act

DEFAULT_PORT = 8770


class PolicyService:
    """The server's state: one policy, one session, the last decision (thread-safe).

    Args:
        policy: any :class:`Policy`.
        delay_s: added before each ``act`` answer, s (tests and ``bench link``: a slow server).
    """

    def __init__(self, policy: Policy, delay_s: float = 0.0) -> None:
        self.policy = policy
        self.delay_s = delay_s
        self.lock = threading.Lock()
        self.session = ""
        self.last: tuple[int, str] | None = None  # (seq, action) of the session's last decision
        self.decisions = 0

    def info(self) -> dict[str, Any]:
        p = self.policy
        return {"name": getattr(p, "name", "policy"), "views": int(getattr(p, "views", 1)), "observes": bool(getattr(p, "observes", True))}

    def reset(self, doc: dict[str, Any]) -> dict[str, Any]:
        session, instruction = doc.get("session"), doc.get("instruction")
        if not isinstance(session, str) or not session:
            raise PolicyError("reset: 'session' must be a non-empty string")
        with self.lock:
            self.policy.reset(instruction)
            self.session, self.last = session, None
        return {"ok": True}

    def act(self, body: bytes) -> tuple[int, dict[str, Any]]:
        meta, obs = decode_act(body)
        seq = meta["seq"]
        with self.lock:
            if meta["session"] != self.session:
                return 409, {"error": "session ended (another client reset the policy server); start a new episode"}
            if self.last is not None and self.last[0] == seq:  # a retry of the decision already taken
                return 200, {"seq": seq, "action": self.last[1], "cached": True}
            expected = 0 if self.last is None else self.last[0] + 1
            if seq != expected:
                return 409, {"error": f"decision {seq} asked for, the session is at decision {expected}; start a new episode"}
            outcome = meta.get("outcome")
            if isinstance(outcome, list) and len(outcome) == 2:
                self.policy.on_action_result(str(outcome[0]), str(outcome[1]))
            if getattr(self.policy, "observes", True) and obs is None:
                raise PolicyError("act: this policy observes; the body has no rgb/depth/headings")
            action = check_action(self.policy.act(obs))
            self.last = (seq, action)
            self.decisions += 1
        if self.delay_s > 0:
            time.sleep(self.delay_s)
        return 200, {"seq": seq, "action": action}


def make_handler(service: PolicyService) -> type[BaseHTTPRequestHandler]:
    """The request handler class bound to ``service``."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "havln-policy-server"

        def log_message(self, fmt: str, *args: Any) -> None:  # quiet: one line per error only
            pass

        def _send(self, status: int, doc: dict[str, Any]) -> None:
            data = jsonio.dumps(doc).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _body(self) -> bytes:
            n = int(self.headers.get("Content-Length") or 0)
            if n > MAX_BODY_BYTES:
                raise PolicyError(f"request body of {n} bytes is over the {MAX_BODY_BYTES} byte limit")
            return self.rfile.read(n)

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            if self.path == "/info":
                self._send(200, service.info())
            else:
                self._send(404, {"error": f"no {self.path}; GET /info, POST /reset, POST /act"})

        def do_POST(self) -> None:  # noqa: N802
            try:
                body = self._body()
                if self.path == "/reset":
                    self._send(200, service.reset(json.loads(body or b"{}")))
                elif self.path == "/act":
                    self._send(*service.act(body))
                else:
                    self._send(404, {"error": f"no {self.path}; GET /info, POST /reset, POST /act"})
            except (PolicyError, ValueError) as exc:
                self._send(400, {"error": str(exc)})
            except Exception as exc:  # noqa: BLE001 - a policy crash is reported to the client, the server stays up
                self._send(500, {"error": f"{type(exc).__name__}: {exc}"})

    return Handler


def serve(policy: Policy, host: str = "127.0.0.1", port: int = DEFAULT_PORT, delay_s: float = 0.0) -> ThreadingHTTPServer:
    """A started-on-demand server for ``policy`` (call ``serve_forever``; ``port`` 0 picks a free one).

    Raises:
        OSError: the address is in use or not on this machine.
    """
    srv = ThreadingHTTPServer((host, port), make_handler(PolicyService(policy, delay_s)))
    srv.daemon_threads = True
    return srv


def main(argv: list[str]) -> int:
    """``havln-robot policy-server CKPT [--host H] [--port N] [--device D]``."""
    from havln_robot.policy.registry import make_policy
    from havln_robot.text import nonempty, number_in

    ap = argparse.ArgumentParser(
        prog="havln-robot policy-server",
        description="Serve a policy over HTTP for agent_node / eval on another machine (policy spec http://HOST:PORT).",
    )
    ap.add_argument(
        "policy",
        type=nonempty("a checkpoint or a builtin policy"),
        help="checkpoint path, a name in models/, or a builtin ('forward:steps=8,views=12', 'random')",
    )
    ap.add_argument(
        "--host",
        type=nonempty("an address such as 127.0.0.1"),
        default="127.0.0.1",
        help="address to bind (default 127.0.0.1; the workstation's robot-network address)",
    )
    ap.add_argument(
        "--port", type=number_in(0, 65535, integer=True), default=DEFAULT_PORT, help=f"TCP port (default {DEFAULT_PORT}; 0 = any free port)"
    )
    ap.add_argument(
        "--device",
        type=nonempty("a torch device such as cpu or cuda"),
        default="cpu",
        help="torch device for checkpoints (cpu, cuda, cuda:N)",
    )
    ap.add_argument(
        "--delay-s", type=number_in(0, 600, unit="s"), default=0.0, help="extra seconds before each answer (to try a slow server)"
    )
    args = ap.parse_args(argv)
    try:
        policy = make_policy(args.policy, device=args.device)
    except PolicyError as exc:
        print(f"havln-robot policy-server: {exc}", file=sys.stderr)
        return 2
    srv = serve(policy, args.host, args.port, args.delay_s)
    host, port = srv.server_address[:2]
    print(f"serving {getattr(policy, 'name', args.policy)} ({policy.views} view(s)) on http://{host}:{port}", flush=True)
    try:
        srv.serve_forever(poll_interval=0.2)
    finally:
        srv.server_close()
    return 0
