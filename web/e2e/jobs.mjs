// jobs.mjs - the Jobs, Regressions and compare views in the browser,
// against what the server's API answers for generated sessions:
//   - a 4-rank job (job/rank/world_size in the session line) whose rank 2
//     runs its GEMMs 30 % slower while the others wait for it in NCCL
//     (the server must name rank 2, a GEMM and the wait);
//   - an app with 5 ended runs of noise, then a run whose GEMMs are 20 %
//     slower (the server's scan, on its maintenance tick, must find it).
// The sessions are event lines as tests/server/test_jobs.py writes them
// (kernel durations log-normal around their name's median, each run scaled
// by up to +-2 %), with two template instantiations whose readable names
// are the same (the readable form is cut at 4,096 bytes: docs/events.md).
import { ingestStream } from './gen.mjs';

export const JOB = 'e2e-job-slow';
export const JOB_APP = 'trainer_e2e';
export const NIGHTLY = 'nightly_e2e';
export const GEMMS = ['ampere_sgemm_128x64_nn', 'sm90_xmma_gemm_f16f16_f32_tn'];
const TWIN = 'void cutlass::Kernel<cutlass::gemm::GemmUniversal<…> >(…)';
// [recorded name, readable name or null, median ns, calls per step]
const KERNELS = [
  [GEMMS[0], null, 400000, 2],
  [GEMMS[1], null, 250000, 2],
  ['vectorized_elementwise_kernel_add', null, 30000, 6],
  ['_ZN7cutlass6KernelINS_4gemm6kernel13GemmUniversalILi1EEEEEvNT_6ParamsE', TWIN, 20000, 1],
  ['_ZN7cutlass6KernelINS_4gemm6kernel13GemmUniversalILi2EEEEEvNT_6ParamsE', TWIN, 15000, 1],
];
const NCCL = 'ncclDevKernel_AllReduce_Sum_f32_RING_LL';
const NCCL_NS = 200000;

function rng(seed) {
  let a = seed >>> 0 || 1;
  const u = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const gauss = (s) => s * Math.sqrt(-2 * Math.log(1 - u())) * Math.cos(2 * Math.PI * u());
  return { u, gauss };
}

/* Device and scope lines of one run, and its compute time per step. */
export function runLines(sid, app, seed, o = {}) {
  const steps = o.steps ?? 30;
  const gemm = o.gemm ?? 1;
  const start = o.start;
  const r = rng(seed);
  const run = 1 + (o.jitter === false ? 0 : (r.u() * 2 - 1) * 0.02);
  const sess = {
    app,
    host: 'e2e-' + app,
    pid: 1000 + seed,
    start,
    lib: '0.1.0',
    simulated: true,
    streams: ['device', 'scope'],
  };
  if (o.job) Object.assign(sess, { job: o.job, job_source: 'GPUFL_JOB', rank: o.rank, world_size: o.world });
  const dev = [];
  const sc = [];
  const line = (arr, st, type, ts, kw) =>
    arr.push(JSON.stringify({ v: 1, sid, st, seq: arr.length, ts: '@' + ts, type, ...kw }).replace(/"@(\d+)"/g, '$1'));
  line(dev, 'device', 'session', start, { ...sess, start: '@' + start });
  const names = [...KERNELS.map((k) => [k[0], k[1]]), [NCCL, null]];
  names.forEach(([n, d], i) =>
    line(dev, 'device', 'dict', start, { id: i + 1, kind: 'name', name: n, ...(d ? { demangled: d } : {}) }),
  );
  const STEP = names.length + 1;
  const FWD = STEP + 1;
  const LOAD = STEP + 2;
  for (const [id, n] of [
    [STEP, 'train_step'],
    [FWD, 'forward'],
    [LOAD, 'data_load'],
  ])
    line(dev, 'device', 'dict', start, { id, kind: 'name', name: n });
  line(sc, 'scope', 'session', start, { ...sess, start: '@' + start });
  line(sc, 'scope', 'dict', start, { id: 20, kind: 'path', parent: 0, name: STEP, depth: 1 });
  line(sc, 'scope', 'dict', start, { id: 21, kind: 'path', parent: 20, name: FWD, depth: 2 });
  line(sc, 'scope', 'dict', start, { id: 22, kind: 'path', parent: 20, name: LOAD, depth: 2 });
  let t = start + 1000n;
  let inst = 100;
  const stall = 20000n;
  const compute = [];
  for (let step = 0; step < steps; step++) {
    const b = t;
    const top = ++inst;
    line(sc, 'scope', 'scope_begin', b, { id: top, name: STEP, path: 20, depth: 1, tid: 1 });
    const ld = ++inst;
    line(sc, 'scope', 'scope_begin', t, { id: ld, name: LOAD, path: 22, parent: top, depth: 2, tid: 1 });
    t += stall;
    line(sc, 'scope', 'scope_end', t, {
      id: ld,
      name: LOAD,
      path: 22,
      parent: top,
      depth: 2,
      tid: 1,
      dur: Number(stall),
    });
    let busy = Number(stall);
    const fw = ++inst;
    const f0 = t;
    line(sc, 'scope', 'scope_begin', t, { id: fw, name: FWD, path: 21, parent: top, depth: 2, tid: 1 });
    KERNELS.forEach(([name, , med, calls], ki) => {
      const f = GEMMS.includes(name) ? gemm : 1;
      for (let c = 0; c < calls; c++) {
        const dur = Math.round(med * f * run * Math.exp(r.gauss(0.1)));
        line(dev, 'device', 'kernel', t, { dev: 0, stream: 7, name: ki + 1, dur, scope: fw });
        t += BigInt(dur + 2000);
        busy += dur + 2000;
      }
    });
    line(sc, 'scope', 'scope_end', t, {
      id: fw,
      name: FWD,
      path: 21,
      parent: top,
      depth: 2,
      tid: 1,
      dur: Number(t - f0),
    });
    compute.push(busy);
    const nd = Math.round(NCCL_NS * Math.exp(r.gauss(0.02))) + (o.wait ? o.wait[step] : 0);
    line(dev, 'device', 'kernel', t, { dev: 0, stream: 8, name: KERNELS.length + 1, dur: nd });
    t += BigInt(nd + 5000);
    line(sc, 'scope', 'scope_end', t, { id: top, name: STEP, path: 20, depth: 1, tid: 1, dur: Number(t - b) });
    t += 1000n;
  }
  line(dev, 'device', 'session_end', t, { reason: 'exit' });
  line(sc, 'scope', 'session_end', t, { reason: 'exit' });
  return { dev, sc, compute };
}

const uuid = (k) => 'e2e10b00-0000-4000-8000-' + String(k).padStart(12, '0');

async function send(U, token, { dev, sc }) {
  await ingestStream(U, token, 'device', dev);
  await ingestStream(U, token, 'scope', sc);
}

/* Ingests the job and the nightly runs; returns their session ids. */
export async function ingestJobsAndRuns(U, token) {
  const now = BigInt(Date.now()) * 1000000n;
  const jobStart = now - 3600n * 1000000000n;
  const comp = [0, 1, 2, 3].map(
    (r) => runLines('x', JOB_APP, 10 + r, { start: jobStart, gemm: r === 2 ? 1.3 : 1 }).compute,
  );
  const slowest = comp[0].map((_, i) => Math.max(...comp.map((c) => c[i])));
  const job = [];
  for (let r = 0; r < 4; r++) {
    const sid = uuid(100 + r);
    job.push(sid);
    await send(
      U,
      token,
      runLines(sid, JOB_APP, 10 + r, {
        start: jobStart + BigInt(r) * 1000n,
        gemm: r === 2 ? 1.3 : 1,
        job: JOB,
        rank: r,
        world: 4,
        wait: slowest.map((v, i) => v - comp[r][i]),
      }),
    );
  }
  // the nightly runs, 1000 s apart, the perturbed one last
  const t0 = now - 3n * 3600n * 1000000000n;
  const base = [];
  for (let i = 0; i < 5; i++) {
    const sid = uuid(200 + i);
    base.push(sid);
    await send(U, token, runLines(sid, NIGHTLY, 1000 + i, { start: t0 + BigInt(i) * 1000000000000n }));
  }
  const bad = uuid(299);
  await send(U, token, runLines(bad, NIGHTLY, 5000, { start: t0 + 20n * 1000000000000n, gemm: 1.2, jitter: false }));
  return { job, base, bad };
}

/* "1.94 ms" -> ns and the half unit of its last digit. */
function parseNs(s) {
  const m = /(-?[\d.]+)\s*(ns|µs|ms|s)\b/.exec(s);
  if (!m) return null;
  const mul = { ns: 1, µs: 1e3, ms: 1e6, s: 1e9 }[m[2]];
  const dec = (m[1].split('.')[1] ?? '').length;
  return { v: Number(m[1]) * mul, tol: (0.5 * mul) / 10 ** dec + 1e-6 };
}
const nsNear = (s, api) => {
  const p = parseNs(s);
  return !!p && Math.abs(p.v - Number(api)) <= p.tol;
};

/* The checks; h: { page, U, get, check, attempt, shot, text, idle, OUT, ids } */
export async function jobChecks(h) {
  const { page, U, get, check, attempt, shot, text, ids } = h;
  const api = await get('jobs/' + JOB);

  await attempt('jobs_list', async () => {
    await page.goto(U + '/#/jobs');
    await page.waitForSelector('[data-testid=job-row]');
    const jl = await get('jobs?limit=1000');
    const rows = await page.$$eval('[data-testid=job-row]', (r) =>
      r.map((x) => [x.getAttribute('data-job'), x.querySelector('[data-testid=job-ranks]').textContent.trim()]),
    );
    const want = jl.items.map((j) => [j.job, j.ranks_seen + ' / ' + (j.world_size ?? '?')]);
    check(
      'jobs_list',
      JSON.stringify(rows) === JSON.stringify(want) && rows.some(([j]) => j === JOB),
      JSON.stringify(rows) + ' (API ' + JSON.stringify(want) + ')',
    );
  });

  await attempt('jobs_page', async () => {
    await page.click(`[data-job="${JOB}"] [data-testid=job-open]`);
    await page.waitForSelector('[data-testid=rank-row]');
    const verdict = await text('[data-testid=verdict-text]');
    const vr = await text('[data-testid=verdict-ranks]').catch(() => '');
    const wantRanks = api.stragglers.map((s) => String(s.rank)).join(', ');
    const ranks = await page.$$eval('[data-testid=rank-row]', (r) =>
      r.map((x) => ({
        rank: x.getAttribute('data-rank'),
        session: x.getAttribute('data-session'),
        median: x.querySelector('[data-testid=rank-median]').textContent,
        compute: x.querySelector('[data-testid=rank-compute]').textContent,
        busy: x.querySelector('[data-testid=rank-busy]').textContent,
        coll: x.querySelector('[data-testid=rank-coll]').textContent,
        steps: x.querySelector('[data-testid=rank-steps]').textContent,
        straggler: !!x.querySelector('[data-testid=badge-straggler]'),
        href: x.querySelector('[data-testid=rank-open]').getAttribute('href'),
      })),
    );
    const bad = [];
    if (ranks.length !== api.ranks.length) bad.push(ranks.length + ' rows for ' + api.ranks.length + ' ranks');
    api.ranks.forEach((a, i) => {
      const u = ranks[i] ?? {};
      if (u.rank !== String(a.rank) || u.session !== a.session) bad.push('row ' + i + ' is ' + u.rank);
      if (!nsNear(u.median, a.step_median_ns))
        bad.push('rank ' + a.rank + ' median ' + u.median + ' vs ' + a.step_median_ns);
      if (!nsNear(u.compute, a.compute_median_ns)) bad.push('rank ' + a.rank + ' compute ' + u.compute);
      if (Math.abs(parseFloat(u.busy) - a.busy_share * 100) > 0.051) bad.push('rank ' + a.rank + ' busy ' + u.busy);
      if (!nsNear(u.coll, a.collective_ns)) bad.push('rank ' + a.rank + ' collectives ' + u.coll);
      if (Number(u.steps) !== a.steps) bad.push('rank ' + a.rank + ' steps ' + u.steps);
      if (u.straggler !== a.straggler) bad.push('rank ' + a.rank + ' straggler ' + u.straggler);
      if (u.href !== '#/kernels?s=' + a.session) bad.push('rank ' + a.rank + ' link ' + u.href);
    });
    check(
      'jobs_verdict',
      verdict === api.verdict && api.verdict === 'straggler' && vr === wantRanks && wantRanks === '2',
      'page: ' + verdict + ' ' + vr + '; API: ' + api.verdict + ' ' + wantRanks,
    );
    check('jobs_ranks', bad.length === 0 && ranks.length === 4, bad.join('; ') || ranks.length + ' ranks as the API');
    // the evidence: the server's words, and its numbers
    const st = api.stragglers[0];
    const ev = await text('[data-testid=straggler-evidence]');
    const ratio = await text('[data-testid=ev-ratio]');
    const kern = await text('[data-testid=ev-kernel]');
    const wait = await text('[data-testid=ev-wait]');
    const okEv =
      ev === st.evidence &&
      ratio.includes(st.ratio.toFixed(3)) &&
      ratio.includes(st.lo.toFixed(3) + '–' + st.hi.toFixed(3)) &&
      GEMMS.includes(st.kernel) &&
      kern.startsWith(st.kernel) &&
      nsNear(kern.slice(st.kernel.length), st.kernel_extra_ns) &&
      nsNear(wait, st.collective_wait_ns) &&
      Number(st.collective_wait_ns) > 0;
    check('jobs_evidence', okEv, ratio + ' | ' + kern + ' | ' + wait + ' | ' + ev.slice(0, 120));
    // the chart: one bar per rank at its median, one line per rank
    const bars = await page.$$eval('[data-testid=step-bar]', (b) =>
      b.map((x) => [
        x.getAttribute('data-rank'),
        Number(x.getAttribute('data-median')),
        Number(x.querySelector('rect').getAttribute('height')),
        Number(x.getAttribute('data-compute')),
        Number(x.querySelector('[data-testid=step-bar-compute]').getAttribute('height')),
      ]),
    );
    const lines = await page.$$eval('[data-testid=step-line]', (l) =>
      l.map((x) => [x.getAttribute('data-rank'), (x.getAttribute('d').match(/[ML]/g) ?? []).length]),
    );
    const okChart =
      bars.length === api.ranks.length &&
      bars.every(
        ([r, m, hh], i) => r === String(api.ranks[i].rank) && m === Number(api.ranks[i].step_median_ns) && hh > 0,
      ) &&
      bars.every(([, m, hh]) => Math.abs(hh / bars[0][2] - m / bars[0][1]) < 0.01) &&
      bars.every(
        ([, , , c, ch], i) =>
          c === Number(api.ranks[i].compute_median_ns) && Math.abs(ch / bars[0][4] - c / bars[0][3]) < 0.01,
      ) &&
      // the straggler's solid bar is the tallest
      bars.every(([r, , , , ch]) => r === '2' || ch < bars[2][4]) &&
      lines.length === api.ranks.length &&
      lines.every(([r, n], i) => r === String(api.ranks[i].rank) && n === api.ranks[i].steps_ns.length);
    check('jobs_chart', okChart, JSON.stringify(bars) + ' lines ' + JSON.stringify(lines));
    await shot('job');
    // a rank's link opens its session's Kernels timeline, labelled with job and rank
    await page.click('[data-rank="2"] [data-testid=rank-open]');
    await page.waitForSelector('[data-testid=session-job]');
    const lab = await text('[data-testid=session-job]');
    check(
      'jobs_rank_link',
      page.url().includes('#/kernels?s=' + ids.job[2]) && lab === 'job ' + JOB + ' · rank 2 of 4',
      page.url() + ' | ' + lab,
    );
  });

  await attempt('jobs_timeline', async () => {
    // one lane per rank, in the API's rank order; each lane's columns are
    // the columns its session's GET …/timeline lists for the same window
    // (read off the canvas pixels too); the clock alignment said; a drag
    // zooms in and every lane is asked again for the new window
    await page.goto(U + '/#/jobs?job=' + encodeURIComponent(JOB));
    await page.waitForSelector('[data-testid=job-tl-lane][data-busy-cols]:not([data-busy-cols="0"])');
    const read = async () => {
      const w = await page.$eval('[data-testid=job-tl-window]', (e) => ({
        from: e.getAttribute('data-from'),
        to: e.getAttribute('data-to'),
        width: Number(e.getAttribute('data-width')),
      }));
      const lanes = await page.$$eval('[data-testid=job-tl-lane]', (r) =>
        r.map((x) => ({
          rank: x.getAttribute('data-rank'),
          session: x.getAttribute('data-session'),
          busy: Number(x.getAttribute('data-busy-cols')),
        })),
      );
      const drawn = await page.$eval('[data-testid=job-tl-canvas]', (c) => {
        const g = c.getContext('2d');
        const out = [];
        for (let y = 8; y < c.height; y += 16) {
          const px = g.getImageData(0, y, c.width, 1).data;
          let n = 0;
          for (let i = 3; i < px.length; i += 4) if (px[i] > 0) n++;
          out.push(n);
        }
        return out;
      });
      const bad = [];
      for (const [i, l] of lanes.entries()) {
        const a = await get('sessions/' + l.session + '/timeline?from=' + w.from + '&to=' + w.to + '&width=' + w.width);
        const cols = new Set();
        for (const ln of a.lanes) for (const b of ln.buckets) if (b[0] >= 0 && b[0] < w.width) cols.add(b[0]);
        if (l.rank !== String(api.ranks[i].rank) || l.session !== api.ranks[i].session)
          bad.push('lane ' + i + ' is rank ' + l.rank);
        if (l.busy !== cols.size || drawn[i] !== cols.size)
          bad.push('rank ' + l.rank + ': ' + l.busy + ' columns said, ' + drawn[i] + ' drawn, API ' + cols.size);
      }
      return { w, lanes, bad };
    };
    const a = await read();
    const note = await text('[data-testid=job-tl-clock]');
    const hosts = [...new Set(api.ranks.map((r) => r.host))].sort();
    // drag over the middle fifth
    const box = await (await page.$('[data-testid=job-tl-canvas]')).boundingBox();
    await page.mouse.move(box.x + 400, box.y + 10);
    await page.mouse.down();
    await page.mouse.move(box.x + 600, box.y + 20);
    await page.mouse.up();
    await page.waitForFunction(
      (f) => document.querySelector('[data-testid=job-tl-window]').getAttribute('data-from') !== f,
      a.w.from,
    );
    await page.waitForSelector('[data-testid=job-tl-reset]');
    await h.idle();
    const b = await read();
    const span = (w) => BigInt(w.to) - BigInt(w.from);
    check(
      'jobs_timeline',
      a.lanes.length === api.ranks.length &&
        a.bad.length === 0 &&
        b.bad.length === 0 &&
        a.w.from === String(api.start_ns) &&
        a.lanes.every((l) => l.busy > 0) &&
        span(b.w) * 4n < span(a.w) &&
        note.startsWith('Aligned on the wall clock') &&
        hosts.every((x) => note.includes(x)),
      [...a.bad, ...b.bad].join('; ') ||
        a.lanes.map((l) => 'rank ' + l.rank + ' ' + l.busy).join(', ') +
          ' columns; zoomed ' +
          span(a.w) +
          ' → ' +
          span(b.w) +
          ' ns; ' +
          note,
    );
    await shot('job-timeline');
  });

  await attempt('jobs_sessions_grouped', async () => {
    await page.goto(U + '/#/sessions');
    await page.waitForSelector('[data-testid=session-row]');
    await page.selectOption('[data-testid=session-group]', 'job');
    const blk = `[data-testid=session-group-block][data-key="${JOB}"]`;
    await page.waitForSelector(blk);
    const sids = await page.$$eval(blk + ' [data-testid=session-row]', (r) => r.map((x) => x.getAttribute('data-sid')));
    const labels = await page.$$eval(blk + ' [data-testid=session-job-link]', (r) =>
      r.map((x) => x.textContent.trim()),
    );
    const inJob = (await get('sessions?job=' + JOB)).items;
    const want = inJob.slice().sort((a, b) => a.rank - b.rank);
    check(
      'jobs_sessions_grouped',
      JSON.stringify(sids) === JSON.stringify(want.map((s) => s.id)) &&
        JSON.stringify(labels) === JSON.stringify(want.map((s) => 'job ' + JOB + ' · rank ' + s.rank + ' of 4')) &&
        sids.length === 4,
      JSON.stringify(labels),
    );
  });
}

export async function regressionChecks(h) {
  const { page, U, get, check, attempt, shot, text, ids } = h;
  // the scan runs on the server's maintenance tick after the session ended
  const t0 = Date.now();
  let mine;
  for (;;) {
    mine = await get('sessions/' + ids.bad + '/regressions');
    if (mine.scanned || Date.now() - t0 > 30000) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  check('regress_scanned', mine.scanned, 'scanned after ' + ((Date.now() - t0) / 1000).toFixed(1) + ' s');
  const api = await get('regressions?app=' + NIGHTLY + '&limit=1000');
  const slower = api.items.filter((f) => f.kind === 'slower' && f.subject === 'kernel').map((f) => f.name);

  await attempt('regress_view', async () => {
    await page.goto(U + '/#/regressions?app=' + NIGHTLY);
    await page.waitForSelector('[data-testid=reg-row]');
    // the baseline links come with a second answer (the app's ended
    // sessions), which may land after the rows (a full run read the rows
    // first): wait for them, then check whatever is there
    await page
      .waitForFunction(
        () => {
          const r = [...document.querySelectorAll('[data-testid=reg-row]')];
          return r.length > 0 && r.every((x) => x.querySelector('[data-testid=reg-link-base]'));
        },
        null,
        { timeout: 10000 },
      )
      .catch(() => {});
    const rows = await page.$$eval('[data-testid=reg-row]', (r) =>
      r.map((x) => ({
        kind: x.getAttribute('data-kind'),
        name: x.getAttribute('data-name'),
        shown: x.querySelector('[data-testid=reg-name]').textContent,
        ratio: x.querySelector('[data-testid=reg-ratio]').textContent,
        p: x.querySelector('[data-testid=reg-p]').textContent,
        counts: x.querySelector('[data-testid=reg-counts]').textContent,
        base: x.querySelector('[data-testid=reg-base]').textContent,
        cur: x.querySelector('[data-testid=reg-cur]').textContent,
        link: x.querySelector('[data-testid=reg-link-cur]').getAttribute('href'),
        blink: x.querySelector('[data-testid=reg-link-base]')?.getAttribute('href') ?? null,
        subject: x.querySelector('[data-testid=reg-subject]').textContent,
      })),
    );
    const bad = [];
    if (rows.length !== api.items.length) bad.push(rows.length + ' rows for ' + api.items.length + ' findings');
    // a kernel: its Kernels view filtered at it; a scope path: the Scopes view
    const q = (sid, name, subject) =>
      subject === 'kernel'
        ? '#/kernels?' + new URLSearchParams({ s: sid, q: name }).toString()
        : '#/' + (subject === 'memory' ? 'memory' : 'scopes') + '?' + new URLSearchParams({ s: sid }).toString();
    api.items.forEach((f, i) => {
      const u = rows[i] ?? {};
      if (u.kind !== f.kind || u.name !== f.name || u.shown !== f.name)
        bad.push('row ' + i + ': ' + u.kind + ' ' + u.name);
      if (
        f.ratio !== null &&
        !(
          u.ratio.includes(f.ratio.toFixed(3)) &&
          u.ratio.includes(f.lo.toFixed(3) + '–' + (f.hi === null ? '∞' : f.hi.toFixed(3)))
        )
      )
        bad.push(f.name + ' ratio ' + u.ratio);
      if (f.p === 0 && u.p !== '< 0.000001') bad.push(f.name + ' p ' + u.p);
      if (u.counts !== f.base_count + ' → ' + f.cur_count) bad.push(f.name + ' counts ' + u.counts);
      if (f.base_median_ns !== null && !nsNear(u.base, f.base_median_ns)) bad.push(f.name + ' base ' + u.base);
      if (f.cur_median_ns !== null && !nsNear(u.cur, f.cur_median_ns)) bad.push(f.name + ' cur ' + u.cur);
      if (u.subject !== f.subject) bad.push(f.name + ' subject ' + u.subject);
      if (u.link !== q(f.session, f.name, f.subject)) bad.push(f.name + ' link ' + u.link);
      // the newest baseline run: the 5th of the noise runs
      if (u.blink !== q(ids.base[4], f.name, f.subject)) bad.push(f.name + ' baseline link ' + u.blink);
    });
    check(
      'regress_view',
      bad.length === 0 && slower.length === 2 && GEMMS.every((g) => slower.includes(g)),
      bad.join('; ') || rows.length + ' findings as the API (slower: ' + slower.join(', ') + ')',
    );
    await shot('regressions');
    // the kind filter asks the server again
    await page.selectOption('[data-testid=reg-kind]', 'faster');
    await page.waitForFunction(() => /kind=faster/.test(location.hash));
    await page.waitForSelector('[data-testid=empty], [data-testid=reg-row][data-kind=faster]');
    const nFaster = await page.locator('[data-testid=reg-row]').count();
    const aFaster = (await get('regressions?app=' + NIGHTLY + '&kind=faster')).items.length;
    await page.selectOption('[data-testid=reg-app]', '');
    await page.selectOption('[data-testid=reg-kind]', 'slower');
    await page.waitForFunction(() => /kind=slower/.test(location.hash) && !/app=/.test(location.hash));
    await page.waitForSelector('[data-testid=reg-row]');
    const allSlower = (await get('regressions?kind=slower&limit=1000')).items;
    await page
      .waitForFunction(
        (n) => document.querySelectorAll('[data-testid=reg-row][data-kind=slower]').length === n,
        allSlower.length,
        { timeout: 5000 },
      )
      .catch(() => {});
    const nSlower = await page.locator('[data-testid=reg-row]').count();
    const apps = await page.$$eval('[data-testid=reg-app-block]', (b) => b.map((x) => x.getAttribute('data-app')));
    check(
      'regress_filters',
      nFaster === aFaster && nSlower === allSlower.length && apps.includes(NIGHTLY),
      'faster ' +
        nFaster +
        ' (API ' +
        aFaster +
        '), slower in every app ' +
        nSlower +
        ' (API ' +
        allSlower.length +
        ') in ' +
        apps.join(', '),
    );
  });

  await attempt('regress_dist', async () => {
    // a slower GEMM's two distributions: the values are the API's
    // durations of this run and of each of its baseline runs, and this
    // run's mass lies to the right of the baseline's
    const g = api.items.find((f) => f.kind === 'slower' && f.subject === 'kernel');
    await page.goto(U + '/#/regressions?app=' + NIGHTLY);
    await page.waitForSelector('[data-testid=reg-row]');
    await page.click(`[data-testid=reg-row][data-kind=slower][data-name="${g.name}"] [data-testid=reg-dist-toggle]`);
    await page.waitForSelector('[data-testid=reg-dist]');
    const got = await page.$eval('[data-testid=reg-dist]', (d) => ({
      runs: Number(d.getAttribute('data-base-runs')),
      n: Number(d.getAttribute('data-cur-n')),
      base: [...d.querySelectorAll('[data-testid=reg-dist-base]')].map((r) => Number(r.getAttribute('data-share'))),
      cur: [...d.querySelectorAll('[data-testid=reg-dist-cur]')].map((r) => Number(r.getAttribute('data-share'))),
    }));
    const dur = await get('sessions/' + ids.bad + '/durations');
    const want = dur.by_kernel.find((k) => k.name === g.name).values.length;
    const mean = (v) => v.reduce((a, x, i) => a + x * i, 0) / v.reduce((a, x) => a + x, 0);
    const sum = (v) => v.reduce((a, x) => a + x, 0);
    check(
      'regress_dist',
      got.runs === Number(g.base_sessions) &&
        got.n === want &&
        got.base.length === got.cur.length &&
        got.base.length > 0 &&
        Math.abs(sum(got.base) - 1) < 0.01 &&
        Math.abs(sum(got.cur) - 1) < 0.01 &&
        mean(got.cur) > mean(got.base),
      g.name +
        ': ' +
        got.runs +
        ' baseline runs, ' +
        got.n +
        ' values (API ' +
        want +
        '), mean bin ' +
        mean(got.base).toFixed(1) +
        ' → ' +
        mean(got.cur).toFixed(1),
    );
    await shot('regression-distributions');
  });

  await attempt('regress_link', async () => {
    // both runs' Kernels views at the slower GEMM: the table lists that kernel only
    const g = api.items.find((f) => f.kind === 'slower' && f.subject === 'kernel');
    for (const [which, sid] of [
      ['this run', ids.bad],
      ['baseline', ids.base[4]],
    ]) {
      await page.goto(U + '/#/regressions?app=' + NIGHTLY);
      await page.waitForSelector('[data-testid=reg-row]');
      await page.click(
        `[data-testid=reg-row][data-kind=slower][data-name="${g.name}"] [data-testid=${which === 'this run' ? 'reg-link-cur' : 'reg-link-base'}]`,
      );
      await page.waitForSelector('[data-testid=kernel-row], [data-testid=empty]');
      await h.idle();
      const names = await page.$$eval('[data-testid=kernel-row] .kname', (r) => r.map((x) => x.textContent));
      const ak = await get('sessions/' + sid + '/kernels?name=' + encodeURIComponent(g.name) + '&limit=200');
      check(
        'regress_link_' + (which === 'this run' ? 'cur' : 'base'),
        page.url().includes('s=' + sid) &&
          names.length === ak.items.length &&
          names.length > 0 &&
          names.every((n) => n === g.name),
        names.length + ' rows named ' + g.name + ' (API ' + ak.items.length + ') in ' + sid,
      );
    }
  });

  await attempt('regress_session_header', async () => {
    await page.goto(U + '/#/kernels?s=' + ids.bad);
    await page.waitForSelector('[data-testid=session-regs]');
    const n = Number(await page.getAttribute('[data-testid=session-regs]', 'data-n'));
    const label = await text('[data-testid=session-regs]');
    await page.click('[data-testid=session-regs]');
    await page.waitForSelector('[data-testid=session-regs-panel] [data-testid=reg-row]');
    const names = await page.$$eval('[data-testid=session-regs-panel] [data-testid=reg-row]', (r) =>
      r.map((x) => x.getAttribute('data-kind') + ' ' + x.getAttribute('data-name')),
    );
    const want = mine.items.map((f) => f.kind + ' ' + f.name);
    const nslow = mine.items.filter((f) => f.kind === 'slower').length;
    check(
      'regress_session_header',
      n === mine.items.length &&
        JSON.stringify(names) === JSON.stringify(want) &&
        label.includes('(' + nslow + ' slower)'),
      label + ' | ' + names.join(', '),
    );
    await shot('session-regressions');
  });

  await attempt('compare_view', async () => {
    // the perturbed run against its newest baseline: rows by recorded name
    const a = ids.base[4];
    const b = ids.bad;
    const cmp = await get(`compare?a=${a}&b=${b}&limit=1000`);
    await page.goto(U + `/#/sessions?s=${a}&b=${b}`);
    await page.waitForSelector('[data-testid=compare-row]');
    const keys = () => page.$$eval('[data-testid=compare-row]', (r) => r.map((x) => x.getAttribute('data-key')));
    const shared = await page.$$eval('[data-testid=compare-row]', (r) =>
      r
        .filter((x) => x.querySelector('[data-testid=compare-shared]'))
        .map((x) => [x.getAttribute('data-key'), x.querySelector('[data-testid=compare-mangled]')?.textContent]),
    );
    const k0 = await keys();
    const tot = (it, s) => (it[s] ? Number(it[s].total_ns) : 0);
    const byTotalA = cmp.items
      .slice()
      .sort((x, y) => tot(y, 'a') - tot(x, 'a'))
      .map((it) => it.mangled ?? it.name);
    // a second click on the default column (A total, largest first) reverses it
    await page.click('[data-testid=th-aTotal]');
    await page
      .waitForFunction(() => document.querySelector('[data-testid=th-aTotal]').textContent.includes('▲'), null, {
        timeout: 3000,
      })
      .catch(() => {});
    const k2 = await keys();
    const byTotalAUp = cmp.items
      .slice()
      .sort((x, y) => (x.a ? tot(x, 'a') : -Infinity) - (y.a ? tot(y, 'a') : -Infinity))
      .map((it) => it.mangled ?? it.name);
    await page.click('[data-testid=th-dTotal]');
    await page.waitForSelector('[data-testid=th-dTotal].on');
    const k1 = await keys();
    const byDelta = cmp.items
      .slice()
      .sort((x, y) => tot(y, 'b') - tot(y, 'a') - (tot(x, 'b') - tot(x, 'a')))
      .map((it) => it.mangled ?? it.name);
    const twins = cmp.items.filter((it) => it.name === TWIN).map((it) => it.mangled);
    const ok =
      JSON.stringify(k0) === JSON.stringify(byTotalA) &&
      JSON.stringify(k1) === JSON.stringify(byDelta) &&
      JSON.stringify(k2) === JSON.stringify(byTotalAUp) &&
      twins.length === 2 &&
      JSON.stringify(shared.map((s) => s[0]).sort()) === JSON.stringify(twins.slice().sort()) &&
      shared.every(([k, m]) => k === m);
    check(
      'compare_view',
      ok,
      (JSON.stringify(k0) === JSON.stringify(k1) ? '(both orders alike) ' : '') +
        'by A total: ' +
        k0.slice(0, 3).join(', ') +
        ' | by total change: ' +
        k1.slice(0, 3).join(', ') +
        ' | told apart: ' +
        shared.map((s) => s[0]).join(', '),
    );
    await shot('compare');
  });
}
