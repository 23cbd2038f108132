// Keys: the key space by prefix, folder by folder ("/" separates levels),
// and one key's value, revisions and lease.
import {authHeaders, describe, get, keyPath} from '../api.js';
import {dl, fmtNum, h, keyedTable, msg, replace} from '../dom.js';

const LIMIT = 1000;

function go(prefix) {
  location.hash = `#/keys?prefix=${encodeURIComponent(prefix)}`;
}

// keyLease finds the lease a key was written with. GET /v1/kv does not
// return it, but the watch event of the key's last put does: read the
// watch history from that revision and stop at the put (or after 2 s).
async function keyLease(kv) {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), 2000);
  try {
    const res = await fetch(`/v1/watch/${keyPath(kv.key)}?from_revision=${kv.mod_revision}`,
      {headers: authHeaders(), signal: ctl.signal, cache: 'no-store'});
    if (res.status === 410) return 'unknown (the put is older than this controller\'s watch history)';
    if (!res.ok) return `unknown (watch answered HTTP ${res.status})`;
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    for (;;) {
      const {value, done} = await reader.read();
      if (done) return 'unknown';
      buf += value;
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        let ev;
        try {
          ev = JSON.parse(line);
        } catch {
          continue;
        }
        if (ev.type === 'put' && ev.key === kv.key && ev.mod_revision === kv.mod_revision) {
          return ev.lease ? String(ev.lease) : 'none';
        }
        if ((ev.mod_revision || 0) > kv.mod_revision || ev.type === 'error') return 'unknown';
      }
    }
  } catch {
    return 'unknown (no answer in time)';
  } finally {
    clearTimeout(timer);
    ctl.abort();
  }
}

export default {
  nav: 'keys',
  title: () => 'Keys',
  render(main, ctx) {
    const prefix = ctx.query.get('prefix') || '';
    const input = h('input', {id: 'key-prefix', value: prefix, size: 30, spellcheck: 'false', placeholder: '(all keys)'});
    const note = h('div');
    const detail = h('section', {id: 'key-detail', 'aria-live': 'polite'});
    const crumbs = h('nav', {class: 'crumbs', 'aria-label': 'Prefix'});
    const parts = prefix.split('/');
    crumbs.append(h('button', {type: 'button', onclick: () => go('')}, '(root)'));
    let acc = '';
    for (let i = 0; i < parts.length - 1; i++) {
      acc += `${parts[i]}/`;
      const p = acc;
      crumbs.append(' / ', h('button', {type: 'button', onclick: () => go(p)}, parts[i] || '(empty)'));
    }
    const folders = keyedTable({
      id: 'key-folders',
      columns: [{title: 'Folder'}, {title: 'Keys', num: true}],
      key: (f) => f.name,
      empty: 'No folders here.',
      cells: (f) => [h('a', {href: `#/keys?prefix=${encodeURIComponent(f.name)}`, class: 'mono'}, f.name), fmtNum(f.count)],
    });
    const keys = keyedTable({
      id: 'keys',
      columns: [{title: 'Key'}, {title: 'Value'}, {title: 'Created', num: true}, {title: 'Modified', num: true}, {title: 'Version', num: true}],
      key: (kv) => kv.key,
      empty: 'No keys directly under this prefix.',
      cells: (kv) => [
        h('button', {type: 'button', class: 'mono', 'data-fid': 'show', 'aria-label': `Show key ${kv.key}`,
          onclick: () => show(kv.key)}, kv.key.slice(prefix.length) || kv.key),
        h('span', {class: 'mono small'}, kv.value.length > 80 ? `${kv.value.slice(0, 80)}…` : kv.value),
        fmtNum(kv.create_revision), fmtNum(kv.mod_revision), fmtNum(kv.version),
      ],
    });

    async function show(key) {
      replace(detail, h('p', {class: 'muted'}, `Loading ${key}…`));
      try {
        const kv = await get(`/v1/kv/${keyPath(key)}`);
        const lease = h('span', {id: 'key-lease'}, 'looking up…');
        replace(detail, h('h2', {}, 'Key ', h('span', {class: 'mono'}, kv.key)), h('div', {class: 'card'}, dl([
          ['Created at revision', fmtNum(kv.create_revision)],
          ['Modified at revision', fmtNum(kv.mod_revision)],
          ['Version', fmtNum(kv.version)],
          ['Lease', lease],
          ['Store revision', fmtNum(kv.revision)],
        ]), h('h3', {}, 'Value'), h('pre', {class: 'block', id: 'key-value'}, kv.value)));
        lease.textContent = await keyLease(kv);
      } catch (e) {
        replace(detail, msg('error', `Could not read ${key}: ${describe(e)}`));
      }
    }

    replace(main, h('h1', {}, 'Keys'),
      h('form', {class: 'inline', onsubmit: (e) => {
        e.preventDefault();
        go(input.value);
      }}, h('label', {for: 'key-prefix'}, 'Prefix', input), h('button', {type: 'submit', class: 'primary'}, 'List')),
      crumbs, note,
      h('h2', {}, 'Folders'), folders.el,
      h('h2', {}, 'Keys'), keys.el,
      detail);

    ctx.every(2000, async () => {
      try {
        const r = await get(`/v1/kv/${keyPath(prefix)}?prefix=true&limit=${LIMIT}`);
        const kvs = r.kvs || [];
        const fs = new Map();
        const leaves = [];
        for (const kv of kvs) {
          const rest = kv.key.slice(prefix.length);
          const slash = rest.indexOf('/');
          if (slash >= 0) {
            const name = prefix + rest.slice(0, slash + 1);
            fs.set(name, (fs.get(name) || 0) + 1);
          } else {
            leaves.push(kv);
          }
        }
        replace(note, kvs.length >= LIMIT ? msg('note', `Showing the first ${LIMIT} keys under this prefix: narrow it to see the rest.`)
          : h('p', {class: 'muted small'}, `${fmtNum(kvs.length)} key${kvs.length === 1 ? '' : 's'} under this prefix at revision ${fmtNum(r.revision)}.`));
        folders.update([...fs].map(([name, count]) => ({name, count})));
        keys.update(leaves);
      } catch (e) {
        replace(note, msg('error', `Could not list keys: ${describe(e)}`));
      }
    });
  },
};
