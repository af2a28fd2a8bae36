// The jobs view (filters in the address: #/jobs?state=pending&queue=Q&namespace=N&user=U) and
// a job's page (#/job/ID): its timeline, why it waits in plain words, its log.
'use strict';

(function () {
  const S = window.Sluice;
  const el = S.el;
  const STATES = ['pending', 'running', 'succeeded', 'failed', 'cancelled', 'rejected'];
  const FILTERS = ['state', 'queue', 'namespace', 'user', 'limit'];

  // Where a job runs: its pods' nodes, once each ("n0 x2" for a gang with two pods there); a
  // pending job runs nowhere (its last run's placement, if it was preempted, is history).
  function nodesOf(job) {
    if (job.state === 'pending' || !job.placement.length) return '';
    return nodeList(job.placement.map((p) => p.node));
  }

  // Pods' nodes, once each: ["n0", "n0", "n1"] -> "n0 x2, n1".
  function nodeList(nodes) {
    const count = new Map();
    for (const n of nodes) count.set(n, (count.get(n) || 0) + 1);
    return [...count].map(([n, k]) => (k > 1 ? n + ' \u00d7' + k : n)).join(', ');
  }

  // How long it waited (pending: so far) or ran (running: so far; ended: in all).
  function ageOf(job, now) {
    if (job.state === 'pending') return 'waiting ' + S.duration(now - job.submit_time);
    if (job.state === 'running') return 'running ' + S.duration(now - (job.start_time || job.admit_time));
    if (job.end_time && (job.start_time || job.admit_time))
      return 'ran ' + S.duration(job.end_time - (job.start_time || job.admit_time));
    return '';
  }

  function filterForm(params, queues) {
    const field = (name, input) => el('label', null, name, input);
    const state = el('select', { name: 'state' }, el('option', { value: '' }, 'any'),
      STATES.map((s) => el('option', { value: s, selected: params.get('state') === s }, s)));
    const queue = el('select', { name: 'queue' }, el('option', { value: '' }, 'any'),
      queues.map((q) => el('option', { value: q, selected: params.get('queue') === q }, q)));
    const text = (name) => el('input', { name, value: params.get(name) || '', size: 12 });
    const form = el('form', { class: 'filters', id: 'job-filters' },
      field('state', state), field('ClusterQueue', queue), field('namespace', text('namespace')),
      field('user', text('user')),
      field('at most', el('input', { name: 'limit', value: params.get('limit') || '200', size: 5 })),
      el('button', { type: 'submit' }, 'Filter'));
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      const q = new URLSearchParams();
      for (const f of FILTERS) if (form.elements[f].value) q.set(f, form.elements[f].value.trim());
      location.hash = '#/jobs?' + q.toString();
    });
    form.addEventListener('change', (e) => {
      if (e.target.tagName === 'SELECT') form.requestSubmit();
    });
    return form;
  }

  S.views.jobs = function (root, params) {
    const query = new URLSearchParams();
    for (const f of FILTERS) if (params.get(f)) query.set(f, params.get(f));
    if (!query.has('limit')) query.set('limit', '200');
    const formSlot = el('div');
    const count = el('p', { class: 'note', id: 'job-count' });
    const tableSlot = el('div');
    root.append(el('h1', null, 'Jobs'), formSlot, count, tableSlot);
    S.api('/v1/queues').then((q) => formSlot.append(filterForm(params, q.queues.map((x) => x.name))),
      () => formSlot.append(filterForm(params, [])));
    S.every(5000, async () => {
      const res = await S.api('/v1/jobs?' + query.toString());
      const now = Date.now() / 1000;
      count.textContent = res.jobs.length + ' job(s), newest first' +
        (res.truncated ? '; more match: raise "at most" or narrow the filters' : '');
      tableSlot.replaceChildren(S.table('jobs', [
        { title: 'id', num: 1 }, { title: 'name' }, { title: 'namespace' }, { title: 'user' }, { title: 'queue' },
        { title: 'priority class' }, { title: 'state' }, { title: 'GPUs', num: 1 }, { title: 'submitted' },
        { title: 'time' }, { title: 'nodes' }, { title: 'reason' }],
      res.jobs.map((j) => ({ rowClass: 'state-' + j.state, cells: [
        S.jobLink(j.id), S.jobLink(j.id, j.name), j.namespace, j.user || '', j.queue, j.priority_class || '',
        j.state, j.gpus, S.dateTime(j.submit_time), ageOf(j, now), nodesOf(j), j.reason || ''] })),
      'no job matches'));
    });
  };

  // --- A job's page ---------------------------------------------------------------------------
  function timeline(job, now) {
    const t0 = job.submit_time;
    const admit = job.admit_time;
    const start = job.start_time;
    const end = job.end_time || now;
    const span = Math.max(end - t0, 0.001);
    const part = (cls, from, to, title) =>
      to > from ? el('div', { class: cls, title, style: null, 'data-w': (to - from) / span }) : null;
    const bar = el('div', { class: 'timeline', id: 'timeline' },
      part('wait', t0, admit || end, 'waiting'),
      admit ? part('start', admit, start || end, 'starting') : null,
      start ? part('run', start, end, job.end_time ? 'ran' : 'running') : null);
    // Widths through the CSSOM (the page's policy allows no style attributes).
    for (const d of bar.children) d.style.flex = d.dataset.w + ' 0 0';
    const step = (t, text) => el('li', null, el('span', { class: 't' }, S.dateTime(t)), text);
    const steps = el('ul', { class: 'steps' },
      step(t0, 'submitted'),
      admit ? step(admit, 'admitted after ' + S.duration(admit - t0) + ' in the queue') : null,
      start ? step(start, 'started (every pod running) ' + S.duration(start - admit) + ' later') : null,
      job.end_time ? step(job.end_time, job.state + (start ? ' after running ' + S.duration(job.end_time - start) : '')) : null,
      !job.end_time && !admit ? el('li', null, el('span', { class: 't' }, 'now'), 'waiting for ' + S.duration(now - t0)) : null,
      job.preemptions ? el('li', { class: 'note' }, 'preempted ' + job.preemptions +
        ' time(s), ' + job.attempts + ' attempt(s): the times above are of the last run; ' +
        'every run below') : null);
    return [bar, steps];
  }

  // Every run the server saw (a preempted job has several): its pods' nodes, its start (every
  // pod running; admitted, where it never got that far), its end and why it ended.
  function runsTable(job) {
    const runs = job.runs || [];
    if (runs.length < 2 && !job.preemptions) return null;
    return [el('h2', null, 'Runs'), S.table('runs', [
      { title: 'run', num: 1 }, { title: 'nodes' }, { title: 'started' }, { title: 'ended' },
      { title: 'ran' }, { title: 'why it ended' }],
    runs.map((r, i) => ({ cells: [
      i + 1, nodeList(r.nodes), r.start_time ? S.dateTime(r.start_time) : 'admitted ' + S.dateTime(r.admit_time),
      r.end_time ? S.dateTime(r.end_time) : 'running',
      S.duration((r.end_time || Date.now() / 1000) - (r.start_time || r.admit_time)), r.why || ''] })),
    'no run yet (a restarted server keeps a job\'s current run only)')];
  }

  function fields(job) {
    const row = (k, v) => [el('dt', null, k), el('dd', null, v == null || v === '' ? '–' : v)];
    return el('dl', { class: 'fields' },
      row('namespace / queue', job.namespace + ' / ' + job.queue + ' \u2192 ' + job.cluster_queue),
      row('user', job.user), row('priority', (job.priority_class || 'none') + ' (' + job.priority + ')'),
      row('preemptible', job.preemptible ? 'yes' : 'no'), row('pods / GPUs', job.pods + ' / ' + job.gpus),
      row('flavors', job.flavors.join(', ')), row('borrowing', job.borrowing ? 'yes' : 'no'),
      row('nodes', nodesOf(job)), row('command', (job.command || []).join(' ')),
      row('exit code', job.exit_code), row('reason', job.reason));
  }

  // The log pane opens at its end (the latest lines) and follows new lines while the reader is
  // at the end; one who scrolled up to read stays where they are.
  S.showLog = function (slot, text) {
    let pre = slot.querySelector('pre.log');
    const fresh = !pre;
    if (fresh) pre = el('pre', { class: 'log', id: 'log' });
    const atEnd = fresh || pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    if (pre.textContent !== text) pre.textContent = text;
    if (fresh) slot.replaceChildren(pre);
    if (atEnd) pre.scrollTop = pre.scrollHeight;
    return pre;
  };

  async function loadLog(slot, job) {
    if (job.placement.length === 0) {
      slot.replaceChildren(el('p', { class: 'note' }, 'No log yet: the job has not run.'));
      return;
    }
    try {
      const text = await S.api('/v1/jobs/' + job.id + '/logs?tail_bytes=65536');
      S.showLog(slot, text || '(empty)');
    } catch (e) {
      if (e.status === 401) throw e;
      slot.replaceChildren(el('p', { class: 'note', id: 'log-error' }, 'No log: ' + e.message));
    }
  }

  S.views.job = function (root, _params, id) {
    const head = el('h1', null, 'Job ' + id);
    const explain = el('p', { class: 'explain', id: 'explanation' }, '…');
    const when = el('div', { class: 'panel' });
    const info = el('div', { class: 'panel' });
    const logSlot = el('div');
    const runsSlot = el('div', { class: 'runs' });
    root.append(head, el('h2', null, 'Why it is where it is'), explain,
      el('div', { class: 'split' }, when, info), runsSlot, el('h2', null, 'Log (its end, pod 0)'), logSlot);
    let logged = false;
    let cancelEl = null;
    S.every(5000, async () => {
      let job;
      try {
        job = await S.api('/v1/jobs/' + id);
      } catch (e) {
        if (e.status === 404) {
          explain.textContent = e.message;
          return;
        }
        throw e;
      }
      const ex = await S.api('/v1/jobs/' + id + '/explain');
      const now = Date.now() / 1000;
      head.replaceChildren('Job ' + job.id + ': ' + job.name + ' ',
        el('span', { class: 'state-' + job.state, id: 'job-state' }, job.state));
      // Cancel, through the API with the signed-in token (POST /v1/jobs/ID/cancel), as
      // `sluice cancel`: the server decides who may.
      if (job.state === 'pending' || job.state === 'running') {
        if (!cancelEl) cancelEl = S.twoStep('cancel-job', 'Cancel job', 'Really cancel job ' + job.id + '?',
          async () => (await S.api('/v1/jobs/' + job.id + '/cancel', { method: 'POST' })).state);
        head.append(' ', cancelEl);
      }
      explain.textContent = ex.explanation;
      when.replaceChildren(el('h2', null, 'Timeline'), ...timeline(job, now));
      runsSlot.replaceChildren(...(runsTable(job) || []));
      info.replaceChildren(el('h2', null, 'Job'), fields(job));
      // The log: once, then again while the job runs.
      if (!logged || job.state === 'running') {
        logged = true;
        await loadLog(logSlot, job);
      }
    });
  };
})();
