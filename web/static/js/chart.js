// Small line charts on <canvas>: no library, redrawn when their series
// gets a point. The latest value is also written out as text (and in the
// canvas's aria-label) for screen readers and for anyone who cannot read
// the line.
import {h} from './dom.js';
import {WINDOW_MS} from './history.js';

// chart returns {el, stop}. fmt formats a value for the text labels.
export function chart(title, s, fmt, id) {
  const canvas = h('canvas', {role: 'img', 'aria-label': `${title}: no data yet`, id});
  const now = h('span', {class: 'now'}, '–');
  const peak = h('span', {class: 'muted small'});
  const span = h('span', {id: id ? `${id}-span` : undefined}, 'no data yet');
  const el = h('section', {class: 'card chart'},
    h('h2', {}, title), h('div', {}, now, ' ', peak), canvas,
    h('div', {class: 'muted small'}, span));
  const draw = () => {
    const v = s.latest();
    const ms = spanOf(s.points);
    span.textContent = s.points.length ? `last ${ms >= WINDOW_MS ? `${WINDOW_MS / 60000} minutes` : `${Math.max(1, Math.round(ms / 1000))} s`}` : 'no data yet';
    now.textContent = v === null ? '–' : fmt(v);
    const vals = s.points.map((p) => p[1]).filter((x) => x !== null);
    const max = vals.length ? Math.max(...vals) : 0;
    peak.textContent = vals.length ? `(peak ${fmt(max)})` : '';
    canvas.setAttribute('aria-label', `${title}: now ${now.textContent}, peak ${vals.length ? fmt(max) : 'none'} over the ${span.textContent}`);
    // For tests and tools: how many points arrived in the last 10 s.
    const cut = Date.now() - 10000;
    canvas.dataset.recent = String(s.points.filter((p) => p[0] >= cut).length);
    paint(canvas, s.points, max);
  };
  s.listeners.add(draw);
  const onResize = () => draw();
  window.addEventListener('resize', onResize);
  requestAnimationFrame(draw);
  return {el, stop: () => {
    s.listeners.delete(draw);
    window.removeEventListener('resize', onResize);
  }};
}

// spanOf is the time the chart covers: from its first point, up to the
// window. A fresh page fills the width with what it has instead of drawing
// a sliver at the right edge of an empty five minutes.
function spanOf(points) {
  if (!points.length) return WINDOW_MS;
  return Math.min(WINDOW_MS, Math.max(10000, Date.now() - points[0][0]));
}

function paint(canvas, points, max) {
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth || 300;
  const hgt = canvas.clientHeight || 110;
  if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(hgt * dpr)) {
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(hgt * dpr);
  }
  const g = canvas.getContext('2d');
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, w, hgt);
  const top = max > 0 ? max * 1.15 : 1;
  const end = Date.now();
  const width = spanOf(points);
  const x = (t) => ((t - (end - width)) / width) * w;
  const y = (v) => hgt - 4 - (v / top) * (hgt - 10);
  g.strokeStyle = '#d5dae1';
  g.lineWidth = 1;
  for (const f of [0.25, 0.5, 0.75]) {
    g.beginPath();
    g.moveTo(0, Math.round(hgt * f) + 0.5);
    g.lineTo(w, Math.round(hgt * f) + 0.5);
    g.stroke();
  }
  g.strokeStyle = '#0b4f8a';
  g.fillStyle = 'rgba(11, 79, 138, 0.12)';
  g.lineWidth = 2;
  // Gaps (null: no figure for that second) break the line.
  let run = [];
  const flush = () => {
    if (run.length > 1) {
      g.beginPath();
      run.forEach(([t, v], i) => (i ? g.lineTo(x(t), y(v)) : g.moveTo(x(t), y(v))));
      g.stroke();
      g.lineTo(x(run[run.length - 1][0]), hgt);
      g.lineTo(x(run[0][0]), hgt);
      g.closePath();
      g.fill();
    } else if (run.length === 1) {
      g.fillStyle = '#0b4f8a';
      g.fillRect(x(run[0][0]) - 1.5, y(run[0][1]) - 1.5, 3, 3);
      g.fillStyle = 'rgba(11, 79, 138, 0.12)';
    }
    run = [];
  };
  for (const p of points) {
    if (p[1] === null) flush();
    else run.push(p);
  }
  flush();
}
