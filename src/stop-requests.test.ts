import { describe, expect, it } from 'vitest';
import { SIGNAL_COPY_MS, signalCopies } from './stop-requests.js';

describe('signalCopies', () => {
  it('takes the first signal, drops a copy of it that comes within the window, and takes one that comes after', () => {
    const isNew = signalCopies();
    expect(isNew('SIGINT', 1000)).toBe(true);
    expect(isNew('SIGINT', 1003)).toBe(false);
    expect(isNew('SIGINT', 1000 + SIGNAL_COPY_MS - 1)).toBe(false);
    expect(isNew('SIGINT', 1000 + SIGNAL_COPY_MS)).toBe(true);
  });

  it('takes another signal at once: it is not a copy', () => {
    const isNew = signalCopies();
    expect(isNew('SIGTERM', 0)).toBe(true);
    expect(isNew('SIGINT', 1)).toBe(true);
    expect(isNew('SIGTERM', 2)).toBe(true);
  });

  it('measures the window from the last signal it took', () => {
    const isNew = signalCopies(100);
    expect(isNew('SIGTERM', 0)).toBe(true);
    expect(isNew('SIGTERM', 90)).toBe(false);
    expect(isNew('SIGTERM', 150)).toBe(true);
    expect(isNew('SIGTERM', 240)).toBe(false);
  });
});
