"""Image-level checks of the report and demo plots: one-trial, three-trial and zero-people campaigns.

Every figure is drawn with matplotlib's Agg renderer and inspected: all visible text (titles,
labels, legend entries) lies inside the canvas, no text says ``nan``, the legends name what the
plot shows, and the builtin scene's top-down map shows all of its free space.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.figure  # noqa: E402
import matplotlib.text  # noqa: E402
import pytest  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402

from havln_robot.trials.report import write_report  # noqa: E402
from havln_robot.trials.store import Collision, Step, TrialStore  # noqa: E402


@pytest.fixture
def saved_figures(monkeypatch: pytest.MonkeyPatch) -> dict[str, matplotlib.figure.Figure]:
    """file name → the Figure object saved there (the plots close their figures; the objects survive)."""
    figs: dict[str, matplotlib.figure.Figure] = {}
    orig = matplotlib.figure.Figure.savefig

    def savefig(self: matplotlib.figure.Figure, fname: object, *a: object, **kw: object) -> None:
        orig(self, fname, *a, **kw)
        if kw.get("dpi"):
            self.set_dpi(float(kw["dpi"]))  # as saved
        name = Path(str(fname)).name
        tmp = re.fullmatch(r"\.(.+)\.\d+-[0-9a-f]{8}\.[^.]+\.tmp", name)  # paths.atomic_output: .<name>.<owner>.<random>.tmp
        figs[tmp.group(1) if tmp else name] = self

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", savefig)
    return figs


def _trial(st: TrialStore, region: str, people: int, goal: tuple[float, float] | None, n: int, colls=(), outcome="success", turn=0.0):
    meta: dict[str, object] = {"people_present": people}
    if goal is not None:
        meta.update(goal_x=goal[0], goal_y=goal[1], goal_frame="start")
    t = st.start_trial("sim", region, **meta)
    x = y = yaw = 0.0
    for i in range(n):
        if i == n // 2:
            yaw += turn
        x, y = x + 0.25 * math.cos(yaw), y + 0.25 * math.sin(yaw)
        st.add_step(t.id, Step(seq=0, stamp=float(i), action="MOVE_FORWARD", outcome="ok", x=x, y=y, yaw=yaw))
    for seq, kind in colls:
        st.add_collision(t.id, Collision(step_seq=seq, stamp=float(seq), type=kind, x=x, y=y))
    st.set_outcome(t.id, outcome)


def _campaign(db: Path, kind: str) -> None:
    with TrialStore(db) as st:
        if kind == "one":  # one trial, with a person, no goal stored
            _trial(st, "office", 1, None, 10, outcome="failure")
        elif kind == "three":
            _trial(st, "office", 0, (2.0, 0.5), 9)
            _trial(st, "hallway", 2, (3.0, 2.0), 12, ((3, "human"), (5, "static")), "failure", 0.8)
            _trial(st, "living room", 1, None, 6, ((2, "static"),), "success", -0.5)
        else:  # nobody present in any trial
            _trial(st, "office", 0, (2.0, 0.0), 9)
            _trial(st, "lobby", 0, (1.0, 3.0), 7, ((2, "static"),), "failure", 1.0)


def _texts(fig: matplotlib.figure.Figure) -> list[matplotlib.text.Text]:
    fig.canvas.draw()
    out = []
    for t in fig.findobj(matplotlib.text.Text):
        if not (t.get_visible() and t.get_text().strip()):
            continue
        ax = t.axes
        if ax is not None and t in ax.xaxis.get_ticklabels(minor=True) + ax.yaxis.get_ticklabels(minor=True):
            continue
        out.append(t)
    return out


def _assert_inside(fig: matplotlib.figure.Figure, name: str) -> list[str]:
    """Every visible, drawn text inside the canvas (1 px tolerance); returns all the texts."""
    FigureCanvasAgg(fig)  # plt.close() detached the canvas: draw with Agg again
    renderer = fig.canvas.get_renderer()
    W, H = fig.bbox.width, fig.bbox.height
    words = []
    owner = {}  # id(tick label Text) -> (its axes, "x" | "y"); tick labels have no .axes of their own
    for ax in fig.axes:
        for which, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            for tk in axis.get_major_ticks() + axis.get_minor_ticks():
                owner[id(tk.label1)] = owner[id(tk.label2)] = (ax, which)
    for t in _texts(fig):
        bb = t.get_window_extent(renderer)
        if id(t) in owner:
            # the axis draws only the labels of ticks inside the axes along it; spare Tick objects keep stale text
            ax, which = owner[id(t)]
            ab = ax.get_window_extent(renderer)
            drawn = t in (ax.get_xticklabels() if which == "x" else ax.get_yticklabels())
            c = (bb.x0 + bb.x1) / 2 if which == "x" else (bb.y0 + bb.y1) / 2
            lo, hi = (ab.x0, ab.x1) if which == "x" else (ab.y0, ab.y1)
            if not drawn or not lo - 1 <= c <= hi + 1:
                continue
        assert bb.x0 >= -1 and bb.y0 >= -1 and bb.x1 <= W + 1 and bb.y1 <= H + 1, f"{name}: {t.get_text()!r} is cut off ({bb} in {W}x{H})"
        words.append(t.get_text())
    for leg in fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]:
        bb = leg.get_window_extent(renderer)
        assert bb.x0 >= -1 and bb.y0 >= -1 and bb.x1 <= W + 1 and bb.y1 <= H + 1, f"{name}: legend is cut off"
    assert not any("nan" in w.lower().split() or "nan " in w.lower() for w in words), f"{name}: 'nan' in {words}"
    return words


def _legend_labels(fig: matplotlib.figure.Figure) -> list[str]:
    legs = fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    return [t.get_text() for leg in legs for t in leg.get_texts()]


@pytest.mark.parametrize("kind", ["one", "three", "zero"])
def test_report_figures_fit_and_say_what_they_show(kind: str, tmp_path: Path, saved_figures) -> None:
    db = tmp_path / "trials.db"
    _campaign(db, kind)
    with TrialStore(db, readonly=True) as st:
        write_report(st, tmp_path / "report")
    assert {"trajectories.png", "collisions_per_trial.png", "ne_distribution.png", "success_by_region.png"} <= set(saved_figures)
    words = {name: _assert_inside(fig, f"{kind}/{name}") for name, fig in saved_figures.items()}

    traj = saved_figures["trajectories.png"]
    assert {"start", "stop", "goal", "success radius", "collision: human", "collision: static"} <= set(_legend_labels(traj))
    assert ("no goal stored" in words["trajectories.png"]) == (kind in ("one", "three"))

    title = saved_figures["collisions_per_trial.png"].axes[0].get_title()
    assert "nan" not in title
    assert ("with people" in title) == (kind != "zero") and ("without people" in title) == (kind != "one")

    ne = saved_figures["ne_distribution.png"]
    assert any("success radius" in s for s in _legend_labels(ne)), "the success radius is named in the legend"
    assert not any("success radius" in t.get_text() for t in ne.axes[0].texts), "no label over the bars"


def test_builtin_topdown_shows_the_whole_map_with_legend(tmp_path: Path, saved_figures) -> None:
    from havln_robot.demo import EpisodeRun, plot_episode
    from havln_robot.sim.session import open_episode

    params = {"scene_source": "builtin"}
    opened = open_episode(params)
    ep = opened.episode
    run = EpisodeRun(ep.episode_id, ep.scan, ep.instruction)
    run.trajectory = [(p[0], p[1]) for p in ep.reference_path][:2]
    run.outcome = "failure"
    png = plot_episode(run, params, tmp_path / "topdown.png")
    assert png.is_file()
    fig = saved_figures["topdown.png"]
    _assert_inside(fig, "topdown")
    labels = _legend_labels(fig)
    assert {"free space", "wall / no floor", "robot end pose", "start", "reference path"} <= set(labels), labels
    ax = fig.axes[0]
    floor = opened.scene.floors[opened.scene.floor_index(ep.start_position[2])].free
    bx0, by0, bx1, by1 = floor.bounds
    (x0, x1), (y0, y1) = sorted(ax.get_xlim()), sorted(ax.get_ylim())
    assert x0 <= bx0 and x1 >= bx1 and y0 <= by0 and y1 >= by1, f"map {floor.bounds} cut off by the view {(x0, y0, x1, y1)}"
