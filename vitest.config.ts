import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    // The browser tests need Chromium: `npm run test:browser`, with a config of their own.
    exclude: [...configDefaults.exclude, 'test/browser/**'],
    // Picks the PostgreSQL server of the run (or starts one) before any test file runs.
    globalSetup: ['test/setup/postgres.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Each file makes its own databases; two workers match the machine's two cores.
    maxWorkers: 2,
  },
});
