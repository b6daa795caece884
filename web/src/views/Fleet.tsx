import type { ViewProps } from '../App';
import { big, Dec } from '../lib/api';
import type { FleetHost, Page } from '../lib/types';
import { fmtBytes, fmtNs, fmtWall } from '../lib/format';
import { Badge, Empty, ErrorBox, Loading, useApi } from './common';
import { useEffect, useState } from 'react';
import { FleetWaste } from './FleetWaste';

function ago(ns: Dec): string {
  const d = Number(BigInt(Date.now()) * 1000000n - big(ns));
  if (d < 0) return 'just now';
  if (d >= 3600e9) return (d / 3600e9).toFixed(1) + ' h ago';
  if (d >= 60e9) return Math.round(d / 60e9) + ' min ago';
  return fmtNs(d) + ' ago';
}

/* The verdict's signals as short "name value" chips that wrap. */
function signals(s?: Record<string, number | string>): React.ReactNode {
  if (!s) return null;
  return (
    <span className="chips">
      {Object.entries(s).map(([k, v]) => (
        <span className="chip" key={k}>
          {k}{' '}
          {k.startsWith('mem')
            ? fmtBytes(Number(v))
            : typeof v === 'number' && !Number.isInteger(v)
              ? v.toFixed(2)
              : String(v)}
        </span>
      ))}
    </span>
  );
}

export function Fleet(_: ViewProps) {
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const t = setInterval(() => setTick((x) => x + 1), 15000);
    return () => clearInterval(t);
  }, []);
  const r = useApi<Page<FleetHost>>('fleet', { limit: 1000 }, [tick]);
  return (
    <div className="fleet" data-testid="view-fleet">
      <FleetWaste tick={tick} />
      <div className="toolbar">
        <span className="dim">
          Latest idle-detector verdict per host and GPU (refreshes every 15 s). Verdicts come from{' '}
          <code>gpufl idle watch</code> logs shipped by the agent.
        </span>
      </div>
      {r.error ? (
        <ErrorBox
          error={r.error}
          what="loading the fleet (GET /api/v1/fleet; this server may not have the idle-verdict endpoints yet)"
        />
      ) : null}
      {!r.data && !r.error && <Loading what="fleet" />}
      {r.data && !r.data.items.length && (
        <Empty>
          No idle verdicts yet. Run <code>gpufl idle watch --log-dir DIR</code> on each GPU host and ship DIR with{' '}
          <code>gpufl-agent</code> to this server.
        </Empty>
      )}
      {r.data && r.data.items.length > 0 && (
        <table className="grid fleet-grid" data-testid="fleet-table">
          <colgroup>
            <col style={{ width: '13%' }} />
            <col style={{ width: '10%' }} />
            <col style={{ width: '14%' }} />
            <col style={{ width: '9%' }} />
            <col style={{ width: '8%' }} />
            <col style={{ width: '24%' }} />
            <col style={{ width: '15%' }} />
            <col style={{ width: '7%' }} />
          </colgroup>
          <thead>
            <tr>
              <th>host</th>
              <th>GPU</th>
              <th>model</th>
              <th>verdict</th>
              <th>since</th>
              <th>reasons</th>
              <th>signals</th>
              <th>reported</th>
            </tr>
          </thead>
          <tbody>
            {r.data.items.flatMap((h) => [
              ...h.gpus.map((g, i) => (
                <tr
                  key={h.host + ':g' + g.dev}
                  data-testid="fleet-gpu"
                  data-host={h.host}
                  data-dev={g.dev}
                  data-state={g.state}
                >
                  <td>
                    {i === 0 ? (
                      <>
                        <b>{h.host}</b> {h.simulated && <Badge kind="simulated">simulated</Badge>}
                      </>
                    ) : (
                      ''
                    )}
                  </td>
                  <td>
                    GPU {g.dev}
                    {g.pci ? <div className="dim">{g.pci}</div> : null}
                  </td>
                  <td>{g.model ?? '-'}</td>
                  <td>
                    <Badge kind={g.state}>{g.state}</Badge>
                  </td>
                  <td title={fmtWall(g.since)}>{ago(g.since)}</td>
                  <td>
                    <ul className="reasons">
                      {g.reasons.map((x, j) => (
                        <li key={j}>{x}</li>
                      ))}
                    </ul>
                  </td>
                  <td className="dim" data-testid="fleet-signals">
                    {signals(g.signals)}
                  </td>
                  <td className="dim" title={fmtWall(g.ts)}>
                    {ago(g.ts)}
                  </td>
                </tr>
              )),
              ...h.sessions.map((s2) => (
                <tr key={h.host + ':s' + s2.session} data-testid="fleet-session" data-state={s2.state} className="sub">
                  <td>{h.gpus.length ? '' : <b>{h.host}</b>}</td>
                  <td>session</td>
                  <td>
                    {s2.session}
                    {s2.pod ? <div className="dim">{s2.pod}</div> : null}
                    {s2.devs ? <div className="dim">GPUs {s2.devs.join(', ')}</div> : null}
                  </td>
                  <td>
                    <Badge kind={s2.state}>{s2.state}</Badge>
                    {s2.action ? <div className="dim">action: {s2.action}</div> : null}
                  </td>
                  <td title={fmtWall(s2.since)}>{ago(s2.since)}</td>
                  <td>
                    <ul className="reasons">
                      {s2.reasons.map((x, j) => (
                        <li key={j}>{x}</li>
                      ))}
                    </ul>
                  </td>
                  <td className="dim">{signals(s2.signals)}</td>
                  <td className="dim" title={fmtWall(s2.ts)}>
                    {ago(s2.ts)}
                  </td>
                </tr>
              )),
            ])}
          </tbody>
        </table>
      )}
    </div>
  );
}
