"""Which offscreen renderer draws scan meshes: frames/s of each candidate on the same mesh and poses.

``havln-robot bench sim --scenes DIR|synthetic --compare-renderers`` runs this module once per
candidate in a fresh subprocess (each has its own OpenGL context; EGL contexts of two libraries
in one process interfere) and prints a table. Candidates:

* ``mujoco`` -- the project's :class:`havln_robot.sim.render.Renderer` (MuJoCo mesh assets built
  from the trimesh-loaded glTF, one texture per part, colour + depth in one pass);
* ``pyrender`` -- ``pyrender.OffscreenRenderer`` on ``pyrender.Scene.from_trimesh_scene``
  (``PYOPENGL_PLATFORM=egl``), measured only when pyrender is importable (it is not a dependency);
* ``open3d`` -- ``open3d.visualization.rendering.OffscreenRenderer``, measured only when importable.

Usage (what the bench runs): ``python -m havln_robot.bench.renderers BACKEND SCENES_DIR SCAN CONN_DIR
POSES_JSON W H HFOV_DEG``; prints one JSON object (``fps``, ``build_s``, ``frames`` or ``error``).
"""

from __future__ import annotations

import math
import sys
import time

import numpy as np

from havln_robot import jsonio

BACKENDS = ("mujoco", "pyrender", "open3d")


def _mujoco(scenes: str, scan: str, conn: str, poses, w: int, h: int, hfov: float) -> tuple[float, int, float]:
    from havln_robot.sim.mesh_scene import load_scene
    from havln_robot.sim.render import Renderer

    scene = load_scene(scan, conn, scenes)
    t0 = time.perf_counter()
    r = Renderer(scene, None, w, h, hfov)
    r.render(poses[0])
    build = time.perf_counter() - t0
    t0 = time.perf_counter()
    for p in poses:
        r.render(p)
    dt = time.perf_counter() - t0
    r.close()
    return build, len(poses), dt


def _camera_pose_habitat(pose, cam_h: float, cam_fwd: float) -> np.ndarray:
    """4x4 camera-to-world pose in the y-up mesh frame (OpenGL camera: looks along -z, y up)."""
    x, y, z, yaw = pose
    c, s = math.cos(yaw), math.sin(yaw)
    pos_map = np.array([x + c * cam_fwd, y + s * cam_fwd, z + cam_h])
    pos = np.array([pos_map[0], pos_map[2], -pos_map[1]])
    zc = -np.array([c, 0.0, -s])
    yc = np.array([0.0, 1.0, 0.0])
    xc = np.cross(yc, zc)
    t = np.eye(4)
    t[:3, 0], t[:3, 1], t[:3, 2], t[:3, 3] = xc, yc, zc, pos
    return t


def _pyrender(scenes: str, scan: str, conn: str, poses, w: int, h: int, hfov: float) -> tuple[float, int, float]:
    import os

    os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
    import pyrender
    import trimesh

    from havln_robot.sim.mesh_scene import scene_mesh_path
    from havln_robot.sim.robot import GO2_CAMERA_FORWARD_M, GO2_CAMERA_HEIGHT_M

    t0 = time.perf_counter()
    tm = trimesh.load(str(scene_mesh_path(scenes, scan)), force="scene")
    sc = pyrender.Scene.from_trimesh_scene(tm, ambient_light=[0.5, 0.5, 0.5])
    yfov = 2.0 * math.atan(math.tan(math.radians(hfov) / 2.0) * h / w)
    cam = sc.add(pyrender.PerspectiveCamera(yfov=yfov, aspectRatio=w / h, znear=0.05, zfar=60.0))
    sc.add(pyrender.DirectionalLight(intensity=2.0), parent_node=cam)
    r = pyrender.OffscreenRenderer(w, h)
    sc.set_pose(cam, _camera_pose_habitat(poses[0], GO2_CAMERA_HEIGHT_M, GO2_CAMERA_FORWARD_M))
    r.render(sc)
    build = time.perf_counter() - t0
    t0 = time.perf_counter()
    for p in poses:
        sc.set_pose(cam, _camera_pose_habitat(p, GO2_CAMERA_HEIGHT_M, GO2_CAMERA_FORWARD_M))
        r.render(sc)  # colour + depth
    dt = time.perf_counter() - t0
    r.delete()
    return build, len(poses), dt


def _open3d(scenes: str, scan: str, conn: str, poses, w: int, h: int, hfov: float) -> tuple[float, int, float]:
    import open3d as o3d  # noqa: F401  (measured only where installed)

    from havln_robot.sim.mesh_scene import scene_mesh_path
    from havln_robot.sim.robot import GO2_CAMERA_FORWARD_M, GO2_CAMERA_HEIGHT_M

    t0 = time.perf_counter()
    model = o3d.io.read_triangle_model(str(scene_mesh_path(scenes, scan)))
    r = o3d.visualization.rendering.OffscreenRenderer(w, h)
    r.scene.add_model("scan", model)
    build = time.perf_counter() - t0
    t0 = time.perf_counter()
    for p in poses:
        t = _camera_pose_habitat(p, GO2_CAMERA_HEIGHT_M, GO2_CAMERA_FORWARD_M)
        eye, fwd, up = t[:3, 3], -t[:3, 2], t[:3, 1]
        r.setup_camera(math.degrees(2.0 * math.atan(math.tan(math.radians(hfov) / 2.0) * h / w)), eye + fwd, eye, up)
        r.render_to_image()
        r.render_to_depth_image(z_in_view_space=True)
    dt = time.perf_counter() - t0
    return build, len(poses), dt


def measure(backend: str, scenes: str, scan: str, conn: str, poses, w: int, h: int, hfov: float) -> dict:
    """Frames/s of ``backend`` (colour + depth per frame) on the scan mesh; ``error`` when it cannot run."""
    fn = {"mujoco": _mujoco, "pyrender": _pyrender, "open3d": _open3d}[backend]
    try:
        build, n, dt = fn(scenes, scan, conn, poses, w, h, hfov)
    except ImportError as exc:
        return {"backend": backend, "error": f"not installed ({exc.name})"}
    except Exception as exc:  # noqa: BLE001 - a candidate that fails is reported, not fatal
        return {"backend": backend, "error": f"{type(exc).__name__}: {str(exc)[:200]}"}
    return {"backend": backend, "resolution": f"{w}x{h}", "frames": n, "fps": n / dt, "build_s": build}


def main(argv: list[str]) -> int:
    """Entry point of the per-backend subprocess (module docstring)."""
    backend, scenes, scan, conn, poses_json, w, h, hfov = argv
    if backend not in BACKENDS:
        print(jsonio.dumps({"backend": backend, "error": f"unknown backend; choose one of {BACKENDS}"}))
        return 2
    poses = [tuple(p) for p in jsonio.load_json_file(poses_json)]
    print(jsonio.dumps(measure(backend, scenes, scan, conn, poses, int(w), int(h), float(hfov)), nonfinite="null"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
