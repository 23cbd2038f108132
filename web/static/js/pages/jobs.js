// Jobs and allocations: list, job page, allocation page with its history
// and a live log viewer, and the actions submit, stop and restart.
import {APIError, authHeaders, can, del, describe, enc, gate, get, optional, post} from '../api.js';
import {confirmDialog, dl, fmtDate, fmtNum, fmtTime, h, keyedTable, msg, pill, replace} from '../dom.js';

const NO_JOBS = 'This controller has no jobs API yet (GET /v1/jobs is not a route here).';

// example is a job spec to start from. Its name is new every time: a
// spec submitted as it is must never replace a job the user already runs
// (the README's is "hello"), since a submission with an existing name
// updates that job.
function example() {
  const suffix = Math.random().toString(36).slice(2, 8).padEnd(6, '0');
  return `{
  "name": "example-${suffix}",
  "type": "service",
  "count": 2,
  "task": {
    "command": "/bin/sh",
    "args": ["-c", "echo hello from corral; sleep 3600"],
    "resources": {"cpu_millis": 100, "memory_mb": 64}
  }
}`;
}

const PLACEHOLDER = `{
  "name": "my-job",
  "type": "service",
  "count": 1,
  "task": {"command": "/path/to/program", "args": []}
}

Or YAML. "Load example" fills in a complete spec.`;

// allocTable lists allocations; withJob adds the job column.
export function allocTable(id, withJob = true) {
  const columns = [{title: 'Allocation'}];
  if (withJob) columns.push({title: 'Job'});
  columns.push({title: 'Worker'}, {title: 'State'}, {title: 'Desired'}, {title: 'Epoch', num: true},
    {title: 'Restarts', num: true}, {title: 'Exit', num: true}, {title: 'Started'}, {title: 'Message'});
  return keyedTable({
    id,
    columns,
    key: (a) => a.id,
    empty: 'No allocations.',
    cells: (a) => {
      const c = [h('a', {href: `#/allocations/${enc(a.id)}`, class: 'mono'}, a.id)];
      if (withJob) c.push(h('a', {href: `#/jobs/${enc(a.job)}`}, a.job));
      c.push(
        a.worker ? h('a', {href: `#/workers/${enc(a.worker)}`, class: 'mono'}, a.worker) : '–',
        pill(a.state), a.desired || '–', fmtNum(a.epoch), fmtNum(a.restarts),
        a.exit_code === null || a.exit_code === undefined ? '–' : String(a.exit_code),
        fmtDate(a.started_at),
        a.message || '');
      return c;
    },
  });
}

function counts(c) {
  const ks = Object.keys(c || {}).filter((k) => c[k]).sort();
  return ks.length ? h('div', {class: 'labels'}, ks.map((k) => pill(k, {label: `${k} ${c[k]}`}))) : '–';
}

// lineOf finds the line of the textarea that most likely holds a field
// ("task.resources.cpu_millis" → the line with "cpu_millis"), so a
// validation error can point at it.
function lineOf(text, field) {
  const last = String(field).split('.').pop().replace(/\[\d+\]$/, '');
  if (!last || last.startsWith('(')) return 0;
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) if (lines[i].includes(`"${last}"`) || lines[i].trimStart().startsWith(`${last}:`)) return i + 1;
  return 0;
}

function submitForm(onDone) {
  // Empty with a placeholder: a pre-filled spec was submitted by a
  // single click, replacing whatever job had its name.
  const area = h('textarea', {id: 'job-spec', rows: 14, spellcheck: 'false', placeholder: PLACEHOLDER,
    'aria-describedby': 'job-spec-help job-errors'});
  const errors = h('div', {id: 'job-errors', 'aria-live': 'polite'});
  const form = h('form', {id: 'job-submit', onsubmit: async (e) => {
    e.preventDefault();
    const text = area.value;
    if (!text.trim()) {
      replace(errors, msg('error', 'The job spec is empty: write one, or press "Load example" and edit it.'));
      area.focus();
      return;
    }
    replace(errors, msg('note', 'Submitting…'));
    try {
      const r = await post('/v1/jobs', text, {contentType: text.trim().startsWith('{') ? 'application/json' : 'application/yaml'});
      const name = r.job && r.job.name;
      replace(errors, msg('ok', r.changed ? `Job ${name} submitted (version ${r.job.version}).` : `Job ${name} is unchanged.`));
      onDone(name);
    } catch (err) {
      if (err instanceof APIError && err.fields && err.fields.length) {
        replace(errors, h('div', {class: 'msg error', role: 'alert'}, `The job spec is invalid: ${err.message}`,
          h('ul', {class: 'fields'}, err.fields.map((f) => {
            const line = lineOf(text, f.field);
            return h('li', {}, h('code', {}, f.field), `: ${f.problem}`, line ? ` (line ${line})` : '');
          }))));
        area.setAttribute('aria-invalid', 'true');
      } else {
        replace(errors, msg('error', `Submit failed: ${describe(err)}`));
      }
    }
  }},
  h('label', {for: 'job-spec'}, 'Job spec (JSON or YAML)'),
  h('p', {id: 'job-spec-help', class: 'muted small'}, 'Submitting a spec with the name of an existing job updates it.'),
  area, errors,
  h('div', {class: 'actions'}, h('button', {type: 'submit', class: 'primary'}, 'Submit job'),
    h('button', {type: 'button', id: 'job-example', onclick: async () => {
      if (area.value.trim() && !await confirmDialog('Replace the spec?',
        'The spec in the form is replaced by an example job with a new name.', 'Replace')) return;
      area.value = example();
      area.removeAttribute('aria-invalid');
      replace(errors);
      area.focus();
    }}, 'Load example')));
  area.addEventListener('input', () => area.removeAttribute('aria-invalid'));
  return form;
}

async function stopJob(name, status, done) {
  const ok = await confirmDialog(`Stop job ${name}?`,
    `Every allocation of ${name} is stopped (SIGTERM, then SIGKILL after its kill_timeout). The job stays listed, ` +
    'as stopping and then stopped, with its spec and history; submit its spec again to start it anew.', `Stop ${name}`);
  if (!ok) return;
  try {
    await del(`/v1/jobs/${enc(name)}`);
    replace(status, msg('ok', `Job ${name} stopped.`));
  } catch (e) {
    replace(status, msg('error', `Stopping ${name} failed: ${describe(e)}`));
  }
  done();
}

export const jobList = {
  nav: 'jobs',
  title: () => 'Jobs',
  render(main, ctx) {
    const status = h('div', {'aria-live': 'polite'});
    const note = h('div');
    const table = keyedTable({
      id: 'jobs',
      columns: [{title: 'Name'}, {title: 'Type'}, {title: 'Status'}, {title: 'Version', num: true}, {title: 'Count', num: true},
        {title: 'Allocations'}, {title: 'Unplaced', num: true}, {title: 'Reason'}, {title: 'Actions'}],
      key: (j) => j.name,
      empty: 'No jobs.',
      cells: (j) => [
        h('a', {href: `#/jobs/${enc(j.name)}`}, j.name), j.type, pill(j.status), fmtNum(j.version), fmtNum(j.count),
        counts(j.allocations), fmtNum(j.unplaced), j.reason || '',
        gate(h('button', {type: 'button', class: 'danger', 'data-fid': 'stop', 'aria-label': `Stop job ${j.name}`,
          onclick: () => stopJob(j.name, status, () => refresh())}, 'Stop'), 'jobs', 'write', j.name),
      ],
    });
    replace(main, h('h1', {}, 'Jobs'), note, status, table.el,
      ...(can('jobs', 'write') ? [h('h2', {}, 'Submit a job'), submitForm((name) => {
        if (name) location.hash = `#/jobs/${enc(name)}`;
      })] : [h('p', {class: 'muted small', id: 'job-submit-denied'}, 'Your token cannot submit jobs (it lacks jobs:write).')]));
    const refresh = ctx.every(2000, async () => {
      try {
        const r = await optional('/v1/jobs');
        if (r === null) {
          replace(note, msg('note', NO_JOBS));
          return;
        }
        replace(note);
        table.update(r.jobs || []);
      } catch (e) {
        replace(note, msg('error', `Could not list jobs: ${describe(e)}`));
      }
    });
  },
};

export const jobPage = {
  nav: 'jobs',
  title: (p) => `Job ${p[0]}`,
  render(main, ctx) {
    const name = ctx.params[0];
    const status = h('div', {'aria-live': 'polite'});
    const info = h('div');
    const spec = h('pre', {class: 'block', id: 'job-spec-view'});
    const events = h('div');
    const allocs = allocTable('job-allocations', false);
    replace(main,
      h('p', {}, h('a', {href: '#/jobs'}, '← Jobs')),
      h('h1', {}, 'Job ', name),
      h('div', {class: 'actions'}, gate(h('button', {type: 'button', class: 'danger', id: 'job-stop',
        onclick: () => stopJob(name, status, () => refresh())}, 'Stop job'), 'jobs', 'write', name)),
      status, info,
      h('h2', {}, 'Allocations'), allocs.el,
      h('h2', {}, 'Events'), events,
      h('h2', {}, 'Spec'), spec);
    let specText = null;
    const refresh = ctx.every(2000, async () => {
      try {
        const r = await optional(`/v1/jobs/${enc(name)}`);
        if (r === null) {
          replace(info, msg('note', NO_JOBS));
          return;
        }
        const j = r.job;
        replace(info, h('div', {class: 'cards'}, h('section', {class: 'card'}, dl([
          ['Status', pill(j.status, {id: 'job-status'})],
          ['Type', j.type],
          ['Version', fmtNum(j.version)],
          ['Count', fmtNum(j.count ?? (j.spec && j.spec.count))],
          ['Unplaced', fmtNum(j.unplaced)],
          j.reason ? ['Pending because', j.reason] : null,
        ]))));
        allocs.update(r.allocations || []);
        const evs = (j.events || []).slice().reverse();
        replace(events, evs.length ? h('ul', {}, evs.map((e) => h('li', {}, h('span', {class: 'muted'}, fmtTime(e.at)), ' ', e.message)))
          : h('p', {class: 'muted'}, 'No events.'));
        const t = JSON.stringify(j.spec, null, 2);
        if (t !== specText) {
          specText = t;
          spec.textContent = t;
        }
      } catch (e) {
        replace(info, msg('error', `Could not load job ${name}: ${describe(e)}`));
      }
    });
  },
};

// logViewer streams GET /v1/allocations/{id}/logs into a <pre>; it keeps
// the last MAX_LOG characters so a chatty task cannot exhaust the tab.
const MAX_LOG = 512 * 1024;

function logViewer(id, ctx) {
  const pre = h('pre', {class: 'block log', id: 'alloc-log', tabindex: '0', 'aria-label': 'Task output'});
  const state = h('span', {class: 'muted small', 'aria-live': 'polite'});
  const stream = h('select', {id: 'log-stream'}, h('option', {value: 'stdout'}, 'stdout'), h('option', {value: 'stderr'}, 'stderr'));
  const tail = h('input', {id: 'log-tail', type: 'number', min: '0', value: '200', size: 5});
  const follow = h('input', {id: 'log-follow', type: 'checkbox', checked: true});
  let ctl = null;
  const stop = () => {
    if (ctl) ctl.abort();
    ctl = null;
  };
  ctx.onLeave(stop);
  const open = async () => {
    stop();
    const mine = new AbortController();
    ctl = mine;
    pre.textContent = '';
    state.textContent = 'connecting…';
    const q = new URLSearchParams({stream: stream.value, tail: String(Math.max(0, Number(tail.value) || 0)), follow: String(follow.checked)});
    try {
      const res = await fetch(`/v1/allocations/${enc(id)}/logs?${q}`, {headers: authHeaders(), signal: mine.signal, cache: 'no-store'});
      if (!res.ok) {
        let b = null;
        try {
          b = await res.json();
        } catch {
          b = null;
        }
        throw new APIError(res.status, b, 'logs');
      }
      state.textContent = follow.checked ? 'following' : 'loaded';
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const {value, done} = await reader.read();
        if (done) break;
        const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 8;
        let t = pre.textContent + value;
        if (t.length > MAX_LOG) t = t.slice(t.length - MAX_LOG);
        pre.textContent = t;
        if (atEnd) pre.scrollTop = pre.scrollHeight;
      }
      state.textContent = 'end of log';
    } catch (e) {
      if (!mine.signal.aborted) state.textContent = `stopped: ${describe(e)}`;
    }
  };
  const form = h('form', {class: 'inline', id: 'log-form', onsubmit: (e) => {
    e.preventDefault();
    open();
  }},
  h('label', {for: 'log-stream'}, 'Stream', stream),
  h('label', {for: 'log-tail'}, 'Last lines', tail),
  h('label', {for: 'log-follow'}, 'Follow', follow),
  h('button', {type: 'submit', class: 'primary'}, 'Show'),
  h('button', {type: 'button', onclick: () => {
    stop();
    state.textContent = 'stopped';
  }}, 'Stop following'),
  state);
  return {el: h('div', {}, form, pre), open};
}

export const allocationPage = {
  nav: 'jobs',
  title: (p) => `Allocation ${p[0]}`,
  render(main, ctx) {
    const id = ctx.params[0];
    const status = h('div', {'aria-live': 'polite'});
    const info = h('div');
    const back = h('p', {}, h('a', {href: '#/jobs'}, '← Jobs'));
    const history = keyedTable({
      id: 'alloc-history',
      columns: [{title: 'When'}, {title: 'State'}, {title: 'Message'}],
      key: (e) => `${e.at}|${e.state}|${e.message || ''}`,
      empty: 'No history.',
      cells: (e) => [fmtTime(e.at), pill(e.state), e.message || ''],
    });
    const logs = logViewer(id, ctx);
    replace(main, back, h('h1', {}, 'Allocation ', h('span', {class: 'mono'}, id)),
      h('div', {class: 'actions'}, h('button', {type: 'button', id: 'alloc-restart', onclick: async () => {
        const ok = await confirmDialog(`Restart allocation ${id}?`, 'Its task is stopped and started again on the same worker.', 'Restart');
        if (!ok) return;
        try {
          await post(`/v1/allocations/${enc(id)}/restart`);
          replace(status, msg('ok', `Allocation ${id} is restarting.`));
        } catch (e) {
          replace(status, msg('error', `Restart failed: ${describe(e)}`));
        }
      }}, 'Restart')),
      status, info, h('h2', {}, 'Logs'), logs.el, h('h2', {}, 'State history'), history.el);
    let first = true;
    ctx.every(2000, async () => {
      try {
        const r = await optional(`/v1/allocations/${enc(id)}`);
        if (r === null) {
          replace(info, msg('note', NO_JOBS));
          return;
        }
        const a = r.allocation;
        const restart = document.getElementById('alloc-restart');
        if (restart) gate(restart, 'jobs', 'write', a.job);
        replace(back, h('a', {href: `#/jobs/${enc(a.job)}`}, `← Job ${a.job}`));
        replace(info, h('div', {class: 'cards'}, h('section', {class: 'card'}, dl([
          ['Job', h('a', {href: `#/jobs/${enc(a.job)}`}, a.job)],
          ['Worker', a.worker ? h('a', {href: `#/workers/${enc(a.worker)}`, class: 'mono'}, a.worker) : '–'],
          ['State', pill(a.state, {id: 'alloc-state'})],
          ['Desired', a.desired || '–'],
          ['Epoch', fmtNum(a.epoch)],
          ['Restarts', fmtNum(a.restarts)],
          ['Exit code', a.exit_code === null || a.exit_code === undefined ? '–' : String(a.exit_code)],
          ['Started', fmtTime(a.started_at)],
          ['Ended', fmtTime(a.ended_at)],
          a.message ? ['Message', a.message] : null,
        ]))));
        history.update((a.history || []).slice().reverse());
        if (first) {
          first = false;
          logs.open();
        }
      } catch (e) {
        replace(info, msg('error', `Could not load allocation ${id}: ${describe(e)}`));
      }
    });
  },
};
