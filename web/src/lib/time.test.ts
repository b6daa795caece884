import { describe, expect, it } from 'vitest';
import { axisTicks, decimalsFor, decimalsForSpan, fmtRel, fmtWallNs, niceStep, styleFor } from './time';

describe('fmtRel', () => {
  it('writes the decimals asked for, grouped in threes', () => {
    expect(fmtRel(17_200_000_100, 7)).toBe('17.200\u2009000\u20091 s');
    expect(fmtRel(17_200_000_100, 1)).toBe('17.2 s');
    expect(fmtRel(0, 0)).toBe('0 s');
    expect(fmtRel(999_999_999, 9)).toBe('0.999\u2009999\u2009999 s');
  });
  it('rounds to the shown precision, carrying into the seconds', () => {
    expect(fmtRel(1_999_999_999, 3)).toBe('2.000 s');
  });
  it('minutes and hours styles', () => {
    expect(fmtRel(725_250_000_000, 2, 'ms')).toBe('12:05.25 s');
    expect(fmtRel(86_399_500_000_000, 1, 'hms')).toBe('23:59:59.5 s');
    expect(fmtRel(5_000_000_000, 0, 'hms')).toBe('0:00:05 s');
    expect(styleFor(59e9)).toBe('s');
    expect(styleFor(61e9)).toBe('ms');
    expect(styleFor(86_400e9)).toBe('hms');
  });
});

describe('steps', () => {
  it('niceStep is 1-2-5 x 10^e and at least 1 ns', () => {
    expect(niceStep(0.2)).toBe(1);
    expect(niceStep(3)).toBe(5);
    expect(niceStep(7.7)).toBe(10);
    expect(niceStep(150)).toBe(200);
    expect(niceStep(2e9)).toBe(2e9);
  });
  it('decimalsFor gives 9 - e', () => {
    expect(decimalsFor(1)).toBe(9);
    expect(decimalsFor(5)).toBe(9);
    expect(decimalsFor(10)).toBe(8);
    expect(decimalsFor(200_000_000)).toBe(1);
    expect(decimalsFor(1e9)).toBe(0);
    expect(decimalsFor(3600e9)).toBe(0);
    expect(decimalsForSpan(10_000)).toBe(8);
  });
});

describe('axisTicks', () => {
  // every zoom from a 24 h session down to 100 ns, deep inside it: the
  // labels are distinct, their number fits the width, and they do not
  // overlap at 6.5 px per character
  const spans = [86_400e9, 3_600e9, 60e9, 1e9, 1e6, 1e4, 1e3, 100];
  for (const span of spans)
    for (const at of [0, 17.2e9, 86_400e9 - span]) {
      it(`span ${span} ns at ${at} ns`, () => {
        const w = 1470;
        const t = axisTicks(at, at + span, w);
        expect(t.at.length).toBeGreaterThanOrEqual(2);
        expect(new Set(t.labels).size).toBe(t.labels.length);
        const px = (t.step / span) * w;
        for (const l of t.labels) expect(l.length * 6.5 + 14).toBeLessThanOrEqual(px + 1e-6);
        for (let i = 1; i < t.at.length; i++) expect(t.at[i] - t.at[i - 1]).toBe(t.step);
      });
    }
  it('100 ns at 17.2 s reads to the 10 ns', () => {
    const t = axisTicks(17_200_000_000, 17_200_000_100, 1470);
    expect(t.step).toBeLessThanOrEqual(20);
    expect(t.labels[0]).toMatch(/^17\.200\u2009000\u200900\d? s$/);
  });
});

describe('fmtWallNs', () => {
  it('keeps the nanoseconds of an epoch-ns time', () => {
    expect(fmtWallNs('1795995293499341418')).toBe('2026-11-29 23:34:53.499\u2009341\u2009418 UTC');
    expect(fmtWallNs(1795995293000000001n)).toBe('2026-11-29 23:34:53.000\u2009000\u2009001 UTC');
  });
});
