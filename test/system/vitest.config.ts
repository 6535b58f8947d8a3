import { defineConfig } from 'vitest/config';

/**
 * The system tests (`npm run test:system`): the service behind Debian's HAProxy, and the shared rate limit against
 * redis-servers the tests start. They need that software on the machine, so they are not part of `npm test`.
 */
export default defineConfig({
  test: {
    root: new URL('../..', import.meta.url).pathname,
    include: ['test/system/**/*.test.ts'],
    globalSetup: ['test/setup/postgres.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    maxWorkers: 2,
  },
});
