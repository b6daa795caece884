// trace_summary.mjs - what the renderer's main thread did in a Chromium
// trace of bench_web.mjs's phases (--trace FILE): per phase (found as the
// runs of the bench's per-frame `step` callback), the main thread's CPU time
// per frame and its longest tasks by CPU and by wall time - CPU time
// (the trace's tdur) is the page's own cost, wall time adds what other
// processes of a loaded machine took; then per top-level task longer
// than --min ms of CPU (default 12) the time of its slices by name (self
// time: a slice's time less its children's), the totals over all such
// tasks, and the JS functions V8 sampled in them.
// Usage: node trace_summary.mjs FILE [--min 12]
import fs from 'node:fs';

const file = process.argv[2];
const mi = process.argv.indexOf('--min');
const MIN = mi > 0 ? Number(process.argv[mi + 1]) : 12;
const ev = JSON.parse(fs.readFileSync(file, 'utf8')).traceEvents;
// the renderer main thread: the thread named CrRendererMain with the most
// events (the tab's, not a spare renderer's)
const names = new Map();
for (const e of ev)
  if (e.ph === 'M' && e.name === 'thread_name' && e.args.name === 'CrRendererMain') names.set(e.pid + ':' + e.tid, 0);
for (const e of ev) {
  const k = e.pid + ':' + e.tid;
  if (names.has(k)) names.set(k, names.get(k) + 1);
}
const main = [...names].sort((a, b) => b[1] - a[1])[0][0];
const mine = ev
  .filter((e) => e.pid + ':' + e.tid === main && e.ph === 'X' && e.dur !== undefined)
  .sort((a, b) => a.ts - b.ts || b.dur - a.dur);
// nest by time: top-level tasks and their descendants
const tasks = [];
const stack = [];
for (const e of mine) {
  while (stack.length && stack[stack.length - 1].ts + stack[stack.length - 1].dur <= e.ts) stack.pop();
  const node = { e, ts: e.ts, dur: e.dur, kids: [], name: sliceName(e) };
  if (stack.length) stack[stack.length - 1].kids.push(node);
  else tasks.push(node);
  stack.push(node);
}
function sliceName(e) {
  if (e.name === 'FunctionCall' && e.args && e.args.data) {
    const d = e.args.data;
    return (
      'FunctionCall ' +
      (d.functionName || '?') +
      ' ' +
      String(d.url || '')
        .split('/')
        .pop() +
      ':' +
      (d.lineNumber ?? '')
    );
  }
  if (e.name === 'EventDispatch' && e.args && e.args.data) return 'EventDispatch ' + e.args.data.type;
  if (e.name === 'TimerFire' || e.name === 'FireAnimationFrame') return e.name;
  return e.name;
}
const self = (n, acc) => {
  const kid = n.kids.reduce((a, k) => a + k.dur, 0);
  acc.set(n.name, (acc.get(n.name) ?? 0) + Math.max(0, n.dur - kid));
  for (const k of n.kids) self(k, acc);
  return acc;
};
// slow by the thread's own CPU time (tdur) where the trace has it: the
// wall time of a task on a loaded machine includes the time other
// processes held the core
const cpu = (t) => (t.e.tdur !== undefined ? t.e.tdur : t.dur);
const slow = tasks.filter((t) => cpu(t) >= MIN * 1000);
{
  // the phases: runs of the bench's `step` (one per animation frame)
  const steps = mine
    .filter((e) => e.name === 'FunctionCall' && e.args && e.args.data && e.args.data.functionName === 'step')
    .map((e) => e.ts);
  const runs = [];
  for (const t of steps) {
    const r = runs[runs.length - 1];
    if (r && t - r[1] < 300000) r[1] = t;
    else runs.push([t, t, 0]);
  }
  for (const t of steps) for (const r of runs) if (t >= r[0] && t <= r[1]) r[2]++;
  const PH = ['overview-zoom', 'overview-pan', 'zoom-in', 'pan-1us', 'zoom-out', 'pan-after-stop', 'keys'];
  runs.forEach(([a, b, frames], i) => {
    const ts = tasks.filter((t) => t.ts >= a && t.ts <= b);
    const c = ts.map(cpu);
    const sum = c.reduce((x, y) => x + y, 0);
    console.log(
      `${(PH[i] ?? 'phase ' + i).padEnd(13)} ${String(frames).padStart(3)} frames: main thread CPU ${(sum / frames / 1000).toFixed(1)} ms/frame; ` +
        `tasks CPU max ${(Math.max(0, ...c) / 1000).toFixed(1)} ms, > 16 ms ${c.filter((x) => x > 16000).length}, > 50 ms ${c.filter((x) => x > 50000).length}; ` +
        `wall max ${(Math.max(0, ...ts.map((t) => t.dur)) / 1000).toFixed(1)} ms`,
    );
  });
}
{
  const c = tasks.map(cpu).sort((a, b) => a - b);
  const w = tasks.map((t) => t.dur).sort((a, b) => a - b);
  const q = (a, p) => (a[Math.min(a.length - 1, Math.floor(p * a.length))] / 1000).toFixed(1);
  console.log(
    `${tasks.length} main-thread tasks: CPU p50 ${q(c, 0.5)} p95 ${q(c, 0.95)} p99 ${q(c, 0.99)} max ${q(c, 1)} ms; ` +
      `wall p50 ${q(w, 0.5)} p95 ${q(w, 0.95)} p99 ${q(w, 0.99)} max ${q(w, 1)} ms; ` +
      `CPU > 16 ms: ${c.filter((x) => x > 16000).length}, > 50 ms: ${c.filter((x) => x > 50000).length}; ` +
      `wall > 50 ms: ${w.filter((x) => x > 50000).length}`,
  );
}
const total = new Map();
const fmt = (m, n) =>
  [...m]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, v]) => `${(v / 1000).toFixed(1)} ${k}`)
    .join(' | ');
for (const t of slow) {
  const acc = self(t, new Map());
  for (const [k, v] of acc) total.set(k, (total.get(k) ?? 0) + v);
  console.log(`${(cpu(t) / 1000).toFixed(1)} ms CPU (${(t.dur / 1000).toFixed(1)} wall) ${t.name}: ${fmt(acc, 6)}`);
}
console.log(`\n${slow.length} tasks >= ${MIN} ms of ${tasks.length}; their time by slice (ms, self):`);
console.log(fmt(total, 25).split(' | ').join('\n'));

// V8's samples (ProfileChunk events of the same renderer): the JS functions
// the slow tasks ran, by self and by inclusive samples
const nodes = new Map();
const samples = [];
// (the chunks come from V8's profiler thread of the renderer's process)
const mainPid = Number(main.split(':')[0]);
const parent = new Map();
for (const e of ev) {
  if (e.name !== 'ProfileChunk' || e.pid !== mainPid) continue;
  const d = e.args.data || {};
  const cp = d.cpuProfile || {};
  for (const n of cp.nodes || []) {
    nodes.set(n.id, n);
    if (n.parent !== undefined) parent.set(n.id, n.parent);
  }
  let t = samples.length ? samples[samples.length - 1][0] : null;
  const deltas = d.timeDeltas || [];
  (cp.samples || []).forEach((id, i) => {
    t = (t ?? startOf(e)) + (deltas[i] ?? 0);
    samples.push([t, id]);
  });
}
function startOf(e) {
  const p = ev.find((x) => x.name === 'Profile' && x.id === e.id);
  return p ? p.args.data.startTime : e.ts;
}
if (samples.length) {
  const selfF = new Map();
  const incl = new Map();
  const inSlow = (t) => slow.some((s) => t >= s.ts && t < s.ts + s.dur);
  const fname = (n) => (n.callFrame.functionName || '(anon)') + ':' + n.callFrame.lineNumber;
  let n = 0;
  for (const [t, id] of samples) {
    if (!inSlow(t)) continue;
    n++;
    let node = nodes.get(id);
    if (!node) continue;
    selfF.set(fname(node), (selfF.get(fname(node)) ?? 0) + 1);
    const seen = new Set();
    while (node) {
      const f = fname(node);
      if (!seen.has(f)) incl.set(f, (incl.get(f) ?? 0) + 1);
      seen.add(f);
      node = nodes.get(parent.get(node.id));
    }
  }
  const top = (m) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 30)
      .map(([k, v]) => `${v} ${k}`)
      .join('\n');
  console.log(`\n${n} V8 samples in the slow tasks; self:\n${top(selfF)}\n\ninclusive:\n${top(incl)}`);
}
