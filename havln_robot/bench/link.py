"""``havln-robot bench link``: the robot-to-workstation link, shaped and cut, measured (root only).

Two network namespaces joined by a veth pair stand for the robot's Jetson and the inference
workstation (docs/two_machines.md); every address lives inside them (10.231.N.1 robot, .2 workstation).
The link is shaped like a busy Wi-Fi link -- ``--rate-mbit`` 20, ``--delay-ms`` 30 one way in
each direction, ``--loss-pct`` 1 each way -- with ``tc netem`` on both veth ends. Where the kernel
has no sch_netem, it is emulated and the table says so: ``tbf`` for the rate, an nftables
``numgen random`` rule for the loss and, since nothing in the kernel then delays packets, a
user-space TCP relay in the robot namespace that holds every chunk ``--delay-ms`` per direction.

Measured, with the robot side in the robot namespace and ``havln-robot policy-server`` in the other:

1. panorama transfer: 12 views of 640x480 colour + 16-bit depth raw (what DDS carries for
   ``image_transport`` raw, ~18 MB), as image_transport compressed (JPEG + lossless PNG), and as
   the remote policy's model input (224/256 px views, zlib), each sent over TCP to a sink;
2. decision latency of a 12-view remote policy that reads its observation and does nothing else
   (the link and the encoding, not the model);
3. a cut: a front-view episode of the agent loop (:class:`havln_robot.agent.core.EpisodeRunner`)
   over a robot whose primitives take their physical minimum duration (motion_node defaults);
   the link is cut in the middle of an action for ``--cut-s`` and comes back. Reported: how long
   the robot still moved after the cut (the primitive in flight, which its own motion layer ends
   within the motion timeout), actions started while cut (must be 0), the wait after the link
   came back, and whether the episode ended with the policy's actions.

Figures go to stdout as a table (``--json`` for the raw record). Without root, ``ip`` or network
namespaces it refuses in one line. Internal modes (``--serve``, ``--robot-side``, ``--relay``) run
inside the namespaces.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from havln_robot import jsonio

VIEWS = 12
RAW_SHAPE = (480, 640)
FRONT_STEPS = 6


def _run(cmd: list[str], check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, check=check, timeout=30)


def namespaces_unavailable() -> str | None:
    """Why network namespaces cannot be made here (one line), or None when they can."""
    if not sys.platform.startswith("linux"):
        return "network namespaces are Linux only"
    if os.geteuid() != 0:
        return "network namespaces and veth pairs need root (run as root, as CI does)"
    if shutil.which("ip") is None:
        return "the ip command is missing: apt-get install iproute2"
    probe = f"havlnprobe{os.getpid()}"
    r = _run(["ip", "netns", "add", probe], check=False)
    if r.returncode != 0:
        return f"ip netns add failed: {r.stderr.strip() or r.returncode} (a container without CAP_SYS_ADMIN?)"
    _run(["ip", "netns", "del", probe], check=False)
    return None


class LinkLab:
    """Two namespaces (robot ``r``, inference ``i``) joined by a veth pair; removed on exit.

    Attributes:
        robot_ip, inference_ip: the two ends' addresses (10.231.N.1 / .2, N from the process id).
        mode: after :meth:`shape`: ``netem`` or ``tbf+nft+relay`` (no sch_netem in this kernel).
    """

    def __init__(self) -> None:
        n = os.getpid() % 250 + 1
        self.ns_r, self.ns_i = f"havln{os.getpid()}r", f"havln{os.getpid()}i"
        self.dev_r, self.dev_i = f"hv{os.getpid()}r"[:15], f"hv{os.getpid()}i"[:15]
        self.robot_ip, self.inference_ip = f"10.231.{n}.1", f"10.231.{n}.2"
        self.mode = "none"
        self.cut_by = ""

    def __enter__(self) -> LinkLab:
        try:
            for ns in (self.ns_r, self.ns_i):
                _run(["ip", "netns", "add", ns])
                _run(["ip", "-n", ns, "link", "set", "lo", "up"])
            _run(["ip", "link", "add", self.dev_r, "type", "veth", "peer", "name", self.dev_i])
            for dev, ns, ip in ((self.dev_r, self.ns_r, self.robot_ip), (self.dev_i, self.ns_i, self.inference_ip)):
                _run(["ip", "link", "set", dev, "netns", ns])
                _run(["ip", "-n", ns, "addr", "add", f"{ip}/24", "dev", dev])
                _run(["ip", "-n", ns, "link", "set", dev, "up"])
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for ns in (self.ns_r, self.ns_i):  # the veth pair goes with its namespaces
            _run(["ip", "netns", "del", ns], check=False)

    def exec(self, ns: str, cmd: list[str]) -> list[str]:
        """``cmd`` run inside namespace ``ns``."""
        return ["ip", "netns", "exec", ns, *cmd]

    def _nft(self, ns: str, script: str) -> None:
        subprocess.run(["ip", "netns", "exec", ns, "nft", "-f", "-"], input=script, text=True, check=True, capture_output=True, timeout=30)

    def shape(self, rate_mbit: float, delay_ms: float, loss_pct: float) -> str:
        """Shape both directions; returns the mode (``netem`` or ``tbf+nft+relay``).

        Raises:
            RuntimeError: neither netem nor tbf + nftables can be set up (names what is missing).
        """
        ok = True
        for ns, dev in ((self.ns_r, self.dev_r), (self.ns_i, self.dev_i)):
            r = _run(
                ["ip", "netns", "exec", ns, "tc", "qdisc", "replace", "dev", dev, "root", "netem"]
                + ["delay", f"{delay_ms:g}ms", "rate", f"{rate_mbit:g}mbit", "loss", f"{loss_pct:g}%", "limit", "10000"],
                check=False,
            )
            ok = ok and r.returncode == 0
        if ok:
            self.mode = "netem"
            return self.mode
        if shutil.which("nft") is None:
            raise RuntimeError("this kernel has no sch_netem and nft is missing: apt-get install nftables (or load sch_netem)")
        burst = max(int(rate_mbit * 1e6 / 8 / 100), 16 * 1024)  # 10 ms of traffic, at least 16 KiB
        for ns, dev in ((self.ns_r, self.dev_r), (self.ns_i, self.dev_i)):
            _run(
                ["ip", "netns", "exec", ns, "tc", "qdisc", "replace", "dev", dev, "root", "tbf"]
                + ["rate", f"{rate_mbit:g}mbit", "burst", str(burst), "latency", "400ms"]
            )
            per_million = int(round(loss_pct * 10_000))
            self._nft(
                ns,
                "table inet havln_loss {\n chain out {\n  type filter hook output priority 0;\n"
                f'  oifname "{dev}" numgen random mod 1000000 < {per_million} drop\n }}\n}}\n',
            )
        self.mode = "tbf+nft+relay"
        return self.mode

    def cut(self) -> None:
        """Drop everything on the link (both directions, the robot side), as a Wi-Fi drop-out does."""
        if shutil.which("nft"):
            self._nft(
                self.ns_r,
                "table inet havln_cut {\n chain in {\n  type filter hook input priority -10;\n"
                f'  iifname "{self.dev_r}" drop\n }}\n chain out {{\n  type filter hook output priority -10;\n'
                f'  oifname "{self.dev_r}" drop\n }}\n}}\n',
            )
            self.cut_by = "nft drop"
        else:
            _run(["ip", "-n", self.ns_r, "link", "set", self.dev_r, "down"])
            self.cut_by = "link down"

    def restore(self) -> None:
        if self.cut_by == "nft drop":
            _run(["ip", "netns", "exec", self.ns_r, "nft", "delete", "table", "inet", "havln_cut"], check=False)
        elif self.cut_by == "link down":
            _run(["ip", "-n", self.ns_r, "link", "set", self.dev_r, "up"], check=False)


# --- in the inference namespace ----------------------------------------------------------------------
def _sink(host: str, port: int) -> None:
    """Accept connections; read an 8-byte length and that many bytes; answer b'k'."""
    srv = socket.create_server((host, port))
    while True:
        conn, _ = srv.accept()
        with conn:
            head = conn.recv(8, socket.MSG_WAITALL)
            n, got = int.from_bytes(head, "big"), 0
            while got < n:
                chunk = conn.recv(min(1 << 20, n - got))
                if not chunk:
                    break
                got += len(chunk)
            conn.sendall(b"k")


def _observing_policy():
    """A 12-view policy that reads its observation and walks forward: the decision latency is the link's."""
    from havln_robot.actions import MOVE_FORWARD
    from havln_robot.policy.api import Policy

    class LinkProbe(Policy):
        views, name = VIEWS, "link-probe"

        def reset(self, instruction: str) -> None:
            pass

        def act(self, obs) -> str:
            obs.check(VIEWS)
            return MOVE_FORWARD

    return LinkProbe()


def serve_inference(host: str, port: int) -> None:
    """Policy servers on ``port`` (12 views) and ``port+1`` (front view) and a byte sink on ``port+2``."""
    from havln_robot.policy.registry import make_policy
    from havln_robot.policy.serve import serve

    servers = [
        serve(_observing_policy(), host, port),
        serve(make_policy(f"forward:steps={FRONT_STEPS}"), host, port + 1),
    ]
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    print("ready", flush=True)
    _sink(host, port + 2)


# --- the delay relay (robot namespace, emulation mode) ------------------------------------------------
async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay_s: float) -> None:
    queue: asyncio.Queue = asyncio.Queue()

    async def out() -> None:
        while True:
            due, data = await queue.get()
            if data is None:
                break
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            writer.write(data)
            await writer.drain()
        writer.close()

    task = asyncio.create_task(out())
    try:
        while data := await reader.read(65536):
            queue.put_nowait((time.monotonic() + delay_s, data))
    except (ConnectionError, OSError):
        pass
    queue.put_nowait((0.0, None))
    try:
        await task
    except (ConnectionError, OSError):
        pass


def relay(listen_port: int, target: str, target_port: int, delay_ms: float) -> None:
    """TCP relay 127.0.0.1:listen_port -> target:target_port holding each chunk ``delay_ms`` per direction."""

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        try:
            tr, tw = await asyncio.open_connection(target, target_port)
        except OSError:
            w.close()
            return
        await asyncio.gather(_pipe(r, tw, delay_ms / 1000.0), _pipe(tr, w, delay_ms / 1000.0))

    async def main() -> None:
        srv = await asyncio.start_server(handle, "127.0.0.1", listen_port)
        print("ready", flush=True)
        async with srv:
            await srv.serve_forever()

    asyncio.run(main())


# --- in the robot namespace ----------------------------------------------------------------------------
def _send(host: str, port: int, data: bytes) -> float:
    t0 = time.perf_counter()
    with socket.create_connection((host, port), timeout=120) as c:
        c.sendall(len(data).to_bytes(8, "big"))
        c.sendall(data)
        c.recv(1)
    return time.perf_counter() - t0


def _model_obs(rgb: np.ndarray, depth_mm: np.ndarray):
    """(12 views) camera frames -> Observation in the model format (centre crop + resize)."""
    import cv2

    from havln_robot.policy.api import Observation

    h, w = RAW_SHAPE
    x0 = (w - h) // 2
    r = np.stack([cv2.resize(v[:, x0 : x0 + h], (224, 224), interpolation=cv2.INTER_AREA) for v in rgb])
    d = np.stack([cv2.resize(v[:, x0 : x0 + h], (256, 256), interpolation=cv2.INTER_NEAREST) for v in depth_mm])
    d = (np.clip(d.astype(np.float32) / 1000.0, 0.0, 10.0) / 10.0)[..., None].astype(np.float32)
    heads = np.array([np.remainder(2 * np.pi * i / VIEWS + np.pi, 2 * np.pi) - np.pi for i in range(VIEWS)], np.float32)
    return Observation(r.astype(np.uint8), d, heads, 0)


class _Robot:
    """AgentIO whose primitives take their physical minimum duration at motion_node's default limits."""

    def __init__(self, view) -> None:
        from havln_robot.motion.executor import MotionConfig

        self.cfg = MotionConfig()
        self.view = view
        self.moves: list[tuple[float, float, str]] = []  # (start, end, action), time.monotonic
        self.on_start = None

    def send_action(self, action: str):
        from havln_robot.agent.core import ActionOutcome

        t0 = time.monotonic()
        dur = self.cfg.min_duration(action)
        self.moves.append((t0, t0 + dur, action))
        if self.on_start:
            self.on_start(len(self.moves))
        time.sleep(dur)
        return ActionOutcome(action, "ok", {"yaw_imu_deg": "0", "yaw_odom_deg": "0"})

    def grab(self):
        return self.view

    def publish_status(self, values) -> None:
        pass

    def timeout_s(self, action: str) -> float:
        """motion_node's timeout of ``action`` (timeout_factor x min duration + margin), s."""
        return self.cfg.timeout_factor * self.cfg.min_duration(action) + self.cfg.timeout_margin_s


def robot_side(cfg: dict[str, Any]) -> dict[str, Any]:
    """The measurements in the robot namespace (see the module docstring); returns the record."""
    from havln_robot.agent.core import AgentConfig, EpisodeRunner, RawView
    from havln_robot.perception.image_codec import encode_color, encode_depth
    from havln_robot.perception.preprocess import Intrinsics
    from havln_robot.policy.remote import RemotePolicy, encode_act

    with np.load(cfg["panorama"]) as z:
        rgb, depth = z["rgb"], z["depth_mm"]
    out: dict[str, Any] = {"source": cfg["source"]}
    pano = RemotePolicy(cfg["url_pano"] + "?timeout_s=20&wait_s=60")  # waits for the server to come up
    obs = _model_obs(rgb, depth)
    payloads = {
        "raw": rgb.tobytes() + depth.tobytes(),
        "compressed": b"".join(encode_color(v)[1] for v in rgb) + b"".join(encode_depth(v)[1] for v in depth),
        "model input": encode_act({"session": "x", "seq": 0}, obs),
    }
    for name, data in payloads.items():
        out[f"{name}_mb"] = len(data) / 1e6
        out[f"{name}_s"] = _send(cfg["sink_host"], cfg["sink_port"], data)
    pano.reset("walk to the door")
    lat = []
    for i in range(cfg["decisions"]):
        obs.step = i
        t0 = time.perf_counter()
        pano.act(obs)
        lat.append((time.perf_counter() - t0) * 1000.0)
    out["decision_ms_median"], out["decision_ms_max"] = float(np.median(lat)), float(np.max(lat))
    out["decision_gaps"] = len(pano.take_gaps())

    # the cut: front-view episode, link cut 0.3 s into the 2nd action
    h, w = RAW_SHAPE
    view = RawView(rgb[0], depth[0], Intrinsics.from_hfov(w, h, 69.4), 0.0)
    robot = _Robot(view)
    front = RemotePolicy(cfg["url_front"] + "?timeout_s=1&wait_s=30")
    marks: dict[str, float] = {}

    def cutter() -> None:
        time.sleep(0.3)
        marks["cut"] = time.monotonic()
        subprocess.run(cfg["cut_cmd"], shell=True, check=True, capture_output=True)
        time.sleep(cfg["cut_s"])
        subprocess.run(cfg["restore_cmd"], shell=True, check=True, capture_output=True)
        marks["restore"] = time.monotonic()

    worker: list[threading.Thread] = []

    def on_start(n: int) -> None:
        if n == 2:
            worker.append(threading.Thread(target=cutter, daemon=True))
            worker[0].start()

    robot.on_start = on_start
    runner = EpisodeRunner(front, robot, AgentConfig(max_actions=FRONT_STEPS + 1, inference_timeout_s=60.0))
    res = runner.run("walk forward and stop")
    runner.close()
    if worker:
        worker[0].join(timeout=cfg["cut_s"] + 30)
    t_cut, t_back = marks.get("cut", float("nan")), marks.get("restore", float("nan"))
    in_flight = [m for m in robot.moves if m[0] <= t_cut < m[1]]
    out.update(
        episode_reason=res.reason,
        episode_actions=res.actions,
        episode_detail=res.detail,
        expected_actions=["MOVE_FORWARD"] * FRONT_STEPS + ["STOP"],
        moving_after_cut_s=(in_flight[0][1] - t_cut) if in_flight else 0.0,
        motion_timeout_s=robot.timeout_s(in_flight[0][2]) if in_flight else robot.timeout_s("MOVE_FORWARD"),
        started_while_cut=sum(1 for s, _, _ in robot.moves if t_cut < s < t_back),
        resumed_after_s=min((s - t_back for s, _, _ in robot.moves if s >= t_back), default=float("nan")),
        link_gaps=res.link_gaps,
        cut_s=cfg["cut_s"],
    )
    return out


# --- orchestration ---------------------------------------------------------------------------------------
def panorama_file(path: Path) -> str:
    """Write 12 views (640x480 rgb, uint16 mm depth) to ``path``: rendered in a real HA-R2R scene
    where the data and a renderer are at hand, else smooth synthetic views; returns their source."""
    h, w = RAW_SHAPE
    try:
        from havln_robot.episodes import load_episodes
        from havln_robot.paths import data_dir
        from havln_robot.sim.mesh_scene import load_scene
        from havln_robot.sim.render import Renderer

        d = data_dir()
        (ep,) = load_episodes(d / "ha_r2r_de" / "HA_val_seen.json", d / "connectivity", limit=1)
        scene = load_scene(ep.scan, d / "connectivity")
        r = Renderer(scene, None, w, h)
        try:
            views = [r.render((*ep.start_position, ep.start_yaw + 2 * np.pi * i / VIEWS)) for i in range(VIEWS)]
        finally:
            r.close()
        rgb = np.stack([v[0] for v in views])
        depth = np.stack([np.round(np.clip(v[1], 0, 65.535) * 1000.0).astype(np.uint16) for v in views])
        source = f"rendered HA-R2R scan {ep.scan}"
    except Exception as exc:  # noqa: BLE001 - no data or no OpenGL: synthetic views
        yy, xx = np.mgrid[0:h, 0:w]
        rgb = np.stack([np.stack([(xx + 20 * i) % 256, yy % 256, (xx + yy) % 256], -1).astype(np.uint8) for i in range(VIEWS)])
        depth = np.stack([(1000 + 4 * yy + 3 * xx + 100 * i).astype(np.uint16) for i in range(VIEWS)])
        source = f"synthetic ({type(exc).__name__})"
    np.savez(path, rgb=rgb, depth_mm=depth)
    return source


def measure(
    rate_mbit: float = 20.0, delay_ms: float = 30.0, loss_pct: float = 1.0, cut_s: float = 3.0, decisions: int = 5
) -> dict[str, Any]:
    """Build the lab, run both sides, tear it down; returns the robot side's record plus the link's.

    Raises:
        RuntimeError: namespaces unavailable (the one-line reason), or a side failed (its stderr).
    """
    why = namespaces_unavailable()
    if why:
        raise RuntimeError(why)
    py = sys.executable
    port = 18000 + os.getpid() % 1000 * 4
    procs: list[subprocess.Popen] = []
    with tempfile.TemporaryDirectory(prefix="havln-link-") as tmp, LinkLab() as lab:
        try:
            mode = lab.shape(rate_mbit, delay_ms, loss_pct)
            pano = Path(tmp) / "panorama.npz"
            source = panorama_file(pano)
            env = {**os.environ, "PYTHONUNBUFFERED": "1"}
            inf = subprocess.Popen(
                lab.exec(lab.ns_i, [py, "-m", "havln_robot.bench.link", "--serve", lab.inference_ip, str(port)]),
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
            )  # fmt: skip
            procs.append(inf)
            if inf.stdout.readline().strip() != "ready":
                raise RuntimeError(f"policy server in the inference namespace did not start: {inf.stderr.read()[-2000:]}")
            host = lab.inference_ip
            ports = {"pano": port, "front": port + 1, "sink": port + 2}
            if mode != "netem":  # delay in user space: every connection of the robot side goes through a relay
                for k, p in list(ports.items()):
                    rel = subprocess.Popen(
                        lab.exec(lab.ns_r, [py, "-m", "havln_robot.bench.link", "--relay", str(p + 100), host, str(p), str(delay_ms)]),
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                    )  # fmt: skip
                    procs.append(rel)
                    if rel.stdout.readline().strip() != "ready":
                        raise RuntimeError(f"delay relay did not start: {rel.stderr.read()[-2000:]}")
                    ports[k] = p + 100
                host = "127.0.0.1"
            ns = lab.ns_r
            if shutil.which("nft"):
                cut_cmd = (
                    f"nft -f - <<'E'\ntable inet havln_cut {{\n chain in {{\n  type filter hook input priority -10;\n"
                    f'  iifname "{lab.dev_r}" drop\n }}\n chain out {{\n  type filter hook output priority -10;\n'
                    f'  oifname "{lab.dev_r}" drop\n }}\n}}\nE'
                )
                restore_cmd, cut_by = "nft delete table inet havln_cut", "nft drop (both directions)"
            else:
                cut_cmd, restore_cmd, cut_by = f"ip link set {lab.dev_r} down", f"ip link set {lab.dev_r} up", "link down"
            cfg = {
                "panorama": str(pano), "source": source, "url_pano": f"http://{host}:{ports['pano']}",
                "url_front": f"http://{host}:{ports['front']}", "sink_host": host, "sink_port": ports["sink"],
                "cut_cmd": cut_cmd, "restore_cmd": restore_cmd, "cut_s": cut_s, "decisions": decisions,
            }  # fmt: skip
            r = subprocess.run(
                lab.exec(ns, [py, "-m", "havln_robot.bench.link", "--robot-side", jsonio.dumps(cfg)]),
                capture_output=True, text=True, env=env, timeout=600,
            )  # fmt: skip
            if r.returncode != 0:
                raise RuntimeError(f"robot side failed: {r.stderr[-3000:]}")
            rec = json.loads(r.stdout.strip().splitlines()[-1])
        finally:
            for p in procs:
                p.kill()
                p.wait(timeout=10)
    rec.update(mode=mode, cut_by=cut_by, rate_mbit=rate_mbit, delay_ms=delay_ms, loss_pct=loss_pct)
    return rec


def table(rec: dict[str, Any]) -> str:
    """The figures as a Markdown table."""
    gaps = ", ".join(f"{g['wait_s']:.2f} s ({g['tries']} tries)" for g in rec["link_gaps"])
    mode = rec["mode"] if rec["mode"] == "netem" else f"{rec['mode']} (no sch_netem in this kernel: emulated)"
    rows = [
        f"link: {rec['rate_mbit']:g} Mbit/s, {rec['delay_ms']:g} ms each way, {rec['loss_pct']:g} % loss each way -- {mode}; "
        f"panorama: {rec['source']}",
        "",
        "| measure | value |",
        "| --- | --- |",
    ]
    for k in ("raw", "compressed", "model input"):
        rows.append(f"| 12-view panorama, {k} | {rec[f'{k}_mb']:.2f} MB in {rec[f'{k}_s']:.2f} s |")
    rows += [
        f"| decision latency, remote 12-view policy | median {rec['decision_ms_median']:.0f} ms, max {rec['decision_ms_max']:.0f} ms |",
        f"| link cut ({rec['cut_by']}) for | {rec['cut_s']:g} s, 0.3 s into an action |",
        f"| robot still moving after the cut | {rec['moving_after_cut_s']:.2f} s (motion timeout {rec['motion_timeout_s']:.2f} s) |",
        f"| actions started while cut | {rec['started_while_cut']} |",
        f"| next action after the link came back | {rec['resumed_after_s']:.2f} s |",
        f"| episode | {rec['episode_reason']}, {len(rec['episode_actions'])} actions"
        f"{' (as without the cut)' if rec['episode_actions'] == rec['expected_actions'] else ' (DIFFERENT from the policy)'} |",
        f"| recorded gap | {gaps or 'none'} |",
    ]
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    """``havln-robot bench link [--rate-mbit R] [--delay-ms D] [--loss-pct L] [--cut-s C] [--json]``."""
    from havln_robot.text import number_in

    if argv[:1] == ["--serve"]:
        serve_inference(argv[1], int(argv[2]))
        return 0
    if argv[:1] == ["--relay"]:
        relay(int(argv[1]), argv[2], int(argv[3]), float(argv[4]))
        return 0
    if argv[:1] == ["--robot-side"]:
        print(jsonio.dumps(robot_side(json.loads(argv[1])), nonfinite="null"))
        return 0
    ap = argparse.ArgumentParser(prog="havln-robot bench link", description=__doc__.split("\n\n")[0].replace("``", ""))
    ap.add_argument("--rate-mbit", type=number_in(0.1, 10000, unit="Mbit/s"), default=20.0, help="link rate, Mbit/s (default 20)")
    ap.add_argument("--delay-ms", type=number_in(0, 2000, unit="ms"), default=30.0, help="one-way delay each direction, ms (default 30)")
    ap.add_argument("--loss-pct", type=number_in(0, 50, unit="%"), default=1.0, help="packet loss each direction, %% (default 1)")
    ap.add_argument("--cut-s", type=number_in(0.5, 60, unit="s"), default=3.0, help="length of the link cut, s (default 3)")
    ap.add_argument("--json", action="store_true", help="print the raw record as JSON")
    args = ap.parse_args(argv)
    why = namespaces_unavailable()
    if why:
        print(f"havln-robot bench link: {why}", file=sys.stderr)
        return 2
    rec = measure(args.rate_mbit, args.delay_ms, args.loss_pct, args.cut_s)
    print(jsonio.dumps(rec, nonfinite="null") if args.json else table(rec))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
