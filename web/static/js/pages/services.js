// Services: every registered service (instances are keys under
// _corral/services/{name}/) plus corral-worker, the alive workers.
import {describe, enc, get} from '../api.js';
import {fmtNum, h, keyedTable, msg, replace} from '../dom.js';

const PREFIX = '_corral/services/';
const WORKERS = 'corral-worker';

export default {
  nav: 'services',
  title: () => 'Services',
  render(main, ctx) {
    const note = h('div');
    const table = keyedTable({
      id: 'services',
      columns: [{title: 'Service'}, {title: 'Instance'}, {title: 'Address'}, {title: 'Metadata'}, {title: 'Lease', num: true},
        {title: 'Registered at revision', num: true}],
      key: (i) => `${i.service}/${i.instance}`,
      empty: 'No service has instances.',
      cells: (i) => [
        h('span', {class: 'mono'}, i.service),
        i.service === WORKERS ? h('a', {href: `#/workers/${enc(i.instance)}`, class: 'mono'}, i.instance) : h('span', {class: 'mono'}, i.instance),
        h('span', {class: 'mono'}, i.address || '–'),
        Object.entries(i.metadata || {}).map(([k, v]) => `${k}=${v}`).join(', ') || '–',
        i.lease ? fmtNum(i.lease) : '–',
        i.mod_revision ? fmtNum(i.mod_revision) : '–',
      ],
    });
    replace(main, h('h1', {}, 'Services'),
      h('p', {class: 'muted'}, `An instance stays listed while its lease lives. ${WORKERS} lists the alive workers.`),
      note, table.el);
    ctx.every(2000, async () => {
      try {
        const r = await get(`/v1/kv/${PREFIX}?prefix=true&limit=1000`);
        const svc = new Set([WORKERS]);
        for (const kv of r.kvs || []) {
          const name = kv.key.slice(PREFIX.length).split('/')[0];
          if (name) svc.add(name);
        }
        const lists = await Promise.all([...svc].sort().map((s) => get(`/v1/services/${enc(s)}`).catch(() => null)));
        const rows = [];
        for (const l of lists) {
          if (!l) continue;
          for (const i of l.instances || []) rows.push({...i, service: l.service, worker: undefined});
        }
        replace(note);
        table.update(rows);
      } catch (e) {
        replace(note, msg('error', `Could not list services: ${describe(e)}`));
      }
    });
  },
};
