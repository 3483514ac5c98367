"""A :class:`Policy` served over HTTP by ``havln-robot policy-server`` (pure Python + numpy, no ROS).

The robot (or the evaluator) keeps the episode loop; only ``reset`` and ``act`` cross the link, so a
larger policy can run on a workstation GPU over Wi-Fi (docs/two_machines.md). Spec:
``http://HOST:PORT[?timeout_s=T&wait_s=W]`` in agent_node's ``policy`` parameter and ``eval --policy``.

Wire format (one HTTP/1.1 request per call, the server in :mod:`havln_robot.policy.serve`):

* ``GET /info`` -> JSON ``{"name", "views", "observes"}``.
* ``POST /reset`` JSON ``{"session", "instruction"}`` -> ``{"ok": true}``.
* ``POST /act`` body: a compressed ``.npz`` (``numpy.savez_compressed``, read back with
  ``allow_pickle=False``) holding
  ``rgb`` (N, 224, 224, 3) uint8, ``depth`` (N, 256, 256, 1) float32, ``headings`` (N,) float32
  and ``meta``: a JSON text (``session``, ``seq`` = the decision's index in the session,
  ``step``, ``outcome`` = the previous action's ``[action, outcome]`` or null) -> ``{"seq", "action"}``.
  A policy that does not observe (``observes`` False) gets ``meta`` alone.

Stale decisions: a decision is asked for once per ``seq``; a try that times out is repeated with
the same ``seq`` and the same observation (the robot has not moved: no action is sent while
``act`` waits), and the server answers a repeated ``seq`` from its cache instead of stepping the
policy's recurrent state again. An answer for another ``seq`` or session is refused, never
executed. When no answer comes within ``wait_s``, ``act`` raises :class:`PolicyUnreachable` and the
episode ends aborted with the robot standing still. Every wait longer than one try is kept in
:attr:`RemotePolicy.gaps` (the agent copies it into the episode record, ``link_gaps``).
"""

from __future__ import annotations

import http.client
import io
import json
import time
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import numpy as np

from havln_robot import jsonio
from havln_robot.policy.api import Observation, Policy, PolicyError, check_action, check_instruction

#: Default seconds one HTTP try may take before it is repeated (a 12-view panorama is ~0.5 MB as
#: compressed model input: ~0.2 s at 20 Mbit/s).
DEFAULT_TIMEOUT_S = 3.0
#: Default seconds ``act`` / ``reset`` keep trying before the episode is given up; below
#: agent_node's default ``inference_timeout_s`` (10 s) so the policy's own error is the one reported.
DEFAULT_WAIT_S = 8.0
#: Largest request body the server reads, bytes (a 24-view panorama is ~10 MB uncompressed).
MAX_BODY_BYTES = 64 * 1024 * 1024
SCHEMES = ("http://",)


class PolicyUnreachable(PolicyError):
    """The policy server gave no answer within ``wait_s`` (the link is cut or the server is gone)."""


def is_remote(spec: object) -> bool:
    """True when ``spec`` names a policy server (``http://host:port``)."""
    return isinstance(spec, str) and spec.strip().lower().startswith(SCHEMES)


def parse_remote_spec(spec: str) -> tuple[str, int, float, float]:
    """``http://HOST:PORT[?timeout_s=T&wait_s=W]`` -> (host, port, timeout_s, wait_s).

    Raises:
        PolicyError: not ``http://host:port``, or an option unknown or out of range (0 < T <= W <= 600 s).
    """
    u = urlsplit(spec.strip())
    try:
        port = u.port
    except ValueError:
        port = None
    if u.scheme != "http" or not u.hostname or port is None or u.path not in ("", "/"):
        raise PolicyError(f"policy {spec!r}: a policy server is given as http://HOST:PORT (e.g. http://192.168.123.100:8770)")
    opts = {k: v[-1] for k, v in parse_qs(u.query, keep_blank_values=True).items()}
    unknown = sorted(set(opts) - {"timeout_s", "wait_s"})
    if unknown:
        raise PolicyError(f"policy {spec!r}: unknown option(s) {', '.join(unknown)}; a policy server takes timeout_s and wait_s")
    try:
        timeout_s = float(opts.get("timeout_s", DEFAULT_TIMEOUT_S))
        wait_s = float(opts.get("wait_s", max(DEFAULT_WAIT_S, timeout_s)))
    except ValueError:
        raise PolicyError(f"policy {spec!r}: timeout_s and wait_s must be numbers of seconds") from None
    if not (0.0 < timeout_s <= wait_s <= 600.0):
        raise PolicyError(f"policy {spec!r}: need 0 < timeout_s <= wait_s <= 600 s, got timeout_s={timeout_s:g}, wait_s={wait_s:g}")
    return u.hostname, port, timeout_s, wait_s


def encode_act(meta: dict[str, Any], obs: Observation | None) -> bytes:
    """The ``POST /act`` body: an ``.npz`` with ``meta`` (JSON text) and, with ``obs``, its arrays."""
    arrays: dict[str, np.ndarray] = {"meta": np.array(jsonio.dumps(meta))}
    if obs is not None:
        arrays.update(
            rgb=np.ascontiguousarray(obs.rgb),
            depth=np.ascontiguousarray(obs.depth),
            headings=np.asarray(obs.headings, dtype=np.float32),
        )
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)  # lossless zlib: a 12-view panorama 5.0 MB -> 0.5 MB (rendered HA-R2R views)
    return buf.getvalue()


def decode_act(body: bytes) -> tuple[dict[str, Any], Observation | None]:
    """Inverse of :func:`encode_act`.

    Raises:
        PolicyError: not an ``.npz`` of this layout (names the missing or bad field).
    """
    try:
        with np.load(io.BytesIO(body), allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        meta = json.loads(str(arrays["meta"]))
    except Exception as exc:  # noqa: BLE001 - any malformed body is the client's error
        raise PolicyError(f"act body: not an .npz with a JSON 'meta' entry ({type(exc).__name__}: {exc})") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("seq"), int) or not isinstance(meta.get("session"), str):
        raise PolicyError("act body: meta needs 'session' (str) and 'seq' (int)")
    if "rgb" not in arrays:
        return meta, None
    missing = [k for k in ("depth", "headings") if k not in arrays]
    if missing:
        raise PolicyError(f"act body: {', '.join(missing)} missing beside rgb")
    return meta, Observation(arrays["rgb"], arrays["depth"], arrays["headings"], int(meta.get("step", 0)))


class RemotePolicy(Policy):
    """Client of ``havln-robot policy-server``: the server's policy, acting on this machine's observations.

    Args:
        spec: ``http://HOST:PORT[?timeout_s=T&wait_s=W]`` (see :func:`parse_remote_spec`).
        clock: monotonic time, s (tests).
        wait_s: overrides the spec's ``wait_s`` (and caps ``timeout_s``), s.

    Attributes:
        gaps: one dict per call that needed more than one try: ``call`` (reset | act), ``seq``,
            ``wait_s`` (from the first try to the answer, or to giving up), ``tries``, ``answered``
            (False: gave up) and ``error`` (the last try's failure).

    Raises:
        PolicyError: bad spec; PolicyUnreachable: no ``/info`` answer within ``wait_s`` at construction.
    """

    def __init__(self, spec: str, clock: Callable[[], float] = time.monotonic, wait_s: float | None = None) -> None:
        self.spec = spec.strip()
        self.host, self.port, self.timeout_s, self.wait_s = parse_remote_spec(self.spec)
        if wait_s is not None:  # a caller that only checks the server (doctor) waits less
            self.wait_s = max(float(wait_s), 0.01)
            self.timeout_s = min(self.timeout_s, self.wait_s)
        self.clock = clock
        self.gaps: list[dict[str, Any]] = []
        self._session = ""
        self._seq = 0
        self._outcome: list[str] | None = None
        info = self._call("GET", "/info", None, "info", -1)
        try:
            self.views = int(info["views"])
            self.observes = bool(info.get("observes", True))
            self.name = f"{info.get('name', 'policy')}@{self.host}:{self.port}"
        except (KeyError, TypeError, ValueError):
            raise PolicyError(f"policy server {self.spec}: /info answered {info!r}, not a havln-robot policy-server") from None

    # --- transport -------------------------------------------------------------------------------
    def _try(self, method: str, path: str, body: bytes | None, ctype: str, timeout_s: float) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout_s)
        try:
            conn.request(method, path, body=body, headers={"Content-Type": ctype} if body is not None else {})
            r = conn.getresponse()
            return r.status, r.read()
        finally:
            conn.close()

    def _call(self, method: str, path: str, body: bytes | None, call: str, seq: int, ctype: str = "application/json") -> dict:
        """One request, repeated until it is answered or ``wait_s`` has passed since the first try
        (each try at most ``timeout_s``, and never past ``wait_s``).

        Raises:
            PolicyError: the server refused the request (4xx/5xx: its message); PolicyUnreachable: no answer.
        """
        t0 = self.clock()
        tries, error = 0, ""
        while True:
            tries += 1
            left = self.wait_s - (self.clock() - t0)  # the last try ends by wait_s: the whole wait stays within it
            try:
                status, data = self._try(method, path, body, ctype, max(0.05, min(self.timeout_s, left)))
            except (OSError, http.client.HTTPException) as exc:  # refused, reset, timed out, cut mid-answer
                error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            else:
                try:
                    doc = json.loads(data.decode("utf-8"))
                except (UnicodeDecodeError, ValueError):
                    doc = {"error": data[:200].decode("utf-8", "replace")}
                if tries > 1:
                    self.gaps.append(
                        {"call": call, "seq": seq, "wait_s": round(self.clock() - t0, 3), "tries": tries, "answered": True, "error": error}
                    )
                if status != 200:
                    raise PolicyError(f"policy server {self.spec}: {doc.get('error', f'HTTP {status}')}")
                return doc
            left = self.wait_s - (self.clock() - t0)
            if left <= 0:
                self.gaps.append(
                    {"call": call, "seq": seq, "wait_s": round(self.clock() - t0, 3), "tries": tries, "answered": False, "error": error}
                )
                raise PolicyUnreachable(
                    f"policy server {self.spec}: no answer to {call} within wait_s={self.wait_s:g} s ({tries} tries; last: {error}); "
                    "the robot stands still -- check the link and that havln-robot policy-server runs"
                )
            time.sleep(min(0.1, left))

    # --- Policy ----------------------------------------------------------------------------------
    def reset(self, instruction: str) -> None:
        """Start a new session on the server (a previous one, of any client, is ended there)."""
        check_instruction(instruction)
        self._session = uuid.uuid4().hex
        self._seq = 0
        self._outcome = None
        body = jsonio.dumps({"session": self._session, "instruction": instruction}).encode()
        self._call("POST", "/reset", body, "reset", -1)

    def act(self, obs: Observation) -> str:
        """The server's action for ``obs``; blocks (robot standing) until answered or ``wait_s`` passed.

        Raises:
            PolicyError: reset not called, or the server refused the input; PolicyUnreachable: no answer.
        """
        if not self._session:
            raise PolicyError("RemotePolicy.act before reset(instruction)")
        if self.observes:
            obs.check(self.views)
        meta = {
            "session": self._session,
            "seq": self._seq,
            "step": int(obs.step) if obs is not None else self._seq,
            "outcome": self._outcome,
        }
        doc = self._call("POST", "/act", encode_act(meta, obs if self.observes else None), "act", self._seq, "application/octet-stream")
        if doc.get("seq") != self._seq:  # an answer to another decision: never executed
            raise PolicyError(f"policy server {self.spec}: answer for decision {doc.get('seq')!r}, asked for {self._seq}")
        self._seq += 1
        self._outcome = None
        return check_action(doc.get("action"))

    def on_action_result(self, action: str, outcome: str) -> None:
        """Sent with the next ``act`` (one round trip per decision; repeated tries carry it again)."""
        self._outcome = [action, outcome]

    def take_gaps(self) -> list[dict[str, Any]]:
        """The gaps recorded since the last call (and forget them)."""
        out, self.gaps = self.gaps, []
        return out
