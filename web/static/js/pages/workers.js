// Workers: the registry with the leader's liveness (GET /v1/workers), one
// worker's page with its allocations, and drain / undo drain.
import {APIError, describe, enc, gate, get, optional, post} from '../api.js';
import {confirmDialog, dl, fmtCPU, fmtMS, fmtMem, fmtTime, h, keyedTable, msg, pill, replace} from '../dom.js';
import {allocTable} from './jobs.js';

function labels(l) {
  const ks = Object.keys(l || {}).sort();
  return ks.length ? h('div', {class: 'labels'}, ks.map((k) => h('span', {class: 'pill mono'}, `${k}=${l[k]}`))) : '–';
}

// load is the host's load from the worker's last heartbeat: the whole
// machine's CPU and memory in use (roles/worker/load.go), not what this
// worker's allocations use, then the tasks it runs.
function load(w) {
  if (!w.load) return h('span', {class: 'muted'}, 'unknown');
  const l = w.load;
  const tasks = `${l.running_tasks} ${l.running_tasks === 1 ? 'task' : 'tasks'} running`;
  return `${fmtCPU(l.cpu_millicores)}, ${fmtMem(l.memory_mb)} in use; ${tasks}`;
}

const LOAD_TIP = "The machine's CPU and memory in use, everything on it counted (not only this worker's allocations), " +
  'from its last heartbeat; then the number of tasks this worker runs.';

function capacity(w) {
  return `${fmtCPU(w.capacity.cpu_millicores)}, ${fmtMem(w.capacity.memory_mb)}`;
}

// drainAction drains or undoes a drain, asking first before a drain (it
// moves the worker's allocations away).
async function drainAction(w, drain, status, done) {
  if (drain) {
    const ok = await confirmDialog(`Drain worker ${w.id}?`,
      `The scheduler stops placing allocations on ${w.id} and moves its running allocations to other workers. ` +
      'Undo drain makes it eligible again; moved allocations stay where they are.', `Drain ${w.id}`);
    if (!ok) return;
  }
  replace(status, msg('note', `${drain ? 'Draining' : 'Undoing the drain of'} ${w.id}…`));
  try {
    await post(`/v1/workers/${enc(w.id)}/drain`, {drain});
    replace(status, msg('ok', drain ? `Worker ${w.id} is draining.` : `Worker ${w.id} takes allocations again.`));
  } catch (e) {
    replace(status, msg('error', `${drain ? 'Drain' : 'Undo drain'} of ${w.id} failed: ${describe(e)}`));
  }
  done();
}

function drainButton(w, status, done) {
  const draining = w.state === 'draining';
  return gate(h('button', {type: 'button', 'data-fid': 'drain', class: draining ? '' : 'danger',
    disabled: w.state === 'left' || w.state === 'fenced',
    'aria-label': `${draining ? 'Undo drain of' : 'Drain'} worker ${w.id}`,
    onclick: () => drainAction(w, !draining, status, done)}, draining ? 'Undo drain' : 'Drain'), 'workers', 'write');
}

function sourceNote(r) {
  return r.source === 'follower'
    ? msg('note', 'This controller could not reach the leader: states are the replicated ones, without liveness (suspect), load or heartbeat ages.')
    : null;
}

export const workerList = {
  nav: 'workers',
  title: () => 'Workers',
  render(main, ctx) {
    const status = h('div', {'aria-live': 'polite'});
    const note = h('div');
    const table = keyedTable({
      id: 'workers',
      columns: [{title: 'ID'}, {title: 'State'}, {title: 'Epoch', num: true}, {title: 'Labels'},
        {title: 'Capacity'}, {title: 'Host load (CPU, memory), tasks', tip: LOAD_TIP}, {title: 'Heartbeat age', num: true},
        {title: 'Actions'}],
      key: (w) => w.id,
      empty: 'No worker has registered yet.',
      cells: (w) => [
        h('a', {href: `#/workers/${enc(w.id)}`, class: 'mono'}, w.id),
        h('span', {}, pill(w.state, {'data-state': w.state}), w.reason ? h('div', {class: 'muted small'}, w.reason) : null),
        String(w.epoch),
        labels(w.labels),
        capacity(w),
        load(w),
        w.last_heartbeat_age_ms === null || w.last_heartbeat_age_ms === undefined ? '–' : fmtMS(w.last_heartbeat_age_ms),
        drainButton(w, status, () => refresh()),
      ],
    });
    replace(main, h('h1', {}, 'Workers'), note, status, table.el);
    const refresh = ctx.every(2000, async () => {
      try {
        const r = await get('/v1/workers');
        replace(note, sourceNote(r));
        table.update(r.workers || []);
      } catch (e) {
        replace(note, msg('error', `Could not list workers: ${describe(e)}`));
      }
    });
  },
};

export const workerPage = {
  nav: 'workers',
  title: (p) => `Worker ${p[0]}`,
  render(main, ctx) {
    const id = ctx.params[0];
    const status = h('div', {'aria-live': 'polite'});
    const info = h('div');
    const actions = h('div', {class: 'actions'});
    const allocs = allocTable('worker-allocations', false);
    const allocNote = h('div');
    replace(main,
      h('p', {}, h('a', {href: '#/workers'}, '← Workers')),
      h('h1', {}, 'Worker ', h('span', {class: 'mono'}, id)),
      status, actions, info,
      h('h2', {}, 'Allocations'), allocNote, allocs.el);
    let lastState = null;
    const refresh = ctx.every(2000, async () => {
      try {
        const w = await get(`/v1/workers/${enc(id)}`);
        replace(info, sourceNote(w), h('div', {class: 'cards'}, h('section', {class: 'card'}, dl([
          ['State', h('span', {}, pill(w.state, {id: 'worker-state'}), w.reason ? ` (${w.reason})` : '')],
          ['Epoch', String(w.epoch)],
          ['Controller epoch', String(w.controller_epoch)],
          ['Addresses', (w.addresses || []).join(', ') || '–'],
          ['Labels', labels(w.labels)],
          ['Capacity', capacity(w)],
          [h('span', {title: LOAD_TIP}, 'Host load'), load(w)],
          ['Heartbeat age', w.last_heartbeat_age_ms === null ? '–' : fmtMS(w.last_heartbeat_age_ms)],
          ['Registered', fmtTime(w.registered_at)],
          ['State changed', fmtTime(w.state_changed_at)],
          ['Version', w.version || '–'],
          ['Incarnation', h('span', {class: 'mono small'}, w.incarnation)],
        ]))));
        if (w.state !== lastState) {
          lastState = w.state;
          replace(actions, drainButton(w, status, () => refresh()));
        }
      } catch (e) {
        replace(info, msg('error', `Could not load worker ${id}: ${describe(e)}`));
      }
      try {
        const r = await optional(`/v1/allocations?worker=${enc(id)}`);
        if (r === null) {
          replace(allocNote, msg('note', 'This controller has no jobs API yet.'));
          return;
        }
        replace(allocNote);
        allocs.update(r.allocations || []);
      } catch (e) {
        replace(allocNote, msg('error', e instanceof APIError ? describe(e) : String(e)));
      }
    });
  },
};
