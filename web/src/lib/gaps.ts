// gaps.ts - what the server is missing of a session (docs/api.md "gaps"),
// said in words for the session header's warning.
import type { Int } from './api';

export interface StreamGaps {
  count: Int;
  ranges: [Int, Int][];
  ranges_cut: boolean;
  last_seq: Int;
}

/* What the server does not hold of a session: "12,345 lines missing" and,
   for its tooltip, which (per stream, the first ranges of seq). */
export function gapsText(s: {
  missing?: Int;
  gaps?: Record<string, StreamGaps>;
}): { short: string; detail: string } | null {
  const n = Number(s.missing ?? 0);
  if (!n || !s.gaps) return null;
  const parts: string[] = [];
  for (const [st, g] of Object.entries(s.gaps)) {
    if (!Number(g.count)) continue;
    const rs = g.ranges.slice(0, 5).map(([a, b]) => (String(a) === String(b) ? String(a) : a + '–' + b));
    const more = g.ranges.length > 5 || g.ranges_cut ? ', …' : '';
    parts.push(st + ' ' + Number(g.count).toLocaleString('en-US') + ' (seq ' + rs.join(', ') + more + ')');
  }
  return {
    short: n.toLocaleString('en-US') + (n === 1 ? ' line' : ' lines') + ' missing',
    detail:
      'The server does not hold ' +
      n.toLocaleString('en-US') +
      ' line' +
      (n === 1 ? '' : 's') +
      ' of this session: ' +
      parts.join('; ') +
      ". They were lost before they reached it (files pruned before the agent read them, broker retention) or refused at ingest; views show what arrived. See the agent's log for the cause.",
  };
}
