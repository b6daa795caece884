import { useMemo, useState } from 'react';
import {
  createColumnHelper,
  flexRender,
  getCoreRowModel,
  getSortedRowModel,
  SortingState,
  useReactTable,
} from '@tanstack/react-table';
import type { ViewProps } from '../App';
import { big, num, rel } from '../lib/api';
import { fmtBytes, fmtDim, fmtNs, fmtPct } from '../lib/format';
import { decimalsForSpan, fmtRel, fmtWallNs, styleFor } from '../lib/time';
import { Empty, ErrorBox, Loading, sortRows, Th, useApi } from './common';
import { Timeline, viewFromUrl } from './Timeline';
import type { Device, KernelAgg, KernelDetail, KernelItem, Page } from '../lib/types';

type Row = KernelItem & { t: number; ns: number; q: number | null; l: number | null };
const col = createColumnHelper<Row>();

/* columns the server sorts (all kernels of the range, not just the page) */
const SERVER_SORT: Record<string, string> = { t: 'start', dur: 'duration', queue: 'queue', launch: 'launch_latency' };

/* A kernel name in a table cell: whole, elided by CSS only when the cell
   is too narrow (the tooltip and the inspector carry it whole). */
function KName({ name, mangled }: { name: string; mangled?: string }) {
  return (
    <span className="kname" title={mangled && mangled !== name ? name + '\n\n' + mangled : name}>
      {name}
    </span>
  );
}

const lat = (v: string | null | undefined) => (v === null || v === undefined ? null : Number(v));

/* An aggregate's value for sorting by column k. */
function aggKey(r: KernelAgg, k: string): number | string {
  return k === 'name' ? r.name : Number(r[k as keyof KernelAgg]);
}

export function Kernels({ st, set, session }: ViewProps) {
  const s = session!;
  const base = big(s.first_ts);
  const span = Number(big(s.last_ts) - base);
  const view = viewFromUrl(st.from, st.to, base);
  const sel = st.sel && /^\d+$/.test(st.sel) ? Number(st.sel) : null;
  const [tab, setTab] = useState<'list' | 'agg'>('list');
  const [name, setName] = useState(st.q ?? '');
  const [order, setOrder] = useState<[string, boolean]>(['start', false]);
  const [limit, setLimit] = useState(200);
  const from = st.from;
  const to = st.to;
  const list = useApi<Page<KernelItem>>(
    'sessions/' + s.id + '/kernels',
    // overlap: a kernel that began before the view's left edge and runs
    // into it is in view too (docs/api.md "kernels")
    { from, to, overlap: from ? true : undefined, name, sort: order[0], desc: order[1], limit },
    [from, to, name, order[0], order[1], limit],
    // the table under the timeline: redrawn once the timeline is still
    { still: true },
  );
  const agg = useApi<Page<KernelAgg>>(
    tab === 'agg' ? 'sessions/' + s.id + '/kernels/aggregate' : null,
    { name, limit: 500 },
    [name, tab],
  );
  const [aggSort, setAggSort] = useState<[string, boolean]>(['total_ns', true]);
  const [sorting, setSorting] = useState<SortingState>([]);

  const rows = useMemo(
    () =>
      (list.data?.items ?? []).map((k) => ({
        ...k,
        t: rel(k.ts, base),
        ns: num(k.dur),
        q: lat(k.queue_ns),
        l: lat(k.launch_ns),
      })),
    [list.data, base],
  );
  // start times to the µs at least, finer when the range needs it (1/1000
  // of it), so rows of a deep zoom never read alike
  const vspan = from && to ? Number(BigInt(to) - BigInt(from)) : span;
  const dec = Math.max(6, decimalsForSpan(vspan));
  const tstyle = styleFor(span);
  const columns = useMemo(
    () => [
      col.accessor('kid', { header: 'id' }),
      col.accessor('t', { header: 'start', cell: (c) => '+' + fmtRel(c.getValue(), dec, tstyle) }),
      col.accessor('ns', { id: 'dur', header: 'GPU time', cell: (c) => fmtNs(c.getValue()) }),
      col.accessor('q', {
        id: 'queue',
        header: 'queue',
        cell: (c) => (c.getValue() === null ? '-' : fmtNs(c.getValue()!)),
      }),
      col.accessor('l', {
        id: 'launch',
        header: 'launch latency',
        cell: (c) => (c.getValue() === null ? '-' : fmtNs(c.getValue()!)),
      }),
      col.accessor('dev', { header: 'GPU' }),
      col.accessor('stream', { header: 'stream' }),
      col.accessor('name', {
        header: 'kernel',
        cell: (c) => <KName name={c.getValue()} mangled={c.row.original.mangled} />,
      }),
      col.accessor((r) => (r.grid[0] ?? 1) * (r.grid[1] ?? 1) * (r.grid[2] ?? 1), {
        id: 'grid',
        header: 'grid',
        cell: (c) => fmtDim(c.row.original.grid),
      }),
      col.accessor((r) => (r.block[0] ?? 1) * (r.block[1] ?? 1) * (r.block[2] ?? 1), {
        id: 'block',
        header: 'block',
        cell: (c) => fmtDim(c.row.original.block),
      }),
      col.accessor('regs', { header: 'regs' }),
      col.accessor('occ', {
        header: 'occupancy',
        cell: (c) => (c.getValue() === null ? '-' : fmtPct(c.getValue()!, 0)),
      }),
    ],
    [dec, tstyle],
  );
  const table = useReactTable({
    data: rows,
    columns,
    state: { sorting },
    onSortingChange: setSorting,
    getCoreRowModel: getCoreRowModel(),
    getSortedRowModel: getSortedRowModel(),
  });

  const pickKernel = (kid: number | null) => set({ ...st, sel: kid === null ? undefined : String(kid) }, false);
  // a header click: the server sorts its columns (the whole range), the
  // page sorts the others
  const headerClick = (id: string, client: ((e: unknown) => void) | undefined) => {
    const srv = SERVER_SORT[id];
    if (!srv) return client?.({});
    setSorting([]);
    setOrder(([k, d]) => (k === srv ? [srv, !d] : [srv, srv !== 'start']));
  };
  const sortMark = (id: string, client: string | false) => {
    const srv = SERVER_SORT[id];
    if (srv) return order[0] === srv && !sorting.length ? (order[1] ? ' ▼' : ' ▲') : '';
    return client === 'asc' ? ' ▲' : client === 'desc' ? ' ▼' : '';
  };
  const aggRows = useMemo(() => sortRows(agg.data?.items ?? [], aggSort[0], aggSort[1], aggKey), [agg.data, aggSort]);

  if (!s.counts.kernels)
    return (
      <Empty>
        This session recorded no kernels ({s.counts.lines} lines). Kernels appear when the program launches CUDA kernels
        under libgpufl with the <code>cupti</code> (or <code>sim</code>) engine on; see the session&apos;s engines:{' '}
        {Object.entries(s.engines ?? {})
          .map(([k, v]) => k + ': ' + v)
          .join('; ')}
        .
      </Empty>
    );

  return (
    <div className="kernels" data-testid="view-kernels">
      <Timeline
        sid={s.id}
        base={base}
        span={span}
        running={s.state === 'running'}
        kernels={s.counts.kernels}
        ops={s.counts.ops ?? 0}
        scopes={s.counts.scopes ?? 0}
        devices={s.devices ?? []}
        interval={s.interval_ms ?? 0}
        view={view}
        selected={sel}
        query={name}
        onPick={pickKernel}
        onView={(v) => {
          const whole = v.t0 <= 0 && v.t1 >= span;
          set(
            {
              ...st,
              from: whole ? undefined : (base + BigInt(Math.floor(v.t0))).toString(),
              to: whole ? undefined : (base + BigInt(Math.ceil(v.t1))).toString(),
            },
            true,
          );
        }}
      />
      <div className="split">
        <div className="left">
          <div className="toolbar">
            <button className={tab === 'list' ? 'on' : ''} data-testid="ktab-list" onClick={() => setTab('list')}>
              Kernels in view
            </button>
            <button className={tab === 'agg' ? 'on' : ''} data-testid="ktab-agg" onClick={() => setTab('agg')}>
              Aggregates by name (whole session)
            </button>
            <input
              data-testid="kernel-filter"
              placeholder="filter by name"
              value={name}
              onChange={(e) => {
                setName(e.target.value);
                set({ ...st, q: e.target.value || undefined }, true);
              }}
            />
            {tab === 'list' && (
              <select
                data-testid="kernel-order"
                value={order[0] + (order[1] ? ':desc' : '')}
                onChange={(e) => {
                  const [k, d] = e.target.value.split(':');
                  setSorting([]);
                  setOrder([k, d === 'desc']);
                }}
              >
                <option value="start">by start time</option>
                <option value="duration:desc">longest first</option>
                <option value="queue:desc">longest queue latency first</option>
                <option value="launch_latency:desc">longest launch latency first</option>
              </select>
            )}
          </div>
          {tab === 'list' && (
            <>
              {list.error ? <ErrorBox error={list.error} what="listing kernels" /> : null}
              {!list.data && !list.error && <Loading what="kernels" />}
              {list.data && !rows.length && (
                <Empty>
                  No kernels {name ? 'named like “' + name + '” ' : ''}in this range. Zoom out or clear the filter.
                </Empty>
              )}
              {rows.length > 0 && (
                <div className="scroll">
                  <table className="grid" data-testid="kernel-table">
                    <thead>
                      {table.getHeaderGroups().map((hg) => (
                        <tr key={hg.id}>
                          {hg.headers.map((h) => (
                            <th
                              key={h.id}
                              className={'sortable' + (SERVER_SORT[h.id] ? ' srv' : '')}
                              title={
                                SERVER_SORT[h.id]
                                  ? 'sorted by the server: the whole range'
                                  : 'sorts the rows shown (this page)'
                              }
                              onClick={() => headerClick(h.id, h.column.getToggleSortingHandler())}
                              data-testid={'kth-' + h.id}
                            >
                              {flexRender(h.column.columnDef.header, h.getContext())}
                              {sortMark(h.id, h.column.getIsSorted())}
                            </th>
                          ))}
                        </tr>
                      ))}
                    </thead>
                    <tbody>
                      {table.getRowModel().rows.map((r) => (
                        <tr
                          key={r.id}
                          data-testid="kernel-row"
                          data-kid={r.original.kid}
                          className={sel === r.original.kid ? 'sel' : ''}
                          onClick={() => pickKernel(r.original.kid)}
                        >
                          {r.getVisibleCells().map((c) => (
                            <td key={c.id} className={c.column.id === 'name' ? 'name' : 'num'}>
                              {flexRender(c.column.columnDef.cell, c.getContext())}
                            </td>
                          ))}
                        </tr>
                      ))}
                    </tbody>
                  </table>
                  {list.data?.next && (
                    <button onClick={() => setLimit(Math.min(1000, limit * 2))} disabled={limit >= 1000}>
                      {limit >= 1000 ? 'Showing 1000: zoom in to see the rest' : 'Show more'}
                    </button>
                  )}
                </div>
              )}
            </>
          )}
          {tab === 'agg' && (
            <>
              {agg.error ? <ErrorBox error={agg.error} what="aggregating kernels" /> : null}
              {!agg.data && !agg.error && <Loading what="aggregates" />}
              {agg.data && (
                <div className="scroll">
                  <table className="grid" data-testid="agg-table">
                    <thead>
                      <tr>
                        <Th k="name" sort={aggSort} setSort={setAggSort}>
                          kernel
                        </Th>
                        <Th k="count" num sort={aggSort} setSort={setAggSort}>
                          count
                        </Th>
                        <Th k="total_ns" num sort={aggSort} setSort={setAggSort}>
                          total
                        </Th>
                        <Th k="avg_ns" num sort={aggSort} setSort={setAggSort}>
                          avg
                        </Th>
                        <Th k="min_ns" num sort={aggSort} setSort={setAggSort}>
                          min
                        </Th>
                        <Th k="p50_ns" num sort={aggSort} setSort={setAggSort}>
                          p50
                        </Th>
                        <Th k="p99_ns" num sort={aggSort} setSort={setAggSort}>
                          p99
                        </Th>
                        <Th k="max_ns" num sort={aggSort} setSort={setAggSort}>
                          max
                        </Th>
                        <Th k="occ_avg" num sort={aggSort} setSort={setAggSort}>
                          occ
                        </Th>
                        <Th k="regs" num sort={aggSort} setSort={setAggSort}>
                          regs
                        </Th>
                      </tr>
                    </thead>
                    <tbody>
                      {aggRows.map((a) => (
                        <tr
                          key={a.mangled ?? a.name}
                          data-testid="agg-row"
                          onClick={() => {
                            setName(a.name);
                            set({ ...st, q: a.name }, true);
                          }}
                        >
                          <td className="name">
                            <KName name={a.name} mangled={a.mangled} />
                          </td>
                          <td className="num">{a.count}</td>
                          <td className="num">{fmtNs(num(a.total_ns))}</td>
                          <td className="num">{fmtNs(num(a.avg_ns))}</td>
                          <td className="num">{fmtNs(num(a.min_ns))}</td>
                          <td className="num">{fmtNs(num(a.p50_ns))}</td>
                          <td className="num">{fmtNs(num(a.p99_ns))}</td>
                          <td className="num">{fmtNs(num(a.max_ns))}</td>
                          <td className="num">{a.occ_avg === null ? '-' : fmtPct(a.occ_avg, 0)}</td>
                          <td className="num">{a.regs}</td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </div>
              )}
            </>
          )}
        </div>
        <Inspector
          sid={s.id}
          kid={sel}
          base={base}
          devices={s.devices ?? []}
          onScope={(p) => set({ tab: 'scopes', s: s.id, sel: p })}
        />
      </div>
    </div>
  );
}

function Inspector({
  sid,
  kid,
  base,
  devices,
  onScope,
}: {
  sid: string;
  kid: number | null;
  base: bigint;
  devices: Device[];
  onScope: (path: string) => void;
}) {
  const k = useApi<KernelDetail>(kid === null ? null : 'sessions/' + sid + '/kernels/' + kid, {}, [kid]);
  const kname: string | null = k.data && !k.loading ? k.data.name : null;
  const same = useApi<Page<KernelAgg>>(
    kname ? 'sessions/' + sid + '/kernels/aggregate' : null,
    { name: kname, limit: 1000 },
    [kname],
  );
  if (kid === null)
    return (
      <aside className="inspector" data-testid="inspector">
        <h3>Inspector</h3>
        <div className="empty">
          Click a kernel on the timeline (zoom in until single kernels show) or a row of the table to see all its fields
          here.
        </div>
      </aside>
    );
  if (k.error)
    return (
      <aside className="inspector" data-testid="inspector">
        <ErrorBox error={k.error} what={'loading kernel ' + kid} />
      </aside>
    );
  if (!k.data || k.loading)
    return (
      <aside className="inspector" data-testid="inspector">
        <Loading what={'kernel ' + kid} />
      </aside>
    );
  const d = k.data;
  const dev = devices.find((x) => x.id === d.dev);
  const ts = big(d.ts);
  const hasApi = d.api_enter !== undefined && d.api_enter !== null;
  const apiEnter = hasApi ? big(d.api_enter) : 0n;
  const apiExit = hasApi ? apiEnter + BigInt(d.api_dur ?? 0) : 0n;
  const path = d.path;
  const threads = (d.block[0] ?? 1) * (d.block[1] ?? 1) * (d.block[2] ?? 1);
  const blocks = (d.grid[0] ?? 1) * (d.grid[1] ?? 1) * (d.grid[2] ?? 1);
  const rows: [string, React.ReactNode, string][] = [
    ['name', <b className="wrap">{d.name}</b>, 'demangled'],
    ['recorded (mangled) name', <code className="wrap">{d.mangled ?? d.name}</code>, 'raw'],
    ['kernel id', d.kid, 'kid'],
    ['correlation id', d.corr, 'corr'],
    ['start', '+' + fmtRel(Number(ts - base), 9) + ' (' + fmtWallNs(ts) + ')', 'start'],
    ['GPU duration', fmtNs(Number(d.dur)), 'dur'],
    [
      'launch API call',
      hasApi
        ? '+' +
          fmtRel(Number(apiEnter - base), 9) +
          ', took ' +
          fmtNs(Number(d.api_dur)) +
          (d.tid !== undefined && d.tid !== null ? ' · thread ' + d.tid : '')
        : 'not recorded',
      'api',
    ],
    ['queue latency', hasApi ? fmtNs(Number(ts - apiExit)) + ' (API exit → GPU start)' : '-', 'queue'],
    ['launch latency', hasApi ? fmtNs(Number(ts - apiEnter)) + ' (API entry → GPU start)' : '-', 'launch_latency'],
    ['GPU', d.dev + (dev ? ' · ' + dev.name + (dev.pci ? ' · ' + dev.pci : '') : ''), 'dev'],
    ['stream', d.stream, 'stream'],
    ['grid', fmtDim(d.grid) + ' = ' + blocks + ' blocks', 'grid'],
    ['block', fmtDim(d.block) + ' = ' + threads + ' threads', 'block'],
    ['registers / thread', d.regs, 'regs'],
    ['static shared memory', fmtBytes(Number(d.smem) - Number(d.dyn_smem ?? 0)) + ' / block', 'static_smem'],
    ['dynamic shared memory', fmtBytes(Number(d.dyn_smem ?? 0)) + ' / block', 'dyn_smem'],
    [
      'local memory (spills)',
      fmtBytes(Number(d.local_mem ?? 0)) +
        ' / thread' +
        (d.local_mem ? ' = ' + fmtBytes(Number(d.local_mem) * threads * blocks) + ' total' : ''),
      'local_mem',
    ],
    ['theoretical occupancy', d.occ === null ? 'unknown' : fmtPct(d.occ, 1), 'occ'],
    ['limited by', d.limiter || '-', 'limiter'],
    ['cooperative launch', d.cooperative ? 'yes' : 'no', 'coop'],
    ['launch config id', d.launch_cfg ?? '-', 'launch_cfg'],
    ['scope instance', d.scope || 'none', 'scope'],
    [
      'scope path',
      path ? (
        <a
          href="#"
          onClick={(e) => {
            e.preventDefault();
            onScope(path);
          }}
        >
          {path}
        </a>
      ) : (
        'none'
      ),
      'path',
    ],
  ];
  return (
    <aside className="inspector" data-testid="inspector" data-kid={d.kid}>
      <h3>Inspector · kernel {d.kid}</h3>
      <table className="kv">
        <tbody>
          {rows.map(([k2, v, id]) => (
            <tr key={id} data-field={id}>
              <th>{k2}</th>
              <td data-testid={'f-' + id}>{v}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h4>All kernels of this name</h4>
      {(() => {
        const a = same.data?.items.find((x) => x.name === d.name);
        if (!a) return <div className="dim">{same.error ? 'aggregate unavailable' : '…'}</div>;
        const dur = Number(d.dur);
        const where =
          dur <= Number(a.min_ns)
            ? 'the fastest'
            : dur >= Number(a.max_ns)
              ? 'the slowest'
              : dur > Number(a.p99_ns)
                ? 'above p99'
                : dur > Number(a.p50_ns)
                  ? 'slower than the median'
                  : 'faster than the median';
        return (
          <table className="kv" data-testid="f-same">
            <tbody>
              <tr>
                <th>instances</th>
                <td>
                  {a.count} · total {fmtNs(Number(a.total_ns))}
                </td>
              </tr>
              <tr>
                <th>avg / p50 / p99</th>
                <td>
                  {fmtNs(Number(a.avg_ns))} / {fmtNs(Number(a.p50_ns))} / {fmtNs(Number(a.p99_ns))}
                </td>
              </tr>
              <tr>
                <th>min / max</th>
                <td>
                  {fmtNs(Number(a.min_ns))} / {fmtNs(Number(a.max_ns))}
                </td>
              </tr>
              <tr>
                <th>this one</th>
                <td>
                  {fmtNs(dur)}: {where}
                </td>
              </tr>
            </tbody>
          </table>
        );
      })()}
      <h4>CPU call stack of the launch</h4>
      {d.stack && d.stack.frames && d.stack.frames.length ? (
        <ol className="stack" data-testid="f-stack">
          {d.stack.frames.map((f, i) => (
            <li key={i}>
              <code>{f}</code>
            </li>
          ))}
        </ol>
      ) : (
        <div className="dim" data-testid="f-stack">
          No call stack recorded for this launch (the source records stacks only when stack capture is on; the simulated
          GPU records none).
        </div>
      )}
    </aside>
  );
}
