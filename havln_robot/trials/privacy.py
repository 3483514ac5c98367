"""Bystander privacy in trial recordings: colour frames with people blurred (pure numpy + cv2).

``trial_logger_node`` records colour frames according to ``mcap_color``: ``none`` (the default:
no RGB in the bag, depth and everything else kept), ``blur_people`` (each frame with every person
of the latest ``havln/people`` blurred), or ``raw`` (as captured; only with the bystanders' consent).

A person at base_link (x forward, y left) is blurred as a full-height image strip: the columns
their body (:data:`BLUR_HALF_WIDTH_M` either side of the centre) covers at their range, all rows
(the face is inside whatever the camera pitch). A person people_node missed is NOT blurred: with
``blur_people`` a bag can still hold a face; ``none`` is the setting that guarantees it does not.
"""

from __future__ import annotations

import numpy as np

from havln_robot.camera import Intrinsics

BLUR_HALF_WIDTH_M: float = 0.45
"""Half width of the blurred strip at the person's range, m (shoulder half-breadth ~0.25 m,
NASA-STD-3000 95th percentile, plus the tracker's position error p95 ~0.2 m)."""
MCAP_COLOR_MODES: tuple[str, ...] = ("none", "blur_people", "raw")


def blur_people(
    rgb: np.ndarray, people_xy: list[tuple[float, float]], k: Intrinsics, camera_x_m: float, camera_y_m: float = 0.0
) -> np.ndarray:
    """A copy of ``rgb`` with each person's image strip blurred beyond recognition.

    Args:
        rgb: (H, W, 3) uint8 colour frame (its intrinsics ``k``; a level camera: columns depend only
            on bearing).
        people_xy: people in base_link, m.
        k: intrinsics of ``rgb``.
        camera_x_m: optical centre ahead of base_link, m.
        camera_y_m: optical centre left of base_link, m.

    Returns:
        (H, W, 3) uint8, a new array.

    Raises:
        ValueError: ``rgb`` is not (H, W, 3) uint8 matching ``k``.
    """
    import cv2

    a = np.asarray(rgb)
    if a.ndim != 3 or a.shape[2] != 3 or a.dtype != np.uint8 or a.shape[:2] != (k.height, k.width):
        raise ValueError(f"colour frame must be ({k.height}, {k.width}, 3) uint8, got {a.shape} {a.dtype}")
    out = a.copy()
    h, w = out.shape[:2]
    ksize = max(3, (w // 16) | 1)  # a kernel 1/16 of the width wide: no face survives it
    for x, y in people_xy:
        fwd, left = x - camera_x_m, y - camera_y_m
        if fwd <= 0.05:
            continue
        u0 = int(np.floor(k.cx - k.fx * (left + BLUR_HALF_WIDTH_M) / fwd))
        u1 = int(np.ceil(k.cx - k.fx * (left - BLUR_HALF_WIDTH_M) / fwd))
        u0, u1 = max(0, u0), min(w, u1)
        if u1 - u0 < 1:
            continue
        strip = np.ascontiguousarray(out[:, u0:u1])
        out[:, u0:u1] = cv2.blur(cv2.resize(cv2.resize(strip, (max(1, (u1 - u0) // 12), max(1, h // 12))), (u1 - u0, h)), (ksize, ksize))
    return out
