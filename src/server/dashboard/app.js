// The dashboard's core (docs/dashboard.md): the API with the signed-in token, the views'
// router, live polling, and small DOM helpers. Views (overview.js, jobs.js) register in
// Sluice.views; each draws into #view and polls what it shows until the user leaves it.
'use strict';

const Sluice = (window.Sluice = { views: {}, timers: [], charts: {} });
window.sluiceCharts = Sluice.charts; // the browser test reads the charts' data from here

// --- The token: kept in this tab's session storage, sent only to this server -------------------
const TOKEN_KEY = 'sluice.token';
Sluice.token = () => sessionStorage.getItem(TOKEN_KEY) || '';

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}
Sluice.ApiError = ApiError;

// GET (or another method) on the server's API; JSON bodies come back parsed, text as text.
// A 401 shows the sign-in form and rejects.
Sluice.api = async function (path, opts = {}) {
  const headers = Object.assign({}, opts.headers || {});
  const token = Sluice.token();
  if (token) headers.Authorization = 'Bearer ' + token;
  const res = await fetch(path, Object.assign({}, opts, { headers, cache: 'no-store' }));
  const type = res.headers.get('Content-Type') || '';
  const body = type.startsWith('application/json') ? await res.json() : await res.text();
  if (res.status === 401) {
    showSignIn(token ? 'The server did not accept that token.' : '');
    throw new ApiError(401, 'sign in first');
  }
  if (!res.ok) {
    const msg = body && body.error ? body.error : 'HTTP ' + res.status;
    throw new ApiError(res.status, msg);
  }
  return opts.withHeaders ? { body, headers: res.headers } : body;
};

let signedIn = false; // the server took the token (or needs none)

function showSignIn(message) {
  signedIn = false;
  stopTimers();
  document.getElementById('view').hidden = true;
  document.getElementById('sign-in').hidden = false;
  document.getElementById('sign-in-error').textContent = message || '';
  document.getElementById('token').focus();
  setLive('bad', 'signed out');
}

// Whether the server takes the token in session storage (or needs none): /v1/dashboard says
// who the caller is, or "caller": null where a token is needed and this one is not taken.
async function session() {
  const info = await Sluice.api('/v1/dashboard?since=' + Date.now() / 1000);
  Sluice.showCaller(info);
  return info.caller != null;
}

async function signIn(event) {
  event.preventDefault();
  const input = document.getElementById('token');
  sessionStorage.setItem(TOKEN_KEY, input.value.trim());
  input.value = '';
  let ok = false;
  try {
    ok = await session();
  } catch (e) {
    document.getElementById('sign-in-error').textContent = e.message;
    return;
  }
  if (!ok) {
    sessionStorage.removeItem(TOKEN_KEY);
    document.getElementById('sign-in-error').textContent = 'The server did not accept that token.';
    return;
  }
  route();
}

function signOut() {
  sessionStorage.removeItem(TOKEN_KEY);
  document.getElementById('who').textContent = '';
  document.getElementById('sign-out').hidden = true;
  showSignIn('Signed out.');
}

// Who the server says the caller is (/v1/dashboard answers it), in the header.
Sluice.showCaller = function (info) {
  if (!info || !info.caller) return;
  signedIn = true;
  Sluice.caller = info.caller; // {name, admin}: the views offer admins the node actions
  document.getElementById('version').textContent = 'sluice ' + info.version;
  document.getElementById('who').textContent = info.auth
    ? 'signed in as ' + info.caller.name + (info.caller.admin ? ' (admin)' : '')
    : 'no tokens: open to loopback';
  document.getElementById('sign-out').hidden = !info.auth;
};

// --- Live polling ------------------------------------------------------------------------------
function setLive(kind, text) {
  const el = document.getElementById('live');
  el.className = 'live ' + kind;
  document.getElementById('live-text').textContent = text;
}

// Runs fn now and then every `ms` while the view stays; a failure shows in the header and the
// next tick tries again (the server may be restarting).
Sluice.every = function (ms, fn) {
  let busy = false;
  const tick = async () => {
    if (busy) return;
    busy = true;
    try {
      await fn();
      setLive('ok', 'live, updated ' + Sluice.clock(Date.now() / 1000));
    } catch (e) {
      if (e.status !== 401) setLive('bad', 'not updating: ' + e.message);
    } finally {
      busy = false;
    }
  };
  tick();
  Sluice.timers.push(setInterval(tick, ms));
};

function stopTimers() {
  Sluice.timers.forEach(clearInterval);
  Sluice.timers = [];
  for (const k of Object.keys(Sluice.charts)) {
    Sluice.charts[k].destroy();
    delete Sluice.charts[k];
  }
}

// --- Routing: #/ (overview), #/jobs?state=..., #/job/ID ----------------------------------------
function route() {
  stopTimers();
  const hash = location.hash.replace(/^#/, '') || '/';
  const [path, query] = hash.split('?');
  const params = new URLSearchParams(query || '');
  let view = 'overview';
  let arg = null;
  if (path === '/jobs') view = 'jobs';
  const m = path.match(/^\/job\/(\d+)$/);
  if (m) {
    view = 'job';
    arg = m[1];
  }
  document.querySelectorAll('[data-nav]').forEach((a) => {
    a.classList.toggle('active', a.dataset.nav === (view === 'job' ? 'jobs' : view));
  });
  const root = document.getElementById('view');
  root.hidden = false;
  document.getElementById('sign-in').hidden = true;
  root.replaceChildren();
  Sluice.views[view](root, params, arg);
}

// --- Formatting and DOM helpers ------------------------------------------------------------------
Sluice.clock = (t) => new Date(t * 1000).toLocaleTimeString([], { hour12: false });
Sluice.dateTime = (t) =>
  t == null ? '' : new Date(t * 1000).toLocaleString([], { hour12: false });
Sluice.duration = function (s) {
  if (s == null || !isFinite(s)) return '';
  s = Math.max(0, s);
  if (s < 60) return s.toFixed(s < 10 ? 1 : 0) + 's';
  if (s < 3600) return Math.floor(s / 60) + 'm' + String(Math.floor(s % 60)).padStart(2, '0') + 's';
  const h = Math.floor(s / 3600);
  if (h < 48) return h + 'h' + String(Math.floor((s % 3600) / 60)).padStart(2, '0') + 'm';
  return Math.floor(h / 24) + 'd' + (h % 24) + 'h';
};
Sluice.num = (v, digits = 2) =>
  v == null || !isFinite(v) ? '–' : Number.isInteger(v) ? String(v) : v.toFixed(digits);

// el('td', {class: 'num'}, 'text', child...): text goes in as text, never as markup.
Sluice.el = function (tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c == null) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
};

// A table: columns [{title, num?}], rows of cells (text or nodes).
Sluice.table = function (id, columns, rows, empty) {
  const el = Sluice.el;
  const head = el('tr', null, columns.map((c) => el('th', { class: c.num ? 'num' : null }, c.title)));
  const body = rows.length
    ? rows.map((r) =>
        el('tr', { class: r.rowClass }, r.cells.map((v, i) => el('td', { class: columns[i].num ? 'num' : null }, v))))
    : [el('tr', null, el('td', { colspan: columns.length, class: 'note' }, empty || 'none'))];
  return el('table', { id }, el('thead', null, head), el('tbody', null, body));
};

// A button that acts only on a second click ("Cancel job" -> "Really cancel job 7?"), then
// runs act(); what act() throws shows beside it. No dialog (confirm() would block the page).
Sluice.twoStep = function (id, label, really, act) {
  const el = Sluice.el;
  const msg = el('span', { class: 'note', id: id + '-result' });
  const btn = el('button', { type: 'button', id, class: 'action' }, label);
  btn.addEventListener('click', async () => {
    if (btn.dataset.armed !== '1') {
      btn.dataset.armed = '1';
      btn.textContent = really;
      return;
    }
    btn.disabled = true;
    try {
      msg.textContent = (await act()) || '';
    } catch (e) {
      msg.textContent = e.message;
      msg.className = 'error';
    }
  });
  return el('span', null, btn, ' ', msg);
};

Sluice.jobLink = (id, text) => Sluice.el('a', { href: '#/job/' + id }, text == null ? String(id) : text);

window.addEventListener('hashchange', () => {
  if (signedIn) route();
});
window.addEventListener('DOMContentLoaded', async () => {
  document.getElementById('sign-in-form').addEventListener('submit', signIn);
  document.getElementById('sign-out').addEventListener('click', signOut);
  let ok = false;
  try {
    ok = await session();
  } catch (e) {
    setLive('bad', 'server unreachable: ' + e.message);
    setTimeout(() => location.reload(), 5000);
    return;
  }
  if (ok) route();
  else showSignIn(Sluice.token() ? 'The server did not accept the token of this session.' : '');
});
