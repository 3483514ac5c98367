"""The console's web app (Starlette): one page, a JSON API and one WebSocket per page.

Routes (see :mod:`havln_robot.console.control` for who may call what):

* ``GET /`` the page; ``GET /static/...`` its JS/CSS (no build step).
* ``POST /api/login`` ``{"token", "name"}`` → session cookie (HttpOnly, SameSite=Strict);
  ``POST /api/logout``.
* ``GET /api/state`` the live view (session).
* ``POST /api/stop`` / ``POST /api/estop`` (session): zero motion / the driver's Damp.
* ``POST /api/control/take`` / ``release``; ``POST /api/pause`` ``{"paused"}``;
  ``POST /api/trial/start`` ``{"instruction" | "episode_id", "region", "people"}``;
  ``POST /api/trial/end`` ``{"outcome", "ne_m", "force", "reason"}`` (control).
* ``WS /ws`` (session): server → page: text = JSON state, binary = one image (first byte = channel,
  :data:`havln_robot.console.frames.CHANNEL_BYTES`); page → server: ``{"op": "stop" | "estop"}``
  (the fast path of the buttons) and ``{"op": "ping", "t"}`` (answered ``pong``).

The robot side is an injected :class:`Backend` (console_node over ROS; a fake in tests).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

import anyio
import anyio.abc
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.websockets import WebSocket, WebSocketDisconnect

from havln_robot import jsonio
from havln_robot.console.control import COOKIE, AuthError, Control
from havln_robot.console.hub import Hub
from havln_robot.console.inputs import bool_field, choice_field, float_field, int_field, parse_object, text_field
from havln_robot.console.view import LiveView
from havln_robot.text import terminal_safe

STATIC = Path(__file__).with_name("static")

#: WebSocket close code for a frame of a type the console does not take (RFC 6455: 1003, unsupported data).
WS_UNSUPPORTED_DATA = 1003

#: State snapshots per second sent to every page.
STATE_RATE_HZ = 5.0


class Backend(Protocol):
    """What the web app needs from the robot stack (console_node implements it over ROS)."""

    view: LiveView
    hub: Hub

    def stop(self, estop: bool, who: str) -> str:
        """Zero motion now (STOP to motion_node, agent paused); ``estop`` also calls the driver's
        e-stop (Damp). Must not block on the network; returns a one-line summary."""
        ...

    def set_paused(self, paused: bool, who: str) -> str:
        """Pause / resume the agent; returns a one-line summary."""
        ...

    def start_trial(self, instruction: str, episode_id: str, region: str, people: int, who: str) -> str:
        """Start a trial (ValueError with one line on bad input or a refused start)."""
        ...

    def end_trial(self, outcome: str, ne_m: float | None, force: bool, reason: str, who: str) -> str:
        """Give the running (or last unjudged) trial its verdict through the trial store's rules
        (ValueError with one line when refused)."""
        ...


def _err(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _bearer(request: Request) -> str | None:
    h = request.headers.get("authorization", "")
    return h[7:].strip() if h.lower().startswith("bearer ") else None


async def _body(request: Request) -> dict[str, Any]:
    """The request's JSON object through the one strict parser (:func:`havln_robot.console.inputs.parse_object`)."""
    return parse_object(await request.body())


def _sid_of(request: Request | WebSocket) -> str | None:
    return request.cookies.get(COOKIE)


def _guarded(
    control: Control, need_control: bool
) -> Callable[[Callable[..., Awaitable[Response]]], Callable[[Request], Awaitable[Response]]]:
    """Decorator of a route ``fn(request, session)``: a session (and control, when ``need_control``)
    or the AuthError's status; a ValueError of the request's fields is a 400 with its first line."""

    def wrap(fn: Callable[..., Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
        async def handler(request: Request) -> Response:
            try:
                s = control.session(_sid_of(request), _bearer(request))
                if need_control:
                    control.require_control(s.sid)
            except AuthError as exc:
                return _err(exc.status, str(exc))
            try:
                return await fn(request, s)
            except AuthError as exc:
                return _err(exc.status, str(exc))
            except ValueError as exc:
                return _err(400, str(exc).splitlines()[0] if str(exc) else "bad request")

        return handler

    return wrap


def parse_trial_start(data: dict[str, Any]) -> tuple[str, str, str, int]:
    """(instruction, episode id, region, people) of ``POST /api/trial/start``; ValueError on a bad field."""
    instruction = text_field(data, "instruction")  # blank / zero-width only: "" (text.is_blank)
    episode_id = text_field(data, "episode_id", max_len=200)
    if not instruction and not episode_id:
        raise ValueError("give an instruction text or an HA-R2R episode id")
    people = int_field(data, "people", lo=0, hi=1000)
    return instruction, episode_id, text_field(data, "region", max_len=200) or "unknown", people


def parse_trial_end(data: dict[str, Any]) -> tuple[str, float | None, bool, str]:
    """(outcome, NE in m or None, force, reason) of ``POST /api/trial/end``; ValueError on a bad field."""
    outcome = choice_field(data, "outcome", ("success", "failure", "aborted"))
    ne_m = float_field(data, "ne_m", lo=0.0, hi=1e4, what="a distance in metres")
    return outcome, ne_m, bool_field(data, "force", default=False), text_field(data, "reason")


def parse_socket_op(text: str) -> tuple[str, Any]:
    """A page's JSON text frame through the one strict parser: ``("ping", t)`` or ``(op, id)`` of
    a stop / estop (id: a number, a text of at most 100 characters, or None). ValueError otherwise."""
    data = parse_object(text)
    op = choice_field(data, "op", ("stop", "estop", "ping"))
    if op == "ping":
        return op, float_field(data, "t", lo=-1e15, hi=1e15, what="a time")
    ident = data.get("id")
    if ident is not None and (isinstance(ident, bool) or not isinstance(ident, (int, str))):
        raise ValueError(f"id: expected a number or text, got {type(ident).__name__}")
    if isinstance(ident, str) and len(ident) > 100:
        raise ValueError("id: at most 100 characters")
    return op, ident


async def _socket(websocket: WebSocket, backend: Backend, control: Control) -> None:
    """/ws: state and frames out (the hub), stop / estop / ping in; either side ending ends both."""
    hub = backend.hub
    try:
        s = control.session(_sid_of(websocket))
    except AuthError:
        await websocket.close(code=4401)
        return
    await websocket.accept()
    control.connected(s.sid)
    client = hub.add(asyncio.get_running_loop())

    async def sender() -> None:
        while True:
            got = await hub.next(client)
            for channel, payload in got.items():
                if channel == "state":
                    await websocket.send_text(
                        jsonio.dumps({"type": "state", **payload, "control": control.summary(s.sid), "you": s.name}, nonfinite="null")
                    )
                elif isinstance(payload, bytes):
                    await websocket.send_bytes(payload)

    async def receiver() -> None:
        while True:
            frame = await websocket.receive()
            if frame["type"] == "websocket.disconnect":
                raise WebSocketDisconnect(frame.get("code", 1000))
            if frame.get("text") is None:  # a binary frame: the page only sends JSON text
                await websocket.close(code=WS_UNSUPPORTED_DATA, reason="binary frames are not accepted; send JSON text")
                return
            try:
                op, value = parse_socket_op(frame["text"])
            except ValueError as exc:
                await websocket.send_text(jsonio.dumps({"type": "error", "message": str(exc)}))
                continue
            if op in ("stop", "estop"):
                m = backend.stop(op == "estop", s.name)
                await websocket.send_text(jsonio.dumps({"type": "ack", "op": op, "id": value, "message": m}))
            else:
                await websocket.send_text(jsonio.dumps({"type": "pong", "t": value, "server_t": time.time()}))

    async def until_done(fn: Callable[[], Awaitable[None]], tg: anyio.abc.TaskGroup) -> None:
        try:
            await fn()
        except (WebSocketDisconnect, RuntimeError, OSError):
            pass
        finally:
            tg.cancel_scope.cancel()  # either side ending ends the page's session

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(until_done, sender, tg)
            tg.start_soon(until_done, receiver, tg)
    finally:
        hub.remove(client)
        control.disconnected(s.sid)


@contextlib.asynccontextmanager
async def _lifespan(backend: Backend, app: Starlette):  # type: ignore[no-untyped-def]
    """Publish the state to the connected pages at STATE_RATE_HZ while the app runs."""

    async def state_pump() -> None:
        while True:
            if len(backend.hub):
                backend.hub.publish("state", backend.view.snapshot())
            await asyncio.sleep(1.0 / STATE_RATE_HZ)

    task = asyncio.create_task(state_pump())
    try:
        yield
    finally:
        task.cancel()


def _login_route(control: Control, secure_cookie: bool, log: Callable[[str], None]) -> Callable[[Request], Awaitable[Response]]:
    """``POST /api/login``: a session cookie for the right token; refusals logged without the token."""

    async def login(request: Request) -> Response:
        try:
            data = await _body(request)
            s = control.login(text_field(data, "token", max_len=200), text_field(data, "name", max_len=200))
        except AuthError as exc:
            log(f"[console] refused login from {request.client.host if request.client else '?'}: {terminal_safe(exc)}")
            return _err(exc.status, str(exc))
        except ValueError as exc:
            return _err(400, str(exc))
        log(f"[console] {terminal_safe(s.name)} logged in")
        resp = JSONResponse({"name": s.name})
        resp.set_cookie(COOKIE, s.sid, httponly=True, samesite="strict", secure=secure_cookie, path="/")
        return resp

    return login


def create_app(backend: Backend, control: Control, secure_cookie: bool = False, log: Callable[[str], None] = print) -> Starlette:
    """The console app over ``backend``; ``control`` holds the token and the sessions.

    Args:
        backend: the robot side.
        control: sessions and control ownership.
        secure_cookie: mark the session cookie Secure (served over TLS).
        log: where operator actions are logged (one line each; never the token).
    """
    guarded = functools.partial(_guarded, control)

    async def index(request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-store"})

    login = _login_route(control, secure_cookie, log)

    @guarded(False)
    async def logout(request: Request, s: Any) -> Response:
        control.logout(s.sid)
        resp = JSONResponse({"ok": True})
        resp.delete_cookie(COOKIE, path="/")
        return resp

    @guarded(False)
    async def state(request: Request, s: Any) -> Response:
        return JSONResponse({**backend.view.snapshot(), "control": control.summary(s.sid), "you": s.name})

    def stopper(emergency: bool) -> Callable[[Request], Awaitable[Response]]:
        @guarded(False)
        async def route(request: Request, s: Any) -> Response:
            return JSONResponse({"message": backend.stop(emergency, s.name)})

        return route

    def controller(act: Callable[[str], None], said: str) -> Callable[[Request], Awaitable[Response]]:
        @guarded(False)
        async def route(request: Request, s: Any) -> Response:
            act(s.sid)
            backend.view.event(f"{s.name} {said} control")
            return JSONResponse(control.summary(s.sid))

        return route

    @guarded(True)
    async def pause(request: Request, s: Any) -> Response:
        paused = bool_field(await _body(request), "paused")
        return JSONResponse({"message": await asyncio.to_thread(backend.set_paused, paused, s.name)})

    @guarded(True)
    async def trial_start(request: Request, s: Any) -> Response:
        args = parse_trial_start(await _body(request))
        return JSONResponse({"message": await asyncio.to_thread(backend.start_trial, *args, s.name)})

    @guarded(True)
    async def trial_end(request: Request, s: Any) -> Response:
        args = parse_trial_end(await _body(request))
        return JSONResponse({"message": await asyncio.to_thread(backend.end_trial, *args, s.name)})

    async def ws(websocket: WebSocket) -> None:
        await _socket(websocket, backend, control)

    routes = [
        Route("/", index),
        Route("/api/login", login, methods=["POST"]),
        Route("/api/logout", logout, methods=["POST"]),
        Route("/api/state", state),
        Route("/api/stop", stopper(False), methods=["POST"]),
        Route("/api/estop", stopper(True), methods=["POST"]),
        Route("/api/control/take", controller(control.take, "took"), methods=["POST"]),
        Route("/api/control/release", controller(control.release, "released"), methods=["POST"]),
        Route("/api/pause", pause, methods=["POST"]),
        Route("/api/trial/start", trial_start, methods=["POST"]),
        Route("/api/trial/end", trial_end, methods=["POST"]),
        WebSocketRoute("/ws", ws),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    return Starlette(routes=routes, lifespan=functools.partial(_lifespan, backend))
