"""Camera images → HA-VLN-CE model inputs, with the camera-to-model field-of-view mapping.

Pure numpy + OpenCV (no ROS). The model format is the HA-VLN-CE / VLN-CE task configuration
(HA-VLN 2.0, arXiv 2503.14229, Sec. 4; VLN-CE ``vln_r2r.yaml``):

* RGB: 224 x 224, uint8, 90° horizontal field of view (``RGB_SENSOR``: WIDTH/HEIGHT 224, HFOV 90);
* depth: 256 x 256, metres clipped to [0, 10] and divided by 10 → float32 in [0, 1]
  (``DEPTH_SENSOR``: WIDTH/HEIGHT 256, HFOV 90, MIN_DEPTH 0, MAX_DEPTH 10, NORMALIZE_DEPTH true).

Field of view. Habitat renders square 90° x 90° pinhole images; the D435i colour camera sees
69.4° x 42.5° (Intel RealSense D400 datasheet, colour FOV at 16:9). A wider view cannot be made
from a narrower one, so the default mode ``"pad"`` re-projects the camera image into a virtual
90° pinhole camera with the same optical centre: model pixel ``(u, v)`` shows the scene point
whose ray is ``((u - c) / f, (v - c) / f, 1)`` (``f = size / 2 / tan(45°)``, ``c = (size - 1) / 2``),
sampled from the camera at ``(fx x + cx, fy y + cy)`` with the camera's own intrinsics. Rays the
camera does not see are filled with 0 (black RGB, depth 0 = "no return", as the RealSense itself
reports unknown depth). Bearings are preserved exactly: a point at azimuth ``θ`` lands at model
column ``c + f tan θ`` -- the column the policy would see it at in Habitat. Between two pinhole
cameras with a shared centre this mapping is affine (scale + shift), so it is one
``cv2.warpAffine`` (RGB anti-aliased by an ``INTER_AREA`` pre-shrink; depth nearest-neighbour so
no depth is invented across object edges). The simulator renders at the D435i FOV and goes through
the same function, so training and deployment see identical geometry.

``"stretch"`` (resize the whole image to the square, ignoring FOV) is kept only for comparison: it
magnifies the centre and squashes the vertical axis, so bearings the policy learnt are wrong.
"""

from __future__ import annotations

import cv2
import numpy as np

from havln_robot.camera import Intrinsics, IntrinsicsError  # noqa: F401  (re-exported)

MODEL_HFOV_DEG: float = 90.0
"""Horizontal (= vertical) FOV of the model views, degrees (VLN-CE sensor HFOV 90)."""
RGB_SIZE: int = 224
"""Model RGB side length, px (VLN-CE ``RGB_SENSOR`` 224x224)."""
DEPTH_SIZE: int = 256
"""Model depth side length, px (VLN-CE ``DEPTH_SENSOR`` 256x256)."""
MIN_DEPTH_M: float = 0.0
MAX_DEPTH_M: float = 10.0
"""Depth clipping range, metres (VLN-CE ``MIN_DEPTH`` 0, ``MAX_DEPTH`` 10); normalised by MAX_DEPTH_M."""
D435I_COLOR_HFOV_DEG: float = 69.4
"""RealSense D435i colour HFOV at 16:9, degrees (Intel D400 series datasheet)."""
FOV_MODES: tuple[str, ...] = ("pad", "stretch")


class PreprocessError(ValueError):
    """An input image or intrinsics cannot be converted; the message names the field and the fix."""


def model_intrinsics(size: int) -> Intrinsics:
    """Intrinsics of a square ``size`` x ``size`` model view with 90° HFOV (Habitat pinhole)."""
    return Intrinsics.from_hfov(size, size, MODEL_HFOV_DEG)


def fov_affine(src: Intrinsics, dst: Intrinsics) -> np.ndarray:
    """2x3 affine matrix mapping ``src`` pixel coordinates to ``dst`` pixel coordinates.

    Both cameras share the optical centre and axis, so ``u_dst = dst.fx / src.fx (u_src - src.cx) + dst.cx``
    (same for v). Returns float64 (2, 3).
    """
    sx, sy = dst.fx / src.fx, dst.fy / src.fy
    return np.array([[sx, 0.0, dst.cx - sx * src.cx], [0.0, sy, dst.cy - sy * src.cy]], dtype=np.float64)


def _intrinsics_for(image: np.ndarray, hfov_deg: float | None, intrinsics: Intrinsics | None) -> Intrinsics:
    h, w = image.shape[:2]
    if intrinsics is not None:
        if (intrinsics.width, intrinsics.height) != (w, h):
            if abs(intrinsics.width / w - intrinsics.height / h) > 1e-3 * max(1.0, intrinsics.width / w):
                raise PreprocessError(
                    f"intrinsics are for {intrinsics.width}x{intrinsics.height} but the image is {w}x{h} with another aspect; "
                    "pass the camera_info of this image"
                )
            intrinsics = intrinsics.scaled(w, h)
        return intrinsics
    if hfov_deg is None:
        raise PreprocessError("give hfov_deg (camera horizontal FOV, degrees) or intrinsics (from camera_info)")
    try:
        return Intrinsics.from_hfov(w, h, float(hfov_deg))
    except IntrinsicsError as exc:
        raise PreprocessError(str(exc)) from None


def _check_mode(mode: str) -> None:
    if mode not in FOV_MODES:
        raise PreprocessError(f"fov mode {mode!r} is not one of {', '.join(FOV_MODES)}")


def to_model_rgb(
    rgb: np.ndarray,
    hfov_deg: float | None = None,
    *,
    intrinsics: Intrinsics | None = None,
    mode: str = "pad",
    size: int = RGB_SIZE,
) -> np.ndarray:
    """Convert a camera colour image to the model's RGB view.

    Args:
        rgb: (H, W, 3) uint8 RGB (not BGR) image.
        hfov_deg: camera horizontal FOV in degrees (ideal centred camera); ignored when
            ``intrinsics`` is given.
        intrinsics: the camera's pinhole intrinsics (from camera_info), preferred over ``hfov_deg``.
        mode: ``"pad"`` (geometric re-projection into the 90° view, unseen rays black) or ``"stretch"``.
        size: output side length (224 for HA-VLN-CE).

    Returns:
        (size, size, 3) uint8, 90° HFOV.

    Raises:
        PreprocessError: wrong shape/dtype, missing FOV, bad mode.
    """
    _check_mode(mode)
    a = np.asarray(rgb)
    if a.ndim != 3 or a.shape[2] != 3 or a.shape[0] < 1 or a.shape[1] < 1:
        raise PreprocessError(f"rgb must be an (H, W, 3) array, got shape {a.shape}; convert mono/RGBA images first")
    if a.dtype != np.uint8:
        raise PreprocessError(f"rgb must be uint8, got {a.dtype}; scale to 0..255 first")
    if mode == "stretch":
        return cv2.resize(a, (size, size), interpolation=cv2.INTER_AREA)
    src = _intrinsics_for(a, hfov_deg, intrinsics)
    dst = model_intrinsics(size)
    scale = min(dst.fx / src.fx, dst.fy / src.fy)
    if scale < 0.5:
        # Anti-alias: shrink by area averaging to about twice the final sampling density first.
        w2 = max(1, int(round(src.width * scale * 2.0)))
        h2 = max(1, int(round(src.height * scale * 2.0)))
        a = cv2.resize(a, (w2, h2), interpolation=cv2.INTER_AREA)
        src = src.scaled(w2, h2)
    m = fov_affine(src, dst)
    return cv2.warpAffine(
        np.ascontiguousarray(a), m, (size, size), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=(0, 0, 0)
    )


def depth_to_metres(depth: np.ndarray, depth_scale: float | None = None) -> np.ndarray:
    """Depth image → float32 metres, (H, W); invalid (NaN, inf, negative) → 0 ("no return").

    Args:
        depth: (H, W) or (H, W, 1); uint16 millimetres (16UC1, realsense-ros) unless ``depth_scale``
            says otherwise, or float metres (32FC1).
        depth_scale: metres per unit for integer input (default 0.001).

    Raises:
        PreprocessError: wrong shape or dtype.
    """
    a = np.asarray(depth)
    if a.ndim == 3 and a.shape[2] == 1:
        a = a[..., 0]
    if a.ndim != 2 or a.shape[0] < 1 or a.shape[1] < 1:
        raise PreprocessError(f"depth must be an (H, W) or (H, W, 1) array, got shape {np.shape(depth)}")
    if np.issubdtype(a.dtype, np.integer):
        m = a.astype(np.float32) * np.float32(0.001 if depth_scale is None else depth_scale)
    elif np.issubdtype(a.dtype, np.floating):
        m = a.astype(np.float32)
    else:
        raise PreprocessError(f"depth must be uint16 mm or float metres, got {a.dtype}")
    bad = ~np.isfinite(m) | (m < 0)
    if bad.any():
        m = m.copy()
        m[bad] = 0.0
    return m


def to_model_depth(
    depth: np.ndarray,
    hfov_deg: float | None = None,
    *,
    intrinsics: Intrinsics | None = None,
    mode: str = "pad",
    size: int = DEPTH_SIZE,
    depth_scale: float | None = None,
) -> np.ndarray:
    """Convert a depth image (aligned to colour) to the model's depth view.

    Args:
        depth: (H, W) or (H, W, 1) depth; uint16 mm (16UC1) or float32 metres (32FC1).
        hfov_deg: camera horizontal FOV in degrees; ignored when ``intrinsics`` is given.
        intrinsics: the camera's pinhole intrinsics (from camera_info).
        mode: ``"pad"`` (geometric, unseen rays 0) or ``"stretch"``.
        size: output side length (256 for HA-VLN-CE).
        depth_scale: metres per unit for integer input (default 0.001 = mm).

    Returns:
        (size, size, 1) float32 in [0, 1]: metres clipped to [0, 10], divided by 10. Resampling is
        nearest-neighbour so no depth is interpolated across object edges or holes.

    Raises:
        PreprocessError: wrong shape/dtype, missing FOV, bad mode.
    """
    _check_mode(mode)
    m = depth_to_metres(depth, depth_scale)
    if mode == "stretch":
        out = cv2.resize(m, (size, size), interpolation=cv2.INTER_NEAREST_EXACT)
    else:
        src = _intrinsics_for(m, hfov_deg, intrinsics)
        mat = fov_affine(src, model_intrinsics(size))
        out = cv2.warpAffine(m, mat, (size, size), flags=cv2.INTER_NEAREST, borderMode=cv2.BORDER_CONSTANT, borderValue=0.0)
    out = np.clip(out, MIN_DEPTH_M, MAX_DEPTH_M) / np.float32(MAX_DEPTH_M - MIN_DEPTH_M)
    return out.astype(np.float32, copy=False)[..., None]
