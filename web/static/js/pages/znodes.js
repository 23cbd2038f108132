// ZooKeeper: the znode tree the ZooKeeper port serves (issue 20), one node
// at a time (GET /v1/znodes): its path as links, its stat, ACL and data,
// and its children a page at a time. Read-only: znodes are written through
// the ZooKeeper port. The API shows data and children only when the node's
// ACL lets world:anyone read; the page then says why they are missing.
import {APIError, describe, enc, get} from '../api.js';
import {dl, fmtDate, fmtMS, fmtNum, h, keyedTable, msg, replace} from '../dom.js';

// LIMIT is a page of children; past MAX_REFRESH shown (the API's largest
// page) the children are no longer refreshed.
const LIMIT = 1000;
const MAX_REFRESH = 10000;
// PREVIEW is how much binary data is shown.
const PREVIEW = 1024;

const href = (p) => `#/znodes?path=${encodeURIComponent(p)}`;
const childPath = (p, name) => (p === '/' ? `/${name}` : `${p}/${name}`);
const plural = (n, one, many) => `${fmtNum(n)} ${n === 1 ? one : many}`;

// zxid shows a zxid as ZooKeeper does (hex) and in decimal.
function zxid(n) {
  return h('span', {class: 'mono'}, `0x${Number(n).toString(16)}`, h('span', {class: 'muted'}, ` (${fmtNum(n)})`));
}

function when(ms) {
  return h('span', {title: `${ms} ms since the epoch`}, ms ? fmtDate(ms) : '– (0)');
}

// say shows one message in el, leaving it alone when it already shows it
// (a poll must not re-announce the same alert every two seconds).
function say(el, kind, text) {
  if (el.dataset.said === `${kind}:${text}`) return;
  el.dataset.said = `${kind}:${text}`;
  replace(el, msg(kind, text));
}

function unsay(el) {
  delete el.dataset.said;
  replace(el);
}

// crumbs links every ancestor of path, and path itself.
function crumbs(path) {
  const nav = h('nav', {class: 'crumbs', 'aria-label': 'Znode path'});
  const segs = path.split('/').filter((s) => s);
  const link = (p, label, last) => h('a', {href: href(p), class: 'mono', 'aria-current': last ? 'location' : null}, label);
  nav.append(link('/', '(root)', segs.length === 0));
  let acc = '';
  segs.forEach((s, i) => {
    acc += `/${s}`;
    nav.append(' / ', link(acc, s, i === segs.length - 1));
  });
  return nav;
}

function mode(n) {
  if (n.stat.ephemeral_owner !== '0x0') {
    let lease = '';
    try {
      lease = `, lease ${BigInt(n.stat.ephemeral_owner).toString()}`;
    } catch {
      lease = '';
    }
    return `ephemeral (session ${n.stat.ephemeral_owner}${lease})`;
  }
  if (n.container) return 'container';
  if (n.ttl_ms) return `persistent with TTL ${fmtMS(n.ttl_ms)}`;
  return 'persistent';
}

function statList(n) {
  const s = n.stat;
  return dl([
    ['Mode', mode(n)],
    ['Created', when(s.ctime)],
    ['Modified', when(s.mtime)],
    ['Created at zxid (czxid)', zxid(s.czxid)],
    ['Modified at zxid (mzxid)', zxid(s.mzxid)],
    ['Children changed at zxid (pzxid)', zxid(s.pzxid)],
    ['Data version', fmtNum(s.version)],
    ['Children version (cversion)', fmtNum(s.cversion)],
    ['ACL version (aversion)', fmtNum(s.aversion)],
    ['Ephemeral owner', h('span', {class: 'mono'}, s.ephemeral_owner)],
    ['Data length', plural(s.data_length, 'byte', 'bytes')],
    ['Children', fmtNum(s.num_children)],
  ]);
}

const PERM_NAMES = {c: 'create', d: 'delete', r: 'read', w: 'write', a: 'admin'};

function permText(a) {
  if (!a.perms) return h('span', {class: 'muted'}, 'none');
  return [h('span', {class: 'mono'}, a.perms), h('span', {class: 'muted small'},
    ` (${[...a.perms].map((c) => PERM_NAMES[c] || c).join(', ')})`)];
}

// hexDump writes bytes as offset, hex and ASCII columns, 16 bytes a line.
function hexDump(bytes) {
  const lines = [];
  for (let off = 0; off < bytes.length; off += 16) {
    const row = bytes.subarray(off, off + 16);
    const hex = Array.from(row, (b) => b.toString(16).padStart(2, '0')).join(' ');
    const ascii = Array.from(row, (b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.')).join('');
    lines.push(`${off.toString(16).padStart(8, '0')}  ${hex.padEnd(47)}  ${ascii}`);
  }
  return lines.join('\n');
}

// dataView shows the node's data: text as text, anything else as a hex
// dump (and base64) of its first PREVIEW bytes.
function dataView(n) {
  if (n.data_hidden) return msg('note', `Data and children not shown: ${n.data_hidden}.`);
  const len = n.stat.data_length;
  if (!len) return h('p', {class: 'muted'}, 'No data.');
  if (n.data_text !== undefined) {
    return [h('p', {class: 'muted small'}, `${plural(len, 'byte', 'bytes')} of UTF-8 text.`),
      h('pre', {class: 'block', id: 'znode-data', tabindex: '0', 'aria-label': 'Data as text'}, n.data_text)];
  }
  // 1,368 base64 characters are 1,026 bytes: enough for the preview.
  const head = n.data.slice(0, Math.ceil(PREVIEW / 3) * 4);
  let bytes;
  try {
    bytes = Uint8Array.from(atob(head), (c) => c.charCodeAt(0)).subarray(0, PREVIEW);
  } catch {
    return msg('error', 'The data could not be decoded from base64.');
  }
  const shown = len > PREVIEW ? `the first ${fmtNum(PREVIEW)}` : 'all of them';
  return [h('p', {class: 'muted small'}, `${plural(len, 'byte', 'bytes')} of binary data (not UTF-8 text); ${shown} in hex:`),
    h('pre', {class: 'block', id: 'znode-data', tabindex: '0', 'aria-label': 'Data as hex'}, hexDump(bytes)),
    h('details', {}, h('summary', {}, `The same ${fmtNum(bytes.length)} bytes in base64`),
      h('pre', {class: 'block', 'aria-label': 'Data as base64'}, btoa(String.fromCharCode(...bytes))))];
}

export default {
  nav: 'znodes',
  title: () => 'ZooKeeper',
  render(main, ctx) {
    const path = ctx.query.get('path') || '/';
    const input = h('input', {id: 'znode-path', value: path, size: 40, spellcheck: 'false', placeholder: '/'});
    const status = h('div', {id: 'znode-status', 'aria-live': 'polite'});
    const stat = h('div', {class: 'card', id: 'znode-stat'}, h('p', {class: 'muted'}, 'Loading…'));
    const data = h('div', {id: 'znode-data-box'});
    const kidsNote = h('p', {class: 'muted small', id: 'znode-children-note', 'aria-live': 'polite'});
    const node = h('section', {id: 'znode', 'aria-labelledby': 'znode-title'});
    const acl = keyedTable({
      id: 'znode-acl',
      caption: 'Who may do what on this znode (ZooKeeper ACL)',
      columns: [{title: 'Scheme'}, {title: 'Id'}, {title: 'Permissions'}, {title: 'Bits', num: true}],
      key: (a) => a.i,
      empty: 'No ACL entries.',
      cells: (a) => [h('span', {class: 'mono'}, a.scheme), h('span', {class: 'mono'}, a.id), permText(a), String(a.perms_bits)],
    });
    const kids = keyedTable({
      id: 'znode-children',
      columns: [{title: 'Name'}],
      key: (name) => name,
      empty: 'No children.',
      cells: (name) => [h('a', {href: href(childPath(path, name)), class: 'mono', 'data-fid': 'open'}, name)],
    });
    const more = h('button', {type: 'button', id: 'znode-more', hidden: true, onclick: () => loadMore()}, 'Show more children');

    // children are the names shown; next is where the next page starts.
    let children = [];
    let next = '';
    let total = 0;
    let gen = 0; // bumped by loadMore: a poll begun before must not shrink the list
    let nodeSig = '';
    let dataSig = '';
    let hidden = false;

    function showChildren(hasMore) {
      kids.update(children);
      kids.el.hidden = hidden;
      more.hidden = hidden || !hasMore;
      kidsNote.textContent = hidden && total ? `${plural(total, 'child', 'children')}; their names are not shown (see Data).`
        : hasMore ? `Showing ${fmtNum(children.length)} of ${plural(total, 'child', 'children')}.`
          : `${plural(total, 'child', 'children')}.`;
    }

    function showNode(n) {
      const sig = JSON.stringify({...n, children: undefined, more: undefined, next: undefined, data: undefined, data_text: undefined});
      if (sig !== nodeSig) {
        nodeSig = sig;
        replace(stat, statList(n));
        acl.update((n.acl || []).map((a, i) => ({...a, i})));
      }
      const dsig = `${n.stat.mzxid}/${n.data_hidden || ''}`;
      if (dsig !== dataSig) {
        dataSig = dsig;
        replace(data, dataView(n));
      }
      hidden = Boolean(n.data_hidden);
      total = n.stat.num_children;
    }

    const query = (limit, after) => `/v1/znodes?path=${enc(path)}&limit=${limit}${after ? `&after=${enc(after)}` : ''}`;

    async function loadMore() {
      if (!next) return;
      gen++;
      more.disabled = true;
      say(status, 'note', `Loading children after ${next}…`);
      try {
        const n = await get(query(LIMIT, next), {signal: ctx.signal});
        showNode(n);
        const page = n.children || [];
        children = children.concat(page);
        next = n.next || '';
        showChildren(Boolean(n.more));
        unsay(status);
        // Keyboard users go on from the first new child (the button may
        // have just been hidden).
        if (page.length) kids.el.querySelector(`tr[data-key="${CSS.escape(page[0])}"] a`)?.focus();
      } catch (e) {
        if (!ctx.signal.aborted) say(status, 'error', `Could not load more children: ${describe(e)}`);
      } finally {
        more.disabled = false;
      }
    }

    // gone shows why there is no node to show (absent, or a bad path).
    function gone(e) {
      nodeSig = dataSig = '';
      children = [];
      next = '';
      unsay(status);
      const absent = e.code === 'znode_not_found';
      say(node, absent ? 'note' : 'error', absent ? `No znode ${path}: it was never created, or it was deleted.` : describe(e));
    }

    replace(node, h('h2', {id: 'znode-title'}, 'Znode ', h('span', {class: 'mono'}, path)),
      h('h3', {}, 'Stat'), stat,
      h('h3', {}, 'ACL'), acl.el,
      h('h3', {}, 'Data'), data,
      h('h3', {}, 'Children'), kidsNote, kids.el, h('div', {class: 'actions'}, more));
    const page = [...node.childNodes];

    replace(main, h('h1', {}, 'ZooKeeper'),
      h('p', {class: 'muted'}, 'The znode tree that ZooKeeper clients see on the ZooKeeper port, read-only. ' +
        'Data and children are shown only for znodes whose ACL lets anyone (world:anyone) read them.'),
      h('form', {class: 'inline', onsubmit: (e) => {
        e.preventDefault();
        location.hash = href(input.value.trim() || '/');
      }}, h('label', {for: 'znode-path'}, 'Path', input), h('button', {type: 'submit', class: 'primary'}, 'Show')),
      crumbs(path), status, node);

    ctx.every(2000, async () => {
      const mine = gen;
      // Refresh every child shown, up to the API's largest page.
      const want = Math.min(Math.max(LIMIT, children.length), MAX_REFRESH);
      try {
        const n = await get(query(want), {signal: ctx.signal});
        if (node.firstChild !== page[0]) { // back from a 404
          unsay(node);
          replace(node, ...page);
        }
        showNode(n);
        // Not if a page of children came meanwhile (loadMore): this
        // answer would shorten the list.
        if (mine === gen && children.length <= want) {
          children = n.children || [];
          next = n.next || '';
          showChildren(Boolean(n.more));
        } else {
          showChildren(Boolean(next));
        }
        unsay(status);
      } catch (e) {
        if (ctx.signal.aborted) return;
        if (e instanceof APIError && (e.code === 'znode_not_found' || e.status === 400)) gone(e);
        else say(status, 'error', `Could not read ${path}: ${describe(e)}`);
      }
    });
  },
};
