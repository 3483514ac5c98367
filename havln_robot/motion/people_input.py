"""The people the executor checks, from people messages as they arrive (pure numpy).

motion_node receives people twice: ``people_topic`` (positions, no ids) and optionally
``people_tracks_topic`` (ids and velocities, preferred: the forecast needs them). Each message
describes the people in the base_link of its capture; :class:`PeopleInput` keeps the newest of
each, capped to the nearest ``max_people``, and answers the fresh ones moved into the current
base_link (:func:`rebase_people`). Messages older than ``people_timeout_s`` are not used.
"""

from __future__ import annotations

import math

import numpy as np

from havln_robot.motion.safety import Person, rebase_points

Pose2D = tuple[float, float, float]  # x m, y m, yaw rad (odom frame)


def nearest_rows(xy: np.ndarray, n: int) -> np.ndarray | None:
    """Indices of the ``n`` nearest of the (N, >=2) base_link positions ``xy`` (m), nearest first
    (NaN counts as farthest); None when all N <= n are kept."""
    if len(xy) <= n:
        return None
    d = np.nan_to_num(xy[:, 0] * xy[:, 0] + xy[:, 1] * xy[:, 1], nan=np.inf)
    keep = np.argpartition(d, n - 1)[:n]
    return keep[np.argsort(d[keep], kind="stable")]


def rebase_people(people: list[Person], at: Pose2D | None, here: Pose2D | None) -> list[Person]:
    """``people`` seen from odom pose ``at`` (their capture), moved into the base_link of ``here``
    (positions moved, velocities rotated; one numpy call for all of them); unchanged when either
    pose is unknown or they are equal."""
    if at is None or here is None or not people or at == here:
        return list(people)
    a = np.array([(q.x, q.y, q.vx, q.vy) for q in people], dtype=np.float64)
    xy = rebase_points(a[:, :2], at, here)
    da = at[2] - here[2]
    c, s = math.cos(da), math.sin(da)
    vx, vy = c * a[:, 2] - s * a[:, 3], s * a[:, 2] + c * a[:, 3]
    return [
        Person(float(x), float(y), q.human_id, float(u), float(v))
        for q, x, y, u, v in zip(people, xy[:, 0].tolist(), xy[:, 1].tolist(), vx.tolist(), vy.tolist(), strict=True)
    ]


class PeopleInput:
    """The newest people of each source: (people in the base_link of their capture, receipt time s,
    odom pose at their capture or None).

    Args:
        max_people: people kept per message, the nearest (``max_people``).
        timeout_s: a message older than this is not used, s (``people_timeout_s``).

    Attributes:
        people: from ``people_topic``; tracks: from ``people_tracks_topic`` (ids + velocities).
    """

    def __init__(self, max_people: int, timeout_s: float) -> None:
        self.max_people = int(max_people)
        self.timeout_s = float(timeout_s)
        self.reset()

    def reset(self) -> None:
        """Forget both sources (the clock jumped back)."""
        self.people: tuple[list[Person], float, Pose2D | None] = ([], -math.inf, None)
        self.tracks: tuple[list[Person], float, Pose2D | None] = ([], -math.inf, None)
        self.seen: tuple[list[Person], float, Pose2D | None] = ([], -math.inf, None)

    def set_people(self, people: list[Person], t: float, at: Pose2D | None) -> None:
        """A ``people_topic`` message received at ``t`` (s), captured at odom pose ``at``."""
        self.people = (self.nearest(people), t, at)
        self._remember(self.people)

    def set_tracks(self, tracks: list[Person], t: float, at: Pose2D | None) -> None:
        """A ``people_tracks_topic`` message received at ``t`` (s), captured at odom pose ``at``."""
        self.tracks = (self.nearest(tracks), t, at)
        self._remember(self.tracks)

    def _remember(self, msg: tuple[list[Person], float, Pose2D | None]) -> None:
        if msg[0]:  # the newest message that showed somebody
            self.seen = msg

    def recalled(self, t: float, here: Pose2D | None, recall_s: float) -> list[Person]:
        """The people of the newest message that showed somebody, when it is no longer fresh (older
        than ``timeout_s``) but at most ``recall_s`` old: their last positions in the base_link of
        ``here``. Used only to classify a bump (a person who walked out of the camera's view)."""
        people, ts, at = self.seen
        if not people or t - ts <= self.timeout_s or t - ts > recall_s:
            return []
        return rebase_people(people, at, here)

    def nearest(self, people: list[Person]) -> list[Person]:
        """At most ``max_people`` of ``people``, the nearest first (:func:`nearest_rows`)."""
        if len(people) <= self.max_people:
            return people
        keep = nearest_rows(np.array([(q.x, q.y) for q in people], dtype=np.float64), self.max_people)
        return people if keep is None else [people[i] for i in keep.tolist()]

    def fresh(self, t: float, here: Pose2D | None) -> list[Person]:
        """The people to check at ``t`` in the base_link of odom pose ``here``: the tracks when
        fresh (preferred: ids and velocities), else the people when fresh, else none."""
        people, pt, at = self.people
        tracks, tt, tat = self.tracks
        if t - tt <= self.timeout_s:
            people, pt, at = tracks, tt, tat
        return rebase_people(people, at, here) if t - pt <= self.timeout_s else []
