// A line chart of shares over a time window, drawn as plain SVG.
import { s } from "./dom.js";

const W = 360, H = 150, LEFT = 34, RIGHT = 8, TOP = 8, BOTTOM = 20;

// series: [{name, cls, points: [[t, value], ...]}], t in seconds; window [t0, t1].
export function lineChart(series, t0, t1) {
  const values = series.flatMap((x) => x.points.map((p) => p[1]));
  const top = Math.max(0.1, ...values) * 1.1;
  const x = (t) => LEFT + ((t - t0) / Math.max(1, t1 - t0)) * (W - LEFT - RIGHT);
  const y = (v) => TOP + (1 - v / top) * (H - TOP - BOTTOM);
  const grid = s("g", { class: "grid" });
  for (const v of [0, top / 2, top]) {
    grid.append(
      s("line", { x1: LEFT, x2: W - RIGHT, y1: y(v), y2: y(v) }),
      s("text", { x: LEFT - 4, y: y(v) + 3, "text-anchor": "end" }, v.toFixed(2)),
    );
  }
  const ago = (d) => (d >= 120 ? `-${Math.round(d / 60)}m` : `-${Math.round(d)}s`);
  for (const [t, label] of [[t0, ago(t1 - t0)], [(t0 + t1) / 2, ago((t1 - t0) / 2)], [t1, "now"]]) {
    grid.append(s("text", { x: x(t), y: H - 6, "text-anchor": "middle" }, label));
  }
  const lines = series.map((one) =>
    s("polyline", {
      class: one.cls,
      "data-series": one.name,
      "data-points": one.points.length,
      points: one.points.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(" "),
    }, s("title", {}, one.name)),
  );
  return s("svg", { class: "chart", viewBox: `0 0 ${W} ${H}`, role: "img" }, grid, lines);
}
