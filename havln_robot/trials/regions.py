"""Region (room) types of a trial: the HAPS 2.0 / Matterport3D region categories.

Pure Python. A trial's ``region`` is one of :data:`REGION_TYPES`. The names are the
Matterport3D region categories (Matterport3D data release, ``house_segmentations``
region labels, e.g. ``a`` = bathroom ... ``D`` = dining booth), which are exactly the
``"region:text"`` prefixes of HA-R2R ``human_description`` fields (HAPS 2.0, HA-VLN 2.0,
arXiv 2503.14229 Sec. 3; all 27 prefixes in ``ha_r2r_de/HA_val_seen.json`` are among them).

Operators may type a short alias (``lobby``, ``gym``, ``conference room``, ``laundry``, ...);
:func:`canonical_region` maps it to the canonical name and rejects anything else with a
did-you-mean message.
"""

from __future__ import annotations

import difflib

#: Canonical region names (Matterport3D region categories; HAPS 2.0 uses the same strings).
REGION_TYPES: tuple[str, ...] = (
    "bathroom",
    "bedroom",
    "closet",
    "dining room",
    "entryway/foyer/lobby",
    "familyroom",
    "garage",
    "hallway",
    "library",
    "laundryroom/mudroom",
    "kitchen",
    "living room",
    "meetingroom/conferenceroom",
    "lounge",
    "office",
    "porch/terrace/deck/driveway",
    "rec/game",
    "stairs",
    "toilet",
    "utilityroom/toolroom",
    "tv",
    "workout/gym/exercise",
    "outdoor areas containing grass, plants, bushes, trees, etc.",
    "balcony",
    "other room",
    "bar",
    "classroom",
    "dining booth",
    "spa/sauna",
    "junk",
)

#: Value stored when a trial was started without a region (e.g. an auto-started sim trial).
UNKNOWN_REGION = "unknown"

#: Short display labels for tables and plots (canonical name → label).
SHORT_LABELS: dict[str, str] = {
    "entryway/foyer/lobby": "lobby",
    "meetingroom/conferenceroom": "meeting room",
    "porch/terrace/deck/driveway": "porch/terrace",
    "outdoor areas containing grass, plants, bushes, trees, etc.": "outdoor",
    "workout/gym/exercise": "gym",
    "utilityroom/toolroom": "utility room",
    "laundryroom/mudroom": "laundry room",
}


def _aliases() -> dict[str, str]:
    out: dict[str, str] = {}
    for name in REGION_TYPES:
        out[name] = name
        out[name.replace(" ", "")] = name
        out[name.replace(" ", "_")] = name
        # every slash-separated part is an alias ("lobby" → "entryway/foyer/lobby")
        if "/" in name:
            for part in name.split("/"):
                out.setdefault(part.strip(), name)
    extra = {
        "living": "living room",
        "livingroom": "living room",
        "family room": "familyroom",
        "meeting room": "meetingroom/conferenceroom",
        "conference room": "meetingroom/conferenceroom",
        "laundry": "laundryroom/mudroom",
        "laundry room": "laundryroom/mudroom",
        "utility room": "utilityroom/toolroom",
        "tool room": "utilityroom/toolroom",
        "outdoor": "outdoor areas containing grass, plants, bushes, trees, etc.",
        "outdoors": "outdoor areas containing grass, plants, bushes, trees, etc.",
        "gym": "workout/gym/exercise",
        "corridor": "hallway",
        "hall": "hallway",
        "game room": "rec/game",
        "tv room": "tv",
        "other": "other room",
        "terrace": "porch/terrace/deck/driveway",
    }
    out.update(extra)
    for name, label in SHORT_LABELS.items():
        out.setdefault(label, name)
    return out


ALIASES: dict[str, str] = _aliases()


class RegionError(ValueError):
    """An unknown region name; the message suggests the closest known one."""


def canonical_region(name: str, allow_unknown: bool = True) -> str:
    """Return the canonical region name for ``name`` (case/space-insensitive, aliases accepted).

    Args:
        name: e.g. ``"office"``, ``"Living Room"``, ``"lobby"``.
        allow_unknown: accept ``""`` / ``"unknown"`` and return :data:`UNKNOWN_REGION`.

    Raises:
        RegionError: not a known region; the one-line message names the closest match.
    """
    if not isinstance(name, str):
        raise RegionError(f"region: expected a string, got {name!r}")
    key = " ".join(name.strip().lower().replace("_", " ").split())
    if allow_unknown and key in ("", UNKNOWN_REGION):
        return UNKNOWN_REGION
    if key in ALIASES:
        return ALIASES[key]
    if key.replace(" ", "") in ALIASES:
        return ALIASES[key.replace(" ", "")]
    close = difflib.get_close_matches(key, list(ALIASES), n=1, cutoff=0.6)
    hint = f"did you mean '{ALIASES[close[0]]}'?" if close else "known regions: " + ", ".join(short_label(r) for r in REGION_TYPES)
    raise RegionError(f"region: unknown region type {name!r}; {hint}")


def short_label(region: str) -> str:
    """Display label of a canonical region name (``entryway/foyer/lobby`` → ``lobby``)."""
    return SHORT_LABELS.get(region, region)
