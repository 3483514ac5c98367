"""Trial store: every real-robot / sim / Gazebo trial, its steps, collisions and outcome, in SQLite.

Pure Python (stdlib ``sqlite3``; no ROS import). One database file holds any number of
campaigns and trials; several processes (trial_logger_node, ``havln-robot trial``, the report,
the challenge exporter) may open it at once.

Durability (the crash-safety claim)
-----------------------------------
* ``journal_mode=WAL``: a commit appends to the write-ahead log; readers never block the writer
  and a process killed mid-write leaves the database consistent (the torn transaction is
  ignored on the next open).
* every step is its own transaction (autocommit), so ``kill -9`` of the writer loses at most the
  step whose ``INSERT`` had not returned yet -- tested for real in ``test/test_trials_store.py``
  (a subprocess writing steps is SIGKILLed, the file is reopened and the rows counted).
* ``synchronous=FULL``: each commit also fsyncs the WAL. ``NORMAL`` would already survive a
  *process* crash (the OS holds the written pages) but not a power cut, and on a legged robot the
  Jetson loses power on a battery swap or a hard e-stop. Steps arrive at about 1 Hz (one per
  discrete action), so one fsync per step costs nothing that matters (``havln-robot trial bench``
  prints the measured commit latency; see docs/trials.md).

Frames and units: poses are metres / radians, REP 103 (x forward, y left, yaw CCW). Step poses
``x, y, yaw`` are the odometry pose (``odom`` frame) at the end of the action; ``map_*`` is the
ground-truth pose (sim only). Trial times (``started``, ``finished``, ``judged``) are Unix wall
time in seconds; step/collision ``stamp`` is the ROS clock of the logger (sim time in sim).

Read API for other tools (e.g. the challenge exporter)::

    with TrialStore(path, readonly=True) as st:
        for t in st.trials(platform="go2", outcome="success"):
            actions = st.actions(t.id)      # list[str]: the policy actions, in order (finalize_sequence for v1)
"""

from __future__ import annotations

import errno
import json
import math
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from havln_robot import jsonio, locks
from havln_robot.actions import ACTIONS, is_action
from havln_robot.paths import atomic_output, user_data_root
from havln_robot.text import normalize_instruction, terminal_safe
from havln_robot.trials import faults
from havln_robot.trials.metrics import navigation_error
from havln_robot.trials.model import (  # noqa: F401  (re-exported: the store's public records)
    GOAL_FRAMES,
    PLATFORMS,
    SUCCESS_RADIUS_M,
    VERDICTS,
    CampaignInfo,
    Collision,
    PlannedTrial,
    Step,
    Trial,
)
from havln_robot.trials.regions import UNKNOWN_REGION, RegionError, canonical_region

#: Profile whose store ``havln-robot trial`` / ``report`` read when neither ``--db`` nor
#: ``--profile`` is given: the real robot's.
DEFAULT_PROFILE = "go2"

SCHEMA_VERSION = 4

MAX_GOAL_RADIUS_M: float = 100.0
"""Largest success radius (m) a trial accepts (HA-VLN uses 3.0)."""
MAX_TRIAL_DISTANCE_M: float = 10_000.0
"""Largest |coordinate| of a trial's goal or start (m) accepted from the CLI, a plan file or a node:
a building-scale bound (10 km) far above any indoor trial; absurd values (1e308) overflow reports."""


def default_db_path(profile: str = DEFAULT_PROFILE) -> Path:
    """The trial store of a deployment profile: one store per profile, never shared by two.

    ``$HAVLN_TRIALS_DB`` when set (one explicit store for everything), else
    ``<user data>/trials/<profile>/trials.db`` with ``<user data>`` from
    :func:`havln_robot.paths.user_data_root` (platformdirs; ``~/.local/share/havln_robot`` on
    Linux). trial_logger_node (``db_path: ""``), ``havln-robot trial`` and ``havln-robot report``
    (``--profile``) all use this; ``havln-robot demo`` keeps its store in ``--out``.

    Args:
        profile: one of :data:`PLATFORMS` (``go2``, ``sim``, ``gazebo``).

    Raises:
        TrialError: unknown profile.
    """
    env = os.environ.get("HAVLN_TRIALS_DB")
    if env:
        return Path(env).expanduser()
    if profile not in PLATFORMS:
        raise TrialError(f"profile {profile!r}: use one of {', '.join(PLATFORMS)}")
    return user_data_root() / "trials" / profile / "trials.db"


def default_mcap_dir(db_path: Path) -> Path:
    """Folder of the per-trial MCAP bags when ``mcap_dir`` is empty: ``mcap/`` beside the store."""
    return Path(db_path).parent / "mcap"


def lock_path(db_path: str | os.PathLike[str]) -> Path:
    """The writer lock file of a store: ``<db>.lock`` beside it (see :mod:`havln_robot.locks`)."""
    p = Path(db_path)
    return p.with_name(p.name + ".lock")


#: ``ne_source`` of a verdict the operator judged by eye, with no NE measured (``trial end --by-eye``).
BY_EYE = "by eye"


class TrialError(ValueError):
    """Bad trial input or an operation that does not fit the trial's state; one-line message."""


class StoreBusy(TrialError):
    """Another process already writes this store (its logger holds the writer lock)."""


class DiskFull(TrialError):
    """A write failed because the disk (or the store's size limit) is full; nothing committed is lost."""


class NeedsMigration(TrialError):
    """A read-only open met an older schema; open it read-write once to migrate."""


# --- schema ----------------------------------------------------------------------------------------
#: Migration scripts; entry ``i`` upgrades user_version ``i`` to ``i + 1``. Never edit a released
#: entry -- append a new one and bump :data:`SCHEMA_VERSION`.
MIGRATIONS: tuple[str, ...] = (
    # v0 -> v1: trials, steps, collisions
    """
    CREATE TABLE trials (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        started REAL NOT NULL,
        finished REAL,
        judged REAL,
        platform TEXT NOT NULL CHECK (platform IN ('go2', 'sim', 'gazebo')),
        region TEXT NOT NULL,
        instance TEXT NOT NULL DEFAULT '',
        people_present INTEGER NOT NULL DEFAULT 0 CHECK (people_present >= 0),
        instruction TEXT NOT NULL DEFAULT '',
        goal_x REAL, goal_y REAL,
        goal_frame TEXT CHECK (goal_frame IS NULL OR goal_frame IN ('start', 'odom', 'map')),
        goal_radius REAL NOT NULL DEFAULT 3.0,
        operator TEXT NOT NULL DEFAULT '',
        episode_id TEXT NOT NULL DEFAULT '',
        scan TEXT NOT NULL DEFAULT '',
        start_x REAL, start_y REAL, start_yaw REAL,
        start_map_x REAL, start_map_y REAL, start_map_yaw REAL,
        end_reason TEXT NOT NULL DEFAULT '',
        outcome TEXT CHECK (outcome IS NULL OR outcome IN ('success', 'failure', 'aborted')),
        reason TEXT NOT NULL DEFAULT '',
        ne_m REAL,
        ne_source TEXT NOT NULL DEFAULT '',
        mcap_path TEXT NOT NULL DEFAULT '',
        notes TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX trials_running ON trials(finished) WHERE finished IS NULL;
    CREATE TABLE steps (
        trial_id INTEGER NOT NULL REFERENCES trials(id),
        seq INTEGER NOT NULL,
        stamp REAL NOT NULL,
        action TEXT NOT NULL,
        outcome TEXT NOT NULL DEFAULT '',
        x REAL, y REAL, yaw REAL,
        imu_yaw REAL,
        map_x REAL, map_y REAL, map_yaw REAL,
        distance_to_goal_m REAL,
        collisions INTEGER NOT NULL DEFAULT 0,
        nearest_person_m REAL,
        nearest_person_id TEXT NOT NULL DEFAULT '',
        people_visible INTEGER,
        result TEXT NOT NULL DEFAULT '{}',
        PRIMARY KEY (trial_id, seq)
    ) WITHOUT ROWID;
    CREATE TABLE collisions (
        id INTEGER PRIMARY KEY,
        trial_id INTEGER NOT NULL REFERENCES trials(id),
        step_seq INTEGER NOT NULL,
        stamp REAL NOT NULL,
        type TEXT NOT NULL DEFAULT '',
        x REAL, y REAL, yaw REAL,
        map_x REAL, map_y REAL,
        distance_m REAL,
        human_id TEXT NOT NULL DEFAULT '',
        detail TEXT NOT NULL DEFAULT '{}'
    );
    CREATE INDEX collisions_trial ON collisions(trial_id);
    """,
    # v1 -> v2: campaigns (planned trial lists) and the link from a trial to its plan row
    """
    CREATE TABLE campaigns (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        created REAL NOT NULL,
        source TEXT NOT NULL DEFAULT '',
        description TEXT NOT NULL DEFAULT ''
    );
    CREATE TABLE planned (
        id INTEGER PRIMARY KEY,
        campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
        seq INTEGER NOT NULL,
        platform TEXT NOT NULL,
        region TEXT NOT NULL,
        instance TEXT NOT NULL DEFAULT '',
        people_present INTEGER NOT NULL DEFAULT 0,
        instruction TEXT NOT NULL DEFAULT '',
        goal_x REAL, goal_y REAL, goal_frame TEXT,
        goal_radius REAL NOT NULL DEFAULT 3.0,
        operator TEXT NOT NULL DEFAULT '',
        episode_id TEXT NOT NULL DEFAULT '',
        scan TEXT NOT NULL DEFAULT '',
        notes TEXT NOT NULL DEFAULT '',
        UNIQUE (campaign_id, seq)
    );
    ALTER TABLE trials ADD COLUMN campaign_id INTEGER REFERENCES campaigns(id);
    ALTER TABLE trials ADD COLUMN planned_id INTEGER REFERENCES planned(id);
    ALTER TABLE trials ADD COLUMN agent_summary TEXT NOT NULL DEFAULT '{}';
    CREATE INDEX trials_planned ON trials(planned_id);
    """,
    # v2 -> v3: provenance per trial, forced verdicts, and the row the logger keeps current so a
    # copy of the main file without its -wal is recognised (store_state, one row)
    """
    ALTER TABLE trials ADD COLUMN policy TEXT NOT NULL DEFAULT '';
    ALTER TABLE trials ADD COLUMN checkpoint TEXT NOT NULL DEFAULT '';
    ALTER TABLE trials ADD COLUMN checkpoint_sha256 TEXT NOT NULL DEFAULT '';
    ALTER TABLE trials ADD COLUMN software TEXT NOT NULL DEFAULT '';
    ALTER TABLE trials ADD COLUMN profile TEXT NOT NULL DEFAULT '';
    ALTER TABLE trials ADD COLUMN verdict_forced INTEGER NOT NULL DEFAULT 0;
    CREATE TABLE store_state (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        writer_pid INTEGER,
        writer_since REAL,
        checkpointed REAL,
        trials INTEGER NOT NULL DEFAULT 0,
        last_trial_id INTEGER
    );
    INSERT INTO store_state (id, trials, last_trial_id) VALUES (1, (SELECT COUNT(*) FROM trials), (SELECT MAX(id) FROM trials));
    """,
    # v3 -> v4: the simulator's ground-truth collision counts beside the robot's own classification
    # (NULL = no ground truth: a real robot), the instruction's unknown-word rate against the
    # policy's vocabulary, and a recording fault (the bag stopped; the trial went on in the store)
    """
    ALTER TABLE trials ADD COLUMN gt_collisions_human INTEGER;
    ALTER TABLE trials ADD COLUMN gt_collisions_static INTEGER;
    ALTER TABLE trials ADD COLUMN unknown_word_rate REAL;
    ALTER TABLE trials ADD COLUMN recording_fault TEXT NOT NULL DEFAULT '';
    ALTER TABLE store_state ADD COLUMN checkpoint_failed REAL;
    """,
)
assert len(MIGRATIONS) == SCHEMA_VERSION

_SCHEMAS: dict[int, dict[str, set[str]]] = {}


def expected_schema(version: int) -> dict[str, set[str]]:
    """Table name -> column names of a trial store at schema ``version`` (MIGRATIONS[:version] run on an
    empty in-memory database once, then cached)."""
    if version not in _SCHEMAS:
        db = sqlite3.connect(":memory:")
        try:
            for script in MIGRATIONS[:version]:
                for stmt in _split_sql(script):
                    db.execute(stmt)
            _SCHEMAS[version] = _schema_of(db)
        finally:
            db.close()
    return _SCHEMAS[version]


def _schema_of(db: sqlite3.Connection) -> dict[str, set[str]]:
    tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'")]
    return {t: {r[0] for r in db.execute("SELECT name FROM pragma_table_info(?)", (t,))} for t in tables}


def schema_problem(db: sqlite3.Connection, version: int) -> str | None:
    """What a database whose ``user_version`` says ``version`` lacks of that schema (missing tables,
    missing columns), in a few words; None when every expected table and column is there."""
    have = _schema_of(db)
    missing_tables = [t for t in expected_schema(version) if t not in have]
    if missing_tables:
        return f"table{'s' if len(missing_tables) > 1 else ''} {', '.join(missing_tables)} missing"
    for table, cols in expected_schema(version).items():
        lack = sorted(cols - have[table])
        if lack:
            return f"table {table} lacks column{'s' if len(lack) > 1 else ''} {', '.join(lack)}"
    return None


_TRIAL_FIELDS = [f.name for f in fields(Trial) if f.name != "writer_gone"]
#: Provenance fields of a trial (filled by the logger at trial start; see provenance.py).
PROVENANCE_FIELDS = ("policy", "checkpoint", "checkpoint_sha256", "software", "profile")
_STEP_FIELDS = [f.name for f in fields(Step)]
_COLL_FIELDS = [f.name for f in fields(Collision)]
_PLAN_FIELDS = [f.name for f in fields(PlannedTrial)]
#: Fields the caller may set with :meth:`TrialStore.update_trial`.
UPDATABLE = frozenset(
    {
        "region",
        "instance",
        "people_present",
        "instruction",
        "goal_x",
        "goal_y",
        "goal_frame",
        "goal_radius",
        "operator",
        "episode_id",
        "scan",
        "start_x",
        "start_y",
        "start_yaw",
        "start_map_x",
        "start_map_y",
        "start_map_yaw",
        "mcap_path",
        "notes",
        "policy",
        "checkpoint",
        "checkpoint_sha256",
        "software",
        "profile",
        "gt_collisions_human",
        "gt_collisions_static",
        "unknown_word_rate",
        "recording_fault",
    }
)


def check_meta(meta: Mapping[str, Any], where: str = "") -> dict[str, Any]:
    """Validate and normalise trial metadata fields (platform, region, people, goal, ...).

    Returns:
        A copy with ``region`` canonical, numbers converted, strings stripped.

    Raises:
        TrialError: a field is invalid; the one-line message names it and the fix.
    """
    pre = f"{where}: " if where else ""
    out = dict(meta)
    if "platform" in out:
        if out["platform"] not in PLATFORMS:
            raise TrialError(f"{pre}platform: {out['platform']!r} is not one of {', '.join(PLATFORMS)}")
    if "region" in out:
        try:
            out["region"] = canonical_region(str(out["region"] if out["region"] is not None else ""))
        except RegionError as exc:
            raise TrialError(f"{pre}{exc}") from None
    if "people_present" in out:
        p = out["people_present"]
        try:
            p = int(p)
            ok = str(out["people_present"]).strip().lstrip("+").isdigit() or isinstance(out["people_present"], int)
        except (TypeError, ValueError):
            ok = False
        if not ok or isinstance(out["people_present"], bool) or p < 0:
            raise TrialError(f"{pre}people_present: expected a count >= 0 (0 = without people), got {out['people_present']!r}")
        out["people_present"] = p
    for key in ("goal_x", "goal_y", "goal_radius", "start_x", "start_y", "start_yaw", "start_map_x", "start_map_y", "start_map_yaw"):
        if key in out and out[key] is not None and out[key] != "":
            try:
                v = float(out[key])
            except (TypeError, ValueError):
                raise TrialError(f"{pre}{key}: expected a number in metres/radians, got {out[key]!r}") from None
            if not math.isfinite(v):
                raise TrialError(f"{pre}{key}: expected a finite number, got {out[key]!r}")
            if not key.endswith(("yaw", "radius")) and abs(v) > MAX_TRIAL_DISTANCE_M:
                # a goal 1e308 m away overflowed the report's arithmetic (the CLI has the same bound)
                raise TrialError(f"{pre}{key}: {v:g} m is beyond {MAX_TRIAL_DISTANCE_M:g} m of the start; give metres, not millimetres")
            out[key] = v
        elif key in out:
            out[key] = None if key != "goal_radius" else SUCCESS_RADIUS_M
    if out.get("goal_radius") is not None and not 0 < out["goal_radius"] <= MAX_GOAL_RADIUS_M:
        raise TrialError(
            f"{pre}goal_radius: must be > 0 and <= {MAX_GOAL_RADIUS_M:g} m (HA-VLN success radius is 3.0), got {out['goal_radius']!r}"
        )
    if "goal_frame" in out:
        gf = out["goal_frame"] or None
        if gf is not None and gf not in GOAL_FRAMES:
            raise TrialError(f"{pre}goal_frame: {gf!r} is not one of {', '.join(GOAL_FRAMES)}")
        out["goal_frame"] = gf
    has_x, has_y = out.get("goal_x") is not None, out.get("goal_y") is not None
    if has_x != has_y:
        raise TrialError(f"{pre}goal: give both goal_x and goal_y (metres) or neither")
    if has_x and not out.get("goal_frame"):
        out["goal_frame"] = "start"
    for key in ("gt_collisions_human", "gt_collisions_static"):
        v = out.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
            raise TrialError(f"{pre}{key}: expected a count >= 0 or None (no ground truth), got {v!r}")
    if out.get("unknown_word_rate") is not None:
        v = out["unknown_word_rate"]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v <= 1.0:
            raise TrialError(f"{pre}unknown_word_rate: expected a share in [0, 1] or None, got {v!r}")
        out["unknown_word_rate"] = float(v)
    for key in ("instance", "instruction", "operator", "episode_id", "scan", "notes", "mcap_path", "recording_fault", *PROVENANCE_FIELDS):
        if key in out:
            v = out[key]
            out[key] = "" if v is None else str(v).strip()
    if out.get("instruction"):  # stored as the policy reads it (text.normalize_instruction)
        out["instruction"] = normalize_instruction(out["instruction"])
    return out


def _checked_ne(ne_m: Any) -> float:
    """An operator's NE as a float, m; TrialError unless finite and from 0 to MAX_TRIAL_DISTANCE_M."""
    try:
        ne_m = float(ne_m)
    except (TypeError, ValueError):
        raise TrialError(f"ne: expected a distance in metres, got {ne_m!r}") from None
    if not math.isfinite(ne_m) or not 0 <= ne_m <= MAX_TRIAL_DISTANCE_M:
        raise TrialError(f"ne: expected a distance from 0 to {MAX_TRIAL_DISTANCE_M:g} m, got {ne_m!r}")
    return ne_m


class TrialStore:
    """SQLite trial store (WAL, synchronous=FULL, schema ``PRAGMA user_version`` with migrations).

    Thread-safe (one lock around the connection); several processes may open the same file: one
    *writer* (the logger: ``writer=True``, holds the OS lock ``<db>.lock`` for its life) and any
    number of readers and short CLI edits (``trial start`` / ``end``).

    The writer keeps the ``store_state`` row current (its pid, since when it writes, the last WAL
    checkpoint and the trial count then) and checkpoints the WAL at every trial close and on
    close, so the main file alone holds every closed trial. On open that row is compared with the
    files: a main file whose row says a writer was live, with no ``-wal`` beside it and no writer
    holding the lock, is a copy taken without its WAL -- refused read-write (never migrated),
    readable read-only with :attr:`warning` set.

    Args:
        path: database file; parent folders are created. ``":memory:"`` for tests.
        readonly: open read-only (the file must exist; no migration is run). A closed store on
            read-only media (no ``-wal``, nothing can create ``-shm``) is opened immutable.
        timeout_s: how long to wait for another process's write lock (s).
        writer: take the store's writer lock for the life of this object (trial_logger_node).
        source: what named ``path``, for messages that say how to give another file: ``--db``
            (``trial``, ``report``), ``--trials`` (``export``), ``db_path`` (a node's parameter).

    Attributes:
        warning: one line about the file (a copy missing its WAL, or a WAL a reader keeps from being
            checkpointed: :meth:`wal_problem`), or ``""``.
        checkpoint_problem: the writer's last WAL checkpoint was blocked by a reader (one line), or ``""``.

    Raises:
        StoreBusy: ``writer`` and another process writes this store (the message names its pid).
        TrialError: the file is not a trial database, was written by a newer version, is a copy
            missing its WAL (read-write), or cannot be opened (one-line message with the path).
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        readonly: bool = False,
        timeout_s: float = 10.0,
        writer: bool = False,
        source: str = "--db",
    ) -> None:
        self.path = default_db_path() if path is None else (Path(path).expanduser() if str(path) != ":memory:" else Path(":memory:"))
        self.source = source
        self._lock = threading.RLock()
        self._mem = str(self.path) == ":memory:"
        self._writer: locks.HeldLock | None = None
        self.readonly = readonly
        self.warning = ""
        self.checkpoint_problem = ""  # the writer's last checkpoint was blocked (wal_problem), "" when it completed
        if writer and not self._mem:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._writer = locks.acquire(lock_path(self.path), what=f"trial logger of {self.path}")
            except locks.LockBusy as exc:
                raise StoreBusy(
                    f"{self.path}: another logger writes this store ({exc.info}); one writer per store: "
                    "stop it, or give this one another store (db_path / --out)"
                ) from None
            except OSError as exc:
                raise TrialError(f"{self.path}: cannot create the writer lock {lock_path(self.path)} ({exc.strerror})") from None
        try:
            self._open(readonly, timeout_s)
        except BaseException:
            self._release_writer()
            raise

    def _open(self, readonly: bool, timeout_s: float) -> None:
        # before connecting: opening a WAL database creates an empty -wal beside it
        try:
            self._had_wal = not self._mem and Path(f"{self.path}-wal").stat().st_size > 0
        except OSError:
            self._had_wal = False
        try:
            if readonly:
                if not self.path.is_file():
                    from havln_robot.paths import input_file_problem

                    why = input_file_problem(self.path, missing="no trial database here")
                    raise TrialError(
                        f"{self.source} {self.path}: {why}; give {self.source} the trial store's .db file (or run a trial first)"
                    )
                self._db = self._connect_ro(timeout_s)
            else:
                if not self._mem and (self.path.exists() and not self.path.is_file()):
                    from havln_robot.paths import input_file_problem

                    # sqlite3 said "unable to open database file" for a folder
                    raise TrialError(
                        f"{self.path}: {input_file_problem(self.path)}; give {self.source} a trial store's .db file "
                        "(a new file name creates one)"
                    )
                if not self._mem:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                    self._refuse_empty_copy()
                self._db = sqlite3.connect(str(self.path), timeout=timeout_s, isolation_level=None, check_same_thread=False)
            self._db.row_factory = sqlite3.Row
            self._db.execute(f"PRAGMA busy_timeout = {int(timeout_s * 1000)}")
            if not readonly:
                self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = FULL")
            self._db.execute("PRAGMA foreign_keys = ON")
            if readonly:
                v = self.schema_version
                tables = self._tables()
                if v == 0 and not tables:
                    raise TrialError(f"{self.path}: {_EMPTY_COPY}")
                if v == 0:  # another program's database: there is nothing to migrate
                    raise TrialError(
                        f"{self.source} {self.path}: not a trial database (has tables {', '.join(sorted(tables))}); "
                        f"give {self.source} another file"
                    )
                if v != SCHEMA_VERSION:
                    if v > SCHEMA_VERSION:
                        raise TrialError(
                            f"{self.path}: schema version {v} is newer than this build ({SCHEMA_VERSION}); upgrade havln_robot"
                        )
                    self._check_schema(self._db, v)
                    raise NeedsMigration(
                        f"{self.path}: schema version {v}, this build reads {SCHEMA_VERSION}; open it once read-write to migrate"
                    )
                self._check_schema(self._db, v)
                self.warning = self._copy_check() or self.wal_problem() or ""
            else:
                self._migrate()
                problem = self._copy_check()
                if problem:
                    raise TrialError(f"{problem}; trial list / show / report read it as it is (read-only)")
                if self._writer is not None:
                    self._mark_writer("open")
        except sqlite3.DatabaseError as exc:
            raise TrialError(f"{self.path}: cannot open trial database ({exc})") from None
        except OSError as exc:
            raise TrialError(f"{self.path}: cannot create trial database ({exc.strerror})") from None

    def _connect_ro(self, timeout_s: float) -> sqlite3.Connection:
        """Read-only connection; immutable when the folder is read-only and no WAL exists (read-only media)."""
        uri = f"file:{self.path}?mode=ro"
        db = sqlite3.connect(uri, uri=True, timeout=timeout_s, isolation_level=None, check_same_thread=False)
        try:
            db.execute("PRAGMA user_version").fetchone()
            db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            return db
        except sqlite3.OperationalError:
            db.close()
            if Path(f"{self.path}-wal").exists():
                raise
        # a closed WAL store on read-only media: SQLite cannot create -shm; nothing can write it either
        return sqlite3.connect(f"{uri}&immutable=1", uri=True, timeout=timeout_s, isolation_level=None, check_same_thread=False)

    def _tables(self) -> list[str]:
        with self._lock:
            return [r[0] for r in self._db.execute("SELECT name FROM sqlite_master WHERE type='table'")]

    def _refuse_empty_copy(self) -> None:
        """An existing zero-length file with no WAL is not a new store: it is most likely a copy of a
        live store's main file taken before its first checkpoint. Migrating it would hide that."""
        try:
            empty = self.path.stat().st_size == 0
        except FileNotFoundError:
            return
        if empty and not Path(f"{self.path}-wal").exists():
            raise TrialError(f"{self.path}: {_EMPTY_COPY}; to start a new store here, delete the empty file")

    def _copy_check(self) -> str | None:
        """Compare the ``store_state`` row with the files: a copy missing its WAL? (one line, or None)."""
        if self._mem or "store_state" not in self._tables():
            return None
        with self._lock:
            row = self._db.execute("SELECT * FROM store_state WHERE id = 1").fetchone()
            n = int(self._db.execute("SELECT COUNT(*) FROM trials").fetchone()[0])
        if row is None:
            return None
        row = _typed_row(_StoreState, row, self.path, "store_state", "id 1", [f.name for f in fields(_StoreState)])
        missing = n < row["trials"]
        live_copy = (
            row["writer_since"] is not None
            and not self._had_wal  # a killed logger leaves its WAL (and its lock file) beside the store
            and not lock_path(self.path).exists()
            and self._writer is None
        )
        if not (missing or live_copy):
            return None
        when = _fmt_ts(row["checkpointed"])
        return (
            f"{self.path}: copied while logger pid {row['writer_pid']} was writing it, without its -wal file: it holds the "
            f"trials up to the last checkpoint ({when}, {row['trials']} trials{'; ' + str(n) + ' found' if missing else ''}), "
            f"later ones are missing. Copy {self.path.name}-wal with it, or copy stores with 'havln-robot trial backup OUT'"
        )

    def wal_problem(self) -> str | None:
        """One line when the writer's last WAL checkpoint could not complete (``store_state.checkpoint_failed``,
        set by :meth:`checkpoint`): another connection holds a read transaction, so the WAL grows and
        the main file alone lacks the newest trials; None when the last checkpoint completed."""
        if self._mem or "store_state" not in self._tables():
            return None
        with self._lock:
            cols = {r[1] for r in self._db.execute("PRAGMA table_info(store_state)")}
            if "checkpoint_failed" not in cols:
                return None
            row = self._db.execute("SELECT checkpoint_failed FROM store_state WHERE id = 1").fetchone()
        if row is None or row[0] is None:
            return None
        try:
            size = Path(f"{self.path}-wal").stat().st_size
        except OSError:
            size = 0
        return (
            f"{self.path}: the WAL could not be checkpointed since {_fmt_ts(row[0])} ({size / 1e6:.2f} MB in {self.path.name}-wal): "
            "another program holds a read transaction on the store (a database browser, an open sqlite3 shell); close it. "
            f"Until then {self.path.name} alone lacks the newest trials: copy it with 'havln-robot trial backup OUT'"
        )

    def _mark_writer(self, event: str) -> None:
        """Keep the ``store_state`` row current and checkpoint the WAL.

        Args:
            event: ``open`` (a writer starts), ``trial`` (a trial was closed) or ``close`` (the writer closes).
        """
        if self.readonly or self._mem:
            return
        now = time.time()
        with self._tx() as db:
            if event == "open":
                db.execute("UPDATE store_state SET writer_pid = ?, writer_since = ? WHERE id = 1", (os.getpid(), now))
            elif event == "close" and self._writer is not None:
                db.execute("UPDATE store_state SET writer_pid = NULL, writer_since = NULL WHERE id = 1")
            db.execute(
                "UPDATE store_state SET checkpointed = ?, trials = (SELECT COUNT(*) FROM trials), "
                "last_trial_id = (SELECT MAX(id) FROM trials) WHERE id = 1",
                (now,),
            )
        self.checkpoint()

    def checkpoint(self) -> bool:
        """Copy the WAL into the main file and truncate it (``wal_checkpoint(TRUNCATE)``).

        Returns:
            True when everything was checkpointed; False when a reader kept part of it (it is done
            at the next checkpoint) or the disk is full (the WAL keeps it; nothing is lost).
        """
        if self._mem or self.readonly:
            return False
        with self._lock:
            try:
                busy, _log, _done = self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            except sqlite3.Error:
                return False
            # readers see the outcome in store_state (wal_problem): trial list, doctor, report
            try:
                if busy:
                    self._db.execute(
                        "UPDATE store_state SET checkpoint_failed = COALESCE(checkpoint_failed, ?) WHERE id = 1", (time.time(),)
                    )
                    self.checkpoint_problem = self.wal_problem() or "WAL checkpoint blocked by a reader"
                elif (
                    self.checkpoint_problem
                    or self._db.execute("SELECT 1 FROM store_state WHERE id = 1 AND checkpoint_failed IS NOT NULL").fetchone()
                ):
                    self._db.execute("UPDATE store_state SET checkpoint_failed = NULL WHERE id = 1")
                    self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                    self.checkpoint_problem = ""
            except sqlite3.Error:
                pass  # no store_state (an old schema being migrated) or a full disk: the WAL keeps it
        return busy == 0

    def trial_closed(self) -> None:
        """Call after a trial was closed: row current + WAL checkpoint (errors leave the WAL as it is)."""
        try:
            self._mark_writer("trial")
        except TrialError:
            pass

    def backup(self, out: str | os.PathLike[str], overwrite: bool = False) -> Path:
        """A consistent copy of the whole store (WAL included) with SQLite's online backup API.

        Safe while the logger writes. The copy is a closed store (rollback journal, no ``-wal``
        needed): one file to copy, archive or put on read-only media.

        Args:
            out: the new file (its folder must exist), or an existing folder (``trials.db`` in it).
            overwrite: replace an existing file.

        Returns:
            The path written.

        Raises:
            TrialError: ``out`` exists (without ``overwrite``), is this store, or cannot be written.
        """
        dst = Path(out).expanduser()
        if dst.is_dir():
            dst = dst / self.path.name
        if not self._mem and dst.resolve() == self.path.resolve():
            raise TrialError(f"backup: {dst} is the store itself; give another file")
        if dst.exists() and not overwrite:
            raise TrialError(f"backup: {dst} exists; give a new file name or pass --overwrite")
        if dst.exists() and not dst.is_file():  # the rename below would replace the device / pipe itself
            raise TrialError(f"backup: {dst} is not a regular file (a device, pipe or socket); give a file name")
        if not dst.parent.is_dir():
            raise TrialError(f"backup: folder {dst.parent} does not exist; create it first")
        try:
            with atomic_output(dst) as tmp:  # through a symlink at dst, never over it
                target = sqlite3.connect(str(tmp), isolation_level=None)
                try:
                    with self._lock:
                        self._db.backup(target)
                    target.execute("PRAGMA journal_mode = DELETE")
                    if "store_state" in [r[0] for r in target.execute("SELECT name FROM sqlite_master WHERE type='table'")]:
                        target.execute(
                            "UPDATE store_state SET writer_pid = NULL, writer_since = NULL, checkpointed = ?, "
                            "trials = (SELECT COUNT(*) FROM trials), last_trial_id = (SELECT MAX(id) FROM trials) WHERE id = 1",
                            (time.time(),),
                        )
                        if "checkpoint_failed" in {r[1] for r in target.execute("PRAGMA table_info(store_state)")}:
                            target.execute("UPDATE store_state SET checkpoint_failed = NULL WHERE id = 1")  # the copy is complete
                    ok = target.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
                finally:
                    target.close()
                if not ok:
                    raise TrialError(f"backup: the copy {dst} failed its integrity check; the store may be damaged")
        except sqlite3.Error as exc:
            err = _sqlite_error(self.path, "backup", exc)
            if isinstance(err, DiskFull):  # the copy is what is written: its disk is the full one, the store is untouched
                raise DiskFull(
                    f"{dst}: disk full, the backup was not written ({exc}); {self.path} is unchanged -- free space on the disk "
                    f"of {dst.parent} or back up to another disk"
                ) from None
            raise err from None
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                raise DiskFull(
                    f"{dst}: disk full, the backup was not written; {self.path} is unchanged -- free space on the disk "
                    f"of {dst.parent} or back up to another disk"
                ) from None
            raise TrialError(f"backup: cannot write {dst} ({exc.strerror})") from None
        return dst

    def writer(self) -> str | None:
        """The logger writing this store now (its lock note ``pid=...``), or None."""
        if self._mem:
            return None
        return locks.holder(lock_path(self.path))

    def _writer_gone(self) -> bool:
        """A logger has written this store (its lock file exists) and none holds the lock now."""
        if self._mem or self._writer is not None:
            return False
        lp = lock_path(self.path)
        return lp.exists() and locks.holder(lp) is None

    def _mark_gone(self, trials: list[Trial]) -> list[Trial]:
        if any(t.finished is None for t in trials) and self._writer_gone():
            for t in trials:
                if t.finished is None:
                    t.writer_gone = True
        return trials

    # --- plumbing ----------------------------------------------------------------------------------
    def close(self) -> None:
        """Close the connection; a writer marks the store closed, checkpoints and drops its lock."""
        with self._lock:
            if getattr(self, "_closed", False):
                return
            self._closed = True
            try:
                if self._writer is not None:
                    try:
                        self._mark_writer("close")
                    except TrialError:
                        pass  # e.g. disk full: the WAL keeps everything; the next open replays it
                self._db.close()
            finally:
                self._release_writer()

    def _release_writer(self) -> None:
        if self._writer is not None:
            w, self._writer = self._writer, None
            w.release()

    def __enter__(self) -> TrialStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def schema_version(self) -> int:
        """``PRAGMA user_version`` of the file."""
        with self._lock:
            return int(self._db.execute("PRAGMA user_version").fetchone()[0])

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (BEGIN IMMEDIATE: takes the write lock up front).

        Raises:
            DiskFull: SQLITE_FULL / ENOSPC (also injected, see :mod:`havln_robot.trials.faults`);
                the transaction is rolled back, everything committed before stays.
            TrialError: any other SQLite error, one line (busy, read-only, I/O).
        """
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise _sqlite_error(self.path, "write", exc) from None
            try:
                if faults.disk_full("store"):
                    raise sqlite3.OperationalError("database or disk is full (injected)")
                yield self._db
                self._db.execute("COMMIT")
            except BaseException as exc:
                try:
                    self._db.execute("ROLLBACK")
                except sqlite3.Error:
                    pass  # SQLite already rolled back (e.g. after SQLITE_FULL)
                if isinstance(exc, sqlite3.Error):
                    raise _sqlite_error(self.path, "write", exc) from None
                raise

    def _migrate(self) -> None:
        with self._tx() as db:
            v = int(db.execute("PRAGMA user_version").fetchone()[0])
            if v > SCHEMA_VERSION:
                raise TrialError(f"{self.path}: schema version {v} is newer than this build ({SCHEMA_VERSION}); upgrade havln_robot")
            if v == 0:
                tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
                if tables:
                    raise TrialError(
                        f"{self.source} {self.path}: not a trial database (has tables {', '.join(tables)}); give {self.source} another file"
                    )
            if v > 0:  # the tables its user_version promises, before migrating or using them
                self._check_schema(db, v)
            for i in range(v, SCHEMA_VERSION):
                for stmt in _split_sql(MIGRATIONS[i]):
                    db.execute(stmt)
                db.execute(f"PRAGMA user_version = {i + 1}")

    def _check_schema(self, db: sqlite3.Connection, version: int) -> None:
        """Refuse a database whose ``user_version`` claims a trial store but whose tables are not one.

        Raises:
            TrialError: one line naming the file, what is missing and what to do.
        """
        with self._lock:
            why = schema_problem(db, version)
        if why is not None:
            raise TrialError(
                f"{self.source} {self.path}: not a trial database (user_version {version} but {why}); "
                f"give {self.source} a trial store's .db file (or restore this one from a backup)"
            )

    def integrity_ok(self) -> bool:
        """``PRAGMA integrity_check`` passes."""
        with self._lock:
            return self._db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"

    # --- trials -----------------------------------------------------------------------------------
    def start_trial(self, platform: str, region: str = UNKNOWN_REGION, supersede: str | None = None, **meta: Any) -> Trial:
        """Open a new running trial.

        Args:
            platform: ``go2`` | ``sim`` | ``gazebo``.
            region: region type (aliases accepted, see regions.py).
            supersede: if a trial is still running, finish it with this ``end_reason`` (and
                outcome ``aborted``) instead of refusing.
            **meta: other :class:`Trial` fields (people_present, instance, instruction, goal_x,
                goal_y, goal_frame, goal_radius, operator, episode_id, scan, start_*, notes,
                campaign_id, planned_id).

        Returns:
            The new trial.

        Raises:
            TrialError: invalid metadata, unknown field, or another trial is running and
                ``supersede`` is None.
        """
        unknown = set(meta) - UPDATABLE - {"campaign_id", "planned_id"}
        if unknown:
            raise TrialError(f"start_trial: unknown field(s) {', '.join(sorted(unknown))}")
        values = check_meta({"platform": platform, "region": region, **meta})
        with self._tx() as db:
            run = db.execute("SELECT id FROM trials WHERE finished IS NULL ORDER BY id DESC LIMIT 1").fetchone()
            if run is not None:
                if supersede is None:
                    raise TrialError(
                        f"trial {run['id']} is still running; end it first (havln-robot trial end --success|--failure|--abort)"
                    )
                now = time.time()
                db.execute(
                    "UPDATE trials SET finished = ?, judged = ?, end_reason = ?, outcome = 'aborted', reason = ? WHERE finished IS NULL",
                    (now, now, supersede, supersede),
                )
            values["started"] = time.time()
            cols = ", ".join(values)
            cur = db.execute(f"INSERT INTO trials ({cols}) VALUES ({', '.join('?' * len(values))})", list(values.values()))
            tid = int(cur.lastrowid)
        if run is not None:
            self.trial_closed()
        return self.trial(tid)

    def update_trial(self, trial_id: int, **meta: Any) -> Trial:
        """Set metadata fields of a trial (any state).

        Raises:
            TrialError: unknown trial or field, invalid value.
        """
        unknown = set(meta) - UPDATABLE
        if unknown:
            raise TrialError(f"update_trial: field(s) {', '.join(sorted(unknown))} cannot be set; settable: {', '.join(sorted(UPDATABLE))}")
        values = check_meta(meta)
        if values:
            with self._tx() as db:
                self._require(db, trial_id)
                db.execute(f"UPDATE trials SET {', '.join(f'{k} = ?' for k in values)} WHERE id = ?", [*values.values(), trial_id])
        return self.trial(trial_id)

    def _require(self, db: sqlite3.Connection, trial_id: int) -> sqlite3.Row:
        row = db.execute("SELECT * FROM trials WHERE id = ?", (trial_id,)).fetchone()
        if row is None:
            raise TrialError(f"trial {trial_id}: no such trial (havln-robot trial list shows the ids)")
        return row

    def trial(self, trial_id: int) -> Trial:
        """The trial with this id.

        Raises:
            TrialError: no such trial.
        """
        with self._lock:
            return self._mark_gone([_trial(self._require(self._db, trial_id), self.path)])[0]

    def running_trial(self) -> Trial | None:
        """The trial that is running (not finished), if any (``writer_gone`` set when its logger is gone)."""
        with self._lock:
            row = self._db.execute("SELECT * FROM trials WHERE finished IS NULL ORDER BY id DESC LIMIT 1").fetchone()
        return self._mark_gone([_trial(row, self.path)])[0] if row else None

    def current_trial(self) -> Trial | None:
        """The trial an operator's verdict applies to: the running one, else the latest unjudged one."""
        run = self.running_trial()
        if run is not None:
            return run
        with self._lock:
            row = self._db.execute("SELECT * FROM trials WHERE outcome IS NULL ORDER BY id DESC LIMIT 1").fetchone()
        return _trial(row, self.path) if row else None

    def trials(
        self,
        campaign: str | int | None = None,
        platform: str | None = None,
        outcome: str | None = None,
        judged_only: bool = False,
        limit: int | None = None,
        policy: str | None = None,
    ) -> list[Trial]:
        """Trials in id order, filtered.

        Args:
            campaign: campaign name or id.
            platform: one of PLATFORMS.
            outcome: one of VERDICTS.
            judged_only: only trials with an outcome.
            limit: return only the last ``limit`` trials.
            policy: only trials of this policy: its name, checkpoint path or file name, or a
                prefix (>= 8 hex digits) of the checkpoint's sha256.

        Raises:
            TrialError: unknown campaign / platform / outcome.
        """
        where, args = [], []
        if campaign is not None:
            where.append("campaign_id = ?")
            args.append(self._campaign_id(campaign))
        if platform is not None:
            if platform not in PLATFORMS:
                raise TrialError(f"platform: {platform!r} is not one of {', '.join(PLATFORMS)}")
            where.append("platform = ?")
            args.append(platform)
        if outcome is not None:
            if outcome not in VERDICTS:
                raise TrialError(f"outcome: {outcome!r} is not one of {', '.join(VERDICTS)}")
            where.append("outcome = ?")
            args.append(outcome)
        if judged_only:
            where.append("outcome IS NOT NULL")
        sql = "SELECT * FROM trials" + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY id"
        with self._lock:
            rows = [_trial(r, self.path) for r in self._db.execute(sql, args)]
        if policy is not None:
            rows = [
                t for t in rows if policy in (t.policy, t.checkpoint, Path(t.checkpoint).name, t.checkpoint_sha256[: max(8, len(policy))])
            ]
        return self._mark_gone(rows[-limit:] if limit else rows)

    def finish_trial(self, trial_id: int, end_reason: str) -> Trial:
        """Mark a running trial as finished (the agent stopped / ran out of budget); outcome unset.

        Does nothing if the trial is already finished.

        Raises:
            TrialError: no such trial.
        """
        with self._tx() as db:
            self._require(db, trial_id)
            db.execute(
                "UPDATE trials SET finished = ?, end_reason = ? WHERE id = ? AND finished IS NULL", (time.time(), end_reason, trial_id)
            )
        self.trial_closed()
        return self.trial(trial_id)

    def set_outcome(
        self,
        trial_id: int,
        outcome: str,
        reason: str = "",
        ne_m: float | None = None,
        ne_source: str = "",
        end_reason: str | None = None,
        overwrite: bool = False,
        force: bool = False,
        by_eye: bool = False,
    ) -> Trial:
        """Record the verdict; finishes the trial if it is still running.

        A ``success`` verdict whose NE (measured, or computed from the poses) is not below the
        trial's success radius contradicts the success definition (STOP within the radius) and
        is refused unless ``force``; forced, it is recorded with ``verdict_forced`` set.

        When ``ne_m`` is None and the goal is known, NE is computed from the recorded poses
        (:func:`havln_robot.trials.metrics.navigation_error`).

        Args:
            trial_id: the trial.
            outcome: ``success`` | ``failure`` | ``aborted``.
            reason: free text (why it failed / was aborted).
            ne_m: navigation error measured by the operator (m), overrides the computed one.
            ne_source: where ``ne_m`` comes from (default ``operator``).
            end_reason: why the run ended, if it is still running (default: the outcome).
            overwrite: replace an earlier verdict.
            force: record a success that contradicts the NE (marked as forced).
            by_eye: the operator judged the verdict by eye: with no NE, ``ne_source`` says ``by eye``.

        Raises:
            TrialError: bad outcome / NE, no such trial, the trial already has a verdict and
                ``overwrite`` is False, or a success with NE >= radius without ``force``.
        """
        if outcome not in VERDICTS:
            raise TrialError(f"outcome: {outcome!r} is not one of {', '.join(VERDICTS)}")
        if ne_m is not None:
            ne_m, ne_source = _checked_ne(ne_m), ne_source or "operator"
        with self._tx() as db:
            row = self._require(db, trial_id)
            if row["outcome"] is not None and not overwrite:
                raise TrialError(f"trial {trial_id} already ended as {row['outcome']}; pass --overwrite to change the verdict")
        if ne_m is None:
            trial = self.trial(trial_id)
            ne = navigation_error(trial, self.steps(trial_id))
            if ne is not None:
                ne_m, ne_source = ne
        radius = float(row["goal_radius"] or SUCCESS_RADIUS_M)
        contradicts = outcome == "success" and ne_m is not None and ne_m >= radius
        if contradicts and not force:
            raise TrialError(
                f"trial {trial_id}: success needs NE < {radius:g} m (the success radius), but NE is {ne_m:.2f} m ({ne_source}); "
                "record failure, correct --ne, or pass --force to keep it (marked as forced)"
            )
        now = time.time()
        with self._tx() as db:
            db.execute(
                "UPDATE trials SET finished = COALESCE(finished, ?), end_reason = CASE WHEN finished IS NULL THEN ? ELSE end_reason END, "
                "judged = ?, outcome = ?, reason = ?, ne_m = ?, ne_source = ?, verdict_forced = ? WHERE id = ?",
                (
                    now,
                    end_reason or outcome,
                    now,
                    outcome,
                    reason,
                    ne_m,
                    ne_source if ne_m is not None else (BY_EYE if by_eye else ""),
                    int(contradicts),
                    trial_id,
                ),
            )
        self.trial_closed()
        return self.trial(trial_id)

    def close_interrupted(self, end_reason: str = "interrupted", judge: bool = False) -> list[int]:
        """Finish every trial left running by a process that died (call on logger start).

        Args:
            end_reason: stored as the trial's ``end_reason``.
            judge: also set outcome ``aborted`` (sim); else the operator's verdict stays open.

        Returns:
            The ids of the trials closed.
        """
        with self._tx() as db:
            ids = [r[0] for r in db.execute("SELECT id FROM trials WHERE finished IS NULL")]
            now = time.time()
            if judge:
                db.execute(
                    "UPDATE trials SET finished = ?, judged = ?, end_reason = ?, outcome = 'aborted', reason = ? WHERE finished IS NULL",
                    (now, now, end_reason, end_reason),
                )
            else:
                db.execute("UPDATE trials SET finished = ?, end_reason = ? WHERE finished IS NULL", (now, end_reason))
        if ids:
            self.trial_closed()
        return ids

    # --- steps and collisions ----------------------------------------------------------------------
    def add_step(self, trial_id: int, step: Step | Mapping[str, Any]) -> Step:
        """Append one executed action; committed (fsynced) before returning.

        ``step.seq`` is ignored: the next free index of the trial is used.

        Raises:
            TrialError: no such trial, the trial is finished, or ``action`` is not a literal.
        """
        if isinstance(step, Step):
            s = step
        else:
            given = {k: v for k, v in dict(step).items() if k != "seq"}  # seq is the store's to give
            known = {f.name for f in fields(Step)}
            unknown = sorted(map(str, set(given) - known))
            if unknown:
                raise TrialError(f"step: unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(known - {'seq'}))}")
            try:
                s = Step(seq=0, **given)
            except TypeError as exc:
                raise TrialError(f"step: {exc}") from None
        if not is_action(s.action):
            raise TrialError(f"step action: {s.action!r} is not one of {', '.join(ACTIONS)}")
        with self._tx() as db:
            row = self._require(db, trial_id)
            if row["finished"] is not None:
                raise TrialError(f"trial {trial_id} is finished ({row['end_reason']}); start a new trial to record steps")
            seq = int(db.execute("SELECT COALESCE(MAX(seq) + 1, 0) FROM steps WHERE trial_id = ?", (trial_id,)).fetchone()[0])
            s = Step(**{**asdict(s), "seq": seq})
            vals = asdict(s)
            vals["result"] = jsonio.dumps(vals["result"], nonfinite="null", default=str)
            db.execute(
                f"INSERT INTO steps (trial_id, {', '.join(vals)}) VALUES (?, {', '.join('?' * len(vals))})", [trial_id, *vals.values()]
            )
        return s

    def add_collision(self, trial_id: int, coll: Collision | Mapping[str, Any], count_in_step: bool = False) -> Collision:
        """Record one collision event (committed before returning).

        Args:
            trial_id: the trial.
            coll: the event; ``step_seq`` names the action during which it happened.
            count_in_step: also add 1 to the ``collisions`` count of the already recorded step
                ``step_seq`` (for a collision report that arrives after its action's result).

        Raises:
            TrialError: no such trial.
        """
        c = coll if isinstance(coll, Collision) else Collision(**dict(coll))
        vals = asdict(c)
        vals["detail"] = jsonio.dumps(vals["detail"], nonfinite="null", default=str)
        with self._tx() as db:
            self._require(db, trial_id)
            if count_in_step:
                db.execute("UPDATE steps SET collisions = collisions + 1 WHERE trial_id = ? AND seq = ?", (trial_id, c.step_seq))
            db.execute(
                f"INSERT INTO collisions (trial_id, {', '.join(vals)}) VALUES (?, {', '.join('?' * len(vals))})",
                [trial_id, *vals.values()],
            )
        return c

    def steps(self, trial_id: int) -> list[Step]:
        """All steps of a trial, in order (empty list for an unknown id)."""
        with self._lock:
            rows = self._db.execute(f"SELECT {', '.join(_STEP_FIELDS)} FROM steps WHERE trial_id = ? ORDER BY seq", (trial_id,)).fetchall()
        return [Step(**_typed_row(Step, r, self.path, "steps", f"trial {trial_id} seq {r['seq']!r}", _STEP_FIELDS)) for r in rows]

    def steps_of(self, trial_ids: Sequence[int]) -> dict[int, list[Step]]:
        """The steps of several trials in one query (a report over a campaign): trial id -> steps in
        order; trials without steps are absent. The same typed reading as :meth:`steps`."""
        if not trial_ids:
            return {}
        out: dict[int, list[Step]] = {}
        marks = ", ".join("?" * len(trial_ids))
        with self._lock:
            rows = self._db.execute(
                f"SELECT trial_id, {', '.join(_STEP_FIELDS)} FROM steps WHERE trial_id IN ({marks}) ORDER BY trial_id, seq",
                [int(i) for i in trial_ids],
            ).fetchall()
        for r in rows:
            tid = r["trial_id"]
            out.setdefault(tid, []).append(Step(**_typed_row(Step, r, self.path, "steps", f"trial {tid} seq {r['seq']!r}", _STEP_FIELDS)))
        return out

    def collisions_of(self, trial_ids: Sequence[int]) -> dict[int, list[Collision]]:
        """The collisions of several trials in one query: trial id -> events in time order (see :meth:`collisions`)."""
        if not trial_ids:
            return {}
        out: dict[int, list[Collision]] = {}
        marks = ", ".join("?" * len(trial_ids))
        with self._lock:
            rows = self._db.execute(
                f"SELECT trial_id, id AS row_id, {', '.join(_COLL_FIELDS)} FROM collisions WHERE trial_id IN ({marks}) "
                "ORDER BY trial_id, stamp, id",
                [int(i) for i in trial_ids],
            ).fetchall()
        for r in rows:
            tid = r["trial_id"]
            out.setdefault(tid, []).append(
                Collision(**_typed_row(Collision, r, self.path, "collisions", f"id {r['row_id']!r} (trial {tid})", _COLL_FIELDS))
            )
        return out

    def record_agent_summary(self, trial_id: int, summary: Mapping[str, Any]) -> None:
        """Store the agent's episode summary (havln/episode_done JSON) with the trial.

        Raises:
            TrialError: no such trial.
        """
        rate = summary.get("unknown_word_rate")
        rate = float(rate) if isinstance(rate, (int, float)) and not isinstance(rate, bool) and 0.0 <= rate <= 1.0 else None
        with self._tx() as db:
            self._require(db, trial_id)
            db.execute(
                "UPDATE trials SET agent_summary = ?, unknown_word_rate = COALESCE(?, unknown_word_rate) WHERE id = ?",
                (jsonio.dumps(dict(summary), nonfinite="null", default=str), rate, trial_id),
            )

    def actions(self, trial_id: int) -> list[str]:
        """The trial's action sequence as the policy chose it -- what the challenge format wants.

        The agent's own list from havln/episode_done (policy actions; panorama turns excluded)
        when it reported one, else :meth:`executed_actions`. Not yet finalised: pass it through
        :func:`havln_robot.actions.finalize_sequence` for format v1.
        """
        summary = self.trial(trial_id).agent_summary
        acts = summary.get("actions") if isinstance(summary, dict) else None
        if isinstance(acts, list) and all(is_action(a) for a in acts):
            return list(acts)
        return self.executed_actions(trial_id)

    def executed_actions(self, trial_id: int, include_rejected: bool = False) -> list[str]:
        """The action literals motion_node executed (one per step row), in order.

        Includes panorama turns. Actions answered with outcome ``rejected`` (sent while another
        action was running; never executed) are left out unless ``include_rejected``.
        """
        with self._lock:
            rows = self._db.execute("SELECT action, outcome FROM steps WHERE trial_id = ? ORDER BY seq", (trial_id,)).fetchall()
        return [r["action"] for r in rows if include_rejected or r["outcome"] != "rejected"]

    def collisions(self, trial_id: int) -> list[Collision]:
        """All collision events of a trial, in time order."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT id AS row_id, {', '.join(_COLL_FIELDS)} FROM collisions WHERE trial_id = ? ORDER BY stamp, id", (trial_id,)
            ).fetchall()
        return [
            Collision(**_typed_row(Collision, r, self.path, "collisions", f"id {r['row_id']!r} (trial {trial_id})", _COLL_FIELDS))
            for r in rows
        ]

    def step_count(self, trial_id: int) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM steps WHERE trial_id = ?", (trial_id,)).fetchone()[0])

    # --- campaigns ---------------------------------------------------------------------------------
    def campaign_id(self, campaign: str | int) -> int:
        """The id of a campaign given by name or by numeric id (a name wins when nothing has that id).

        Raises:
            TrialError: no such campaign; the message lists the campaigns that exist.
        """
        return self._campaign_id(campaign)

    def _campaign_id(self, campaign: str | int) -> int:
        with self._lock:
            as_id: int | None = None
            if isinstance(campaign, int) and not isinstance(campaign, bool):
                as_id = campaign
            elif isinstance(campaign, str) and campaign.isascii() and campaign.isdigit():
                as_id = int(campaign)
            if as_id is not None and 0 <= as_id <= _SQLITE_INT_MAX:  # past int64 SQLite overflows; it is no id
                row = self._db.execute("SELECT id FROM campaigns WHERE id = ?", (as_id,)).fetchone()
                if row:
                    return int(row[0])
            row = self._db.execute("SELECT id FROM campaigns WHERE name = ?", (str(campaign),)).fetchone()
            if row is None:
                names = [terminal_safe(r[0]) for r in self._db.execute("SELECT name FROM campaigns ORDER BY id")]
                known = f"known campaigns: {', '.join(names)}" if names else "no campaign imported yet (havln-robot trial plan FILE)"
                raise TrialError(f"campaign {campaign!r}: not found; {known}")
            return int(row[0])

    def import_plan(self, name: str, planned: Sequence[PlannedTrial], source: str = "", description: str = "") -> int:
        """Store a campaign plan. Re-importing the same plan is a no-op (resume).

        Raises:
            TrialError: a campaign of that name exists with a different plan, or the plan is empty.
        """
        if not name:
            raise TrialError("campaign: a name is required")
        if not planned:
            raise TrialError(f"campaign {name!r}: the plan has no trials")
        with self._tx() as db:
            row = db.execute("SELECT id FROM campaigns WHERE name = ?", (name,)).fetchone()
            if row is not None:
                cid = int(row[0])
                have = [_planned(r, self.path) for r in db.execute("SELECT * FROM planned WHERE campaign_id = ? ORDER BY seq", (cid,))]
                if [_plan_key(p) for p in have] != [_plan_key(p) for p in planned]:
                    raise TrialError(
                        f"campaign {name!r} already exists with a different plan ({len(have)} trials); use another campaign name"
                    )
                return cid
            cid = int(
                db.execute(
                    "INSERT INTO campaigns (name, created, source, description) VALUES (?, ?, ?, ?)",
                    (name, time.time(), source, description),
                ).lastrowid
            )
            for p in planned:
                vals = {k: v for k, v in asdict(p).items() if k not in ("id", "campaign_id")}
                db.execute(
                    f"INSERT INTO planned (campaign_id, {', '.join(vals)}) VALUES (?, {', '.join('?' * len(vals))})", [cid, *vals.values()]
                )
        return cid

    def campaigns(self) -> list[CampaignInfo]:
        """All campaigns with their progress."""
        with self._lock:
            rows = self._db.execute(
                "SELECT c.*, (SELECT COUNT(*) FROM planned p WHERE p.campaign_id = c.id) AS planned, "
                "(SELECT COUNT(DISTINCT t.planned_id) FROM trials t WHERE t.campaign_id = c.id AND t.outcome IN ('success','failure')) AS done "
                "FROM campaigns c ORDER BY c.id"
            ).fetchall()
        fields_ = [f.name for f in fields(CampaignInfo)]
        return [CampaignInfo(**_typed_row(CampaignInfo, r, self.path, "campaigns", f"id {r['id']!r}", fields_)) for r in rows]

    def planned(self, campaign: str | int) -> list[tuple[PlannedTrial, str]]:
        """The plan of a campaign with each row's status (``done``, ``running``, ``awaiting verdict``, ``pending``).

        A plan row is done once a trial executing it ended in ``success`` or ``failure``;
        aborted trials do not count, so an interrupted trial is run again on resume.
        """
        cid = self._campaign_id(campaign)
        with self._lock:
            plan = [_planned(r, self.path) for r in self._db.execute("SELECT * FROM planned WHERE campaign_id = ? ORDER BY seq", (cid,))]
            states: dict[int, list[str]] = {}
            for r in self._db.execute("SELECT planned_id, finished, outcome FROM trials WHERE campaign_id = ?", (cid,)):
                st = "running" if r["finished"] is None else (r["outcome"] or "awaiting verdict")
                states.setdefault(r["planned_id"], []).append(st)
        out = []
        for p in plan:
            s = states.get(p.id, [])
            if "success" in s or "failure" in s:
                out.append((p, "done"))
            elif "running" in s:
                out.append((p, "running"))
            elif "awaiting verdict" in s:
                out.append((p, "awaiting verdict"))
            else:
                out.append((p, "pending"))
        return out

    def next_planned(self, campaign: str | int) -> PlannedTrial | None:
        """The first plan row not done yet (None when the campaign is complete)."""
        for p, status in self.planned(campaign):
            if status != "done":
                return p
        return None

    def start_planned(self, planned: PlannedTrial, supersede: str | None = None, **overrides: Any) -> Trial:
        """Start a trial from a plan row (its metadata, overridden by ``overrides``)."""
        meta = {k: getattr(planned, k) for k in UPDATABLE if hasattr(planned, k)}
        meta.update({k: v for k, v in overrides.items() if v is not None})
        platform = meta.pop("platform", planned.platform)
        region = meta.pop("region", planned.region)
        return self.start_trial(platform, region, supersede=supersede, campaign_id=planned.campaign_id, planned_id=planned.id, **meta)


#: Largest integer SQLite stores (int64); a bigger Python int raises OverflowError when bound.
_SQLITE_INT_MAX = 2**63 - 1

_EMPTY_COPY = (
    "empty file, not a trial store -- if it was copied from a running logger's store, the trials are in the "
    "trials.db-wal file that was not copied with it; copy both, or use 'havln-robot trial backup OUT'"
)


def _fmt_ts(t: float | None) -> str:
    return "never" if t is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def _sqlite_error(path: Path, what: str, exc: BaseException) -> TrialError:
    """One-line TrialError for a SQLite failure; DiskFull for SQLITE_FULL / ENOSPC."""
    code = getattr(exc, "sqlite_errorcode", None)
    text = str(exc)
    if code == 13 or "disk is full" in text or getattr(exc, "errno", None) == errno.ENOSPC:
        return DiskFull(f"{path}: disk full, {what} not recorded ({text}); everything committed before is kept -- free space on that disk")
    if "locked" in text or "busy" in text:
        return TrialError(f"{path}: {what} failed, the store stayed locked by another process ({text}); try again")
    if "readonly" in text or "read-only" in text:
        return TrialError(f"{path}: {what} failed, the store is read-only here ({text}); use a writable copy (trial backup)")
    return TrialError(f"{path}: {what} failed ({text})")


def _split_sql(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


def _column_kinds(cls: type) -> dict[str, tuple[str, bool]]:
    """``field -> (kind, nullable)`` of a record dataclass, kind one of float/int/str/bool/json."""
    import types
    import typing

    kinds: dict[str, tuple[str, bool]] = {}
    for name, hint in typing.get_type_hints(cls).items():
        args = typing.get_args(hint) if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union else (hint,)
        nullable = type(None) in args
        base = next(a for a in args if a is not type(None))
        kinds[name] = ("json" if typing.get_origin(base) is dict else base.__name__, nullable)
    return kinds


@dataclass
class _StoreState:
    """The ``store_state`` row (the logger's bookkeeping; see :meth:`TrialStore._copy_check`)."""

    trials: int
    writer_pid: int | None = None
    writer_since: float | None = None
    checkpointed: float | None = None
    last_trial_id: int | None = None
    checkpoint_failed: float | None = None


_KINDS = {cls: _column_kinds(cls) for cls in (Trial, Step, Collision, PlannedTrial, CampaignInfo, _StoreState)}
_KIND_WORDS = {
    "float": "a finite number",
    "int": "an integer",
    "str": "text",
    "bool": "0 or 1",
    "json": "a JSON object (text)",
}


def _typed_row(cls: type, row: Mapping[str, Any], db_path: Path, table: str, row_name: str, wanted: Sequence[str]) -> dict[str, Any]:
    """THE typed row reader: the columns ``wanted`` of one SQLite row, each checked against the type of
    the record field (:data:`_KINDS`), JSON columns decoded. SQLite is dynamically typed (any column
    holds any value, whatever its declared type), so nothing is taken on trust.

    Args:
        cls: the record (Trial, Step, Collision, PlannedTrial, CampaignInfo).
        row: the row (``sqlite3.Row`` or a mapping).
        db_path: the database, for the message.
        table: its table, for the message.
        row_name: which row (``id 3``, ``trial 2 seq 5``), for the message.
        wanted: the field names to take (those the row has).

    Returns:
        field -> value (float for REAL columns, int, str, bool, dict for JSON columns).

    Raises:
        TrialError: one line naming the database, table, row, column, value and the fix.
    """
    d = dict(row)
    kinds = _KINDS[cls]
    out: dict[str, Any] = {}
    for col in wanted:
        if col not in d:
            continue
        value = d[col]
        kind, nullable = kinds[col]
        ok = True
        if value is None:
            ok = nullable
        elif kind == "float":
            ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            value = float(value) if ok else value
        elif kind == "int":
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif kind == "bool":
            ok = isinstance(value, int) and value in (0, 1)
            value = bool(value) if ok else value
        elif kind == "str":
            ok = isinstance(value, str)
        elif kind == "json":
            if value == "":
                value = {}
            else:
                try:
                    value = json.loads(value) if isinstance(value, str) else None
                except ValueError:
                    value = None
                ok = isinstance(value, dict)
                value = value if ok else d[col]
        if not ok:
            raise _bad_column(db_path, table, row_name, col, value, _KIND_WORDS[kind] + (" or NULL" if nullable else ""))
        out[col] = value
    return out


def _bad_column(db_path: Path, table: str, row_name: str, col: str, value: Any, want: str) -> TrialError:
    """The one-line error of :func:`_typed_row` (database, table, row, column, value, fix)."""
    shown = repr(value)
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    return TrialError(
        f"{db_path}: table {table}, {row_name}: column {col} holds {shown}, expected {want} -- the database was "
        f"edited or damaged; correct that value (sqlite3 UPDATE) or restore a backup (havln-robot trial backup)"
    )


def _trial(row: sqlite3.Row, db_path: Path) -> Trial:
    name = f"id {row['id']!r}"
    d = _typed_row(Trial, row, db_path, "trials", name, _TRIAL_FIELDS)
    if d.get("people_present", 0) < 0:
        raise _bad_column(db_path, "trials", name, "people_present", d["people_present"], "a count >= 0")
    if "goal_radius" in d and not 0 < d["goal_radius"] <= MAX_GOAL_RADIUS_M:
        raise _bad_column(db_path, "trials", name, "goal_radius", d["goal_radius"], f"a radius > 0 and <= {MAX_GOAL_RADIUS_M:g} m")
    return Trial(**d)


def _planned(row: sqlite3.Row, db_path: Path) -> PlannedTrial:
    return PlannedTrial(**_typed_row(PlannedTrial, row, db_path, "planned", f"id {row['id']!r}", _PLAN_FIELDS))


def _plan_key(p: PlannedTrial) -> tuple:
    d = asdict(p)
    d.pop("id")
    d.pop("campaign_id")
    return tuple(sorted(d.items()))
