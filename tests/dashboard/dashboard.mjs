// Drives the /admin dashboard of a running sluiced in headless Chromium (Debian's
// chromium package, through playwright-core). Started by tests/system/dashboard_test.cc,
// which prepares the server and checks dispatch afterwards. Every wait is an awaited
// condition with a timeout; nothing sleeps.
//
// Environment:
//   SLUICE_URL            the server, e.g. http://127.0.0.1:4711
//   SLUICE_ADMIN_TOKEN    the admin token to sign in with
//   SLUICE_METRICS_TOKEN  a read-only metrics token, signed in with last
//   SLUICE_QUEUE          the queue whose tenants are checked and paused
//   SLUICE_DEPTHS         expected queued jobs per tenant: "acme=5,globex=3"
//   SLUICE_SUBMIT_TOKENS  a submit token per tenant: "acme=tok1,globex=tok2"
//   SLUICE_FAILED_JOB     the id of a failed job to retry from the page
//   SLUICE_SCREENSHOT     where to save the screenshot (PNG)
//   SLUICE_CHROMIUM       the browser (default /usr/bin/chromium)
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { chromium } from 'playwright-core';

const TIMEOUT_MS = 15000;     // one awaited condition
const OVERALL_MS = 120000;    // the whole run: never leave a browser behind

function env(name, fallback) {
  const v = process.env[name] ?? fallback;
  if (v === undefined || v === '') throw new Error(`${name} is not set`);
  return v;
}

function pairs(text) {
  return Object.fromEntries(text.split(',').map((p) => p.split('=')));
}

const url = env('SLUICE_URL');
const adminToken = env('SLUICE_ADMIN_TOKEN');
const metricsToken = env('SLUICE_METRICS_TOKEN');
const queue = env('SLUICE_QUEUE');
const depths = Object.fromEntries(
    Object.entries(pairs(env('SLUICE_DEPTHS'))).map(([t, n]) => [t, Number(n)]));
const submitTokens = pairs(env('SLUICE_SUBMIT_TOKENS'));
const failedJob = env('SLUICE_FAILED_JOB');
const screenshot = env('SLUICE_SCREENSHOT');
const executablePath = env('SLUICE_CHROMIUM', '/usr/bin/chromium');

function step(text) { console.log(`dashboard: ${text}`); }

function check(cond, what) {
  if (!cond) throw new Error(`check failed: ${what}`);
}

async function apiCall(method, path, token, body) {
  const res = await fetch(url + path, {
    method,
    headers: { 'Authorization': `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

const userDataDir = mkdtempSync(join(tmpdir(), 'sluice-dashboard-chromium-'));
let context = null;

async function close() {
  if (context) await context.close().catch(() => {});
  context = null;
  rmSync(userDataDir, { recursive: true, force: true });
}

for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => close().finally(() => process.exit(1)));
}
const overall = setTimeout(() => {
  console.error(`dashboard: gave up after ${OVERALL_MS} ms`);
  close().finally(() => process.exit(1));
}, OVERALL_MS);

async function run() {
  step(`launching ${executablePath}`);
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath,
    headless: true,
    viewport: { width: 1200, height: 1000 },
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  context.setDefaultTimeout(TIMEOUT_MS);
  const page = context.pages()[0] ?? await context.newPage();

  // Any script error or CSP violation on the page fails the test.
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') pageErrors.push(`console error: ${m.text()}`);
  });
  // The page must work offline: it may only talk to this server.
  const origin = new URL(url).origin;
  await page.route('**/*', (route) => {
    if (new URL(route.request().url()).origin === origin) return route.continue();
    pageErrors.push(`request outside the server: ${route.request().url()}`);
    return route.abort();
  });

  step('opening /admin');
  await page.goto(`${url}/admin`);
  await page.locator('#signin-form').waitFor();

  step('a wrong token is refused with the server\'s detail');
  await page.getByLabel('Admin or metrics token').fill('not-the-token');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.locator('#signin-error').waitFor();
  const refusal = await page.locator('#signin-error').textContent();
  check(refusal.trim().length > 0 && !/^GET /.test(refusal), `401 detail shown: "${refusal}"`);
  // The server answers 401 for a bad token; Chromium logs that failed fetch.
  pageErrors.length = 0;

  step('signing in');
  await page.getByLabel('Admin or metrics token').fill(adminToken);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.locator('#dashboard').waitFor();
  check(await page.evaluate(() => sessionStorage.getItem('sluice.adminToken')) === adminToken,
        'the token is kept in sessionStorage');

  const section = page.locator(`section.queue[data-queue="${queue}"]`);
  const queuedCell = (tenant) =>
      section.locator(`[data-role="tenants"] tr[data-tenant="${tenant}"] [data-field="queued"]`);
  const expectText = async (locator, text, what) => {
    try {
      await locator.filter({ hasText: new RegExp(`^\\s*${text}\\s*$`) }).waitFor();
    } catch (e) {
      const got = await locator.textContent().catch(() => '(absent)');
      throw new Error(`${what}: expected "${text}", page shows "${got}"`);
    }
  };

  step(`both tenants' depth: ${JSON.stringify(depths)}`);
  for (const [tenant, n] of Object.entries(depths)) {
    await expectText(queuedCell(tenant), String(n), `queued jobs of ${tenant}`);
    await section.locator(`[data-role="legend"] li[data-tenant="${tenant}"]`).waitFor();
  }

  step('the view refreshes by itself: more jobs for one tenant show up');
  const [grower] = Object.keys(depths).slice(-1);
  for (let i = 0; i < 3; i++) {
    const r = await apiCall('POST', `/v1/queues/${queue}/jobs`, submitTokens[grower],
                            { payload: { added: i } });
    check(r.status === 202, `submit answered ${r.status}: ${JSON.stringify(r.body)}`);
  }
  await expectText(queuedCell(grower), String(depths[grower] + 3), `queued jobs of ${grower}`);

  step('the failed job is listed');
  const failedRow = page.locator(`#failed-rows tr[data-job-id="${failedJob}"]`);
  await failedRow.waitFor();

  step('pressing pause');
  await section.getByRole('button', { name: `Pause queue ${queue}` }).click();
  await section.locator('[data-role="state"]', { hasText: 'paused' }).waitFor();
  await page.locator(`section.queue[data-queue="${queue}"][data-paused="true"]`).waitFor();
  await section.getByRole('button', { name: `Resume queue ${queue}` }).waitFor();
  const q = await apiCall('GET', `/v1/admin/queues/${queue}`, adminToken);
  check(q.body.paused === true, `the server says ${queue} is paused: ${JSON.stringify(q.body)}`);

  mkdirSync(dirname(screenshot), { recursive: true });
  await page.screenshot({ path: screenshot, fullPage: true });
  step(`screenshot saved: ${screenshot}`);

  step('retrying the failed job');
  await failedRow.getByRole('button', { name: `Retry job ${failedJob}` }).click();
  await failedRow.waitFor({ state: 'detached' });
  const job = await apiCall('GET', `/v1/jobs/${failedJob}`, adminToken);
  check(job.body.state === 'queued', `retried job is queued: ${JSON.stringify(job.body)}`);

  step('a token that stops working returns to the sign-in form');
  await page.evaluate(() => sessionStorage.setItem('sluice.adminToken', 'revoked'));
  await page.locator('#signin-form').waitFor();
  check(await page.evaluate(() => sessionStorage.getItem('sluice.adminToken')) === null,
        'the refused token is forgotten');

  step('a metrics token signs in read-only: the depths, no buttons, no jobs');
  await page.getByLabel('Admin or metrics token').fill(metricsToken);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.locator('#dashboard').waitFor();
  await page.locator('#readonly-note').waitFor();
  await expectText(queuedCell(grower), String(depths[grower] + 3), `queued jobs of ${grower}`);
  await section.locator('[data-role="state"]', { hasText: 'paused' }).waitFor();
  check(await page.locator('#dashboard button:visible').count() === 0,
        'no button is shown to a metrics token');
  check(await page.locator('#failed-jobs').isHidden(), 'the failed-jobs list is hidden');
  const after = await apiCall('GET', `/v1/admin/queues/${queue}`, adminToken);
  check(after.body.paused === true, `still paused: ${JSON.stringify(after.body)}`);

  // Chromium logs the refused calls: the 401s above and the one 403 that told the page
  // it holds a metrics token.
  pageErrors.splice(0, pageErrors.length,
                    ...pageErrors.filter((e) => !/40[13] \((Unauthorized|Forbidden)\)/.test(e)));

  check(pageErrors.length === 0, `no errors on the page:\n${pageErrors.join('\n')}`);
  step('all checks passed');
}

try {
  await run();
} catch (e) {
  console.error(`dashboard: FAILED: ${e.stack || e}`);
  process.exitCode = 1;
} finally {
  clearTimeout(overall);
  await close();
}
