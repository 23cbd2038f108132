// Live summary: reads GET /v1/events (Server-Sent Events). It uses fetch
// rather than EventSource because EventSource cannot send the
// Authorization header an API token needs.
import {authHeaders} from './api.js';
import {reportFailure, learnPeers} from './conn.js';
import {setBanner} from './dom.js';

const subs = new Set();
let last = null;
let current = null; // AbortController of the open stream

// STALL: no event for this long means the stream is dead even if the TCP
// connection looks open (a paused or partitioned controller).
const STALL = 6000;

// onSummary calls fn with every summary (at once with the latest one) and
// returns a function that unsubscribes.
export function onSummary(fn) {
  subs.add(fn);
  if (last) fn(last);
  return () => subs.delete(fn);
}

export function lastSummary() {
  return last;
}

let wake = null; // ends the pause between attempts early

// restart reopens the stream now, e.g. after the token changed.
export function restart() {
  if (current) current.abort(new DOMException('restart', 'AbortError'));
  if (wake) wake();
}

// pause waits ms, or less if restart is called.
function pause(ms) {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      wake = null;
      resolve();
    }
    wake = done;
  });
}

export function start() {
  loop();
}

async function loop() {
  for (;;) {
    const ctl = new AbortController();
    current = ctl;
    let stall = null;
    let why = null;
    try {
      const res = await fetch('/v1/events', {headers: authHeaders(), signal: ctl.signal, cache: 'no-store'});
      if (res.status === 401) {
        setBanner('stream', 'warn', 'This controller needs an API token: enter it at the top of the page.');
        await pause(3000);
        continue;
      }
      if (!res.ok || !res.body) {
        setBanner('stream', 'warn', `Live updates unavailable: GET /v1/events answered HTTP ${res.status}. Retrying.`);
        await pause(2000);
        continue;
      }
      setBanner('stream', null, null);
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      const arm = () => {
        clearTimeout(stall);
        stall = setTimeout(() => ctl.abort(new DOMException('stalled', 'TimeoutError')), STALL);
      };
      arm();
      let buf = '';
      for (;;) {
        const {value, done} = await reader.read();
        if (done) break;
        arm();
        buf += value;
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          dispatch(buf.slice(0, i));
          buf = buf.slice(i + 2);
        }
      }
      why = 'ended';
    } catch (e) {
      why = ctl.signal.aborted && ctl.signal.reason && ctl.signal.reason.message === 'restart' ? 'restart' : 'failed';
    } finally {
      clearTimeout(stall);
    }
    if (why !== 'restart') {
      // The stream broke: find out whether the controller is gone (the
      // monitor may move the page to another controller).
      await reportFailure();
      await pause(300);
    }
  }
}

function dispatch(block) {
  let event = 'message';
  const data = [];
  for (const line of block.split('\n')) {
    if (line.startsWith('event:')) event = line.slice(6).trim();
    else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
  }
  if (event !== 'summary' || !data.length) return;
  let s;
  try {
    s = JSON.parse(data.join('\n'));
  } catch {
    return;
  }
  last = s;
  learnPeers(s);
  for (const fn of subs) {
    try {
      fn(s);
    } catch (e) {
      console.error('summary subscriber failed', e);
    }
  }
}
