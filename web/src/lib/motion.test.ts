import { describe, expect, it, vi } from 'vitest';
import { noteMotion, STILL_MS, stillIn, whenStill } from './motion';

describe('motion', () => {
  it('is still STILL_MS after the last move', () => {
    noteMotion(1000);
    expect(stillIn(1000)).toBe(STILL_MS);
    expect(stillIn(1000 + STILL_MS - 1)).toBe(1);
    expect(stillIn(1000 + STILL_MS)).toBe(0);
  });

  it('whenStill waits for the moves to stop', async () => {
    vi.useFakeTimers();
    try {
      noteMotion(performance.now());
      let done = false;
      const p = whenStill().then(() => (done = true));
      await vi.advanceTimersByTimeAsync(STILL_MS / 2);
      noteMotion(performance.now()); // moved again: the wait starts over
      await vi.advanceTimersByTimeAsync(STILL_MS / 2 + 10);
      expect(done).toBe(false);
      await vi.advanceTimersByTimeAsync(STILL_MS);
      await p;
      expect(done).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });
});
