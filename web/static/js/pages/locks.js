// Locks and elections. Held ones have a holder key under _corral/locks/
// and _corral/elections/, so listing those keys finds them all; each one's
// own GET then gives its waiters.
import {describe, enc, get} from '../api.js';
import {fmtNum, h, keyedTable, msg, replace} from '../dom.js';

const LOCKS = '_corral/locks/';
const ELECTIONS = '_corral/elections/';

async function names(prefix) {
  const r = await get(`/v1/kv/${prefix}?prefix=true&limit=1000`);
  return (r.kvs || []).map((kv) => kv.key.slice(prefix.length)).filter((n) => n && !n.includes('/'));
}

export default {
  nav: 'locks',
  title: () => 'Locks & elections',
  render(main, ctx) {
    const note = h('div');
    const locks = keyedTable({
      id: 'locks',
      caption: 'Held locks. Fencing tokens only grow: resources a lock protects should refuse smaller ones.',
      columns: [{title: 'Lock'}, {title: 'Owner'}, {title: 'Lease', num: true}, {title: 'Fencing token', num: true},
        {title: 'Waiters'}],
      key: (l) => l.name,
      empty: 'No lock is held.',
      cells: (l) => [
        h('span', {class: 'mono'}, l.name), l.owner || h('span', {class: 'muted'}, '(no owner id)'),
        fmtNum(l.lease), fmtNum(l.fencing_token),
        (l.waiters || []).length ? (l.waiters || []).map((w) => `${w.owner || 'lease'} (${w.lease})`).join(', ') : 'none',
      ],
    });
    const elections = keyedTable({
      id: 'elections',
      caption: 'Elections with a leader. The epoch is the leader\'s fencing token.',
      columns: [{title: 'Election'}, {title: 'Leader'}, {title: 'Epoch', num: true}, {title: 'Lease', num: true},
        {title: 'Candidates waiting', num: true}],
      key: (e) => e.name,
      empty: 'No election has a leader.',
      cells: (e) => [h('span', {class: 'mono'}, e.name), e.leader || '–', fmtNum(e.epoch), fmtNum(e.lease), fmtNum(e.waiters)],
    });
    replace(main, h('h1', {}, 'Locks & elections'), note, h('h2', {}, 'Locks'), locks.el, h('h2', {}, 'Elections'), elections.el);
    ctx.every(2000, async () => {
      try {
        const [ln, en] = await Promise.all([names(LOCKS), names(ELECTIONS)]);
        const ls = await Promise.all(ln.map((n) => get(`/v1/locks/${enc(n)}`).catch(() => null)));
        const es = await Promise.all(en.map((n) => get(`/v1/elections/${enc(n)}`).catch(() => null)));
        replace(note);
        // A lock released between the two reads answers held=false: skip it.
        locks.update(ls.filter((l) => l && l.held));
        elections.update(es.filter((e) => e && e.leader));
      } catch (e) {
        replace(note, msg('error', `Could not list locks: ${describe(e)}`));
      }
    });
  },
};
