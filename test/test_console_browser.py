"""Operator console in a real browser: Debian's chromium driven by Playwright, against the
embedded simulator (config/sim.yaml through bringup, builtin scene, no data needed).

One Chromium session for the module. The page logs in with the token (never in a URL), frames
arrive, a trial starts from the page, Esc (the e-stop shortcut) zeroes cmd_vel through
motion_node and pauses the agent without ending the trial, the trial is then aborted from the page;
a stalled WebSocket client does not stop the browser's frames; the page reconnects after the
stack restarts. The screenshot is kept in artifacts/console/ (git-ignored).

Timing is asserted by structure (things happen, in order, within generous limits); the e-stop
latency is measured by ``havln-robot bench console``.
"""

from __future__ import annotations

import contextlib
import shutil
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = REPO / "artifacts" / "console"
TOKEN = "test-token-0123456789"

pytestmark = pytest.mark.skipif(shutil.which(CHROMIUM) is None, reason="Debian chromium not installed (make setup installs it)")

#: A policy that drives at once (front view only, no panorama) so the e-stop has motion to stop.
NODE_OVERRIDES = {
    "sim_node": {"scene_source": "builtin", "populate_humans": 0},
    "agent_node": {"policy": "forward:steps=400,views=1"},
    "trial_logger_node": {"auto_end": True},
}


def wait_for(cond, timeout: float, what: str, period: float = 0.05):
    t_end = time.monotonic() + timeout
    while time.monotonic() < t_end:
        got = cond()
        if got:
            return got
        time.sleep(period)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


@pytest.fixture(scope="module")
def stack(free_port, tmp_path_factory):
    from havln_robot import console_app

    db = tmp_path_factory.mktemp("console") / "trials.db"
    over = {**NODE_OVERRIDES, "trial_logger_node": {**NODE_OVERRIDES["trial_logger_node"], "db_path": str(db)}}
    params = {"port": free_port, "token": TOKEN, "frame_rate_hz": 10.0}
    b = console_app.start(str(REPO / "config" / "sim.yaml"), params, log=lambda s: None, node_overrides=over)
    state = {"bringup": b, "params": params, "db": db}
    yield state
    state["bringup"].shutdown()


@pytest.fixture(scope="module")
def free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


def stats(page) -> dict:
    return page.evaluate(
        "() => ({color: window.consoleStats.colorFrames, depth: window.consoleStats.depthFrames, states: window.consoleStats.states, acks: window.consoleStats.acks.length})"
    )


def test_console_in_chromium(stack, browser):
    console = stack["bringup"].nodes["console_node"]
    url = console.url
    assert url.startswith("http://127.0.0.1:")
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url))

    page.goto(url)
    page.wait_for_selector("#login:not([hidden])", timeout=15_000)
    page.fill("#name", "ann")
    page.fill("#token", TOKEN)
    page.click("#loginform button[type=submit]")
    page.wait_for_selector("#conn.ok", timeout=15_000)

    # frames arrive (colour and depth), and the state
    page.wait_for_function("() => window.consoleStats.colorFrames >= 5 && window.consoleStats.depthFrames >= 3", timeout=30_000)
    assert stats(page)["states"] > 0

    # take control, start a trial from the page
    page.click("#take")
    page.wait_for_function("() => window.consoleStats.last && window.consoleStats.last.control.you_hold", timeout=10_000)
    page.fill("#instr", "walk down the hallway")
    page.fill("#region", "hallway")
    page.fill("#people", "0")
    page.click("#startform button[type=submit]")
    page.wait_for_function("() => window.consoleStats.last && window.consoleStats.last.running_trial", timeout=20_000)
    trial = page.evaluate("() => window.consoleStats.last.running_trial")
    assert trial["region"] == "hallway" and trial["operator"] == "ann" and trial["instruction"] == "walk down the hallway"

    # the robot moves ...
    view = console.view
    wait_for(lambda: abs(view.cmd_vel[0]) > 1e-3 or abs(view.cmd_vel[1]) > 1e-3, 60, "the robot to move (non-zero cmd_vel)", period=0.01)

    # ... a stalled WebSocket client (connected, never reading) does not stop the browser's frames
    held = contextlib.ExitStack()
    held.enter_context(_stalled_client(url, page.context.cookies()))
    before = stats(page)["color"]
    page.wait_for_function(f"() => window.consoleStats.colorFrames >= {before + 5}", timeout=20_000)

    # e-stop by keyboard (Esc): zero cmd_vel through motion_node, agent paused, trial still running
    page.keyboard.press("Escape")
    page.wait_for_function("() => window.consoleStats.acks.length >= 1", timeout=5_000)
    wait_for(lambda: view.cmd_vel == (0.0, 0.0), 5, "zero cmd_vel after the e-stop", period=0.01)
    t_zero = time.monotonic()
    while time.monotonic() - t_zero < 1.5:  # stays zero: the agent is paused, nothing new is sent
        assert view.cmd_vel == (0.0, 0.0)
        time.sleep(0.05)
    page.wait_for_function("() => window.consoleStats.last.paused === true", timeout=5_000)
    assert "E-STOP by ann" in "\n".join(view.snapshot()["events"])

    # The e-stop aborts the action motion_node was running, so the agent ends the episode as aborted
    # and the sim profile's logger (auto_end) closes the trial as aborted. If no action was
    # running at that moment, the paused trial waits for the operator, who aborts it from the page.
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function("() => !window.consoleStats.last.running_trial", timeout=8_000)
    except PlaywrightTimeout:
        page.click("#abort")
    page.wait_for_function("() => !window.consoleStats.last.running_trial && window.consoleStats.last.trials.length >= 1", timeout=10_000)
    last = page.evaluate("() => window.consoleStats.last.trials[0]")
    assert last["id"] == trial["id"] and last["outcome"] == "aborted"

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "console.png"))

    # the token never appeared in a URL the browser requested
    assert requested and not any(TOKEN in u for u in requested)
    assert len(console.hub) == 2
    held.close()

    # the stack restarts (same token, same port): the page reconnects by itself, no new login
    b = stack["bringup"]
    b.shutdown()
    page.wait_for_selector("#conn.bad", timeout=10_000)
    from havln_robot import console_app

    stack["bringup"] = console_app.start(None, stack["params"], log=lambda s: None)
    page.wait_for_selector("#conn.ok", timeout=20_000)
    assert page.is_hidden("#login")
    page.close()


def _stalled_client(url: str, cookies: list[dict]):
    """A WebSocket client that connects with the page's session and never reads."""
    from websockets.sync.client import connect

    cookie = "; ".join(f"{c['name']}={c['value']}" for c in cookies)
    return connect(url.replace("http", "ws") + "ws", additional_headers={"Cookie": cookie}, max_queue=1)
