"""Who may do what in the console: the token, browser sessions and the one operator in control.

Pure logic (a clock is injected). The rules:

* Every request that changes state needs an authenticated session: a browser trades the token
  for a session cookie (``POST /api/login``; the token never travels in a URL), a script may send
  ``Authorization: Bearer <token>``. Without one: 401, and nothing changes.
* Stop and E-stop need only a session (anyone watching may stop the robot); everything else
  (start, verdicts, pause/resume) needs *control*: 403 for a session that does not hold it.
* One session holds control at a time. It is taken when free, or when its holder has had no open
  page for :attr:`Control.takeover_s`; otherwise it is handed over explicitly (the holder releases).
  Everybody sees the holder's name.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from havln_robot.text import is_blank, terminal_safe

#: Name of the session cookie (HttpOnly, SameSite=Strict).
COOKIE = "havln_console"

LOOPBACK = ("127.0.0.1", "::1", "localhost")


class AuthError(Exception):
    """A request is refused: ``status`` 401 (no session) or 403 (session without control)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def new_token() -> str:
    """A random operator token (URL-safe, 128 bits)."""
    return secrets.token_urlsafe(16)


def check_bind(host: str, token: str, tls: bool, allow_plain_remote: bool) -> str:
    """Refuse unsafe bind settings; returns ``""`` or a one-line reason.

    Off loopback a token is required (``token`` given or generated is checked by the caller) and
    TLS, unless ``allow_plain_remote`` (an SSH tunnel in front).
    """
    if host in LOOPBACK:
        return ""
    if not token:
        return f"host {host}: binding off loopback needs a token (set token, or leave it empty to generate one)"
    if not tls and not allow_plain_remote:
        return (
            f"host {host}: off loopback the token would cross the network in clear; set tls_certfile/tls_keyfile "
            "(HTTPS), or bind 127.0.0.1 and use an SSH tunnel (ssh -L 8765:127.0.0.1:8765 robot), or set allow_plain_remote"
        )
    return ""


def tls_problem(certfile: str, keyfile: str) -> str:
    """Check console_node's ``tls_certfile`` / ``tls_keyfile`` before the server starts; returns ``""`` or a
    one-line reason naming the parameter (a folder is "is a folder", not "not found" nor a server that
    failed to start: :func:`havln_robot.paths.input_file_problem`).
    """
    from havln_robot.paths import input_file_problem

    for key, value, what in (("tls_certfile", certfile, "the PEM certificate"), ("tls_keyfile", keyfile, "the PEM private key")):
        why = input_file_problem(value) if value else None
        if why is not None:
            return f"{key} {value}: {why}; give {what} file (or leave tls_certfile empty: plain HTTP, loopback only)"
    return ""


@dataclass
class Session:
    """One logged-in browser (or script)."""

    sid: str
    name: str
    created: float
    sockets: int = 0
    last_seen: float = 0.0


@dataclass
class Control:
    """Sessions and control ownership.

    Args:
        token: the operator token.
        clock: monotonic time, s.
        takeover_s: control may be taken from a holder without an open page for this long, s.
    """

    token: str
    clock: Callable[[], float] = time.monotonic
    takeover_s: float = 30.0
    sessions: dict[str, Session] = field(default_factory=dict)
    holder: str | None = None
    revoked: set[str] = field(default_factory=set)
    _absent_fired: bool = False

    # --- authentication -----------------------------------------------------------------------
    def token_ok(self, token: str | None) -> bool:
        """Constant-time token comparison."""
        return bool(token) and hmac.compare_digest(str(token).encode(), self.token.encode())

    def login(self, token: str | None, name: str) -> Session:
        """Trade the token for a new session. Raises AuthError(401) on a wrong token."""
        if not self.token_ok(token):
            raise AuthError(401, "wrong token")
        # shown in log lines, events and every page: control / format characters escaped (a name cannot
        # erase the screen or forge a "[console] alice logged in" line), blank or zero-width only: a default
        name = (name or "").strip()
        name = "" if is_blank(name) else terminal_safe(name)[:40]
        name = name or f"operator-{len(self.sessions) + 1}"
        s = Session(self._sign(secrets.token_urlsafe(12), name), name, self.clock(), last_seen=self.clock())
        self.sessions[s.sid] = s
        return s

    def _sign(self, nonce: str, name: str) -> str:
        """Session id ``nonce.name.mac``: valid for any console with the same token, so a page
        reconnects to a restarted stack (same token from the profile) without logging in again."""
        label = base64.urlsafe_b64encode(name.encode()).decode().rstrip("=")
        mac = hmac.new(self.token.encode(), f"{nonce}.{label}".encode(), hashlib.sha256).hexdigest()[:32]
        return f"{nonce}.{label}.{mac}"

    def _restore(self, sid: str) -> Session | None:
        """A session signed with this token by an earlier run (None when the signature is wrong)."""
        parts = sid.split(".")
        if len(parts) != 3 or sid in self.revoked:
            return None
        try:
            name = base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)).decode()
        except (ValueError, UnicodeDecodeError):
            return None
        if not hmac.compare_digest(self._sign(parts[0], name), sid):
            return None
        s = Session(sid, name, self.clock(), last_seen=self.clock())
        self.sessions[sid] = s
        return s

    def session(self, sid: str | None, bearer: str | None = None) -> Session:
        """The session of a request (cookie ``sid`` or a bearer token). Raises AuthError(401)."""
        if sid and sid in self.sessions:
            return self.sessions[sid]
        if sid and (restored := self._restore(sid)) is not None:
            return restored
        if bearer is not None and self.token_ok(bearer):
            return self.sessions.setdefault("bearer", Session("bearer", "script", self.clock()))
        raise AuthError(401, "not logged in: POST the token to /api/login first")

    def logout(self, sid: str) -> None:
        """Forget a session (it releases control)."""
        if self.holder == sid:
            self.holder = None
        self.sessions.pop(sid, None)
        self.revoked.add(sid)

    # --- presence -----------------------------------------------------------------------------
    def connected(self, sid: str) -> None:
        """A page of this session opened its WebSocket."""
        s = self.sessions.get(sid)
        if s is not None:
            s.sockets += 1
            s.last_seen = self.clock()

    def disconnected(self, sid: str) -> None:
        """A page of this session closed its WebSocket (control stays with it)."""
        s = self.sessions.get(sid)
        if s is not None:
            s.sockets = max(0, s.sockets - 1)
            s.last_seen = self.clock()

    def holder_absent_s(self) -> float:
        """How long the holder has had no open page, s (0 while it has one or nobody holds control)."""
        s = self.sessions.get(self.holder or "")
        if s is None or s.sockets > 0:
            return 0.0
        return max(0.0, self.clock() - s.last_seen)

    # --- control ------------------------------------------------------------------------------
    def take(self, sid: str) -> None:
        """Take control. Raises AuthError(403) while another present session holds it."""
        s = self.session(sid)
        if self.holder in (None, s.sid) or self.holder not in self.sessions:
            self.holder = s.sid
            return
        if self.holder_absent_s() >= self.takeover_s:
            self.holder = s.sid
            return
        raise AuthError(403, f"{self.sessions[self.holder].name} holds control; ask them to release it")

    def release(self, sid: str) -> None:
        """Give control up (explicit hand-over). Raises AuthError(403) when ``sid`` does not hold it."""
        if self.holder != sid:
            raise AuthError(403, "you do not hold control")
        self.holder = None

    def require_control(self, sid: str) -> Session:
        """The session, if it holds control. Raises AuthError(401/403)."""
        s = self.session(sid)
        if self.holder != s.sid:
            who = self.sessions[self.holder].name if self.holder in self.sessions else "nobody"
            raise AuthError(403, f"take control first ({who} holds it)")
        return s

    def absent_pause_due(self, limit_s: float) -> bool:
        """True once per absence: the holder has had no page open for ``limit_s`` (> 0) seconds.
        Re-armed when a page of the holder is open again (or control changes hands)."""
        absent = self.holder_absent_s()
        if absent == 0.0:
            self._absent_fired = False
            return False
        if limit_s > 0 and absent >= limit_s and not self._absent_fired:
            self._absent_fired = True
            return True
        return False

    def holder_name(self) -> str:
        """The holder's name, or ``""``."""
        s = self.sessions.get(self.holder or "")
        return s.name if s is not None else ""

    def summary(self, sid: str | None) -> dict[str, object]:
        """What a page shows: holder, whether it is this session, watchers."""
        return {
            "holder": self.holder_name(),
            "you_hold": sid is not None and sid == self.holder,
            "holder_absent_s": round(self.holder_absent_s(), 1),
            "watchers": sorted(s.name for s in self.sessions.values() if s.sockets > 0),
        }
