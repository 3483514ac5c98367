// havln_robot operator console: one WebSocket for live state + frames, fetch() for controls.
// No build step. The token is only ever POSTed (never in a URL); the session is an HttpOnly cookie.
"use strict";
const $ = (id) => document.getElementById(id);
const CHANNELS = ["color", "depth", "panorama"];  // = havln_robot.console.frames.CHANNEL_BYTES
const state = { ws: null, frames: 0, fpsT: performance.now(), last: null, retry: 500, urls: {} };
window.consoleStats = { colorFrames: 0, depthFrames: 0, states: 0, acks: [] };

function msg(text, bad) { const m = $("msg"); m.textContent = text; m.style.color = bad ? "#c53030" : "#2b6cb0"; }

async function api(path, body) {
  const r = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body || {}), credentials: "same-origin" });
  let data = {};
  try { data = await r.json(); } catch (e) { /* empty */ }
  if (r.status === 401) { showLogin(true); }
  if (!r.ok) { msg(`${r.status}: ${data.error || r.statusText}`, true); throw new Error(data.error || r.statusText); }
  if (data.message) msg(data.message);
  return data;
}

function showLogin(show) { $("login").hidden = !show; }

// --- e-stop / stop: over the open WebSocket (fastest), else POST ---------------------------------
let ackId = 0;
function stopNow(kind) {
  const t0 = performance.now();
  const id = ++ackId;
  window.consoleStats.pending = window.consoleStats.pending || {};
  window.consoleStats.pending[id] = t0;
  if (state.ws && state.ws.readyState === WebSocket.OPEN) {
    state.ws.send(JSON.stringify({ op: kind, id }));
  } else {
    api(`/api/${kind}`).catch(() => {});
  }
}
$("stop").onclick = () => stopNow("stop");
$("estop").onclick = () => stopNow("estop");
document.addEventListener("keydown", (e) => {
  if (e.target.tagName === "INPUT") { if (e.key === "Escape") { e.preventDefault(); stopNow("estop"); } return; }
  if (e.key === "Escape") { e.preventDefault(); stopNow("estop"); }
  else if (e.key === " ") { e.preventDefault(); stopNow("stop"); }
});

// --- controls -------------------------------------------------------------------------------------
$("take").onclick = () => api("/api/control/take").catch(() => {});
$("release").onclick = () => api("/api/control/release").catch(() => {});
$("startform").onsubmit = (e) => {
  e.preventDefault();
  api("/api/trial/start", { instruction: $("instr").value, episode_id: $("episode").value, region: $("region").value, people: Number($("people").value || 0) }).catch(() => {});
};
function end(outcome) {
  api("/api/trial/end", { outcome, ne_m: $("nem").value === "" ? null : Number($("nem").value), force: $("force").checked }).catch(() => {});
}
$("success").onclick = () => end("success");
$("failure").onclick = () => end("failure");
$("abort").onclick = () => end("aborted");
$("pause").onclick = () => api("/api/pause", { paused: !(state.last && state.last.paused) }).catch(() => {});
$("loginform").onsubmit = async (e) => {
  e.preventDefault();
  const r = await fetch("/api/login", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ token: $("token").value, name: $("name").value }) });
  if (r.ok) { $("token").value = ""; showLogin(false); connect(); }
  else { $("loginmsg").textContent = "refused: " + ((await r.json()).error || r.status); }
};

// --- live view ------------------------------------------------------------------------------------
function onFrame(buf) {
  const bytes = new Uint8Array(buf);
  const ch = CHANNELS[bytes[0]];
  if (!ch) return;
  const url = URL.createObjectURL(new Blob([bytes.subarray(1)], { type: "image/jpeg" }));
  const img = $(ch);
  if (state.urls[ch]) URL.revokeObjectURL(state.urls[ch]);
  state.urls[ch] = url;
  img.src = url;
  if (ch === "color") { state.frames++; window.consoleStats.colorFrames++; }
  if (ch === "depth") window.consoleStats.depthFrames++;
}

const fmt = (v, d = 2) => (v === null || v === undefined ? "—" : Number(v).toFixed(d));
function render(s) {
  state.last = s;
  window.consoleStats.states++;
  window.consoleStats.last = s;
  $("instruction").textContent = s.instruction || "—";
  const rt = s.running_trial;
  $("trial").textContent = rt ? `#${rt.id} ${rt.region} (people ${rt.people_present}) running` : (s.trials[0] ? `last #${s.trials[0].id}: ${s.trials[0].outcome || s.trials[0].end_reason || "—"}` : "—");
  const faults = [rt && rt.recording_fault ? `RECORDING FAULT: ${rt.recording_fault}` : "", s.store_problem ? `STORE: ${s.store_problem}` : ""].filter(Boolean);
  if (faults.length) $("trial").textContent += " · " + faults.join(" · ");
  const a = s.agent;
  $("agent").textContent = (a ? `step ${a.step} · ${a.action || "—"} · ${a.state}` : "—") + (s.paused ? " · PAUSED" : "");
  const r = s.last_result;
  $("result").textContent = r ? `${r.action} → ${r.outcome} (${fmt(r.distance_m)} m, ${fmt(r.yaw_deg, 1)}°, ${fmt(r.duration_s)} s) ${r.detail || ""}` : "—";
  $("collisions").textContent = String(s.collisions.count);
  $("cmdvel").textContent = `vx ${fmt(s.cmd_vel.vx)} m/s, wz ${fmt(s.cmd_vel.wz)} rad/s`;
  $("ne").textContent = s.ground_truth ? `${fmt(s.ground_truth.ne_m)} m (episode ${s.ground_truth.episode || "builtin"})` : "—";
  $("pause").textContent = s.paused ? "Resume agent" : "Pause agent";
  const c = s.control;
  $("control").textContent = "control: " + (c.holder ? (c.you_hold ? `you (${s.you})` : c.holder + (c.holder_absent_s > 0 ? ` (away ${c.holder_absent_s} s)` : "")) : "nobody") + ` · watching: ${c.watchers.join(", ")}`;
  document.querySelectorAll(".needs-control").forEach((b) => { b.disabled = !c.you_hold; });
  $("sr").textContent = s.sr.judged ? `SR ${(100 * s.sr.sr).toFixed(0)} % (${s.sr.success}/${s.sr.judged})` : "SR —";
  $("trials").innerHTML = "<tr><th>#</th><th>region</th><th>people</th><th>outcome</th><th>NE m</th><th>steps</th></tr>" + s.trials.slice(0, 12).map((t) =>
    `<tr><td>${t.id}</td><td>${esc(t.region)}</td><td>${t.people_present}</td><td class="${t.outcome || ""}">${esc(t.outcome || (t.finished ? t.end_reason : "running"))}${t.verdict_forced ? " (override)" : ""}${t.recording_fault ? " !bag" : ""}</td><td>${fmt(t.ne_m)}</td><td>${t.steps ?? ""}</td></tr>`).join("");
  $("diag").innerHTML = Object.keys(s.diagnostics).length ? Object.entries(s.diagnostics).map(([k, d]) =>
    `<div><b class="${d.level ? "failure" : "success"}">${esc(k)}</b>: ${esc(d.message)} <small>(${d.age_s} s ago)</small></div>`).join("") : "no /diagnostics (sim: none; robot: driver and camera)";
  $("events").textContent = s.events.join("\n");
  drawMap(s);
}
function esc(x) { return String(x ?? "").replace(/[&<>"]/g, (ch) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[ch])); }

function drawMap(s) {
  const cv = $("map"), g = cv.getContext("2d");
  g.clearRect(0, 0, cv.width, cv.height);
  const pts = s.trace.slice();
  if (s.pose) pts.push([s.pose[0], s.pose[1]]);
  if (s.goal) pts.push(s.goal);
  if (!pts.length) { g.fillText("no odometry yet", 10, 20); return; }
  let [x0, y0, x1, y1] = [Infinity, Infinity, -Infinity, -Infinity];
  for (const [x, y] of pts) { x0 = Math.min(x0, x); x1 = Math.max(x1, x); y0 = Math.min(y0, y); y1 = Math.max(y1, y); }
  const span = Math.max(x1 - x0, y1 - y0, 2) * 1.2, cx = (x0 + x1) / 2, cy = (y0 + y1) / 2;
  const k = Math.min(cv.width, cv.height) / span;
  const P = ([x, y]) => [cv.width / 2 + (x - cx) * k, cv.height / 2 - (y - cy) * k];  // x right, y up (odom)
  g.strokeStyle = "#ddd"; g.beginPath();
  for (let m = Math.floor(cx - span); m <= cx + span; m++) { const [px] = P([m, 0]); g.moveTo(px, 0); g.lineTo(px, cv.height); }
  for (let m = Math.floor(cy - span); m <= cy + span; m++) { const [, py] = P([0, m]); g.moveTo(0, py); g.lineTo(cv.width, py); }
  g.stroke();
  g.strokeStyle = "#2b6cb0"; g.lineWidth = 2; g.beginPath();
  s.trace.forEach((p, i) => { const [px, py] = P(p); i ? g.lineTo(px, py) : g.moveTo(px, py); });
  g.stroke();
  if (s.goal) { const [gx, gy] = P(s.goal); g.fillStyle = "#2f855a"; g.beginPath(); g.arc(gx, gy, 6, 0, 7); g.fill(); g.fillText("goal", gx + 8, gy); }
  if (s.pose) {
    const [px, py] = P(s.pose), yaw = s.pose[2];
    g.fillStyle = "#c53030"; g.beginPath(); g.arc(px, py, 5, 0, 7); g.fill();
    g.strokeStyle = "#c53030"; g.beginPath(); g.moveTo(px, py); g.lineTo(px + 15 * Math.cos(yaw), py - 15 * Math.sin(yaw)); g.stroke();
  }
  g.fillStyle = "#666"; g.fillText("1 m grid, odom frame", 6, cv.height - 6);
}

// --- connection (reconnects with back-off after the stack restarts) ---------------------------------
function connect() {
  if (state.ws && state.ws.readyState <= 1) return;
  const ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`);
  ws.binaryType = "arraybuffer";
  state.ws = ws;
  ws.onopen = () => { state.retry = 500; $("conn").textContent = "live"; $("conn").className = "pill ok"; showLogin(false); };
  ws.onmessage = (ev) => {
    if (typeof ev.data !== "string") { onFrame(ev.data); return; }
    const m = JSON.parse(ev.data);
    if (m.type === "state") render(m);
    else if (m.type === "ack") {
      const t0 = (window.consoleStats.pending || {})[m.id];
      if (t0 !== undefined) window.consoleStats.acks.push(performance.now() - t0);
      msg(m.message);
    }
  };
  ws.onclose = (ev) => {
    $("conn").textContent = "offline (reconnecting)"; $("conn").className = "pill bad";
    if (ev.code === 4401) { showLogin(true); return; }
    setTimeout(connect, state.retry);
    state.retry = Math.min(state.retry * 2, 5000);
  };
}
setInterval(() => {
  const now = performance.now();
  $("fps").textContent = (state.frames * 1000 / (now - state.fpsT)).toFixed(1);
  state.frames = 0; state.fpsT = now;
}, 2000);

fetch("/api/state", { credentials: "same-origin" }).then((r) => { if (r.status === 401) showLogin(true); else connect(); }).catch(() => setTimeout(connect, 1000));
