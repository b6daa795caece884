import { useMemo, useState } from 'react';
import type { ViewProps } from '../App';
import { fmtNs, fmtPct } from '../lib/format';
import { Empty, ErrorBox, Loading, useApi } from './common';
import { num } from '../lib/api';
import type { ProfileAnswer, ScopeNode, ScopeTree } from '../lib/types';

/* A node of the tree as the view computes with it: the API's ns sums,
   decimal strings (docs/api.md "Numbers"), as Numbers (exact below 2^53 ns:
   104 days). */
export type ScopeNodeNum = Omit<ScopeNode, 'total_ns' | 'self_ns' | 'gpu_ns' | 'gpu_ns_total' | 'children'> & {
  total_ns: number;
  self_ns: number;
  gpu_ns: number;
  gpu_ns_total: number;
  children: ScopeNodeNum[];
};

/* The API's tree with its ns sums converted, at every depth. */
export function scopeTree(items: ScopeNode[]): ScopeNodeNum[] {
  return items.map((n) => ({
    ...n,
    total_ns: num(n.total_ns),
    self_ns: num(n.self_ns),
    gpu_ns: num(n.gpu_ns),
    gpu_ns_total: num(n.gpu_ns_total),
    children: scopeTree(n.children),
  }));
}

/* Rows of the tree as shown: depth-first, children sorted by total, only
   below expanded nodes; a filter keeps matching nodes and their ancestors. */
export function visibleRows(roots: ScopeNodeNum[], open: Set<string>, filter: string): ScopeNodeNum[] {
  const q = filter.toLowerCase();
  const keep = (n: ScopeNodeNum): boolean => !q || n.name.toLowerCase().includes(q) || n.children.some(keep);
  const out: ScopeNodeNum[] = [];
  const walk = (ns: ScopeNodeNum[]) => {
    for (const n of [...ns].sort((a, b) => b.total_ns - a.total_ns)) {
      if (!keep(n)) continue;
      out.push(n);
      if (open.has(n.path) || q) walk(n.children);
    }
  };
  walk(roots);
  return out;
}

function findNode(roots: ScopeNodeNum[], path: string): ScopeNodeNum | null {
  for (const n of roots) {
    if (n.path === path) return n;
    const c = findNode(n.children, path);
    if (c) return c;
  }
  return null;
}

export function Scopes({ st, set, session }: ViewProps) {
  const s = session!;
  const tree = useApi<ScopeTree>('sessions/' + s.id + '/scopes', {}, []);
  const [open, setOpen] = useState<Set<string>>(() => {
    const o = new Set<string>();
    if (st.sel) st.sel.split('/').forEach((_, i, a) => o.add(a.slice(0, i + 1).join('/')));
    return o;
  });
  const [filter, setFilter] = useState('');
  const [pins, setPins] = useState<string[]>([]);
  const roots = useMemo(() => scopeTree(tree.data?.items ?? []), [tree.data]);
  const rootTotal = roots.reduce((a, n) => a + n.total_ns, 0) || 1;
  const rows = useMemo(() => visibleRows(roots, open, filter), [roots, open, filter]);
  const selNode = st.sel ? findNode(roots, st.sel) : null;

  if (tree.error) return <ErrorBox error={tree.error} what="loading the scope tree" />;
  if (!tree.data) return <Loading what="scope tree" />;
  if (!roots.length)
    return (
      <Empty>
        This session has no completed scopes. Scopes come from <code>gpufl_scope_begin/end</code> (or GPUFL_SCOPE in
        C++) around the code you want timed; see docs/client.md.
      </Empty>
    );

  const toggle = (p: string) =>
    setOpen((o) => {
      const n = new Set(o);
      if (n.has(p)) n.delete(p);
      else n.add(p);
      return n;
    });
  return (
    <div className="scopes" data-testid="view-scopes">
      <div className="split stack-narrow">
        <div className="left">
          <div className="toolbar">
            <input
              data-testid="scope-filter"
              placeholder="filter scopes by name"
              value={filter}
              onChange={(e) => setFilter(e.target.value)}
            />
            <button
              data-testid="scope-expand-all"
              onClick={() => {
                const o = new Set<string>();
                const all = (ns: ScopeNodeNum[]) =>
                  ns.forEach((n) => {
                    o.add(n.path);
                    all(n.children);
                  });
                all(roots);
                setOpen(o);
              }}
            >
              Expand all
            </button>
            <button onClick={() => setOpen(new Set())}>Collapse</button>
            <span className="dim">
              {tree.data.paths} scope paths · click a row for its SASS metrics and stall reasons; pin rows to compare
            </span>
          </div>
          <div className="scroll">
            <table className="grid" data-testid="scope-table">
              <thead>
                <tr>
                  <th>scope</th>
                  <th className="num">calls</th>
                  <th className="num">total</th>
                  <th className="num">self</th>
                  <th className="num">% of all</th>
                  <th className="num">GPU time</th>
                  <th className="num">kernels</th>
                  <th title="GPU time of the kernels launched in the scope (with its children) divided by the scope's CPU (wall) time; above 100 % the GPU ran asynchronously, longer than the CPU code that launched the work">
                    GPU time / CPU time
                  </th>
                  <th></th>
                </tr>
              </thead>
              <tbody>
                {rows.map((n) => (
                  <tr
                    key={n.path}
                    data-testid="scope-row"
                    data-path={n.path}
                    className={st.sel === n.path ? 'sel' : ''}
                    onClick={() => set({ ...st, sel: n.path }, true)}
                  >
                    <td style={{ paddingLeft: 6 + (n.depth - 1) * 16 }}>
                      {n.children.length ? (
                        <span
                          className="exp"
                          onClick={(e) => {
                            e.stopPropagation();
                            toggle(n.path);
                          }}
                        >
                          {open.has(n.path) || filter ? '▾' : '▸'}
                        </span>
                      ) : (
                        <span className="exp" />
                      )}
                      {n.name}
                    </td>
                    <td className="num">{n.instances}</td>
                    <td className="num" data-testid="scope-total">
                      {fmtNs(n.total_ns)}
                    </td>
                    <td className="num">{fmtNs(n.self_ns)}</td>
                    <td className="num">{fmtPct(n.total_ns / rootTotal)}</td>
                    <td className="num">{fmtNs(n.gpu_ns_total)}</td>
                    <td className="num">{n.kernels_total}</td>
                    <td>
                      <GpuShare gpu={n.gpu_ns_total} cpu={n.total_ns} />
                    </td>
                    <td>
                      <input
                        type="checkbox"
                        title="pin to compare"
                        data-testid="scope-pin"
                        checked={pins.includes(n.path)}
                        onClick={(e) => e.stopPropagation()}
                        onChange={() =>
                          setPins((p) =>
                            p.includes(n.path) ? p.filter((x) => x !== n.path) : [...p.slice(-2), n.path],
                          )
                        }
                      />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {pins.length > 1 && (
            <ScopeCompare nodes={pins.map((p) => findNode(roots, p)).filter(Boolean) as ScopeNodeNum[]} />
          )}
        </div>
        <aside className="inspector wide" data-testid="scope-side">
          {selNode ? <ScopeDetail sid={s.id} n={selNode} /> : <Profile sid={s.id} path={null} />}
        </aside>
      </div>
    </div>
  );
}

/* GPU time against the scope's CPU (wall) time, uncapped: a backward pass
   that launches 2.5 s of kernels in 84 ms of CPU time reads 3010 %.  The
   bar fills to 100 %; past it, it turns orange and the text carries the
   ratio. */
export function gpuShare(gpu: number, cpu: number): { pct: number; text: string; over: boolean } {
  if (cpu <= 0) return { pct: gpu > 0 ? Infinity : 0, text: gpu > 0 ? 'no CPU time' : '-', over: gpu > 0 };
  const pct = (100 * gpu) / cpu;
  const text = pct >= 1000 ? Math.round(pct).toLocaleString('en-US') + ' %' : pct.toFixed(pct < 10 ? 1 : 0) + ' %';
  return { pct, text, over: pct > 100 };
}

function GpuShare({ gpu, cpu }: { gpu: number; cpu: number }) {
  const g = gpuShare(gpu, cpu);
  return (
    <div
      className={'share' + (g.over ? ' over' : '')}
      data-testid="gpu-share"
      data-pct={isFinite(g.pct) ? g.pct.toFixed(3) : 'inf'}
      title={
        fmtNs(gpu) +
        ' of GPU time against ' +
        fmtNs(cpu) +
        ' of CPU time' +
        (g.over ? ': the GPU work outlasted the CPU code that launched it (asynchronous)' : '')
      }
    >
      <div className="bar">
        <div style={{ width: Math.min(100, isFinite(g.pct) ? g.pct : 100) + '%' }} />
      </div>
      <span className="num">{g.text}</span>
    </div>
  );
}

function ScopeCompare({ nodes }: { nodes: ScopeNodeNum[] }) {
  const f: [string, (n: ScopeNodeNum) => string][] = [
    ['calls', (n) => String(n.instances)],
    ['total', (n) => fmtNs(n.total_ns)],
    ['mean per call', (n) => fmtNs(n.total_ns / Math.max(1, n.instances))],
    ['self', (n) => fmtNs(n.self_ns)],
    ['GPU time (incl. children)', (n) => fmtNs(n.gpu_ns_total)],
    ['kernels (incl. children)', (n) => String(n.kernels_total)],
    ['GPU time directly', (n) => fmtNs(n.gpu_ns)],
    ['kernels directly', (n) => String(n.kernels)],
  ];
  return (
    <section data-testid="scope-compare">
      <h3>Compare scopes</h3>
      <table className="grid">
        <thead>
          <tr>
            <th></th>
            {nodes.map((n) => (
              <th key={n.path}>{n.path}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {f.map(([l, g]) => (
            <tr key={l}>
              <th>{l}</th>
              {nodes.map((n) => (
                <td key={n.path} className="num">
                  {g(n)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

function ScopeDetail({ sid, n }: { sid: string; n: ScopeNodeNum }) {
  return (
    <div data-testid="scope-detail">
      <h3>{n.path}</h3>
      <table className="kv">
        <tbody>
          <tr>
            <th>calls</th>
            <td>{n.instances}</td>
          </tr>
          <tr>
            <th>total (inclusive)</th>
            <td>
              {fmtNs(n.total_ns)} · mean {fmtNs(n.total_ns / Math.max(1, n.instances))}
            </td>
          </tr>
          <tr>
            <th>self (exclusive)</th>
            <td>{fmtNs(n.self_ns)}</td>
          </tr>
          <tr>
            <th>kernels launched directly</th>
            <td>
              {n.kernels} · GPU {fmtNs(n.gpu_ns)}
            </td>
          </tr>
          <tr>
            <th>kernels incl. children</th>
            <td data-testid="scope-kernels">
              {n.kernels_total} · GPU {fmtNs(n.gpu_ns_total)}
            </td>
          </tr>
        </tbody>
      </table>
      <Profile sid={sid} path={n.path} />
    </div>
  );
}

function Profile({ sid, path }: { sid: string; path: string | null }) {
  const p = useApi<ProfileAnswer>('sessions/' + sid + '/profile', { path, limit: 50 }, [path]);
  if (p.error) return <ErrorBox error={p.error} what="loading SASS metrics" />;
  if (!p.data) return <Loading what="SASS metrics" />;
  const d = p.data;
  const totalStall = (d.stalls ?? []).reduce((a, x) => a + Number(x.samples), 0) || 1;
  return (
    <div data-testid="profile">
      <h4>SASS metrics by function {path ? 'in ' + path : '(whole session)'}</h4>
      {!d.functions.length ? (
        <div className="empty">
          No SASS metrics {path ? 'in this scope' : 'in this session'}. They are recorded when SASS / PC-sampling
          capture is on (docs/capture.md).
        </div>
      ) : (
        <table className="grid" data-testid="sass-table">
          <thead>
            <tr>
              <th>function</th>
              <th className="num">warp inst</th>
              <th className="num">thread inst</th>
              <th className="num">warp efficiency</th>
              <th className="num">coalescing</th>
              <th className="num">PC samples</th>
            </tr>
          </thead>
          <tbody>
            {d.functions.map((f) => (
              <tr key={f.function}>
                <td className="name" title={f.function}>
                  {f.function}
                </td>
                <td className="num">{f.inst}</td>
                <td className="num">{f.thread_inst}</td>
                <td className={'num ' + (f.warp_efficiency < 0.5 ? 'worse' : f.warp_efficiency < 0.875 ? 'warn' : '')}>
                  {fmtPct(f.warp_efficiency)}
                </td>
                <td
                  className={
                    'num ' +
                    (f.coalescing !== null && f.coalescing < 0.25
                      ? 'worse'
                      : f.coalescing !== null && f.coalescing < 0.66
                        ? 'warn'
                        : '')
                  }
                >
                  {f.coalescing === null ? '-' : fmtPct(f.coalescing)}
                </td>
                <td className="num">{f.pc_samples}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {d.instructions && d.instructions.length > 0 && (
        <>
          <h4>By PC / source line (top {Math.min(30, d.instructions.length)})</h4>
          <table className="grid" data-testid="sass-lines">
            <thead>
              <tr>
                <th>function</th>
                <th className="num">pc</th>
                <th>source</th>
                <th className="num">warp inst</th>
                <th className="num">warp eff.</th>
                <th className="num">coalescing</th>
                <th className="num">PC samples</th>
              </tr>
            </thead>
            <tbody>
              {d.instructions.slice(0, 30).map((x, i) => (
                <tr key={i}>
                  <td className="name" title={x.function}>
                    {x.function}
                  </td>
                  <td className="num">0x{Number(x.pc).toString(16)}</td>
                  <td className="src" title={x.file ? x.file + ':' + x.line : ''}>
                    {x.file ? x.file + ':' + x.line : '-'}
                  </td>
                  <td className="num">{x.inst}</td>
                  <td className="num">{fmtPct(x.warp_efficiency)}</td>
                  <td className="num">{x.coalescing === null ? '-' : fmtPct(x.coalescing)}</td>
                  <td className="num">{x.pc_samples}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
      <h4>Stall reasons (PC sampling)</h4>
      {!d.stalls?.length ? (
        <div className="empty">No PC samples {path ? 'in this scope' : 'in this session'}.</div>
      ) : (
        <table className="grid" data-testid="stall-table">
          <tbody>
            {d.stalls.map((x) => (
              <tr key={x.reason}>
                <td>{x.reason}</td>
                <td className="num">{x.samples}</td>
                <td style={{ width: '45%' }}>
                  <div className="bar">
                    <div style={{ width: (100 * Number(x.samples)) / totalStall + '%' }} />
                  </div>
                </td>
                <td className="num">{fmtPct(Number(x.samples) / totalStall)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}
