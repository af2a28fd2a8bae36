// The overview (docs/dashboard.md): the server's history ring (/v1/dashboard) drawn over time,
// and the queues and nodes as they are now (/v1/queues, /v1/nodes). Polled every sample.
'use strict';

(function () {
  const S = window.Sluice;
  const el = S.el;
  const PALETTE = ['#2459c7', '#e8772e', '#16803c', '#b3261e', '#7b4bc4', '#0f8b8d', '#c29b0c',
    '#d04a9b', '#5f6b7a', '#3aa1e0'];
  const color = (i) => PALETTE[i % PALETTE.length];

  // --- Charts (Chart.js, linear time axis in unix seconds: no date adapter needed) -------------
  // stacked: each series a band on top of the ones before (a per-node chart where nodes often
  // hold the same value: plain lines would lie on top of each other, one hiding the rest).
  function lineChart(name, canvas, yTitle, yMax, stacked) {
    const chart = new Chart(canvas, {
      type: 'line',
      data: { datasets: [] },
      options: {
        animation: false, responsive: true, maintainAspectRatio: false, parsing: false,
        normalized: true, spanGaps: false, elements: { point: { radius: 0 }, line: { borderWidth: 2 } },
        // 'index': the tooltip lists every series at that time, also those with equal values.
        interaction: { mode: 'index', axis: 'x', intersect: false },
        scales: {
          x: { type: 'linear', ticks: { callback: (v) => S.clock(v), maxTicksLimit: 6 } },
          y: { beginAtZero: true, suggestedMax: yMax, stacked: !!stacked, title: { display: true, text: yTitle } },
        },
        plugins: {
          legend: { position: 'bottom', labels: { boxWidth: 12 } },
          tooltip: { callbacks: { title: (items) => (items.length ? S.clock(items[0].parsed.x) : '') } },
        },
      },
    });
    S.charts[name] = chart;
    return chart;
  }

  function barChart(name, canvas, yTitle) {
    const chart = new Chart(canvas, {
      type: 'bar',
      data: { labels: [], datasets: [] },
      options: {
        animation: false, responsive: true, maintainAspectRatio: false,
        scales: { y: { beginAtZero: true, title: { display: true, text: yTitle } } },
        plugins: { legend: { position: 'bottom', labels: { boxWidth: 12 } } },
      },
    });
    S.charts[name] = chart;
    return chart;
  }

  // series: [{label, points: [{x, y}], dashed?}], in a stable order; colours by position.
  function setLines(chart, series) {
    const stacked = chart.options.scales.y.stacked;
    chart.data.datasets = series.map((s, i) => ({
      label: s.label, data: s.points, borderColor: s.color || color(i),
      backgroundColor: stacked ? (s.color || color(i)) + '55' : s.color || color(i),
      borderDash: s.dashed ? [5, 4] : [], fill: stacked ? (i ? '-1' : 'origin') : false,
    }));
    chart.update('none');
  }

  function setBars(chart, labels, series) {
    chart.data.labels = labels;
    chart.data.datasets = series.map((s) => ({
      label: s.label, data: s.values, backgroundColor: s.color, stack: s.stack,
    }));
    chart.update('none');
  }

  // --- From samples to series ---------------------------------------------------------------------
  const keysOf = (samples, field) => {
    const keys = new Set();
    for (const s of samples) Object.keys(s[field] || {}).forEach((k) => keys.add(k));
    return [...keys].sort();
  };
  const seriesOf = (samples, field, key, value) =>
    samples.map((s) => {
      const v = s[field] && s[field][key] ? value(s[field][key]) : null;
      return { x: s.t, y: v == null ? null : v };
    });

  // Preemptions counted, not extrapolated: those of the samples within `windowS` seconds
  // before samples[end] (the count since the oldest of them), and the seconds that covers. A
  // history shorter than the window gives a shorter one, said as such: 4 preemptions in the
  // first 5 s are "4 in 5s", never "48/min" (they come in bursts: one admission preempts
  // several jobs, so a rate from a few seconds says nothing of the next minute).
  S.preemptionsIn = function (samples, windowS, end = samples.length - 1) {
    if (end < 0) return { count: 0, window: 0 };
    let first = end;
    while (first > 0 && samples[first - 1].t >= samples[end].t - windowS) first--;
    return { count: Math.max(0, samples[end].preemptions_total - samples[first].preemptions_total),
      window: samples[end].t - samples[first].t };
  };

  // Per sample: the preemptions of the minute before it (of what the history holds of it).
  function preemptionCounts(samples) {
    return samples.map((s, i) => ({ x: s.t, y: i ? S.preemptionsIn(samples, 60, i).count : null }));
  }

  function drawHistory(c, samples) {
    const classes = keysOf(samples, 'classes');
    setLines(c.depth, classes.map((k) => ({ label: k, points: seriesOf(samples, 'classes', k, (v) => v.pending) })));
    setLines(c.wait, classes.flatMap((k, i) => [
      { label: k + ' admitted', color: color(i), points: seriesOf(samples, 'classes', k, (v) => v.wait_p99_s) },
      { label: k + ' waiting', color: color(i), dashed: true,
        points: seriesOf(samples, 'classes', k, (v) => v.pending_wait_p99_s) },
    ]));
    const nodes = keysOf(samples, 'nodes');
    setLines(c.alloc, nodes.map((k) => ({ label: k, points: seriesOf(samples, 'nodes', k, (v) => v.gpu_allocated) })));
    setLines(c.util, nodes.map((k) => ({ label: k, points: seriesOf(samples, 'nodes', k, (v) => v.gpu_util_pct) })));
    const sampled = samples.some((s) => Object.values(s.nodes || {}).some((n) => n.gpu_util_pct != null));
    c.utilNote.textContent = sampled ? 'mean over the node\'s GPUs that NVML samples'
      : 'no utilisation samples: the agents report none (fake GPUs, or no NVML)';
    const queues = keysOf(samples, 'queues');
    setLines(c.debt, queues.map((k) => ({ label: k, points: seriesOf(samples, 'queues', k, (v) => v.fairness_debt) })));
    setLines(c.preempt, [{ label: 'preemptions in the minute before', points: preemptionCounts(samples) }]);
  }

  function drawNow(c, last) {
    const queues = Object.keys(last.queues || {}).sort();
    const q = (f) => queues.map((n) => last.queues[n][f]);
    setBars(c.quota, queues, [
      { label: 'nominal quota', color: '#c5ccd6', values: q('gpu_nominal'), stack: 'nominal' },
      { label: 'used within quota', color: '#2459c7', stack: 'used',
        values: queues.map((n) => last.queues[n].gpu_used - last.queues[n].gpu_borrowed) },
      { label: 'borrowed', color: '#e8772e', values: q('gpu_borrowed'), stack: 'used' },
    ]);
    const nss = Object.keys(last.namespaces || {}).sort();
    const ns = (f) => nss.map((n) => (last.namespaces[n][f] == null ? null : last.namespaces[n][f]));
    setBars(c.hours, nss, [
      { label: 'GPU-hours allocated', color: '#2459c7', values: ns('gpu_hours') },
      { label: 'budget used (weighted)', color: '#e8772e', values: ns('budget_used_gpu_hours') },
      { label: 'budget', color: '#c5ccd6', values: ns('budget_gpu_hours') },
    ]);
  }

  // --- Cards and tables of the present ------------------------------------------------------------
  // A node takes work when its agent is up and no admin holds it (cordoned, draining, drained).
  const takesWork = (n) => n.ready && !n.hold;

  function cards(root, last, preempt, nodes) {
    const classes = Object.values(last.classes || {});
    const pending = classes.reduce((a, c) => a + c.pending, 0);
    const running = classes.reduce((a, c) => a + (c.running || 0), 0);
    const gpus = nodes.reduce((a, n) => a + n.gpu_count, 0);
    const alloc = nodes.reduce((a, n) => a + n.gpus_allocated, 0);
    const card = (v, k, id) => el('div', { class: 'card', id }, el('div', { class: 'v' }, v), el('div', { class: 'k' }, k));
    root.replaceChildren(
      card(pending, 'jobs pending', 'card-pending'), card(running, 'jobs running', 'card-running'),
      card(S.num(alloc, 1) + ' / ' + gpus, 'GPUs allocated', 'card-gpus'),
      card(nodes.filter(takesWork).length + ' / ' + nodes.length, 'nodes ready', 'card-nodes'),
      card(preempt.count, preempt.window >= 59.5 ? 'preemptions in the last minute'
        : preempt.window > 0 ? 'preemptions in the last ' + S.duration(preempt.window)
          : 'preemptions (no history yet)', 'card-preempt'));
  }

  function queueTable(queues) {
    const gpu = (q) => (q.usage || []).filter((u) => u.resource === 'nvidia.com/gpu');
    const sum = (q, f) => gpu(q).reduce((a, u) => a + Number(u[f]), 0);
    return S.table('queues', [
      { title: 'ClusterQueue' }, { title: 'cohort' }, { title: 'pending', num: 1 }, { title: 'running', num: 1 },
      { title: 'GPUs used / nominal', num: 1 }, { title: 'borrowed', num: 1 }, { title: 'DRF share', num: 1 },
      { title: 'fairness debt', num: 1 }],
    queues.map((q) => ({ cells: [
      el('a', { href: '#/jobs?queue=' + encodeURIComponent(q.name) }, q.name), q.cohort || '', q.pending, q.running,
      S.num(sum(q, 'used')) + ' / ' + S.num(sum(q, 'nominal')), S.num(sum(q, 'borrowed')),
      S.num(q.drf_share, 3), S.num(q.fairness_debt, 3)] })));
  }

  // "ready", "NotReady", "ready, drained: disk swap" (an admin's hold and the reason given).
  function nodeState(n) {
    const up = n.ready ? 'ready' : 'NotReady';
    if (!n.hold) return up;
    return [up + ', ', el('span', { class: 'hold' }, n.hold + (n.hold_reason ? ': ' + n.hold_reason : ''))];
  }

  function nodeTable(nodes) {
    return S.table('nodes', [
      { title: 'node' }, { title: 'state' }, { title: 'GPUs', num: 1 }, { title: 'allocated', num: 1 },
      { title: 'utilisation', num: 1 }, { title: 'jobs' }, { title: 'last seen' }],
    nodes.map((n) => {
      const util = n.gpus.filter((g) => g.utilization_pct != null);
      const jobs = [...new Set(n.gpus.flatMap((g) => g.jobs))].sort((a, b) => a - b);
      return { cells: [
        n.name, nodeState(n), n.gpu_count,
        S.num(n.gpus_allocated), util.length ? S.num(util.reduce((a, g) => a + g.utilization_pct, 0) / util.length, 0) + '%' : '–',
        jobs.flatMap((id, i) => (i ? [', ', S.jobLink(id)] : [S.jobLink(id)])),
        n.last_seen_s_ago == null ? 'never' : S.duration(n.last_seen_s_ago) + ' ago'] };
    }));
  }

  // The node pools (docs/autoscaling.md): nodes per state, then the provisioner's last calls,
  // newest first, each a line: when, what, for which node, how it went and what it said.
  function poolTables(pools) {
    if (!pools.pools.length) return [];
    const states = ['creating', 'joining', 'ready', 'leaving', 'deleting'];
    const summary = S.table('pools', [{ title: 'pool' }, { title: 'capacity' }, { title: 'max', num: 1 }]
      .concat(states.map((t) => ({ title: t, num: 1 }))),
    pools.pools.map((p) => ({ cells: [p.name, p.capacity_type, p.max_nodes].concat(states.map((t) => p.nodes[t])) })));
    const calls = S.table('provisioner-calls', [
      { title: 'time' }, { title: 'call' }, { title: 'node' }, { title: 'why' }, { title: 'result' }, { title: 'output' }],
    pools.calls.slice(0, 20).map((c) => ({ cells: [
      new Date(c.time * 1000).toLocaleTimeString(), c.op, c.node, c.reason,
      el('span', { class: c.result === 'ok' ? '' : 'error' }, c.result + (c.exit_code > 0 ? ' (exit ' + c.exit_code + ')' : '') +
        (c.http_status > 0 && c.result !== 'ok' ? ' (HTTP ' + c.http_status + ')' : '')),
      c.output] })));
    return [el('h2', null, 'Node pools'), summary, el('h3', null, 'Provisioner calls'), calls];
  }

  // Right-sizing (GET /v1/advise, what `sluice advise` prints): GPU-hours requested against used
  // per namespace and user, then the jobs whose measured peak fits a smaller GPU or MIG slice.
  function adviseTables(report) {
    const hours = (v) => S.num(v, 3);
    const totals = S.table('advise-totals', [
      { title: 'namespace' }, { title: 'user' }, { title: 'jobs', num: 1 }, { title: 'measured', num: 1 },
      { title: 'GPU-h requested', num: 1 }, { title: 'GPU-h measured', num: 1 }, { title: 'GPU-h used', num: 1 }],
    report.totals.map((t) => ({ cells: [t.namespace, t.user, t.jobs, t.measured_jobs,
      hours(t.gpu_hours_requested), hours(t.gpu_hours_measured), hours(t.gpu_hours_used)] })),
    'no job has held a GPU yet');
    const over = report.jobs.filter((j) => j.advice);
    const pct = Math.round(report.headroom * 100);
    const jobs = over.length
      ? S.table('advise-jobs', [{ title: 'job' }, { title: 'namespace' }, { title: 'user' }, { title: 'advice' }],
        over.map((j) => ({ cells: [S.jobLink(j.id, j.id + ' ' + j.name), j.namespace, j.user, j.advice] })))
      : el('p', { class: 'note', id: 'advise-none' },
        'No job with a measured use would fit a smaller GPU or MIG slice (' + pct + '% headroom).');
    return [el('h2', null, 'Right-sizing'), totals,
      el('h3', null, 'Over-requesting (measured peak + ' + pct + '% fits a smaller GPU or MIG slice)'), jobs];
  }

  // An admin's node actions (POST /v1/nodes/NODE/drain | cordon | resume with the signed-in
  // token, as `sluice drain`): built once, outside the tables that each poll redraws.
  function nodeActions() {
    const node = el('select', { name: 'node', id: 'action-node' });
    const reason = el('input', { name: 'reason', id: 'action-reason', size: 24, placeholder: 'why (shown with the node)' });
    const result = el('span', { class: 'note', id: 'action-result' });
    const act = (verb) => el('button', { type: 'button', id: 'action-' + verb, onclick: async () => {
      result.className = 'note';
      try {
        await S.api('/v1/nodes/' + encodeURIComponent(node.value) + '/' + verb, {
          method: 'POST', headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify(verb === 'resume' ? {} : { reason: reason.value.trim() }) });
        result.textContent = node.value + ': ' + verb + ' done';
      } catch (e) {
        result.textContent = e.message;
        result.className = 'error';
      }
    } }, verb);
    const form = el('form', { class: 'filters', id: 'node-actions', hidden: true },
      el('label', null, 'node', node), el('label', null, 'reason', reason),
      act('drain'), act('cordon'), act('resume'), result);
    form.addEventListener('submit', (e) => e.preventDefault());
    form.update = (nodes) => {
      form.hidden = !(S.caller && S.caller.admin);
      const names = nodes.map((n) => n.name);
      if ([...node.options].map((o) => o.value).join() === names.join()) return;
      const keep = node.value;
      node.replaceChildren(...names.map((n) => el('option', { value: n, selected: n === keep }, n)));
    };
    return form;
  }

  // --- The view -------------------------------------------------------------------------------
  S.views.overview = function (root) {
    const panel = (id, title, note) => {
      const canvas = el('canvas', { id: 'chart-' + id });
      const noteEl = el('p', { class: 'note' }, note || '');
      root.querySelector('.grid').append(el('div', { class: 'panel' }, el('h2', null, title), el('div', { class: 'chart' }, canvas), noteEl));
      return { canvas, noteEl };
    };
    const cardsEl = el('div', { class: 'cards' });
    const tables = el('div');
    const actions = nodeActions();
    const advise = el('div', { id: 'advise' });
    root.append(el('h1', null, 'Cluster'), cardsEl, el('div', { class: 'grid' }), tables, actions, advise);
    const hasCharts = typeof window.Chart === 'function';
    if (!hasCharts)
      root.querySelector('.grid').append(el('p', { class: 'note', id: 'no-charts' },
        'Charts are off: this server was built without Chart.js (apt-get install libjs-chart.js and rebuild; docs/dashboard.md).'));
    const c = {};
    if (hasCharts) {
      c.depth = lineChart('depth', panel('depth', 'Queue depth per priority class', 'jobs pending').canvas, 'jobs');
      const w = panel('wait', 'Wait p99 per priority class',
        'solid: admissions of the last minute; dashed: the jobs still waiting');
      c.wait = lineChart('wait', w.canvas, 'seconds');
      c.alloc = lineChart('alloc', panel('alloc', 'GPUs allocated per node',
        'stacked: each node a band, the top the cluster\'s total').canvas, 'GPUs', undefined, true);
      const u = panel('util', 'GPU utilisation per node');
      c.util = lineChart('util', u.canvas, '%', 100);
      c.utilNote = u.noteEl;
      c.debt = lineChart('debt', panel('debt', 'Fairness debt per ClusterQueue', 'decayed past usage').canvas, 'debt');
      c.preempt = lineChart('preempt', panel('preempt', 'Preemptions',
        'counted over the minute before each sample (less where the history is younger)').canvas, 'preemptions');
      c.quota = barChart('quota', panel('quota', 'GPU quota per ClusterQueue: used, borrowed, nominal').canvas, 'GPUs');
      c.hours = barChart('hours', panel('hours', 'GPU-hours per namespace against its budget',
        'allocated since the server started; budget: this period, weighted').canvas, 'GPU-hours');
    }
    let samples = [];
    let capacity = 720;
    S.every(5000, async () => {
      const since = samples.length ? samples[samples.length - 1].t : 0;
      const [hist, queues, nodes, pools] = await Promise.all([
        S.api('/v1/dashboard?since=' + since), S.api('/v1/queues'), S.api('/v1/nodes'),
        S.api('/v1/pools')]);
      S.showCaller(hist);
      capacity = hist.capacity || capacity;
      samples = samples.concat(hist.samples).slice(-capacity);
      const last = samples.length ? samples[samples.length - 1] : { classes: {}, queues: {}, namespaces: {} };
      cards(cardsEl, last, S.preemptionsIn(samples, 60), nodes.nodes);
      if (hasCharts) {
        drawHistory(c, samples);
        drawNow(c, last);
      }
      tables.replaceChildren(el('h2', null, 'ClusterQueues'), queueTable(queues.queues),
        el('h2', null, 'Nodes'), nodeTable(nodes.nodes), ...poolTables(pools));
      actions.update(nodes.nodes);
    });
    // The report reads up to 5,000 jobs: every 30 s, not at every poll.
    S.every(30000, async () => advise.replaceChildren(...adviseTables(await S.api('/v1/advise'))));
  };
})();
