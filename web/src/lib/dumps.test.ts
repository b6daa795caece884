import { describe, expect, it } from 'vitest';
import { dumpBadge, firingText } from './dumps';

describe('dumpBadge', () => {
  it('marks nothing for a session of file mode', () => {
    expect(dumpBadge({})).toBeNull();
    expect(dumpBadge({ record: 'file' })).toBeNull();
  });
  it('says what fired last in a dump', () => {
    const b = dumpBadge({
      record: 'ring',
      dump: 2,
      trigger: { count: 3, last: 'crash', detail: 'SIGSEGV at 0x8' },
    });
    expect(b?.short).toBe('dump: crash');
    expect(b?.title).toContain('number 2');
    expect(b?.title).toContain('fired 3 times, the last crash (SIGSEGV at 0x8)');
  });
  it('says ring for a dump whose trigger lines have not arrived', () => {
    expect(dumpBadge({ record: 'ring', dump: 1 })?.short).toBe('ring');
  });
});

describe('firingText', () => {
  it('says the window and what it dropped', () => {
    expect(
      firingText({
        ts: '1796148872605839638',
        trigger: 'signal',
        detail: 'SIGUSR2',
        streams: ['device', 'scope', 'system'],
        window: { lines: 1731, bytes: '184207', evicted: 12, evicted_bytes: '1024', aged: 0, cap: '268435456' },
      }),
    ).toBe('signal (SIGUSR2): window 1,731 lines, 12 evicted for room');
    expect(firingText({ ts: '1', trigger: 'oom', repeats: 2, streams: ['device'] })).toBe('oom ×3');
  });
});
