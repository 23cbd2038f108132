// The dashboard's shell: hash router, header, token field and banners.
// Pages are modules with render(ctx); ctx gives them timers and summary
// subscriptions that end when the user leaves the page.
import {getToken, loadSelf, setToken, whoami} from './api.js';
import {onHandoff, takeHandoff} from './conn.js';
import {h, msg, replace, setBanner, tzLabel} from './dom.js';
import {exportLog, restoreLog, startHistory} from './history.js';
import {onSummary, restart, start} from './live.js';
import overview from './pages/overview.js';
import controllers from './pages/controllers.js';
import {workerList, workerPage} from './pages/workers.js';
import {allocationPage, jobList, jobPage} from './pages/jobs.js';
import keys from './pages/keys.js';
import leases from './pages/leases.js';
import locks from './pages/locks.js';
import services from './pages/services.js';
import znodes from './pages/znodes.js';

// POLL is how often pages without a live stream refresh.
export const POLL = 2000;

const routes = [
  [/^\/?$/, overview],
  [/^\/controllers$/, controllers],
  [/^\/workers$/, workerList],
  [/^\/workers\/([^/]+)$/, workerPage],
  [/^\/jobs$/, jobList],
  [/^\/jobs\/([^/]+)$/, jobPage],
  [/^\/allocations\/([^/]+)$/, allocationPage],
  [/^\/keys$/, keys],
  [/^\/leases$/, leases],
  [/^\/locks$/, locks],
  [/^\/services$/, services],
  [/^\/znodes$/, znodes],
];

let teardown = [];

function parseHash() {
  const raw = location.hash.replace(/^#/, '') || '/';
  const q = raw.indexOf('?');
  const path = q < 0 ? raw : raw.slice(0, q);
  const query = new URLSearchParams(q < 0 ? '' : raw.slice(q + 1));
  return {path, query};
}

// route loads the token's permissions, then renders the page.
async function route() {
  await loadSelf();
  showSelf();
  renderRoute();
}

// showSelf names the token in the header, so a read-only user knows why
// actions are disabled.
function showSelf() {
  const el = document.getElementById('hdr-token');
  if (!el) return;
  const me = whoami();
  el.textContent = !me || !me.acl_enabled ? '' : me.type === 'management' ? `token ${me.name} · management` :
    `token ${me.name} · ${(me.policies || []).join(', ')}`;
}

function renderRoute() {
  for (const fn of teardown) fn();
  teardown = [];
  const main = document.getElementById('main');
  const {path, query} = parseHash();
  let page = null;
  let params = [];
  for (const [re, p] of routes) {
    const m = re.exec(path);
    if (m) {
      page = p;
      params = m.slice(1).map((x) => {
        try {
          return decodeURIComponent(x);
        } catch {
          return x;
        }
      });
      break;
    }
  }
  for (const a of document.querySelectorAll('[data-nav]')) {
    if (page && a.dataset.nav === page.nav) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  if (!page) {
    replace(main, h('h1', {}, 'Not found'), msg('error', `No page ${path}.`), h('a', {href: '#/'}, 'Overview'));
    return;
  }
  document.title = `${page.title(params)} · corral`;
  const ctl = new AbortController();
  teardown.push(() => ctl.abort());
  const ctx = {
    params,
    query,
    signal: ctl.signal,
    // every runs fn now and every ms; a slow fn is never run twice at once,
    // and a hidden tab does not poll.
    every(ms, fn) {
      let busy = false;
      const tick = async () => {
        if (busy || ctl.signal.aborted || document.hidden) return;
        busy = true;
        try {
          await fn();
        } finally {
          busy = false;
        }
      };
      tick();
      const id = setInterval(tick, ms);
      teardown.push(() => clearInterval(id));
      return tick;
    },
    onSummary(fn) {
      teardown.push(onSummary(fn));
    },
    onLeave(fn) {
      teardown.push(fn);
    },
  };
  main.replaceChildren();
  page.render(main, ctx);
  // Move focus to the new page so keyboard and screen reader users start
  // there, not at the link they activated.
  if (renderRoute.count++ > 0) main.focus({preventScroll: false});
}
renderRoute.count = 0;

function header(s) {
  const server = document.getElementById('hdr-server');
  server.textContent = `controller ${s.node_id} · ${location.host}`;
  server.className = 'pill state-up';
  const leader = document.getElementById('hdr-leader');
  leader.textContent = s.leader_id ? `leader ${s.leader_id} · term ${s.term}` : 'no leader';
  leader.className = `pill ${s.leader_id ? 'state-leader' : 'state-down'}`;
  document.getElementById('hdr-cluster').textContent = s.cluster.cluster_id ? `cluster ${s.cluster.cluster_id}` : '';
  if (!s.leader_id) {
    const q = s.cluster.quorum || {};
    setBanner('leader', 'bad', `Controller ${s.node_id} knows no leader: writes and linearizable reads fail until a quorum elects one ` +
      `(it reaches ${q.reachable ?? '?'} of ${q.voters ?? '?'} voters; ${q.needed ?? '?'} are needed).`);
  } else {
    setBanner('leader', null, null);
  }
}

function tokenForm() {
  const form = document.getElementById('token-form');
  const input = document.getElementById('token-input');
  input.placeholder = getToken() ? 'token saved' : 'none set';
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    setToken(input.value.trim());
    input.value = '';
    input.placeholder = getToken() ? 'token saved' : 'none set';
    restart();
    route();
  });
  document.getElementById('token-clear').addEventListener('click', () => {
    setToken('');
    input.value = '';
    input.placeholder = 'none set';
    restart();
    route();
  });
}

function main() {
  const carried = takeHandoff();
  if (carried) {
    if (carried.token && !getToken()) setToken(carried.token);
    if (carried.leaderLog) restoreLog(carried.leaderLog);
  }
  onHandoff(() => ({token: getToken(), leaderLog: exportLog()}));
  document.getElementById('hdr-tz').textContent = `times in ${tzLabel()}`;
  tokenForm();
  startHistory();
  onSummary(header);
  start();
  window.addEventListener('hashchange', route);
  route();
}

main();
