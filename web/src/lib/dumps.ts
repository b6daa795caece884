// dumps.ts - libgpufl's flight-recorder dumps (docs/recorder.md) as the
// sessions list's badge and the session header's line of firings
// (docs/api.md GET /sessions: record, dump, trigger, triggers).
import type { Dec, Int } from './api';

/* One firing of a trigger in a dump (GET /sessions/{id} "triggers"). */
export interface TriggerFiring {
  ts: Dec;
  trigger: string;
  detail?: string;
  dump?: number;
  live_ms?: number;
  repeats?: number;
  streams: string[];
  window?: {
    lines: Int;
    bytes: Dec;
    evicted: Int;
    evicted_bytes: Dec;
    aged: Int;
    cap: Dec;
    duration_ms?: number;
  };
}

export interface DumpMarks {
  record?: string;
  dump?: number;
  trigger?: { count: number; last?: string; detail?: string };
}

/* The badge of a session: "dump: crash" for a dump that says what fired
   (the latest firing), "ring" for one of ring mode that does not (its
   trigger lines have not arrived yet); null for every other session. */
export function dumpBadge(s: DumpMarks): { short: string; title: string } | null {
  const t = s.trigger;
  if (t && t.count > 0) {
    const last = t.last ?? 'unknown';
    const n = t.count === 1 ? 'once' : t.count + ' times';
    return {
      short: 'dump: ' + last,
      title:
        'A flight-recorder dump' +
        (s.dump !== undefined ? ' (number ' + s.dump + ' of its process)' : '') +
        ': a trigger fired ' +
        n +
        ', the last ' +
        last +
        (t.detail ? ' (' + t.detail + ')' : '') +
        '. It holds the in-memory window before the first, then what came while it was live.',
    };
  }
  if (s.record && s.record !== 'file')
    return {
      short: s.record,
      title: 'Recorded in ' + s.record + ' mode (docs/recorder.md); no trigger line stored yet',
    };
  return null;
}

/* One firing in words: "crash (SIGSEGV at 0x8): window 1,731 lines,
   12 evicted for room, 3 aged out". */
export function firingText(f: TriggerFiring): string {
  let s = f.trigger + (f.detail ? ' (' + f.detail + ')' : '');
  if (f.repeats) s += ' ×' + (f.repeats + 1);
  const w = f.window;
  if (w) {
    const num = (v: Int) => Number(v).toLocaleString('en-US');
    s += ': window ' + num(w.lines) + ' lines';
    if (Number(w.evicted) > 0) s += ', ' + num(w.evicted) + ' evicted for room';
    if (Number(w.aged) > 0) s += ', ' + num(w.aged) + ' aged out';
  }
  return s;
}
