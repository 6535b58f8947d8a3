import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    // What needs software from outside npm has a command and a config of its own: Chromium (`npm run test:browser`),
    // HAProxy and redis-server (`npm run test:system`).
    exclude: [...configDefaults.exclude, 'test/browser/**', 'test/system/**'],
    // Picks the PostgreSQL server of the run (or starts one) before any test file runs.
    globalSetup: ['test/setup/postgres.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Each file makes its own databases; two workers match the machine's two cores.
    maxWorkers: 2,
  },
});
