// Overview: the cluster at a glance, updated by every summary event.
import {chart} from '../chart.js';
import {card, dl, fmtDate, fmtMS, fmtNum, h, keyedTable, pill, replace} from '../dom.js';
import {leaderChanges, series} from '../history.js';

const WORKER_STATES = ['alive', 'suspect', 'fenced', 'draining', 'left'];

export default {
  nav: 'overview',
  title: () => 'Overview',
  render(main, ctx) {
    const clusterBox = h('div');
    const leaderBox = h('div');
    const quorumBox = h('div');
    const changesBox = h('div');
    const workersBox = h('div');
    const allocBox = h('div', {}, h('span', {class: 'muted'}, 'Loading…'));
    const charts = [
      chart('Writes/s (raft entries committed)', series.writes, (v) => v.toFixed(v < 10 ? 1 : 0), 'chart-writes'),
      chart('Heartbeat handling, ms (leader)', series.heartbeat, (v) => `${v.toFixed(2)} ms`, 'chart-heartbeat'),
      chart('Allocations running', series.running, (v) => fmtNum(v), 'chart-running'),
    ];
    ctx.onLeave(() => charts.forEach((c) => c.stop()));
    const rttNote = h('p', {class: 'muted small'});
    const ctrlTable = keyedTable({
      id: 'ov-controllers',
      caption: 'Each controller as it reports itself (asked by this controller every second).',
      columns: [{title: 'ID'}, {title: 'HTTP address'}, {title: 'State'}, {title: 'Role'}, {title: 'Sees leader', num: true},
        {title: 'Term', num: true}, {title: 'Commit', num: true}, {title: 'Applied', num: true}, {title: 'Lag', num: true}],
      key: (p) => p.id,
      cells: (p) => [
        String(p.id),
        p.http_address ? h('a', {href: `${location.protocol}//${p.http_address}/ui/`}, p.http_address) : '–',
        // The error's last part ("connection refused") is what matters;
        // the whole text is in the tooltip.
        p.up ? pill('up') : h('span', {title: p.error || ''}, pill('down'), ' ',
          h('span', {class: 'muted small'}, (p.error || '').split(': ').pop())),
        p.role,
        p.up ? (p.leader_id ? String(p.leader_id) : 'none') : '–',
        p.up ? fmtNum(p.term) : '–',
        p.up ? fmtNum(p.commit_index) : '–',
        p.up ? fmtNum(p.applied_index) : '–',
        p.up ? fmtNum(p.lag) : '–',
      ],
    });
    replace(main,
      h('h1', {}, 'Overview'),
      h('div', {class: 'cards'},
        card('Cluster', clusterBox), card('Active controller', leaderBox), card('Quorum', quorumBox),
        card('Leader changes (last hour)', changesBox), card('Workers', workersBox), card('Allocations', allocBox)),
      h('h2', {}, 'Live'),
      h('div', {class: 'charts'}, charts.map((c) => c.el)),
      rttNote,
      h('h2', {}, 'Controllers'),
      ctrlTable.el);

    ctx.onSummary((s) => {
      const c = s.cluster;
      replace(clusterBox, dl([
        ['ID', h('span', {class: 'mono', id: 'ov-cluster-id'}, c.cluster_id || '(not known yet)')],
        ['Answered by', `controller ${s.node_id}`],
        ['Revision', fmtNum(s.counts.revision)],
        ['Keys', fmtNum(s.counts.keys)],
        ['Leases', fmtNum(s.counts.leases)],
        ['Watchers here', fmtNum(s.counts.watchers)],
      ]));
      replace(leaderBox,
        h('div', {class: 'big'}, s.leader_id ? h('span', {}, 'controller ', h('span', {id: 'ov-leader'}, String(s.leader_id)))
          : h('span', {id: 'ov-leader', 'data-none': ''}, 'none')),
        dl([['Epoch (raft term)', h('span', {id: 'ov-term'}, fmtNum(s.term))]]));
      const q = c.quorum || {};
      replace(quorumBox,
        h('div', {}, pill(q.healthy ? 'healthy' : 'unhealthy', {id: 'ov-quorum'})),
        dl([
          ['Voters', fmtNum(q.voters)],
          ['Learners', fmtNum(q.learners)],
          ['Reachable', `${fmtNum(q.reachable)} (${fmtNum(q.needed)} needed)`],
          ['Tolerates', `${fmtNum(q.failure_tolerance)} failure${q.failure_tolerance === 1 ? '' : 's'}`],
        ]));
      // The controller's own record of the last hour (it keeps it from
      // its start); the page's record covers a controller that restarted.
      const server = (s.leader_changes || []).map((e) => ({at: e.at_ms, from: e.from || 'none', to: e.to, term: e.term}));
      const log = server.length ? server : leaderChanges();
      const metric = (s.peers || []).filter((p) => p.up && p.figures)
        .map((p) => `${p.id}: ${fmtNum(p.figures.corral_raft_leader_changes_total || 0)}`).join(', ');
      replace(changesBox,
        h('div', {class: 'big', id: 'ov-changes'}, String(log.length)),
        h('div', {class: 'muted small'}, server.length ? `seen by controller ${s.node_id}` : 'seen by this page'),
        log.length ? h('ul', {class: 'small'}, log.slice(-4).reverse().map((e) =>
          h('li', {}, `${fmtDate(e.at)}: ${e.from} → ${e.to} (term ${e.term})`))) : null,
        metric ? h('div', {class: 'muted small'}, `Since each process started (corral_raft_leader_changes_total): ${metric}`) : null);
      const counts = s.allocations || {};
      const states = Object.keys(counts).sort();
      series.running.push(Date.now(), counts.running || 0);
      replace(allocBox,
        h('div', {class: 'big'}, fmtNum(states.reduce((n, k) => n + counts[k], 0))),
        states.length ? dl(states.map((k) => [pill(k), h('span', {id: `ov-alloc-${k}`}, fmtNum(counts[k]))]))
          : h('p', {class: 'muted'}, 'No allocations.'));
      const w = s.workers || {};
      const total = WORKER_STATES.reduce((n, k) => n + (w[k] || 0), 0);
      replace(workersBox,
        h('div', {class: 'big'}, fmtNum(total)),
        dl(WORKER_STATES.map((k) => [pill(k), h('span', {id: `ov-workers-${k}`}, fmtNum(w[k] || 0))])));
      const rtts = (s.peers || []).filter((p) => p.up && p.figures && p.figures.corral_transport_peer_rtt_seconds_max)
        .map((p) => p.figures.corral_transport_peer_rtt_seconds_max * 1000);
      rttNote.textContent = 'Heartbeat handling is the leader\'s time from decoding a heartbeat to answering it; ' +
        'the network part of the round trip is about the controllers\' QUIC round trip' +
        (rtts.length ? ` (now at most ${fmtMS(Math.max(...rtts))})` : '') +
        '. Each worker measures its own round trip: corral_worker_heartbeat_rtt_seconds on its /metrics.';
      const maxCommit = Math.max(0, ...(s.peers || []).filter((p) => p.up).map((p) => p.commit_index));
      ctrlTable.update((s.peers || []).map((p) => ({
        ...p,
        figures: undefined, // changes every second; not shown in the table
        role: p.id === s.leader_id ? 'leader' : (p.voter ? 'follower' : 'learner'),
        lag: p.up ? Math.max(0, maxCommit - p.applied_index) : null,
      })));
    });

  },
};
