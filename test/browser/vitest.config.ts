import { defineConfig } from 'vitest/config';

/** The browser tests (`npm run test:browser`): a real service, real pages and Debian's headless Chromium. */
export default defineConfig({
  test: {
    root: new URL('../..', import.meta.url).pathname,
    include: ['test/browser/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // One browser at a time on the machine's two cores.
    maxWorkers: 1,
  },
});
