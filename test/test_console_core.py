"""Operator console, pure parts: token/sessions/control, bind rules, the per-client fan-out (a
stalled client), the view model, frames, and the web app's auth on every state-changing route
(fake backend, Starlette's TestClient; no ROS, no sockets)."""

from __future__ import annotations

import asyncio
import threading
import time

import numpy as np
import pytest
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from havln_robot.console.control import COOKIE, AuthError, Control, check_bind
from havln_robot.console.frames import CHANNEL_BYTES, PanoramaStrip, depth_colormap, encode
from havln_robot.console.hub import Hub
from havln_robot.console.view import LiveView, success_rate
from havln_robot.console.web import create_app
from havln_robot.records import ActionResult, AgentStatus, Outcome

TOKEN = "s3cret-token"


class FakeClock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


class FakeBackend:
    """Records every call; the web app must call nothing on a refused request."""

    def __init__(self) -> None:
        self.view = LiveView()
        self.hub = Hub()
        self.calls: list[tuple] = []

    def stop(self, estop: bool, who: str) -> str:
        self.calls.append(("stop", estop, who))
        return "stopped"

    def set_paused(self, paused: bool, who: str) -> str:
        self.calls.append(("pause", paused, who))
        return "ok"

    def start_trial(self, instruction: str, episode_id: str, region: str, people: int, who: str) -> str:
        if region == "nowhere":
            raise ValueError("region: 'nowhere' is not a region")
        self.calls.append(("start", instruction, episode_id, region, people, who))
        return "started"

    def end_trial(self, outcome: str, ne_m: float | None, force: bool, reason: str, who: str) -> str:
        self.calls.append(("end", outcome, ne_m, force, who))
        return "ended"


# --- control -----------------------------------------------------------------------------------
def test_login_needs_the_token_and_control_is_exclusive():
    clock = FakeClock()
    c = Control(TOKEN, clock=clock, takeover_s=5.0)
    with pytest.raises(AuthError) as e:
        c.login("wrong", "eve")
    assert e.value.status == 401
    with pytest.raises(AuthError) as e:
        c.session(None)
    assert e.value.status == 401
    ann, bob = c.login(TOKEN, "ann"), c.login(TOKEN, "bob")
    with pytest.raises(AuthError) as e:
        c.require_control(ann.sid)
    assert e.value.status == 403
    c.take(ann.sid)
    c.connected(ann.sid)
    assert c.summary(bob.sid)["holder"] == "ann" and not c.summary(bob.sid)["you_hold"]
    with pytest.raises(AuthError) as e:
        c.take(bob.sid)
    assert e.value.status == 403 and "ann holds control" in str(e.value)
    # ann's page goes away: control stays hers until takeover_s passed
    c.disconnected(ann.sid)
    clock.t += 2
    with pytest.raises(AuthError):
        c.take(bob.sid)
    clock.t += 4
    assert c.holder_absent_s() == pytest.approx(6.0)
    c.take(bob.sid)
    assert c.holder_name() == "bob"
    with pytest.raises(AuthError):
        c.release(ann.sid)
    c.release(bob.sid)
    assert c.holder is None


def test_session_survives_a_restart_with_the_same_token_but_not_a_logout_or_another_token():
    ann = Control(TOKEN).login(TOKEN, "ann")
    again = Control(TOKEN)  # the stack restarted with the profile's token
    assert again.session(ann.sid).name == "ann"
    with pytest.raises(AuthError):
        Control("another-token").session(ann.sid)
    again.logout(ann.sid)
    with pytest.raises(AuthError):
        again.session(ann.sid)
    assert again.session(None, bearer=TOKEN).name == "script"


def test_bind_rules():
    assert check_bind("127.0.0.1", "", False, False) == ""
    assert "token" in check_bind("0.0.0.0", "", True, False)
    assert "SSH tunnel" in check_bind("0.0.0.0", TOKEN, False, False)
    assert check_bind("0.0.0.0", TOKEN, True, False) == ""
    assert check_bind("192.168.1.5", TOKEN, False, True) == ""


# --- fan-out -----------------------------------------------------------------------------------
def test_stalled_client_drops_its_own_frames_and_never_blocks_the_publisher():
    loop = asyncio.new_event_loop()
    try:
        hub = Hub()
        stalled, live = hub.add(loop), hub.add(loop)
        frame = b"\x00" + bytes(50_000)
        for i in range(2000):  # a publisher on another thread; nobody reads `stalled`
            hub.publish("color", frame)
            hub.publish("state", {"i": i})
            if i % 100 == 0:
                got = loop.run_until_complete(hub.next(live))
                assert set(got) <= {"color", "state"}
        # one pending payload per channel, whatever the backlog
        assert set(stalled.slots) == {"color", "state"} and stalled.slots["state"] == {"i": 1999}
        assert stalled.dropped >= 3990
        got = loop.run_until_complete(hub.next(live))
        assert got["state"] == {"i": 1999}
        # a late client starts with the latest of every channel
        late = hub.add(loop)
        assert late.slots["state"] == {"i": 1999}
        hub.remove(stalled)
        assert len(hub) == 2
    finally:
        loop.close()


def test_publish_from_threads_is_safe():
    loop = asyncio.new_event_loop()
    try:
        hub = Hub()
        c = hub.add(loop)
        ths = [threading.Thread(target=lambda k=k: [hub.publish(f"ch{k}", n) for n in range(500)]) for k in range(4)]
        for t in ths:
            t.start()
        for t in ths:
            t.join()
        got = loop.run_until_complete(hub.next(c))
        assert got == {f"ch{k}": 499 for k in range(4)}
    finally:
        loop.close()


# --- view and frames -----------------------------------------------------------------------------
def test_view_snapshot_and_success_rate():
    v = LiveView(clock=lambda: 10.0)
    v.on_instruction("walk to the sofa")
    v.on_agent(AgentStatus(step=3, action="MOVE_FORWARD", state="acting"))
    v.on_result(ActionResult(seq=1, action="MOVE_FORWARD", outcome=Outcome.OK))
    for i in range(10):
        v.on_odom(i * 0.01, 0.0, 0.0)  # 1 cm apart: the trace keeps points 5 cm apart
    v.set_trials([{"id": 2, "outcome": "success"}, {"id": 1, "outcome": "failure"}], None)
    s = v.snapshot()
    assert s["instruction"] == "walk to the sofa" and s["agent"]["step"] == 3
    assert s["last_result"]["outcome"] == "ok"
    assert len(s["trace"]) == 2 and s["pose"][0] == pytest.approx(0.09)
    assert s["sr"] == {"judged": 2, "success": 1, "sr": 0.5}
    assert success_rate(["aborted", None]) == {"judged": 0, "success": 0, "sr": None}


def test_frames():
    rgb = np.zeros((480, 640, 3), np.uint8)
    b = encode("color", rgb, width=320)
    assert b[0] == CHANNEL_BYTES["color"] and b[1:3] == b"\xff\xd8"  # JPEG
    depth = np.full((4, 4), 1500, np.uint16)
    depth[0, 0] = 0
    cm = depth_colormap(depth)
    assert cm.shape == (4, 4, 3) and (cm[0, 0] == 0).all() and cm[1, 1].any()
    strip = PanoramaStrip(views=3, height=10)
    for _ in range(5):
        strip.add(rgb)
    assert strip.image().shape == (10, 3 * 13, 3)


# --- web app: auth on every state-changing route -------------------------------------------------
CHANGING = [
    ("/api/stop", {}),
    ("/api/estop", {}),
    ("/api/control/take", {}),
    ("/api/pause", {"paused": True}),
    ("/api/trial/start", {"instruction": "go", "region": "office", "people": 1}),
    ("/api/trial/end", {"outcome": "success", "ne_m": 1.0}),
]


@pytest.fixture
def app():
    backend, control = FakeBackend(), Control(TOKEN)
    return backend, control, create_app(backend, control, log=lambda s: None)


def test_unauthenticated_requests_get_401_and_change_nothing(app):
    backend, control, web = app
    with TestClient(web, base_url="http://127.0.0.1") as client:
        for path, body in CHANGING:
            r = client.post(path, json=body)
            assert r.status_code == 401, path
            r = client.post(path, json=body, headers={"Authorization": "Bearer wrong"})
            assert r.status_code == 401, path
            r = client.post(path, json=body, headers={"cookie": f"{COOKIE}=forged.YW5u.0000"})
            assert r.status_code == 401, path
        assert client.get("/api/state").status_code == 401
        assert client.post("/api/login", json={"token": "wrong"}).status_code == 401
        with pytest.raises(WebSocketDisconnect):
            with client.websocket_connect("/ws") as ws:
                ws.receive_text()
    assert backend.calls == [] and control.holder is None


def test_session_without_control_gets_403_for_trials_but_may_stop(app):
    backend, control, web = app
    with TestClient(web, base_url="http://127.0.0.1") as ann, TestClient(web, base_url="http://127.0.0.1") as bob:
        assert ann.post("/api/login", json={"token": TOKEN, "name": "ann"}).status_code == 200
        assert bob.post("/api/login", json={"token": TOKEN, "name": "bob"}).status_code == 200
        assert ann.post("/api/control/take").json()["you_hold"]
        for path, body in CHANGING[3:]:
            assert bob.post(path, json=body).status_code == 403, path
        assert bob.post("/api/control/take").status_code == 403
        assert [c[0] for c in backend.calls] == []
        assert bob.get("/api/state").json()["control"]["holder"] == "ann"
        # anyone logged in may stop the robot
        assert bob.post("/api/estop").json()["message"] == "stopped"
        assert backend.calls == [("stop", True, "bob")]
        # the holder may start and end; bad input is one line, 400
        r = ann.post("/api/trial/start", json={"instruction": "go", "region": "nowhere"})
        assert r.status_code == 400 and "nowhere" in r.json()["error"]
        assert ann.post("/api/trial/start", json={"region": "office"}).status_code == 400
        assert ann.post("/api/trial/start", json={"instruction": "go", "people": "many"}).status_code == 400
        assert ann.post("/api/trial/start", json={"instruction": "go", "region": "office", "people": 2}).status_code == 200
        assert ann.post("/api/trial/end", json={"outcome": "won"}).status_code == 400
        assert ann.post("/api/trial/end", json={"outcome": "failure", "ne_m": "4.5"}).status_code == 200
        assert backend.calls[1:] == [("start", "go", "", "office", 2, "ann"), ("end", "failure", 4.5, False, "ann")]
        # explicit hand-over
        assert ann.post("/api/control/release").status_code == 200
        assert bob.post("/api/control/take").json()["holder"] == "bob"


def test_login_sets_an_httponly_cookie_and_the_token_is_never_in_a_url(app):
    backend, control, web = app
    with TestClient(web, base_url="http://127.0.0.1") as client:
        r = client.post("/api/login", json={"token": TOKEN, "name": "ann"})
        cookie = r.headers["set-cookie"]
        assert "httponly" in cookie.lower() and "samesite=strict" in cookie.lower() and TOKEN not in cookie
        page = client.get("/").text + client.get("/static/app.js").text
        assert "?token" not in page and "token=" not in page.replace("token: $(", "")


def test_websocket_stop_and_state(app):
    backend, control, web = app
    with TestClient(web, base_url="http://127.0.0.1") as client:
        client.post("/api/login", json={"token": TOKEN, "name": "ann"})
        with client.websocket_connect("/ws", headers={"cookie": f"{COOKIE}={client.cookies[COOKIE]}"}) as ws:
            t0 = time.monotonic()
            while True:
                m = ws.receive_json()
                if m["type"] == "state":
                    break
                assert time.monotonic() - t0 < 10
            assert m["you"] == "ann" and m["control"]["watchers"] == ["ann"]
            ws.send_json({"op": "estop", "id": 7})
            while (m := ws.receive_json())["type"] != "ack":
                pass
            assert m["id"] == 7 and backend.calls == [("stop", True, "ann")]


def test_console_command_refuses_an_unsafe_bind_with_one_line(capsys):
    from havln_robot import console_app

    assert console_app.main(["--host", "0.0.0.0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "SSH tunnel" in err[0] and err[0].startswith("havln-robot console: ")
    with pytest.raises(SystemExit) as exc:
        console_app.main(["--port", "99999"])
    assert exc.value.code == 2 and "argument --port: '99999' is out of range" in capsys.readouterr().err


def test_absent_holder_pauses_once_per_absence():
    clock = FakeClock()
    c = Control(TOKEN, clock=clock)
    ann = c.login(TOKEN, "ann")
    c.take(ann.sid)
    c.connected(ann.sid)
    assert not c.absent_pause_due(10.0)
    c.disconnected(ann.sid)
    clock.t += 9
    assert not c.absent_pause_due(10.0)
    clock.t += 2
    assert c.absent_pause_due(10.0) and not c.absent_pause_due(10.0)  # once
    c.connected(ann.sid)
    assert not c.absent_pause_due(10.0)
    c.disconnected(ann.sid)
    clock.t += 20
    assert c.absent_pause_due(10.0)  # re-armed after the page came back
    assert not Control(TOKEN, clock=clock).absent_pause_due(10.0)  # nobody holds control


def test_episode_id_lookup(tmp_path):
    import gzip
    import json

    from havln_robot.console.lookup import instruction_for

    ep = {
        "episode_id": 17,
        "trajectory_id": 4,
        "scene_id": "mp3d/scan1/scan1.glb",
        "start_position": [0.0, 0.0, 0.0],
        "start_rotation": [0.0, 0.0, 0.0, 1.0],
        "goals": [{"position": [2.0, 0.0, -1.0], "radius": 3.0}],
        "reference_path": [[0.0, 0.0, 0.0], [2.0, 0.0, -1.0]],
        "instruction": {"instruction_text": "walk to the sofa and stop", "instruction_tokens": [1]},
        "info": {"geodesic_distance": 2.3},
    }
    f = tmp_path / "val_seen.json.gz"
    with gzip.open(f, "wt") as fh:
        json.dump({"episodes": [ep]}, fh)
    assert instruction_for(f, "17") == "walk to the sofa and stop"
    with pytest.raises(ValueError, match="not in val_seen.json.gz"):
        instruction_for(f, "18")
    with pytest.raises(ValueError, match="no HA-R2R data loaded"):
        instruction_for("", "17")
    with pytest.raises(ValueError, match="not found"):
        instruction_for(tmp_path / "missing.json", "17")


def test_bad_numbers_and_types_are_400_naming_the_field(app):
    backend, control, web = app
    with TestClient(web, base_url="http://127.0.0.1", raise_server_exceptions=False) as c:
        c.post("/api/login", json={"token": TOKEN, "name": "ann"})
        c.post("/api/control/take")
        for body, field in [
            ('{"instruction":"go","people":Infinity}', "Infinity"),
            ('{"instruction":"go","people":NaN}', "NaN"),
            ('{"instruction":"go","people":1e400}', "finite"),
            ('{"instruction":"go","people":[1]}', "people"),
            ('{"instruction":"go","people":-1}', "people"),
            ('{"instruction":"go","people":true}', "people"),
            ('{"instruction":["go"]}', "instruction"),
            ('{"instruction":"\\u200b"}', "instruction text"),
            ("[1]", "JSON object"),
            (b"\xff\xfe", "JSON object"),
        ]:
            r = c.post("/api/trial/start", content=body, headers={"content-type": "application/json"})
            assert r.status_code == 400 and field in r.json()["error"], (body, r.status_code, r.text)
        for body, field in [('{"outcome":"failure","ne_m":NaN}', "NaN"), ('{"outcome":"failure","ne_m":"inf"}', "ne_m")]:
            r = c.post("/api/trial/end", content=body, headers={"content-type": "application/json"})
            assert r.status_code == 400 and field in r.json()["error"], (body, r.status_code, r.text)
        r = c.post("/api/pause", content='{"paused":1}', headers={"content-type": "application/json"})
        assert r.status_code == 400 and "paused" in r.json()["error"]
        assert backend.calls == []


def test_bad_websocket_frames_are_refused_without_dropping_the_page(app):
    from starlette.websockets import WebSocketDisconnect

    backend, control, web = app
    with TestClient(web, base_url="http://127.0.0.1") as client:
        client.post("/api/login", json={"token": TOKEN, "name": "ann"})
        headers = {"cookie": f"{COOKIE}={client.cookies[COOKIE]}"}
        with client.websocket_connect("/ws", headers=headers) as ws:
            for bad in ['{"op":"ping","t":NaN}', '{"op":"ping","t":1e400}', '{"op":"ping","t":"x"}', '{"op":"fly"}']:
                ws.send_text(bad)
                while (m := ws.receive_json())["type"] == "state":
                    pass
                assert m["type"] == "error", m
            ws.send_text('{"op":"ping","t":12.5}')
            while (m := ws.receive_json())["type"] != "pong":
                pass
            assert m["t"] == 12.5
            ws.send_bytes(b"\x00\x01binary")
            with pytest.raises(WebSocketDisconnect) as e:
                while True:
                    ws.receive_json()
            assert e.value.code == 1003


def test_login_name_cannot_forge_a_log_line():
    backend, control, lines = FakeBackend(), Control(TOKEN), []
    web = create_app(backend, control, log=lines.append)
    with TestClient(web, base_url="http://127.0.0.1") as c:
        r = c.post("/api/login", json={"token": TOKEN, "name": "bob\x1b[2J\x1b[H\r[console] alice logged in\u202e"})
        assert r.status_code == 200
        assert "\x1b" not in r.json()["name"] and "\r" not in r.json()["name"] and "\u202e" not in r.json()["name"]
        assert all(line.isprintable() for line in lines) and len(lines) == 1
        assert c.post("/api/login", json={"token": TOKEN, "name": "\u200b"}).json()["name"].startswith("operator-")


def test_view_shows_recording_fault_and_store_health(tmp_path):
    """A trial whose bag stopped and a store whose WAL a reader holds reach the operator's page."""
    import sqlite3

    from havln_robot.nodes.console_node import TRIAL_FIELDS
    from havln_robot.trials.store import TrialStore

    db = tmp_path / "trials.db"
    store = TrialStore(db, writer=True, timeout_s=0.2)
    t = store.start_trial("sim", instruction="walk to the sofa")
    store.update_trial(t.id, recording_fault="MCAP bag stopped after step 3: disk full")
    browser = sqlite3.connect(str(db), isolation_level=None)
    browser.execute("BEGIN")
    browser.execute("SELECT COUNT(*) FROM trials").fetchone()  # a read transaction pins the WAL
    store.finish_trial(t.id, "stop")
    store.checkpoint()
    try:
        ro = TrialStore(db, readonly=True)
        rows = [{k: getattr(x, k) for k in TRIAL_FIELDS} for x in ro.trials()]
        v = LiveView(clock=lambda: 10.0)
        v.set_trials(rows, None, ro.wal_problem() or "")
        s = v.snapshot()
    finally:
        browser.close()
        store.close()
    assert "disk full" in s["trials"][0]["recording_fault"]
    assert "read transaction" in s["store_problem"]
