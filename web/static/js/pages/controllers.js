// Controllers: the leader's replication view (GET /v1/controllers, which
// any controller forwards to the leader) and membership actions.
import {describe, del, enc, gate, get, post} from '../api.js';
import {confirmDialog, dl, fmtMS, fmtNum, h, keyedTable, msg, pill, replace} from '../dom.js';

// removalEffect says in words what removing controller c does to the quorum.
export function removalEffect(c, q) {
  if (!c.voter) {
    return `Learner ${c.id} is removed. Voters stay ${q.voters}; the quorum still tolerates ${q.failure_tolerance} failure${q.failure_tolerance === 1 ? '' : 's'}.`;
  }
  const v2 = q.voters - 1;
  const need2 = Math.floor(v2 / 2) + 1;
  const reach2 = q.reachable - (c.reachable ? 1 : 0);
  const tol2 = Math.max(0, reach2 - need2);
  const full = Math.max(0, v2 - need2);
  let t = `${q.voters} voters → ${v2}; a majority is then ${need2}, so the quorum tolerates ${tol2} failure${tol2 === 1 ? '' : 's'}`;
  t += tol2 === full ? '.' : ` (${full} once every remaining voter is reachable).`;
  if (c.role === 'leader') t += ' It leads now: leadership moves to another voter first.';
  if (reach2 < need2) t += ' The remaining voters would have no reachable majority, so the API refuses this (quorum_at_risk).';
  if (v2 === 0) t = 'It is the last voter: the API refuses to remove it (last_voter).';
  return `Controller ${c.id} leaves the quorum: ${t}`;
}

export default {
  nav: 'controllers',
  title: () => 'Controllers',
  render(main, ctx) {
    const status = h('div', {'aria-live': 'polite'});
    const quorum = h('div');
    const err = h('div');
    let last = null;
    const table = keyedTable({
      id: 'controllers',
      columns: [{title: 'ID'}, {title: 'Role'}, {title: 'Cluster address'}, {title: 'HTTP address'},
        {title: 'Match index', num: true}, {title: 'Lag', num: true}, {title: 'Reachable'}, {title: 'Last contact', num: true},
        {title: 'Actions'}],
      key: (c) => c.id,
      cells: (c) => [
        String(c.id),
        h('span', {}, pill(c.role), c.voter ? '' : ' (non-voting)'),
        h('span', {class: 'mono'}, c.address),
        c.http_address ? h('a', {href: `${location.protocol}//${c.http_address}/ui/#/controllers`}, c.http_address) : '–',
        fmtNum(c.match_index),
        fmtNum(c.lag),
        c.reachable ? pill('up', {label: 'yes'}) : pill('down', {label: 'no'}),
        c.last_contact_ms === undefined || c.last_contact_ms === null ? '–' : fmtMS(c.last_contact_ms),
        h('div', {class: 'actions'},
          gate(h('button', {type: 'button', 'data-fid': 'transfer', disabled: c.role === 'leader' || !c.voter,
            'aria-label': `Make controller ${c.id} the leader`, onclick: () => transfer(c)}, 'Make leader'), 'operator', 'write'),
          gate(h('button', {type: 'button', class: 'danger', 'data-fid': 'remove',
            'aria-label': `Remove controller ${c.id}`, onclick: () => remove(c)}, 'Remove'), 'operator', 'write')),
      ],
    });

    async function transfer(c) {
      replace(status, msg('note', `Asking controller ${c.id} to take over…`));
      try {
        const r = await post(`/v1/controllers/${enc(c.id)}/transfer-leader`);
        replace(status, msg('ok', `Controller ${r.leader_id} leads now.`));
      } catch (e) {
        replace(status, msg('error', `Transfer to ${c.id} failed: ${describe(e)}`));
      }
      refresh();
    }

    async function remove(c) {
      const q = (last && last.quorum) || {};
      const ok = await confirmDialog(`Remove controller ${c.id}?`, removalEffect(c, q), `Remove controller ${c.id}`);
      if (!ok) return;
      replace(status, msg('note', `Removing controller ${c.id}…`));
      try {
        const r = await del(`/v1/controllers/${enc(c.id)}`);
        replace(status, msg('ok', `Controller ${r.removed} removed. Stop its process and delete its data directory.`));
      } catch (e) {
        replace(status, msg('error', `Removing ${c.id} failed: ${describe(e)}`));
      }
      refresh();
    }

    const addId = h('input', {id: 'add-id', type: 'number', min: '1', required: true, size: 4});
    const addAddr = h('input', {id: 'add-addr', required: true, placeholder: 'host:port', spellcheck: 'false'});
    const addForm = h('form', {class: 'inline', onsubmit: async (e) => {
      e.preventDefault();
      replace(status, msg('note', `Adding controller ${addId.value}…`));
      try {
        const r = await post('/v1/controllers', {id: Number(addId.value), address: addAddr.value.trim()});
        replace(status, msg('ok', r.message || `Controller ${r.id} added as a learner.`));
        addForm.reset();
      } catch (err2) {
        replace(status, msg('error', `Adding failed: ${describe(err2)}`));
      }
      refresh();
    }},
    h('label', {for: 'add-id'}, 'Node id', addId),
    h('label', {for: 'add-addr'}, 'Cluster address', addAddr),
    gate(h('button', {type: 'submit'}, 'Add as learner'), 'operator', 'write'));

    replace(main, h('h1', {}, 'Controllers'), quorum, status, err, table.el,
      h('h2', {}, 'Add a controller'),
      h('p', {class: 'muted small'}, 'It joins as a learner; start its process with --join. The leader promotes it to voter once it has caught up.'),
      addForm);

    const refresh = ctx.every(2000, async () => {
      try {
        const r = await get('/v1/controllers');
        last = r;
        replace(err);
        const q = r.quorum || {};
        replace(quorum, h('div', {class: 'cards'}, h('section', {class: 'card'}, dl([
          ['Leader', h('span', {id: 'ctl-leader'}, String(r.leader_id))],
          ['Epoch (term)', fmtNum(r.term)],
          ['Quorum', h('span', {}, pill(q.healthy ? 'healthy' : 'unhealthy'),
            ` ${q.reachable} of ${q.voters} voters reachable, ${q.needed} needed; tolerates ${q.failure_tolerance} failure${q.failure_tolerance === 1 ? '' : 's'}`)],
        ]))));
        table.update(r.controllers || []);
      } catch (e) {
        replace(err, msg('error', `Could not list controllers: ${describe(e)}`));
      }
    });
  },
};
