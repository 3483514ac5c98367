"""Facts of the hardware the stack drives, defined once (core layer; no imports).

Sources: the Unitree Go2 datasheet (body size, standing) and the Go2 SDK's sport-service
documentation of ``SportClient.Move`` (the velocity ranges it accepts). Every parameter range,
clamp and simulator limit that depends on them imports them from here.
"""

from __future__ import annotations

#: Body length standing, m (Go2 datasheet).
GO2_LENGTH_M: float = 0.70
#: Body width standing, m (Go2 datasheet).
GO2_WIDTH_M: float = 0.31
#: Body height standing (ground to top of the head), m (Go2 datasheet).
GO2_HEIGHT_M: float = 0.40

#: ``SportClient.Move`` ranges, (min, max): forward speed vx, m/s (forward positive).
GO2_VX_RANGE: tuple[float, float] = (-2.5, 3.8)
#: Lateral speed vy, m/s (left positive).
GO2_VY_RANGE: tuple[float, float] = (-1.0, 1.0)
#: Yaw rate vyaw, rad/s (counter-clockwise positive).
GO2_VYAW_RANGE: tuple[float, float] = (-4.0, 4.0)
