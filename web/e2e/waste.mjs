// waste.mjs - the Fleet page's GPU waste panels in the browser, against what
// GET /api/v1/fleet/waste answers for verdict lines ingested here:
//   host waste-node-1, as `gpufl idle watch` writes them (docs/events.md
//   "verdict": a line per GPU every 60 s and on each change), 3 hours back:
//   GPU 0 BUSY for an hour, HELD for an hour, then STUCK; GPU 1 held by a
//   Slurm job with no process (ALLOCATED_UNUSED) for 1.5 hours, then BUSY;
//   and the waste lines that go with them (docs/events.md "waste": every
//   5 minutes per GPU and owner, the busy and wasted seconds): GPU 0 is
//   alice's pod research/train-0, GPU 1 bob's Slurm job 4242.
// Every panel is compared with the API's answer to the very query the page
// made (the range, step, by and limit it asked), read independently.
import fs from 'node:fs';
import path from 'node:path';
import { req, startServer } from './fixture.mjs';

export const WASTE_HOST = 'waste-node-1';
// priced by the e2e server's --price (run.mjs)
export const WASTE_MODEL = 'Simulated NVIDIA H100 80GB HBM3';
const WSID = 'e2e0e2e0-0000-4000-8000-00000000a57e';
const S = 1000000000n;

const enc = (o) =>
  JSON.stringify(o, (_k, v) => (typeof v === 'bigint' ? '@@' + v.toString() + '@@' : v)).replace(
    /"@@(-?\d+)@@"/g,
    '$1',
  );

/* The verdict lines of WASTE_HOST, ending now. */
export function wasteLines(nowNs) {
  const t0 = nowNs - 3n * 3600n * S;
  const lines = [];
  let seq = 0;
  const line = (o) => lines.push(enc({ v: 1, sid: WSID, st: 'system', seq: seq++, ...o }));
  line({
    ts: t0,
    type: 'session',
    app: 'gpufl-idle',
    host: WASTE_HOST,
    pid: 5151,
    start: t0,
    file: 0,
    lib: '0.1.0',
    simulated: true,
    cmd: 'gpufl idle watch --log-dir /tmp/w',
    interval_ms: 1000,
    engines: { sim: 'on' },
    devices: [],
  });
  // [dev, [offset s from t0, state, extra fields]...]
  const plan = [
    [
      0,
      [
        [0, 'BUSY', { reasons: ['SM activity 0.70 over the last 60 s (>= 0.30)'], signals: { util: 99, procs: 2 } }],
        [
          3600,
          'HELD',
          { reasons: ['no GPU work for 60 s', '1 process holds 30.0 GiB'], signals: { util: 0, procs: 1 } },
        ],
        [
          7200,
          'STUCK',
          {
            reasons: ['utilisation 100 % at idle power, no kernel completed for 60 s'],
            signals: { util: 100, procs: 1 },
          },
        ],
      ],
    ],
    [
      1,
      [
        [
          0,
          'ALLOCATED_UNUSED',
          {
            allocated_to: 'Slurm job 4242 (user alice)',
            reasons: ['Slurm job 4242 holds the GPU, no process on it'],
            signals: { util: 0, procs: 0 },
          },
        ],
        [5400, 'BUSY', { reasons: ['SM activity 0.55 over the last 60 s (>= 0.30)'], signals: { util: 95, procs: 1 } }],
      ],
    ],
  ];
  for (let s = 0; s <= 3 * 3600; s += 60) {
    for (const [dev, states] of plan) {
      let cur = states[0];
      for (const x of states) if (x[0] <= s) cur = x;
      line({
        ts: t0 + BigInt(s) * S + BigInt(dev) * 1000n,
        type: 'verdict',
        kind: 'gpu',
        dev,
        uuid: 'GPU-waste-' + dev,
        model: WASTE_MODEL,
        simulated: true,
        state: cur[1],
        since: t0 + BigInt(cur[0]) * S,
        ...cur[2],
      });
    }
  }
  // waste lines: [dev, owner, [until s, busy or reason]...]
  const acct = [
    [
      0,
      { user: 'alice', namespace: 'research', pod: 'train-0' },
      [
        [3600, 'busy'],
        [7200, 'held'],
        [10800, 'stuck'],
      ],
    ],
    [
      1,
      { user: 'bob', job: '4242' },
      [
        [5400, 'allocated_unused'],
        [10800, 'busy'],
      ],
    ],
  ];
  const W = 300;
  for (let s = 0; s < 3 * 3600; s += W) {
    for (const [dev, owner, runs] of acct) {
      const what = runs.find((x) => s < x[0])[1];
      line({
        ts: t0 + BigInt(s + W) * S + 5000n + BigInt(dev),
        type: 'waste',
        host: WASTE_HOST,
        dev,
        uuid: 'GPU-waste-' + dev,
        model: WASTE_MODEL,
        simulated: true,
        ...owner,
        from: t0 + BigInt(s) * S,
        to: t0 + BigInt(s + W) * S,
        ...(what === 'busy' ? { busy_s: W, wasted_s: {} } : { busy_s: 0, wasted_s: { [what]: W } }),
      });
    }
  }
  return lines;
}

export async function ingestWaste(U, token) {
  const now = BigInt(Date.now()) * 1000000n;
  const r = await req(U, 'POST', '/api/v1/events/system', wasteLines(now).join('\n') + '\n', undefined, token);
  const ok = r.status === 200 && JSON.parse(r.text).rejected === 0;
  return { ok, detail: 'POST waste verdict lines -> ' + r.status + ' ' + r.text.slice(0, 160) };
}

/* The number a cell shows ("1,234 GPU·h", "$12.00", "0.25 GPU·h", "<0.01 GPU·h")
   is the API's value as rounded for display. */
function shows(text, v) {
  if (v === null || v === undefined) return /^-$/.test(text.trim());
  const m = /(<)?(-?[\d,]+(?:\.\d+)?)/.exec(text.replace(/[$€£]/g, ''));
  if (!m) return false;
  const x = Number(m[2].replace(/,/g, ''));
  if (m[1]) return v > 0 && v < 0.01;
  const dec = (m[2].split('.')[1] ?? '').length;
  return Math.abs(x - v) <= 0.5 * Math.pow(10, -dec) + 1e-9;
}

export async function wasteChecks({ page, U, check, shot, idle, bin, dist, tmp }) {
  // the query the page makes, answered by the server to the test as well
  // the page came here from the Fleet: the Sessions view must be on screen
  // (the Fleet unmounted) before going back, or a hash change that React
  // never committed leaves the Fleet mounted and nothing is asked again
  await page.goto(U + '/#/sessions');
  await page.waitForSelector('[data-testid=view-sessions]');
  await page.waitForSelector('[data-testid=view-fleet]', { state: 'detached' });
  const asked = page.waitForResponse((r) => r.url().includes('/api/v1/fleet/waste?'));
  await page.goto(U + '/#/fleet');
  const resp = await asked;
  await page.waitForSelector('[data-testid=waste-header], [data-testid=waste] [data-testid=error]');
  await idle();
  const q = new URL(resp.url()).search;
  const r = await req(U, 'GET', '/api/v1/fleet/waste' + q);
  if (r.status !== 200) {
    check('fleet_waste_api', false, 'GET /api/v1/fleet/waste' + q + ' -> ' + r.status + ' ' + r.text.slice(0, 200));
    await shot('fleet-waste-missing');
    return;
  }
  const api = JSON.parse(r.text);
  const qp = new URL(resp.url()).searchParams;
  check(
    'fleet_waste_api',
    api.totals?.wasted_gpu_h > 0 && api.gpus?.length >= 2,
    'the page asked ' +
      q +
      '; the API counts ' +
      api.totals?.wasted_gpu_h +
      ' wasted GPU-hours, ' +
      api.gpus?.length +
      ' GPUs',
  );

  // header: GPUs by verdict now, the waste rate, the totals, cost or hint
  const hdr = await page.evaluate(() => ({
    states: [...document.querySelectorAll('[data-testid=waste-state]')].map((e) => [
      e.getAttribute('data-state'),
      Number(e.getAttribute('data-n')),
    ]),
    rate: document.querySelector('[data-testid=waste-rate]')?.getAttribute('data-v'),
    rateText: document.querySelector('[data-testid=waste-rate] b')?.textContent ?? '',
    busy: document.querySelector('[data-testid=waste-busy]')?.textContent ?? '',
    wasted: document.querySelector('[data-testid=waste-wasted]')?.textContent ?? '',
    cost: document.querySelector('[data-testid=waste-cost]')?.textContent ?? null,
    noprice: !!document.querySelector('[data-testid=waste-noprice]'),
    sim: !!document.querySelector('[data-testid=waste-simulated]'),
  }));
  const wantStates = Object.entries(api.now.gpus_by_state)
    .filter(([, n]) => n > 0)
    .sort();
  const gotStates = hdr.states.slice().sort();
  // the server has a --price for the lines' model: the money is shown
  const costOk = api.totals.cost !== null && !hdr.noprice && shows(hdr.cost ?? '', api.totals.cost);
  check(
    'fleet_waste_header',
    JSON.stringify(wantStates) === JSON.stringify(gotStates) &&
      wantStates.some(([s]) => s === 'STUCK') &&
      Number(hdr.rate) === api.now.waste_rate &&
      shows(hdr.rateText, api.now.waste_rate) &&
      shows(hdr.busy, api.totals.busy_gpu_h) &&
      shows(hdr.wasted, api.totals.wasted_gpu_h) &&
      costOk &&
      hdr.sim === !!api.simulated,
    'states ' +
      JSON.stringify(gotStates) +
      ' (API ' +
      JSON.stringify(wantStates) +
      '), rate ' +
      hdr.rateText +
      ' (API ' +
      api.now.waste_rate +
      '), busy ' +
      hdr.busy +
      ' (' +
      api.totals.busy_gpu_h +
      '), wasted ' +
      hdr.wasted +
      ' (' +
      api.totals.wasted_gpu_h +
      '), cost ' +
      (hdr.cost ?? (hdr.noprice ? 'the --price hint' : 'none')) +
      ' (' +
      api.totals.cost +
      '), simulated badge ' +
      hdr.sim +
      ' (' +
      api.simulated +
      ')',
  );

  // waste over time: a bar part per bucket and reason the API counts
  const bars = await page.$$eval('[data-testid=waste-bar]', (b) =>
    b.map((x) => [x.getAttribute('data-t'), x.getAttribute('data-reason'), Number(x.getAttribute('data-v'))]),
  );
  const want = [];
  const from = BigInt(api.from);
  const to = BigInt(api.to);
  for (const p of api.series)
    for (const [k, v] of Object.entries(p.by_reason))
      if (v > 0 && BigInt(p.t) < to && BigInt(p.t) + BigInt(api.step_s) * 1000000000n > from)
        want.push([String(p.t), k, v]);
  const key = (x) => x[0] + '/' + x[1];
  const gotM = new Map(bars.map((x) => [key(x), x[2]]));
  const legend = await page.$$eval('[data-testid=waste-reason]', (l) =>
    l.map((x) => [x.getAttribute('data-reason'), Number(x.getAttribute('data-v'))]),
  );
  const legendOk = legend.every(([k, v]) => Math.abs(v - (api.totals.by_reason[k] ?? 0)) < 1e-9);
  const reasons = [...new Set(want.map((x) => x[1]))].sort();
  check(
    'fleet_waste_chart',
    want.length > 0 &&
      bars.length === want.length &&
      want.every((w) => Math.abs((gotM.get(key(w)) ?? -1) - w[2]) < 1e-9) &&
      legendOk &&
      reasons.includes('stuck') &&
      reasons.includes('allocated_unused'),
    bars.length +
      ' bar parts (API ' +
      want.length +
      '), reasons ' +
      reasons.join(',') +
      ', legend = totals: ' +
      legendOk,
  );

  // top wasters, by the page's default and by host
  const topOf = () =>
    page.$$eval('[data-testid=waste-top-row]', (rows) =>
      rows.map((x) => ({
        key: x.getAttribute('data-key'),
        busy: x.querySelector('[data-testid=waste-top-busy]').textContent,
        wasted: x.querySelector('[data-testid=waste-top-wasted]').textContent,
        cost: x.querySelector('[data-testid=waste-top-cost]').textContent,
      })),
    );
  const topOk = (got, a) =>
    got.length === a.top.length &&
    a.top.every((w) => {
      const g = got.find((x) => x.key === w.key);
      return g && shows(g.busy, w.busy_gpu_h) && shows(g.wasted, w.wasted_gpu_h) && shows(g.cost, w.cost);
    }) &&
    got.every(
      (x, i) =>
        i === 0 ||
        a.top.find((w) => w.key === got[i - 1].key).wasted_gpu_h >= a.top.find((w) => w.key === x.key).wasted_gpu_h,
    );
  const t1 = await topOf();
  // what the lines charge: alice 2 GPU-h wasted (held, stuck), bob 1.5
  // (allocated, unused), at 2.5 an hour
  const who = (k) => t1.find((x) => x.key === k);
  check(
    'fleet_waste_top',
    t1.length > 0 &&
      topOk(t1, api) &&
      shows(who('alice')?.wasted ?? '', 2) &&
      shows(who('alice')?.cost ?? '', 5) &&
      shows(who('bob')?.wasted ?? '', 1.5) &&
      shows(who('bob')?.busy ?? '', 1.5),
    'by ' +
      qp.get('by') +
      ': ' +
      t1.map((x) => x.key + ' ' + x.wasted + ' ' + x.cost).join('; ') +
      ' (API ' +
      api.top.length +
      ' rows)',
  );
  const askedHost = page.waitForResponse(
    (x) => x.url().includes('/api/v1/fleet/waste?') && x.url().includes('by=host'),
  );
  await page.selectOption('[data-testid=waste-by]', 'host');
  const rh = await askedHost;
  await idle();
  const apiH = JSON.parse((await req(U, 'GET', '/api/v1/fleet/waste' + new URL(rh.url()).search)).text);
  const t2 = await topOf();
  check(
    'fleet_waste_by_host',
    topOk(t2, apiH) && t2.some((x) => x.key === WASTE_HOST),
    t2.map((x) => x.key + ' ' + x.busy + ' / ' + x.wasted).join('; ') + ' (API ' + apiH.top.length + ' rows)',
  );

  // strips: one row per GPU, its states in the API's order
  const strips = await page.$$eval('[data-testid=waste-gpu]', (rows) =>
    rows.map((x) => ({
      host: x.getAttribute('data-host'),
      dev: Number(x.getAttribute('data-dev')),
      segs: [...x.querySelectorAll('[data-testid=strip-seg]')].map((s) => s.getAttribute('data-state')),
    })),
  );
  const merged = (strip) =>
    strip
      .filter((s) => BigInt(s.to) > from && BigInt(s.from) < to)
      .map((s) => s.state)
      .filter((s, i, a) => i === 0 || a[i - 1] !== s);
  const stripOk =
    strips.length === Math.min(api.gpus.length, 100) &&
    api.gpus.every((g) => {
      const s = strips.find((x) => x.host === g.host && x.dev === g.dev);
      return s && JSON.stringify(s.segs) === JSON.stringify(merged(g.strip));
    });
  const mine = strips
    .filter((x) => x.host === WASTE_HOST)
    .map((x) => x.dev + ':' + x.segs.join('>'))
    .sort();
  check(
    'fleet_waste_strips',
    stripOk && mine.length === 2 && mine[0] === '0:BUSY>HELD>STUCK' && mine[1] === '1:ALLOCATED_UNUSED>BUSY',
    strips.length + ' GPU strips (API ' + api.gpus.length + '); ' + WASTE_HOST + ': ' + mine.join(', '),
  );
  await shot('fleet-waste');

  // drill-down: a GPU's host's sessions in the range, with their links
  await page.click(`[data-testid=waste-gpu][data-host="${WASTE_HOST}"][data-dev="0"]`);
  await page.waitForSelector('[data-testid=waste-drill-sessions], [data-testid=waste-drill] [data-testid=empty]');
  await idle();
  const ids = await page.$$eval('[data-testid=waste-drill-session]', (r) => r.map((x) => x.getAttribute('data-id')));
  const sess = JSON.parse(
    (await req(U, 'GET', '/api/v1/sessions?host=' + WASTE_HOST + '&from=' + apiH.from + '&to=' + apiH.to + '&limit=50'))
      .text,
  );
  const memLinks = await page.$$eval('[data-testid=waste-drill-memory]', (a) => a.map((x) => x.getAttribute('href')));
  check(
    'fleet_waste_drill',
    ids.length > 0 &&
      JSON.stringify(ids) === JSON.stringify(sess.items.map((s) => s.id)) &&
      memLinks.every((h, i) => h === '#/memory?s=' + ids[i]),
    ids.length + ' sessions of ' + WASTE_HOST + ' (API ' + sess.items.length + '), memory links ' + memLinks.length,
  );

  // no waste data: what an empty server (a second one, just started)
  // answers to the page's query; the empty state tells what to run
  const tmp2 = fs.mkdtempSync(path.join(tmp, 'empty-'));
  const s2 = await startServer({ bin, uiDir: dist, tmp: tmp2 });
  try {
    await page.route('**/api/v1/fleet/waste?*', async (rt) => {
      const u = new URL(rt.request().url());
      const a = await req(s2.url, 'GET', u.pathname + u.search);
      return rt.fulfill({ status: a.status, contentType: 'application/json', body: a.text });
    });
    await page.selectOption('[data-testid=waste-range]', { label: 'last 6 h' });
    await page.waitForSelector('[data-testid=waste] [data-testid=empty]');
    const emptyText = await page.textContent('[data-testid=waste] [data-testid=empty]');
    check(
      'fleet_waste_empty',
      /gpufl idle watch/.test(emptyText) && (await page.locator('[data-testid=waste-top-row]').count()) === 0,
      'a server with no verdicts: ' + emptyText.trim().slice(0, 120),
    );
  } finally {
    await page.unroute('**/api/v1/fleet/waste?*');
    s2.stop();
  }

  // an error: the banner alone, no rows of the previous answer under it
  await page.selectOption('[data-testid=waste-range]', { label: 'last 24 h' });
  await page.waitForSelector('[data-testid=waste-top-row]');
  await page.route('**/api/v1/fleet/waste?*', (rt) =>
    rt.fulfill({ status: 503, contentType: 'application/json', body: '{"status":503,"error":"database unavailable"}' }),
  );
  try {
    await page.selectOption('[data-testid=waste-by]', 'user');
    await page.waitForSelector('[data-testid=waste] [data-testid=error]');
    const stale = await page.evaluate(
      () =>
        document.querySelectorAll(
          '[data-testid=waste-top-row], [data-testid=waste-gpu], [data-testid=waste-bar], [data-testid=waste-header]',
        ).length,
    );
    const errText = await page.textContent('[data-testid=waste] [data-testid=error]');
    check(
      'fleet_waste_error',
      stale === 0 && /503/.test(errText),
      stale + ' stale elements under: ' + errText.slice(0, 100),
    );
  } finally {
    await page.unroute('**/api/v1/fleet/waste?*');
  }
}
