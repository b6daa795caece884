// JobTimeline.tsx - the Job page's timeline: one lane per rank over one
// wall-clock window, each rank's kernels (all its streams) from its
// session's GET …/timeline for that window, drawn as the share of each
// column its kernels occupy; drag to zoom, the clock alignment said in
// words (lib/jobtl.ts).
import { useEffect, useMemo, useRef, useState } from 'react';
import type { MouseEvent } from 'react';
import { api } from '../lib/api';
import { fmtNs, fmtWall } from '../lib/format';
import { clockNote, rankLane, RankLane, zoomTo } from '../lib/jobtl';
import type { RankRow } from '../lib/jobs';
import type { TimelineTileAnswer } from '../lib/tiles';
import { formatHash } from '../lib/url';
import { ErrorBox, Loading } from './common';

const W = 1000; // columns, one per CSS pixel
const LANE = 16; // px per rank
const LANES_MAX = 256; // ranks drawn at most (the API's answer has at most as many)

export function JobTimeline({ rows, from, to }: { rows: RankRow[]; from: string; to: string }) {
  const [win, setWin] = useState<[bigint, bigint]>(() => [BigInt(from), BigInt(to)]);
  const [lanes, setLanes] = useState<(RankLane | null)[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [drag, setDrag] = useState<[number, number] | null>(null);
  const cv = useRef<HTMLCanvasElement>(null);
  const shown = rows.slice(0, LANES_MAX);
  const sids = shown.map((r) => r.session).join(',');
  const f = win[0].toString();
  const t = (win[1] > win[0] ? win[1] : win[0] + 1n).toString();

  useEffect(() => {
    const ac = new AbortController();
    setError(null);
    Promise.all(
      sids
        .split(',')
        .filter(Boolean)
        .map((sid) =>
          api<TimelineTileAnswer>('sessions/' + sid + '/timeline', { from: f, to: t, width: W }, ac.signal)
            .then((a) => rankLane(a, W))
            .catch((e) => {
              // a rank without kernels in the window (or gone) is an empty lane
              if (ac.signal.aborted) throw e;
              if (e && typeof e === 'object' && 'status' in e && (e as { status: number }).status === 404) return null;
              throw e;
            }),
        ),
    )
      .then(setLanes)
      .catch((e) => {
        if (!ac.signal.aborted) setError(e);
      });
    return () => ac.abort();
  }, [sids, f, t]);

  useEffect(() => {
    const c = cv.current;
    if (!c || !lanes) return;
    const g = c.getContext('2d');
    if (!g) return;
    g.clearRect(0, 0, c.width, c.height);
    lanes.forEach((l, i) => {
      if (!l) return;
      const y = i * LANE;
      const strag = shown[i]?.straggler;
      for (let x = 0; x < W; x++) {
        if (!l.hit[x]) continue;
        // every column a kernel occupies is drawn, the fuller the brighter
        const a = 0.25 + 0.75 * Math.min(1, l.occ[x]);
        g.fillStyle = strag ? `rgba(255,128,128,${a})` : `rgba(78,154,241,${a})`;
        g.fillRect(x, y + 2, 1, LANE - 4);
      }
    });
    if (drag) {
      g.fillStyle = 'rgba(255,255,255,0.15)';
      g.fillRect(Math.min(drag[0], drag[1]), 0, Math.abs(drag[1] - drag[0]), c.height);
    }
  }, [lanes, drag, shown]);

  const hosts = useMemo(() => shown.map((r) => r.host), [shown]);
  const span = win[1] - win[0];
  const whole = win[0] === BigInt(from) && win[1] === BigInt(to);
  const colAt = (e: MouseEvent) => {
    const r = (e.target as HTMLCanvasElement).getBoundingClientRect();
    return Math.max(0, Math.min(W, e.clientX - r.left));
  };
  return (
    <div className="jobtl" data-testid="job-tl">
      <p className="dim" data-testid="job-tl-clock">
        {clockNote(hosts)}
      </p>
      <div className="toolbar">
        <span className="dim" data-testid="job-tl-window" data-from={f} data-to={t} data-width={W}>
          {fmtWall(win[0])} + {fmtNs(Number(span))} · drag over the lanes to zoom
        </span>
        {!whole && (
          <button data-testid="job-tl-reset" onClick={() => setWin([BigInt(from), BigInt(to)])}>
            whole job
          </button>
        )}
      </div>
      {error ? <ErrorBox error={error} what="loading the ranks' timelines" /> : null}
      {!lanes && !error && <Loading what="the ranks' timelines" />}
      <div className="jobtl-body">
        <div className="jobtl-labels">
          {shown.map((r, i) => (
            <div
              key={r.session}
              className={'jobtl-label' + (r.straggler ? ' worse' : '')}
              style={{ height: LANE }}
              data-testid="job-tl-lane"
              data-rank={r.rank ?? ''}
              data-session={r.session}
              data-busy-cols={lanes?.[i]?.busyCols ?? 0}
              data-kernels={lanes?.[i]?.kernels ?? 0}
            >
              <a
                href={formatHash({ tab: 'kernels', s: r.session, from: f, to: t })}
                title={'rank ' + r.rank + ' on ' + r.host + ': its own timeline at this window'}
              >
                rank {r.rank ?? '?'}
              </a>{' '}
              <span className="dim">{r.host}</span>
            </div>
          ))}
        </div>
        <canvas
          ref={cv}
          width={W}
          height={shown.length * LANE}
          style={{ width: W, height: shown.length * LANE }}
          data-testid="job-tl-canvas"
          onMouseDown={(e) => setDrag([colAt(e), colAt(e)])}
          onMouseMove={(e) => drag && setDrag([drag[0], colAt(e)])}
          onMouseUp={(e) => {
            if (!drag) return;
            const c1 = colAt(e);
            setDrag(null);
            if (Math.abs(c1 - drag[0]) >= 3) setWin(zoomTo(win[0], win[1], W, drag[0], c1));
          }}
          onMouseLeave={() => setDrag(null)}
        />
      </div>
      {rows.length > LANES_MAX && (
        <p className="dim">
          The first {LANES_MAX} of {rows.length} ranks are drawn.
        </p>
      )}
    </div>
  );
}
