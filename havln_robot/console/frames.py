"""Frames for the browser: colour image, depth as a colour map and the panorama strip, as JPEG.

Pure (numpy + OpenCV). Each encoded frame starts with one byte naming its channel so a single
binary WebSocket message carries it: see :data:`CHANNEL_BYTES`.
"""

from __future__ import annotations

from collections import deque

import cv2
import numpy as np

#: Binary message prefix per image channel (the page's app.js uses the same table).
CHANNEL_BYTES = {"color": 0, "depth": 1, "panorama": 2}

#: Views kept for the panorama strip (HA-VLN panorama: 12 views, 30 deg apart).
PANORAMA_VIEWS = 12


def _scaled(img: np.ndarray, width: int) -> np.ndarray:
    h, w = img.shape[:2]
    if w <= width:
        return img
    return cv2.resize(img, (width, max(1, round(h * width / w))), interpolation=cv2.INTER_AREA)


def encode(channel: str, rgb: np.ndarray, width: int = 320, quality: int = 70) -> bytes:
    """``rgb`` (H x W x 3, uint8, RGB) scaled to ``width`` as JPEG, prefixed by the channel byte."""
    ok, buf = cv2.imencode(".jpg", cv2.cvtColor(_scaled(rgb, width), cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:
        raise ValueError(f"{channel}: JPEG encoding failed")
    return bytes([CHANNEL_BYTES[channel]]) + buf.tobytes()


def depth_colormap(depth: np.ndarray, max_m: float = 5.0) -> np.ndarray:
    """Depth (16UC1 mm or 32FC1 m) as an RGB colour map (TURBO, near = red); invalid (0/nan) black."""
    d = depth.astype(np.float32)
    if depth.dtype == np.uint16:
        d = d / 1000.0
    valid = np.isfinite(d) & (d > 0)
    scaled = np.clip(np.where(valid, d, 0) / max_m, 0, 1)
    img = cv2.applyColorMap(((1.0 - scaled) * 255).astype(np.uint8), cv2.COLORMAP_TURBO)
    img[~valid] = 0
    return cv2.cvtColor(img, cv2.COLOR_BGR2RGB)


class PanoramaStrip:
    """The last :data:`PANORAMA_VIEWS` views taken after turns, side by side (newest right)."""

    def __init__(self, views: int = PANORAMA_VIEWS, height: int = 90) -> None:
        self.height = height
        self.views: deque[np.ndarray] = deque(maxlen=views)

    def add(self, rgb: np.ndarray) -> None:
        h, w = rgb.shape[:2]
        self.views.append(cv2.resize(rgb, (max(1, round(w * self.height / h)), self.height), interpolation=cv2.INTER_AREA))

    def image(self) -> np.ndarray | None:
        """The strip (RGB), or None before the first view."""
        return np.concatenate(list(self.views), axis=1) if self.views else None
