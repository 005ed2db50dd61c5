"""A frontier's step function as a character plot for the terminal.

Only what the step function holds is drawn: a corner (●) at each measured point,
horizontal runs (─) at a measured y, and vertical runs (│) joining one step to the next at
a measured x. Nothing ever joins two points by a slope. Pure: a StepFunction in, text out.
"""

from __future__ import annotations

from orchestrator.frontier.pareto import AXES, StepFunction

WIDTH = 64
HEIGHT = 16
CORNER, HORIZONTAL, VERTICAL = "●", "─", "│"


def _fmt(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"


def _scale(lo: float, hi: float) -> tuple[float, float]:
    """A range that puts a single value in the middle instead of dividing by zero."""
    if hi > lo:
        return lo, hi
    pad = abs(lo) * 0.1 or 1.0
    return lo - pad, hi + pad


def _join(grid: list[list[str]], start: tuple[int, int], end: tuple[int, int], c_to: int) -> None:
    """Box corners where a vertical run leaves one step and meets the next."""
    (r0, c0), (r1, c1) = start, end
    down = r1 > r0
    if grid[r0][c1] == HORIZONTAL or grid[r0][c1] == " ":
        came_from_left = c0 < c1 or (c0 == c1 and grid[r0][c1] == HORIZONTAL)
        if c0 != c1 or came_from_left:
            grid[r0][c1] = ("┐" if down else "┘") if came_from_left else ("┌" if down else "└")
        else:
            grid[r0][c1] = VERTICAL
    right = c_to > c1
    if c_to == c1:
        grid[r1][c1] = VERTICAL
    else:
        grid[r1][c1] = ("└" if right else "┘") if down else ("┌" if right else "┐")


def render(steps: StepFunction, *, width: int = WIDTH, height: int = HEIGHT) -> str:
    """The step plot of `steps` with labelled axes (units in the labels); a note if empty."""
    x_axis, y_axis = AXES[steps.x], AXES[steps.y]
    if not steps.corners:
        return f"(no measured point to plot on {x_axis.label} × {y_axis.label})"
    xs = [c.x for c in steps.corners]
    ys = [c.y for c in steps.corners]
    x_lo, x_hi = _scale(min(xs), max(xs))
    y_lo, y_hi = _scale(min(ys), max(ys))

    def col(x: float) -> int:
        return round((x - x_lo) / (x_hi - x_lo) * (width - 1))

    def row(y: float) -> int:  # row 0 is the top
        return height - 1 - round((y - y_lo) / (y_hi - y_lo) * (height - 1))

    grid = [[" "] * width for _ in range(height)]
    previous: tuple[int, int] | None = None  # (row, col) where the previous segment ended
    for seg in steps.segments:
        r, c_from, c_to = row(seg.y), col(seg.x_from), col(seg.x_to)
        a, b = sorted((c_from, c_to))
        for c in range(a, b + 1):
            grid[r][c] = HORIZONTAL
        if previous is not None and previous[0] != r:
            top, bottom = sorted((previous[0], r))
            for rr in range(top + 1, bottom):
                grid[rr][c_from] = VERTICAL
            _join(grid, previous, (r, c_from), c_to)
        previous = (r, c_to)
    for corner in steps.corners:
        grid[row(corner.y)][col(corner.x)] = CORNER

    y_top, y_bottom = _fmt(max(ys)), _fmt(min(ys))
    margin = max(len(y_top), len(y_bottom))
    lines = [f"{y_axis.label} — {'higher' if y_axis.higher_is_better else 'lower'} is better"]
    for r, cells in enumerate(grid):
        if r == row(max(ys)):
            tick = y_top
        elif r == row(min(ys)):
            tick = y_bottom
        else:
            tick = ""
        lines.append(f"{tick:>{margin}} ┤{''.join(cells)}")
    lines.append(" " * margin + " └" + "─" * width)
    left, right = _fmt(min(xs)), _fmt(max(xs))
    lo_col, hi_col = col(min(xs)), col(max(xs))
    ticks = [" "] * (width + len(right) + 1)
    for i, ch in enumerate(left):
        ticks[lo_col + i] = ch
    start = max(hi_col - len(right) + 1, lo_col + len(left) + 1)
    for i, ch in enumerate(right if max(xs) != min(xs) else ""):
        if start + i < len(ticks):
            ticks[start + i] = ch
    lines.append(" " * (margin + 2) + "".join(ticks).rstrip())
    if x_axis.neutral:
        lines.append(" " * (margin + 2) + f"{x_axis.label} — the load setting")
    else:
        direction = "higher" if x_axis.higher_is_better else "lower"
        lines.append(" " * (margin + 2) + f"{x_axis.label} — {direction} is better")
    if min(xs) == max(xs) or len(steps.corners) == 1:
        lines.append("(one measured x: the plot shows corners only at that x)")
    return "\n".join(lines)
