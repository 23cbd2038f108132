// What the page remembers between summaries: chart series for the last
// minutes and the leader changes it saw in the last hour. Collected from
// the start (not only while the overview is open) so the charts are full
// when the user comes back to it.
import {onSummary} from './live.js';

export const WINDOW_MS = 5 * 60 * 1000;
const HOUR = 3600 * 1000;
const LOG_KEY = 'corral.leaderlog';

// Series is a time series trimmed to WINDOW_MS.
export class Series {
  constructor() {
    this.points = [];
    this.listeners = new Set();
  }

  push(t, v) {
    this.points.push([t, v]);
    const cut = t - WINDOW_MS;
    while (this.points.length && this.points[0][0] < cut) this.points.shift();
    for (const fn of this.listeners) fn();
  }

  latest() {
    for (let i = this.points.length - 1; i >= 0; i--) if (this.points[i][1] !== null) return this.points[i][1];
    return null;
  }
}

export const series = {
  writes: new Series(),
  heartbeat: new Series(),
  running: new Series(),
};

const SERIES_KEY = 'corral.series';
let saveTimer = null;

// saveSeries keeps the charts across reloads and page changes of this tab
// (at most every 5 s: sessionStorage writes are synchronous).
function saveSeries() {
  if (saveTimer) return;
  saveTimer = setTimeout(() => {
    saveTimer = null;
    try {
      const v = {};
      for (const [k, s] of Object.entries(series)) v[k] = s.points;
      sessionStorage.setItem(SERIES_KEY, JSON.stringify(v));
    } catch {
      // storage full or disabled: charts restart empty after a reload
    }
  }, 5000);
}

function loadSeries() {
  try {
    const v = JSON.parse(sessionStorage.getItem(SERIES_KEY) || 'null') || {};
    const cut = Date.now() - WINDOW_MS;
    for (const [k, s] of Object.entries(series)) {
      if (Array.isArray(v[k])) s.points = v[k].filter((p) => Array.isArray(p) && p[0] >= cut);
      // No line across the time this page was not running.
      if (s.points.length) s.points.push([Date.now(), null]);
    }
  } catch {
    // a corrupt entry only costs the old points
  }
  for (const s of Object.values(series)) s.listeners.add(saveSeries);
}

let leaderLog = [];
let lastLeader = null;
let prev = null;

export function leaderChanges() {
  const cut = Date.now() - HOUR;
  leaderLog = leaderLog.filter((e) => e.at >= cut);
  return leaderLog;
}

// restoreLog takes the log carried over from another controller's page.
export function restoreLog(v) {
  if (v && Array.isArray(v.log)) leaderLog = v.log.filter((e) => e && typeof e.at === 'number');
  if (v && typeof v.last === 'number') lastLeader = v.last;
  persist();
}

// exportLog is what restoreLog takes, for the next controller's page.
export function exportLog() {
  return {log: leaderChanges(), last: lastLeader};
}

function persist() {
  try {
    sessionStorage.setItem(LOG_KEY, JSON.stringify({log: leaderLog, last: lastLeader}));
  } catch {
    // storage full or disabled: the log is only a convenience
  }
}

function load() {
  try {
    const v = JSON.parse(sessionStorage.getItem(LOG_KEY) || 'null');
    if (v) {
      leaderLog = v.log || [];
      lastLeader = v.last ?? null;
    }
  } catch {
    leaderLog = [];
  }
}

function leaderPeer(s) {
  return (s.peers || []).find((p) => p.id === s.leader_id && p.up);
}

// rate is the per-second increase of a counter between two summaries.
function rate(a, b, dt) {
  if (a === undefined || b === undefined || dt <= 0 || b < a) return null;
  return (b - a) / dt;
}

function observe(s) {
  const now = Date.now();
  if (s.leader_id && s.leader_id !== lastLeader) {
    if (lastLeader !== null) leaderLog.push({at: now, from: lastLeader, to: s.leader_id, term: s.term});
    lastLeader = s.leader_id;
    persist();
  }
  const t = Date.parse(s.at) || now;
  if (prev) {
    const dt = (t - prev.t) / 1000;
    // Every write is one raft entry, so the commit index rate is the
    // cluster's write rate (plus a leader's no-op entry per election).
    series.writes.push(now, rate(prev.commit, s.cluster.commit_index, dt));
    const lp = leaderPeer(s);
    const f = lp && lp.figures;
    let hb = null;
    if (f && prev.hb && lp.id === prev.hb.id) {
      const dc = f.corral_workers_heartbeat_handle_seconds_count - prev.hb.count;
      const ds = f.corral_workers_heartbeat_handle_seconds_sum - prev.hb.sum;
      if (dc > 0 && ds >= 0) hb = (ds / dc) * 1000;
    }
    series.heartbeat.push(now, hb);
  }
  const lp = leaderPeer(s);
  prev = {
    t, commit: s.cluster.commit_index,
    hb: lp && lp.figures ? {id: lp.id, count: lp.figures.corral_workers_heartbeat_handle_seconds_count,
      sum: lp.figures.corral_workers_heartbeat_handle_seconds_sum} : null,
  };
}

export function startHistory() {
  load();
  loadSeries();
  onSummary(observe);
}
