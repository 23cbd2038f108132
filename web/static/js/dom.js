// DOM helpers. Everything the API returns is inserted as text (never as
// HTML), so a key, a job spec or a log line cannot inject markup.

// h builds an element: h('a', {href: '#/', class: 'x', onclick: fn}, 'text', child).
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') {
      el.addEventListener(k.slice(2), v);
    } else if (k === 'class') {
      el.className = v;
    } else if (k === 'text') {
      el.textContent = v;
    } else if (k === 'value' || k === 'checked') {
      el[k] = v;
    } else {
      el.setAttribute(k, v === true ? '' : String(v));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// replace swaps el's children for the given ones.
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
}

// pill shows a state as text with a colour class (the text carries the
// meaning; the colour only helps scanning).
export function pill(state, extra = {}) {
  const s = String(state ?? 'unknown');
  const {label, ...attrs} = extra;
  return h('span', {class: `pill state-${s.replace(/[^a-z0-9-]/gi, '')}`, ...attrs}, label ?? s);
}

export function fmtNum(n) {
  if (n === null || n === undefined || Number.isNaN(n)) return '–';
  return Number(n).toLocaleString('en-US');
}

// fmtMS renders a duration in milliseconds compactly ("412 ms", "3.2 s", "5 min").
export function fmtMS(ms) {
  if (ms === null || ms === undefined) return '–';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 3600000) return `${Math.round(ms / 60000)} min`;
  return `${(ms / 3600000).toFixed(1)} h`;
}

const pad2 = (n) => String(n).padStart(2, '0');

// fmtDate shows a time (RFC 3339 text, a Date or epoch ms) as local
// "YYYY-MM-DD HH:MM:SS": the browser's locale format (a US one reads
// 12/1/2026, 7:20:31 PM) is ambiguous to half the world and sorts badly.
// The zone is shown once, in the header (tzLabel).
export function fmtDate(s) {
  if (s === null || s === undefined || s === '') return '–';
  const t = new Date(s);
  if (Number.isNaN(t.getTime())) return String(s);
  return `${t.getFullYear()}-${pad2(t.getMonth() + 1)}-${pad2(t.getDate())} ` +
    `${pad2(t.getHours())}:${pad2(t.getMinutes())}:${pad2(t.getSeconds())}`;
}

// tzLabel names the local zone fmtDate's times are in, as a UTC offset
// ("UTC+01:00"), with its name when the browser knows it.
export function tzLabel(now = new Date()) {
  const off = -now.getTimezoneOffset();
  const abs = Math.abs(off);
  const utc = `UTC${off < 0 ? '−' : '+'}${pad2(Math.floor(abs / 60))}:${pad2(abs % 60)}`;
  let name = '';
  try {
    name = Intl.DateTimeFormat().resolvedOptions().timeZone || '';
  } catch {
    name = '';
  }
  return name && name !== 'UTC' ? `${utc}, ${name}` : utc;
}

// fmtTime shows an RFC 3339 time as local time (fmtDate) plus its age.
export function fmtTime(s) {
  if (!s) return '–';
  const t = new Date(s);
  if (Number.isNaN(t.getTime())) return String(s);
  const age = Date.now() - t.getTime();
  return `${fmtDate(t)} (${age >= 0 ? fmtMS(age) + ' ago' : 'in ' + fmtMS(-age)})`;
}

export function fmtCPU(m) {
  return m === null || m === undefined ? '–' : `${(m / 1000).toFixed(m % 1000 === 0 ? 0 : 2)} CPU`;
}

export function fmtMem(mb) {
  if (mb === null || mb === undefined) return '–';
  return mb >= 1024 ? `${(mb / 1024).toFixed(1)} GiB` : `${mb} MiB`;
}

export function msg(kind, text) {
  return h('div', {class: `msg ${kind}`, role: kind === 'error' ? 'alert' : 'status'}, text);
}

// dl renders [term, value] pairs as a description list.
export function dl(pairs) {
  return h('dl', {}, pairs.filter(Boolean).map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

export function card(title, ...children) {
  return h('section', {class: 'card'}, h('h2', {}, title), ...children);
}

// keyedTable renders rows keyed by id and, on update, rebuilds only rows
// whose data changed. Polling every two seconds must not steal focus from
// a keyboard user: if focus was inside a rebuilt row, it moves to the
// element with the same data-fid in the new row.
export function keyedTable({caption, columns, key, cells, empty = 'Nothing to show.', id}) {
  const tbody = h('tbody');
  const table = h('table', {id},
    caption ? h('caption', {}, caption) : null,
    h('thead', {}, h('tr', {}, columns.map((c) => h('th', {scope: 'col', class: c.num ? 'num' : c.cls, title: c.tip}, c.title)))),
    tbody);
  const el = h('div', {class: 'table-wrap'}, table);
  let rows = new Map();
  let emptyRow = null;
  function update(items) {
    const next = new Map();
    for (const it of items) {
      const k = String(key(it));
      const sig = JSON.stringify(it);
      let r = rows.get(k);
      if (!r || r.sig !== sig) {
        const tr = h('tr', {'data-key': k},
          cells(it).map((c, i) => h('td', {class: columns[i].num ? 'num' : columns[i].cls}, c)));
        if (r) swapKeepingFocus(r.tr, tr);
        r = {sig, tr};
      }
      next.set(k, r);
    }
    for (const [k, r] of rows) if (!next.has(k)) r.tr.remove();
    rows = next;
    // Insert or move only rows out of place: moving a node blurs it.
    let i = 0;
    for (const r of rows.values()) {
      if (tbody.children[i] !== r.tr) tbody.insertBefore(r.tr, tbody.children[i] || null);
      i++;
    }
    if (items.length === 0 && !emptyRow) {
      emptyRow = h('tr', {}, h('td', {colspan: columns.length, class: 'muted'}, empty));
      tbody.append(emptyRow);
    } else if (items.length > 0 && emptyRow) {
      emptyRow.remove();
      emptyRow = null;
    }
  }
  return {el, update};
}

function swapKeepingFocus(old, neu) {
  const a = document.activeElement;
  const fid = a && old.contains(a) ? a.getAttribute('data-fid') : null;
  old.replaceWith(neu);
  if (fid) neu.querySelector(`[data-fid="${CSS.escape(fid)}"]`)?.focus();
}

// confirmDialog asks before an action that changes the cluster; it
// resolves true only when the confirm button was chosen (Escape cancels).
export function confirmDialog(title, text, okLabel) {
  const d = document.getElementById('confirm');
  document.getElementById('confirm-title').textContent = title;
  document.getElementById('confirm-text').textContent = text;
  document.getElementById('confirm-ok').textContent = okLabel;
  const back = document.activeElement;
  return new Promise((resolve) => {
    d.addEventListener('close', () => {
      resolve(d.returnValue === 'ok');
      if (back && back.isConnected) back.focus();
    }, {once: true});
    d.returnValue = 'cancel';
    d.showModal();
    document.getElementById('confirm-cancel').focus();
  });
}

// setBanner shows (or, with text null, removes) one banner by id.
export function setBanner(id, kind, text) {
  const box = document.getElementById('banners');
  let b = box.querySelector(`[data-banner="${id}"]`);
  if (text === null || text === undefined) {
    b?.remove();
    return;
  }
  if (!b) {
    b = h('p', {'data-banner': id, id: `banner-${id}`});
    box.append(b);
  }
  b.className = `banner ${kind}`;
  if (b.textContent !== text) b.textContent = text;
}

export function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}
