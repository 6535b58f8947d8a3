import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    // The browser tests need Chromium: `npm run test:browser`, with a config of their own.
    exclude: [...configDefaults.exclude, 'test/browser/**'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Each file makes its own databases; two workers match the machine's two cores.
    maxWorkers: 2,
  },
});
