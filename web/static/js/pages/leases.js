// Leases. The API has no "list all leases" route, so the page shows the
// leases that hold something it can find (locks, elections, service
// instances), the total count from the live summary, and a lookup by id.
import {APIError, del, describe, enc, gate, get} from '../api.js';
import {confirmDialog, dl, fmtMS, fmtNum, h, keyedTable, msg, replace} from '../dom.js';

const MAX_SHOWN = 100;

async function holders() {
  const found = new Map(); // lease id -> what it holds
  const add = (id, what) => {
    if (!id) return;
    if (!found.has(id)) found.set(id, []);
    found.get(id).push(what);
  };
  const list = async (prefix) => (await get(`/v1/kv/${prefix}?prefix=true&limit=1000`)).kvs || [];
  for (const [prefix, kind] of [['_corral/locks/', 'lock'], ['_corral/elections/', 'election']]) {
    for (const kv of await list(prefix)) {
      try {
        const v = JSON.parse(kv.value);
        add(v.lease, `${kind} ${kv.key.slice(prefix.length)}`);
      } catch {
        // not a holder record: nothing to show
      }
    }
  }
  const services = new Set((await list('_corral/services/')).map((kv) => kv.key.slice('_corral/services/'.length).split('/')[0]));
  for (const s of services) {
    const r = await get(`/v1/services/${enc(s)}`).catch(() => null);
    for (const i of (r && r.instances) || []) add(i.lease, `service ${s}/${i.instance}`);
  }
  return found;
}

export default {
  nav: 'leases',
  title: () => 'Leases',
  render(main, ctx) {
    const status = h('div', {'aria-live': 'polite'});
    const note = h('div');
    const count = h('span', {id: 'lease-count'}, '–');
    const lookup = h('section', {id: 'lease-detail', 'aria-live': 'polite'});
    const idInput = h('input', {id: 'lease-id', type: 'number', min: '1', required: true, size: 8});

    async function revoke(id) {
      const ok = await confirmDialog(`Revoke lease ${id}?`,
        `Its keys are deleted and its locks released (the next waiters get them) at once. Whoever keeps it alive gets lease_not_found.`,
        `Revoke ${id}`);
      if (!ok) return;
      try {
        const r = await del(`/v1/leases/${enc(id)}`);
        replace(status, msg('ok', `Lease ${id} revoked; ${r.deleted} key${r.deleted === 1 ? '' : 's'} deleted.`));
      } catch (e) {
        replace(status, msg('error', `Revoking ${id} failed: ${describe(e)}`));
      }
      refresh();
    }

    const table = keyedTable({
      id: 'leases',
      columns: [{title: 'Lease', num: true}, {title: 'TTL'}, {title: 'Remaining', num: true}, {title: 'Holds'},
        {title: 'Keys', num: true}, {title: 'Actions'}],
      key: (l) => l.id,
      empty: 'No lease holds a lock, an election or a service instance.',
      cells: (l) => [
        h('button', {type: 'button', 'data-fid': 'show', 'aria-label': `Show lease ${l.id}`, onclick: () => show(l.id)}, String(l.id)),
        l.ttl || '–',
        l.remaining_ms === undefined ? '–' : fmtMS(l.remaining_ms),
        l.holds.join(', '),
        fmtNum((l.keys || []).length),
        gate(h('button', {type: 'button', class: 'danger', 'data-fid': 'revoke', 'aria-label': `Revoke lease ${l.id}`,
          onclick: () => revoke(l.id)}, 'Revoke'), 'coord', 'write'),
      ],
    });

    async function show(id) {
      try {
        const l = await get(`/v1/leases/${enc(id)}`);
        replace(lookup, h('h2', {}, `Lease ${l.id}`), h('div', {class: 'card'}, dl([
          ['TTL', l.ttl],
          ['Remaining (leader\'s view)', fmtMS(l.remaining_ms)],
          ['Keys', (l.keys || []).length ? h('ul', {}, l.keys.map((k) => h('li', {class: 'mono'}, k))) : 'none'],
          ['Locks', (l.locks || []).length ? h('ul', {}, l.locks.map((k) => h('li', {class: 'mono'}, k))) : 'none'],
        ]), h('div', {class: 'actions'}, gate(h('button', {type: 'button', class: 'danger', onclick: () => revoke(l.id)}, `Revoke lease ${l.id}`), 'coord', 'write'))));
      } catch (e) {
        const gone = e instanceof APIError && e.code === 'lease_not_found';
        replace(lookup, msg(gone ? 'note' : 'error', gone ? `Lease ${id} does not exist (never granted, revoked or expired).` : describe(e)));
      }
    }

    replace(main, h('h1', {}, 'Leases'),
      h('p', {}, 'Live leases in the cluster: ', count, '.'),
      h('form', {class: 'inline', onsubmit: (e) => {
        e.preventDefault();
        show(idInput.value);
      }}, h('label', {for: 'lease-id'}, 'Lease id', idInput), h('button', {type: 'submit', class: 'primary'}, 'Look up')),
      lookup, status, note,
      h('h2', {}, 'Leases holding locks, elections and services'), table.el);

    ctx.onSummary((s) => {
      count.textContent = fmtNum(s.counts.leases);
    });
    const refresh = ctx.every(2000, async () => {
      try {
        const found = await holders();
        const ids = [...found.keys()].sort((a, b) => a - b).slice(0, MAX_SHOWN);
        const rows = await Promise.all(ids.map(async (id) => {
          const l = await get(`/v1/leases/${enc(id)}`).catch(() => null);
          // remaining_ms changes on every read: round it so rows are not
          // rebuilt (and focus moved) more than needed.
          return l ? {...l, remaining_ms: Math.round(l.remaining_ms / 1000) * 1000, holds: found.get(id)} : null;
        }));
        replace(note, found.size > MAX_SHOWN ? msg('note', `Showing ${MAX_SHOWN} of ${found.size} leases.`) : null);
        table.update(rows.filter(Boolean));
      } catch (e) {
        replace(note, msg('error', `Could not list leases: ${describe(e)}`));
      }
    });
  },
};
