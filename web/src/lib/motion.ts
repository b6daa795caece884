// motion.ts - whether the user is moving the timeline (wheel, drag, held
// keys): what else the page would redraw meanwhile (the Kernels table
// under it: hundreds of rows of long C++ names, a React render, a layout
// and a paint of 50-110 ms on the test machine) waits until the view has
// been still for STILL_MS, so that it never holds back the timeline's
// frames (bench/web's frame phases).

export const STILL_MS = 250;

let last = -Infinity;

/* The timeline's view changed now (a user's input). */
export function noteMotion(now = performance.now()): void {
  last = now;
}

/* ms until the view has been still for STILL_MS (0: it has). */
export function stillIn(now = performance.now()): number {
  return Math.max(0, last + STILL_MS - now);
}

/* Resolves once the view has been still for STILL_MS (at once when it
   has); rejects never, settles early when signal aborts. */
export function whenStill(signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const check = () => {
      const w = stillIn();
      if (w <= 0 || signal?.aborted) resolve();
      else setTimeout(check, w);
    };
    check();
  });
}
