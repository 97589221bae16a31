// Copied unchanged (but for these two lines) from ../shared/peer-bench/pgboss-throughput.js,
// the peer figure's script (2026-12-01); bench/cluster.sh runs it against pg-boss 10.4.2.
// pg-boss enqueue / end-to-end throughput across T "tenant" queues (same shape as bullmq-throughput.js).
// Usage: NODE_PATH=$PEER_DIR/pgboss/node_modules node $PEER_DIR/pgboss-throughput.js \
//          --mode bulk|single --phase separate|concurrent [--n 20000] [--tenants 10] [--wconc 4]
//          [--batch 1] [--chunk 500] [--inflight 50] [--url postgres://postgres@127.0.0.1:5499/bench]
// Workers: per queue, `wconc` independent boss.work() pollers, each fetching `batch` jobs per poll
// (pg-boss v10 has no per-worker concurrency option; several work() calls are its equivalent).
// Workers run in a forked child process with their own PgBoss instance/pool.
const { fork } = require('child_process');
const PgBoss = require('pg-boss');

function arg(name, def) {
  const i = process.argv.indexOf('--' + name);
  if (i < 0) return def;
  const v = process.argv[i + 1];
  return v === undefined || v.startsWith('--') ? true : v;
}
const N = +arg('n', 20000), T = +arg('tenants', 10), WCONC = +arg('wconc', 4), BATCH = +arg('batch', 1);
const CHUNK = +arg('chunk', 500), INFLIGHT = +arg('inflight', 50);
const MODE = arg('mode', 'bulk'), PHASE = arg('phase', 'concurrent');
const URL = arg('url', 'postgres://postgres@127.0.0.1:5499/bench');
const qname = (t) => `bench-tenant-${t}`;
const pct = (a, p) => a.length ? a[Math.min(a.length - 1, Math.floor(p * a.length))] : NaN;
const mkBoss = (max) => new PgBoss({ connectionString: URL, max, schedule: false, supervise: false });

if (process.argv.includes('--child')) {
  (async () => {
    const boss = mkBoss(T * WCONC + 5);
    boss.on('error', (e) => console.error('child boss error', e.message));
    await boss.start();
    let done = 0, first = 0, last = 0; const lat = [];
    process.on('message', async (m) => {
      if (m.cmd === 'start') {
        for (let t = 0; t < T; t++) {
          for (let w = 0; w < WCONC; w++) {
            await boss.work(qname(t), { batchSize: BATCH, pollingIntervalSeconds: 0.5 }, async (jobs) => {
              const now = Date.now();
              for (const j of jobs) { lat.push(now - j.data.t); }
              if (!first) first = now; last = now; done += jobs.length;
              if (done === N) {
                lat.sort((a, b) => a - b);
                // handler resolves after this; report once handlers for all N jobs have run
                setImmediate(() => process.send({ cmd: 'done', first, last, p50: pct(lat, 0.5), p99: pct(lat, 0.99), max: lat[lat.length - 1] }));
              }
            });
          }
        }
        process.send({ cmd: 'ready', t: Date.now() });
      } else if (m.cmd === 'stop') {
        await boss.stop({ graceful: false, wait: true, timeout: 2000 }).catch(() => {});
        process.exit(0);
      }
    });
    process.send({ cmd: 'booted' });
  })().catch((e) => { console.error(e); process.exit(1); });
} else {
  (async () => {
    const boss = mkBoss(INFLIGHT + 5);
    boss.on('error', (e) => console.error('boss error', e.message));
    await boss.start();
    for (let t = 0; t < T; t++) {
      await boss.deleteQueue(qname(t)).catch(() => {});
      await boss.createQueue(qname(t));
    }
    const child = fork(__filename, [...process.argv.slice(2), '--child']);
    const wait = (cmd) => new Promise((res) => {
      const h = (m) => { if (m.cmd === cmd) { child.off('message', h); res(m); } };
      child.on('message', h);
    });
    await wait('booted');
    const startWorkers = async () => { const r = wait('ready'); child.send({ cmd: 'start' }); return r; };
    if (PHASE === 'concurrent') await startWorkers();
    const doneP = wait('done');
    const t0 = Date.now();
    if (MODE === 'bulk') {
      const perQ = [...Array(T)].map(() => []);
      for (let i = 0; i < N; i++) perQ[i % T].push(i);
      for (let off = 0; off < N / T; off += CHUNK) {
        for (let t = 0; t < T; t++) {
          const ts = Date.now();
          await boss.insert(perQ[t].slice(off, off + CHUNK).map((i) => ({ name: qname(t), data: { i, t: ts } })));
        }
      }
    } else {
      let next = 0;
      const lane = async () => { while (true) { const i = next++; if (i >= N) return; await boss.send(qname(i % T), { i, t: Date.now() }); } };
      await Promise.all([...Array(INFLIGHT)].map(lane));
    }
    const t1 = Date.now();
    let drainStart = t0;
    if (PHASE === 'separate') { const r = await startWorkers(); drainStart = r.t; }
    const d = await doneP;
    // wait until pg-boss has marked all N jobs completed in the database
    let tDb;
    for (;;) {
      const r = await boss.getDb().executeSql("select count(*)::int c from pgboss.job where name like 'bench-tenant-%' and state='completed'", []);
      if (r.rows[0].c >= N) { tDb = Date.now(); break; }
      await new Promise((r2) => setTimeout(r2, 20));
    }
    const out = {
      pgboss: require('pg-boss/package.json').version, mode: MODE, phase: PHASE, n: N, tenants: T,
      pollers_per_queue: WCONC, batch_size: BATCH,
      chunk: MODE === 'bulk' ? CHUNK : undefined, inflight: MODE === 'single' ? INFLIGHT : undefined,
      enqueue_s: (t1 - t0) / 1000, enqueue_jobs_per_s: Math.round(N / ((t1 - t0) / 1000)),
      handlers_done_s: (d.last - drainStart) / 1000, handled_jobs_per_s: Math.round(N / ((d.last - drainStart) / 1000)),
      db_completed_s: (tDb - drainStart) / 1000, completed_jobs_per_s: Math.round(N / ((tDb - drainStart) / 1000)),
    };
    if (PHASE === 'concurrent') out.enqueue_to_handler_ms = { p50: d.p50, p99: d.p99, max: d.max };
    console.log(JSON.stringify(out));
    child.send({ cmd: 'stop' });
    await boss.stop({ graceful: false, wait: true, timeout: 2000 }).catch(() => {});
    setTimeout(() => process.exit(0), 3000).unref();
  })().catch((e) => { console.error(e); process.exit(1); });
}
