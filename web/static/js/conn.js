// Connection monitor: notices when the controller that served this page
// stops answering and moves the page to another controller.
//
// The page only ever calls its own origin: the API sends no CORS headers,
// so a page from controller A cannot call controller B. Failing over
// therefore means loading B's /ui/ (same route). Probing B's /healthz with
// a no-cors request works without CORS: it resolves when B answers at all.
import {setBanner, sleep} from './dom.js';

const HANDOFF = 'corral-handoff:';
let peers = [];
let probing = null;
let carry = () => ({});

// learnPeers records the other controllers' HTTP addresses from a summary
// (the replicated member list, known even while there is no leader).
export function learnPeers(summary) {
  const list = (summary.peers || [])
    .filter((p) => p.http_address && p.http_address !== location.host)
    .map((p) => ({id: p.id, addr: p.http_address}));
  if (list.length) {
    peers = list;
    sessionStorage.setItem('corral.peers', JSON.stringify(peers));
  }
}

export function knownPeers() {
  return peers;
}

// onHandoff registers what to carry to the next controller's page.
export function onHandoff(fn) {
  carry = fn;
}

// takeHandoff reads what the previous controller's page passed on through
// window.name (the only state that survives a navigation to another origin
// in the same tab; it is cleared at once). It returns the carried object.
export function takeHandoff() {
  try {
    const saved = sessionStorage.getItem('corral.peers');
    if (saved) peers = JSON.parse(saved);
  } catch {
    peers = [];
  }
  if (!window.name.startsWith(HANDOFF)) return null;
  let c = null;
  try {
    c = JSON.parse(window.name.slice(HANDOFF.length));
  } catch {
    c = null;
  }
  window.name = '';
  if (c && c.from) {
    setBanner('handoff', 'info', `Switched to controller ${location.host}: ${c.from} stopped answering.`);
    setTimeout(() => setBanner('handoff', null, null), 15000);
  }
  if (c && Array.isArray(c.peers) && !peers.length) peers = c.peers.filter((p) => p.addr !== location.host);
  return c;
}

async function reachableSelf() {
  try {
    const r = await fetch('/healthz', {cache: 'no-store', signal: AbortSignal.timeout(1500)});
    return r.ok;
  } catch {
    return false;
  }
}

async function reachable(addr) {
  try {
    await fetch(`${location.protocol}//${addr}/healthz`, {mode: 'no-cors', cache: 'no-store', signal: AbortSignal.timeout(1500)});
    return true;
  } catch {
    return false;
  }
}

function handoff(p) {
  const c = {...carry(), from: location.host, peers: peers.concat([{addr: location.host}])};
  window.name = HANDOFF + JSON.stringify(c);
  location.assign(`${location.protocol}//${p.addr}/ui/${location.hash}`);
}

// reportFailure starts (once) probing: it resolves when this page's own
// controller answers again; if another controller answers first the page
// moves there and the promise never resolves.
export function reportFailure() {
  if (!probing) probing = probe().finally(() => {
    probing = null;
  });
  return probing;
}

export function lost() {
  return probing !== null;
}

async function probe() {
  const self = location.host;
  for (let attempt = 0; ; attempt++) {
    if (await reachableSelf()) {
      setBanner('conn', null, null);
      return;
    }
    // One quick retry: a single refused connection can be a restart race.
    if (attempt === 0) {
      await sleep(300);
      continue;
    }
    setBanner('conn', 'bad', `Lost the connection to controller ${self}. Looking for another controller…`);
    for (const p of peers) {
      if (p.addr !== self && await reachable(p.addr)) {
        setBanner('conn', 'warn', `Controller ${self} stopped answering: switching to ${p.addr}…`);
        handoff(p);
        return new Promise(() => {}); // the page is being replaced
      }
    }
    const tried = peers.map((p) => p.addr).join(', ') || 'none known';
    setBanner('conn', 'bad', `Lost its server: controller ${self} does not answer and no other controller is reachable (tried: ${tried}). Retrying every 2 s.`);
    await sleep(2000);
  }
}
