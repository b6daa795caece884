import { describe, expect, it } from 'vitest';
import { captureActive, captureBody, captureStatus, captureWhat } from './capture';
import type { CaptureRequest } from './types';

const req = (over: Partial<CaptureRequest>): CaptureRequest => ({
  id: 7,
  host: 'node-7',
  pid: 4242,
  action: 'trace',
  for_ms: 30000,
  note: null,
  state: 'pending',
  created: 1,
  expires: 601,
  delivered: null,
  finished: null,
  reason: null,
  processes: null,
  ...over,
});

describe('capture requests', () => {
  it('posts a 30 s trace of one process, or a dump of every process', () => {
    expect(captureBody('trace', 4242)).toEqual({ action: 'trace', pid: 4242, for: '30s', note: 'web UI' });
    expect(captureBody('dump', null)).toEqual({ action: 'dump', note: 'web UI' });
    expect(captureBody('trace', 1, 5)).toMatchObject({ for: '5s' });
  });
  it('says where a request stands', () => {
    expect(captureStatus(req({}))).toBe('waiting for the agent of node-7');
    expect(captureActive(req({}))).toBe(true);
    expect(captureActive(req({ state: 'delivered' }))).toBe(true);
    const done = req({ state: 'done', reason: '1 of 1 processes: ok' });
    expect(captureStatus(done)).toBe('done: 1 of 1 processes: ok');
    expect(captureActive(done)).toBe(false);
    expect(captureStatus(req({ state: 'expired', reason: 'no agent' }))).toBe('expired: no agent');
    expect(captureStatus(req({ state: 'failed' }))).toBe('failed');
  });
  it('names what was asked', () => {
    expect(captureWhat(req({}))).toBe('trace 30 s, pid 4242');
    expect(captureWhat(req({ action: 'dump', for_ms: null, pid: null }))).toBe('dump, every process');
  });
});
