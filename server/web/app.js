// The sluice dashboard: signs in with the admin token, polls the admin API every
// POLL_MS and draws every queue (paused state, leased vs caps, totals and rates, a
// per-tenant depth chart) and the failed-jobs list. Signed in with a read-only metrics
// token, it shows the queues only: no buttons, no jobs (the server refuses both). No framework, no network access
// beyond this server. Data from the server is only ever written as text.
'use strict';

const TOKEN_KEY = 'sluice.adminToken';
const POLL_MS = 1500;
const HISTORY_MS = 5 * 60 * 1000;  // the depth chart's window once the page is that old
const MIN_SPAN_MS = 60 * 1000;     // ... and its narrowest, while history is shorter
const RATE_WINDOW_MS = 15 * 1000;  // rates are averaged over this much of the totals history
const CHART_TENANTS = 8;           // deepest tenants drawn; the table lists them all
const TABLE_TENANTS = 100;
const FAILED_LIMIT = 50;
// Okabe-Ito: distinguishable with the common colour-vision deficiencies.
const COLORS = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00', '#F0E442',
  '#000000'];

const $ = (id) => document.getElementById(id);

const state = {
  readOnly: false,  // a metrics token: the server answers 403 to jobs and to changes
  generation: 0,  // bumped on sign-out: answers to an older generation are dropped
  timer: null,
  queues: new Map(),  // name -> QueueView
  retriedAt: new Map(),  // job id -> when the page retried it (performance.now())
};

// ---------------------------------------------------------------------------------
// API

class ApiError extends Error {
  constructor(status, code, detail) {
    super(detail);
    this.status = status;
    this.code = code;
    this.detail = detail;
  }
}

function token() { return sessionStorage.getItem(TOKEN_KEY) || ''; }

// Calls the API with the admin token; throws ApiError with the problem's detail. A 429
// rate_limited (an intake layer: docs/api.md) is tried again a few times, no earlier
// than its Retry-After, with jittered backoff; a longer wait is reported instead.
async function api(method, path) {
  for (let attempt = 0; ; attempt++) {
    let res;
    try {
      res = await fetch(path, {
        method,
        cache: 'no-store',
        headers: { 'Authorization': 'Bearer ' + token(), 'Accept': 'application/json' },
      });
    } catch (e) {
      throw new ApiError(0, 'unreachable', 'Cannot reach the sluice server (' + e.message + ').');
    }
    const text = await res.text();
    let body = null;
    try { body = text ? JSON.parse(text) : null; } catch (e) { body = null; }
    if (res.ok) return body;
    const retryAfter = Number(res.headers.get('Retry-After')) || 0;
    if (res.status === 429 && body && body.error === 'rate_limited' && attempt < 3 &&
        retryAfter <= 10) {
      const wait = retryAfter * 1000 + Math.random() * Math.min(2000, 200 * 2 ** attempt);
      await new Promise((resolve) => setTimeout(resolve, wait));
      continue;
    }
    const detail = (body && (body.detail || body.title)) ||
        `${method} ${path} answered ${res.status}`;
    throw new ApiError(res.status, (body && body.error) || `http_${res.status}`, detail);
  }
}

// fn over items, at most `limit` at a time, results in order: listings are expensive
// reads, of which the server serves a few at once per token (the default layer).
async function mapLimited(items, limit, fn) {
  const out = new Array(items.length);
  let next = 0;
  async function lane() {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return out;
}

const enc = encodeURIComponent;

// ---------------------------------------------------------------------------------
// Formatting

function fmtNumber(n) {
  if (n === null || n === undefined || Number.isNaN(n)) return '—';
  if (Number.isInteger(n)) return n.toLocaleString('en-US');
  return n.toLocaleString('en-US', { maximumFractionDigits: 2 });
}

function fmtCap(n) { return n > 0 ? fmtNumber(n) : '∞'; }

function fmtDuration(ms) {
  if (ms === null || ms === undefined) return '—';
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${s % 60} s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h ${m % 60} min`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

function fmtUntil(iso, now) {
  if (!iso) return '—';
  const ms = Date.parse(iso) - now;
  if (ms <= 0) return 'now';
  return ms < 10000 ? `in ${(ms / 1000).toFixed(1)} s` : `in ${fmtDuration(ms)}`;
}

function fmtTime(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

function fmtRate(perSecond) {
  if (perSecond === null) return '';
  return perSecond >= 1 || perSecond === 0 ? `${fmtNumber(perSecond)}/s`
                                           : `${fmtNumber(perSecond * 60)}/min`;
}

// ---------------------------------------------------------------------------------
// Messages

// `source` is 'poll' or 'action': a successful poll clears only what a poll reported,
// so the answer to a button press stays until the next press.
function showMessage(text, source) {
  const m = $('message');
  m.textContent = text;
  m.dataset.source = source;
  m.hidden = false;
}

function clearMessage(source) {
  const m = $('message');
  if (source && m.dataset.source !== source) return;
  m.textContent = '';
  m.hidden = true;
}

function setStatus(text) { $('status').textContent = text; }

// ---------------------------------------------------------------------------------
// Sign-in

function showSignIn(error) {
  stopPolling();
  $('dashboard').hidden = true;
  $('signout-button').hidden = true;
  $('signin').hidden = false;
  const err = $('signin-error');
  err.textContent = error || '';
  err.hidden = !error;
  setStatus('');
  clearMessage();
  $('token-input').focus();
}

function showDashboard() {
  $('signin').hidden = true;
  $('signin-error').hidden = true;
  $('token-input').value = '';
  $('dashboard').hidden = false;
  $('signout-button').hidden = false;
}

async function signIn(event) {
  event.preventDefault();
  const value = $('token-input').value.trim();
  if (!value) return showSignIn('Enter the admin or a metrics token.');
  sessionStorage.setItem(TOKEN_KEY, value);
  $('signin-button').disabled = true;
  try {
    await api('GET', '/v1/admin/queues');
    showDashboard();
    startPolling();
  } catch (e) {
    sessionStorage.removeItem(TOKEN_KEY);
    const why = e.status === 403 ? 'This token has neither the admin nor the metrics scope: ' : '';
    showSignIn(why + e.detail);
  } finally {
    $('signin-button').disabled = false;
  }
}

// Read-only: the failed-jobs list and every button are hidden (style.css), and a note
// says why.
function setReadOnly(on) {
  state.readOnly = on;
  document.body.dataset.readonly = String(on);
  $('failed-jobs').hidden = on;
  $('readonly-note').hidden = !on;
}

function signOut(reason) {
  sessionStorage.removeItem(TOKEN_KEY);
  for (const view of state.queues.values()) view.el.remove();
  state.queues.clear();
  $('failed-rows').replaceChildren();
  setReadOnly(false);
  showSignIn(reason);
}

// Any call that answers 401 ends the session; everything else is shown and polled again.
function handleError(e, source) {
  if (e.status === 401) return signOut('Signed out: ' + e.detail);
  showMessage(e.detail, source);
}

// ---------------------------------------------------------------------------------
// Polling

function startPolling() {
  stopPolling();
  poll(state.generation);
}

function stopPolling() {
  state.generation++;
  clearTimeout(state.timer);
  state.timer = null;
}

async function poll(generation) {
  try {
    if (!document.hidden) {
      const startedAt = performance.now();
      const overview = await api('GET', '/v1/admin/queues');
      const tenants = await mapLimited(overview.queues, 2,
          (q) => api('GET', `/v1/admin/queues/${enc(q.name)}/tenants`)
                     .then((r) => r.tenants)
                     .catch((e) => { if (e.status === 404) return []; throw e; }));
      const failed = state.readOnly ? null
          : await api('GET', `/v1/jobs?state=failed&limit=${FAILED_LIMIT}`).catch((e) => {
            if (e.status !== 403) throw e;
            setReadOnly(true);  // a metrics token may read queues, not jobs
            return null;
          });
      if (generation !== state.generation) return;
      const now = Date.now();
      renderQueues(overview.queues, tenants, now, startedAt);
      if (failed) renderFailed(failed, startedAt);
      const waiting = overview.waiting_leases || 0;
      setStatus(`Updated ${new Date(now).toLocaleTimeString()} · ` +
                `${waiting} worker poll${waiting === 1 ? '' : 's'} waiting`);
      clearMessage('poll');
    }
  } catch (e) {
    if (generation !== state.generation) return;
    handleError(e, 'poll');
  }
  if (generation === state.generation) {
    state.timer = setTimeout(() => poll(generation), POLL_MS);
  }
}

// ---------------------------------------------------------------------------------
// Queues

// `startedAt`: when the poll began. A button pressed since then is newer than what the
// poll saw, so its outcome is kept.
function renderQueues(queues, tenantLists, now, startedAt) {
  const seen = new Set();
  const list = $('queue-list');
  queues.forEach((q, i) => {
    seen.add(q.name);
    let view = state.queues.get(q.name);
    if (!view) {
      view = createQueueView(q.name);
      state.queues.set(q.name, view);
    }
    const at = list.children[i];
    if (at !== view.el) list.insertBefore(view.el, at || null);  // the server's order
    view.tenants = tenantLists[i];
    if (view.changedAt > startedAt) q = { ...q, paused: view.queue.paused };
    updateQueueView(view, q, now);
  });
  for (const [name, view] of state.queues) {
    if (!seen.has(name)) {
      view.el.remove();
      state.queues.delete(name);
    }
  }
  $('queues-empty').hidden = queues.length > 0;
}

function createQueueView(name) {
  const el = $('queue-template').content.firstElementChild.cloneNode(true);
  el.dataset.queue = name;
  el.setAttribute('aria-label', `Queue ${name}`);
  const role = (r) => el.querySelector(`[data-role="${r}"]`);
  role('name').textContent = name;
  const view = {
    name,
    el,
    tenants: [],
    history: new Map(),  // tenant -> [{t, v}] of queued counts
    colors: new Map(),   // tenant -> colour, stable while the page lives
    totals: new RateWindow(),
    tenantTotals: new Map(),  // tenant -> RateWindow, when tenants carry totals
    queue: null,         // the queue JSON last shown
    changedAt: 0,        // when a button here last changed it (performance.now())
  };
  for (const action of ['pause', 'resume']) {
    const button = el.querySelector(`[data-action="${action}"]`);
    button.setAttribute('aria-label', `${action === 'pause' ? 'Pause' : 'Resume'} queue ${name}`);
    button.addEventListener('click', () => setPaused(view, action, button));
  }
  return view;
}

async function setPaused(view, action, button) {
  button.disabled = true;
  const generation = state.generation;
  try {
    const q = await api('POST', `/v1/admin/queues/${enc(view.name)}/${action}`);
    if (generation !== state.generation) return;
    view.changedAt = performance.now();
    updateQueueView(view, q, Date.now());
    clearMessage();
    setStatus(`Queue ${view.name} ${q.paused ? 'paused: nothing is dispatched' : 'resumed'}.`);
  } catch (e) {
    handleError(e, 'action');
  } finally {
    button.disabled = false;
  }
}

function field(view, name) { return view.el.querySelector(`[data-field="${name}"]`); }

function updateQueueView(view, q, now) {
  view.queue = q;
  const el = view.el;
  el.dataset.paused = String(q.paused);
  const badge = el.querySelector('[data-role="state"]');
  badge.textContent = q.paused ? 'paused' : 'dispatching';
  badge.className = 'badge ' + (q.paused ? 'paused' : 'running');
  el.querySelector('[data-role="version"]').textContent = `policy v${q.version}`;
  el.querySelector('[data-action="pause"]').hidden = q.paused;
  el.querySelector('[data-action="resume"]').hidden = !q.paused;

  const stats = q.stats || {};
  field(view, 'queued').textContent = fmtNumber(stats.queued);
  field(view, 'queued_cost').textContent = fmtNumber(stats.queued_cost);
  field(view, 'leased').textContent = `${fmtNumber(stats.leased)} / ${fmtCap(q.max_inflight)}`;
  el.querySelector('[data-role="policy"]').textContent =
      `Policy: ${fmtNumber(q.rate)}/s per tenant · capacity ${fmtNumber(q.capacity)} · ` +
      `burst ${fmtNumber(q.burst)} · per-tenant cap ${fmtCap(q.max_inflight_per_tenant)}`;
  renderTotals(view, q.totals, now);
  recordDepth(view, now);
  renderTenantTable(view, now);
  drawChart(view, now);
}

// Successive samples of a totals object, kept over RATE_WINDOW_MS, for per-second rates.
class RateWindow {
  constructor() { this.samples = []; }

  add(t, totals) {
    const last = this.samples[this.samples.length - 1];
    if (last && last.t === t) return;
    this.samples.push({ t, totals });
    while (this.samples.length > 2 && t - this.samples[1].t >= RATE_WINDOW_MS) {
      this.samples.shift();
    }
  }

  latest(key) {
    const last = this.samples[this.samples.length - 1];
    return last && typeof last.totals[key] === 'number' ? last.totals[key] : null;
  }

  // Per second over the window; null until two samples half a second apart.
  rate(key) {
    const first = this.samples[0];
    const last = this.samples[this.samples.length - 1];
    if (!first || typeof first.totals[key] !== 'number' || this.latest(key) === null) return null;
    const dt = (last.t - first.t) / 1000;
    return dt < 0.5 ? null : Math.max(0, last.totals[key] - first.totals[key]) / dt;
  }
}

function withRate(window, key) {
  const total = window.latest(key);
  if (total === null) return '—';
  const r = fmtRate(window.rate(key));
  return fmtNumber(total) + (r ? ` · ${r}` : '');
}

// Totals are optional in the queue JSON: shown, with rates from successive polls, when
// the server sends them.
function renderTotals(view, totals, now) {
  const released = field(view, 'released');
  const rejected = field(view, 'rejected');
  const outcomes = ['succeeded', 'failed', 'expired'].map((k) => field(view, k));
  if (!totals || typeof totals !== 'object') {
    for (const f of [released, rejected, ...outcomes]) {
      f.textContent = '—';
      f.title = 'This server does not report totals.';
    }
    return;
  }
  view.totals.add(now, totals);
  released.textContent = withRate(view.totals, 'released');
  rejected.textContent = withRate(view.totals, 'rejected');
  for (const f of outcomes) f.textContent = fmtNumber(totals[f.dataset.field]);
  for (const f of [released, rejected, ...outcomes]) f.title = '';
  if (typeof totals.admitted === 'number') {
    rejected.title = `${fmtNumber(totals.admitted)} admitted`;
  }
}

function recordDepth(view, now) {
  const present = new Set();
  for (const t of view.tenants) {
    present.add(t.tenant);
    if (!view.history.has(t.tenant)) view.history.set(t.tenant, []);
  }
  for (const [tenant, points] of view.history) {
    const current = view.tenants.find((t) => t.tenant === tenant);
    const v = current ? current.queued : 0;
    if (!points.length || points[points.length - 1].t !== now) points.push({ t: now, v });
    while (points.length && points[0].t < now - HISTORY_MS) points.shift();
    if (!present.has(tenant) && points.every((p) => p.v === 0)) view.history.delete(tenant);
  }
}

function colorOf(view, tenant) {
  if (!view.colors.has(tenant)) view.colors.set(tenant, COLORS[view.colors.size % COLORS.length]);
  return view.colors.get(tenant);
}

function renderTenantTable(view, now) {
  const table = view.el.querySelector('[data-role="tenants"]');
  const body = table.tBodies[0];
  const sorted = [...view.tenants].sort((a, b) => b.queued - a.queued ||
                                                  a.tenant.localeCompare(b.tenant));
  const rows = sorted.slice(0, TABLE_TENANTS).map((t) => {
    const tr = document.createElement('tr');
    tr.dataset.tenant = t.tenant;
    const cell = (name, text, numeric) => {
      const td = document.createElement(name === 'tenant' ? 'th' : 'td');
      if (name === 'tenant') td.scope = 'row';
      td.dataset.field = name;
      td.textContent = text;
      if (numeric) td.className = 'num';
      tr.appendChild(td);
      return td;
    };
    cell('tenant', t.tenant);
    cell('queued', fmtNumber(t.queued), true);
    cell('queued_cost', `${fmtNumber(t.queued_cost)} / ${fmtNumber(t.capacity)}`, true);
    cell('leased', `${fmtNumber(t.leased)} / ${fmtCap(t.max_inflight_per_tenant)}`, true);
    cell('rate', fmtNumber(t.rate), true);
    if (t.totals && typeof t.totals === 'object') {
      if (!view.tenantTotals.has(t.tenant)) view.tenantTotals.set(t.tenant, new RateWindow());
      const w = view.tenantTotals.get(t.tenant);
      w.add(now, t.totals);
      cell('released', withRate(w, 'released'), true);
    } else {
      cell('released', '—', true);
    }
    cell('oldest', fmtDuration(t.oldest_queued_age_ms), true);
    cell('next_release', view.queue && view.queue.paused && t.queued ? 'paused'
                                                                     : fmtUntil(t.next_release_at, now));
    return tr;
  });
  if (sorted.length > TABLE_TENANTS) {
    const tr = document.createElement('tr');
    const td = document.createElement('td');
    td.colSpan = 8;
    td.className = 'more';
    td.textContent = `… and ${sorted.length - TABLE_TENANTS} more tenants`;
    tr.appendChild(td);
    rows.push(tr);
  }
  body.replaceChildren(...rows);
  const listed = new Set(sorted.slice(0, TABLE_TENANTS).map((t) => t.tenant));
  for (const tenant of view.tenantTotals.keys()) {
    if (!listed.has(tenant)) view.tenantTotals.delete(tenant);
  }
  table.hidden = sorted.length === 0;
  view.el.querySelector('[data-role="no-tenants"]').hidden = sorted.length > 0;
}

// ---------------------------------------------------------------------------------
// Depth chart: queued jobs per tenant over HISTORY_MS, drawn on a canvas.

function niceCeil(v) {
  if (v <= 4) return 4;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function drawChart(view, now) {
  const canvas = view.el.querySelector('[data-role="depth-chart"]');
  const legend = view.el.querySelector('[data-role="legend"]');
  const latest = (points) => (points.length ? points[points.length - 1].v : 0);
  const peak = (points) => points.reduce((m, p) => Math.max(m, p.v), 0);
  const series = [...view.history.entries()]
                     .sort((a, b) => latest(b[1]) - latest(a[1]) || peak(b[1]) - peak(a[1]) ||
                                     a[0].localeCompare(b[0]))
                     .slice(0, CHART_TENANTS);

  const dpr = window.devicePixelRatio || 1;
  const width = canvas.clientWidth || 640;
  const height = canvas.clientHeight || 180;
  if (canvas.width !== Math.round(width * dpr) || canvas.height !== Math.round(height * dpr)) {
    canvas.width = Math.round(width * dpr);
    canvas.height = Math.round(height * dpr);
  }
  const ctx = canvas.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, width, height);

  const pad = { left: 44, right: 12, top: 10, bottom: 22 };
  const w = width - pad.left - pad.right;
  const h = height - pad.top - pad.bottom;
  const top = niceCeil(series.reduce((m, [, pts]) => Math.max(m, peak(pts)), 0));
  // The window grows with the page's history, from MIN_SPAN_MS up to HISTORY_MS.
  const earliest = series.reduce((m, [, pts]) => (pts.length ? Math.min(m, pts[0].t) : m), now);
  const span = Math.min(HISTORY_MS, Math.max(MIN_SPAN_MS, now - earliest));
  const x = (t) => pad.left + ((t - (now - span)) / span) * w;
  const y = (v) => pad.top + h - (v / top) * h;

  ctx.font = '11px system-ui, sans-serif';
  ctx.lineWidth = 1;
  ctx.strokeStyle = '#d8dde3';
  ctx.fillStyle = '#5b6570';
  ctx.textAlign = 'right';
  ctx.textBaseline = 'middle';
  for (let i = 0; i <= 4; i++) {
    const v = (top * i) / 4;
    ctx.beginPath();
    ctx.moveTo(pad.left, Math.round(y(v)) + 0.5);
    ctx.lineTo(pad.left + w, Math.round(y(v)) + 0.5);
    ctx.stroke();
    ctx.fillText(fmtNumber(v), pad.left - 6, y(v));
  }
  ctx.textAlign = 'center';
  ctx.textBaseline = 'top';
  const step = [10000, 15000, 30000, 60000].find((s) => span / s <= 6) || 60000;
  for (let ago = 0; ago <= span; ago += step) {
    const label = ago === 0 ? 'now'
                            : ago % 60000 === 0 ? `−${ago / 60000} min` : `−${ago / 1000} s`;
    ctx.fillText(label, x(now - ago), pad.top + h + 6);
  }

  ctx.lineWidth = 2;
  ctx.lineJoin = 'round';
  for (const [tenant, points] of series) {
    if (!points.length) continue;
    ctx.strokeStyle = colorOf(view, tenant);
    ctx.beginPath();
    points.forEach((p, i) => (i ? ctx.lineTo(x(p.t), y(p.v)) : ctx.moveTo(x(p.t), y(p.v))));
    if (points.length === 1) ctx.lineTo(x(points[0].t) - 2, y(points[0].v));
    ctx.stroke();
  }

  const items = series.map(([tenant, points]) => {
    const li = document.createElement('li');
    li.dataset.tenant = tenant;
    const swatch = document.createElement('span');
    swatch.className = 'swatch';
    swatch.style.backgroundColor = colorOf(view, tenant);
    const label = document.createElement('span');
    label.textContent = `${tenant}: ${fmtNumber(latest(points))}`;
    li.append(swatch, label);
    return li;
  });
  if (view.history.size > series.length) {
    const li = document.createElement('li');
    li.textContent = `+${view.history.size - series.length} more (see table)`;
    items.push(li);
  }
  legend.replaceChildren(...items);
  canvas.setAttribute('aria-label',
                      `Queued jobs per tenant over the last ${fmtDuration(span)}` +
                          (series.length ? ': ' + series.map(([t, p]) => `${t} ${latest(p)}`)
                                                      .join(', ')
                                         : ': no tenants'));
}

// ---------------------------------------------------------------------------------
// Failed jobs

function renderFailed(page, startedAt) {
  for (const [id, at] of state.retriedAt) {
    if (at < startedAt - 60000) state.retriedAt.delete(id);
  }
  const jobs = (page.jobs || []).filter((j) => !(state.retriedAt.get(j.id) > startedAt));
  const body = $('failed-rows');
  const existing = new Map([...body.rows].map((tr) => [tr.dataset.jobId, tr]));
  const rows = jobs.map((job) => existing.get(job.id) || createFailedRow(job));
  body.replaceChildren(...rows);
  $('failed-table').hidden = jobs.length === 0;
  const empty = $('failed-empty');
  empty.hidden = jobs.length > 0 && !page.next_cursor;
  empty.textContent = jobs.length === 0 ? 'No failed jobs.'
                                        : `Showing the first ${jobs.length} failed jobs.`;
}

function lastError(job) {
  const errors = Array.isArray(job.errors) ? job.errors : [];
  if (!errors.length) return '—';
  const e = errors[errors.length - 1];
  const text = e && typeof e === 'object' && 'error' in e ? e.error : e;
  return typeof text === 'string' ? text : JSON.stringify(text);
}

function createFailedRow(job) {
  const tr = document.createElement('tr');
  tr.dataset.jobId = job.id;
  const cell = (name, text, numeric) => {
    const td = document.createElement('td');
    td.dataset.field = name;
    td.textContent = text;
    if (numeric) td.className = 'num';
    tr.appendChild(td);
    return td;
  };
  const id = cell('id', '');
  const code = document.createElement('code');
  code.textContent = job.id;
  id.appendChild(code);
  cell('queue', job.queue);
  cell('tenant', job.tenant);
  cell('attempts', `${fmtNumber(job.attempt)} / ${fmtNumber(job.max_attempts)}`, true);
  cell('error', lastError(job)).className = 'error-text';
  cell('finished_at', fmtTime(job.finished_at));
  const actions = cell('actions', '');
  const button = document.createElement('button');
  button.type = 'button';
  button.className = 'secondary';
  button.dataset.action = 'retry';
  button.textContent = 'Retry';
  button.setAttribute('aria-label', `Retry job ${job.id}`);
  button.addEventListener('click', () => retryJob(job, tr, button));
  actions.appendChild(button);
  return tr;
}

async function retryJob(job, tr, button) {
  button.disabled = true;
  try {
    const again = await api('POST', `/v1/admin/jobs/${enc(job.id)}/retry`);
    state.retriedAt.set(job.id, performance.now());
    tr.remove();
    clearMessage();
    if (!$('failed-rows').rows.length) {
      $('failed-table').hidden = true;
      $('failed-empty').hidden = false;
      $('failed-empty').textContent = 'No failed jobs.';
    }
    setStatus(`Job ${job.id} is ${again.state} again.`);
  } catch (e) {
    button.disabled = false;
    handleError(e, 'action');
  }
}

// ---------------------------------------------------------------------------------

function main() {
  $('signin-form').addEventListener('submit', signIn);
  $('signout-button').addEventListener('click', () => signOut(''));
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden && token() && !$('dashboard').hidden) startPolling();
  });
  window.addEventListener('resize', () => {
    for (const view of state.queues.values()) drawChart(view, Date.now());
  });
  if (token()) {
    showDashboard();
    startPolling();
  } else {
    showSignIn('');
  }
}

main();
