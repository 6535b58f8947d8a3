import base from '../vitest.config.js';
import { defineConfig } from 'vitest/config';

/**
 * The smoke subset (`npm run test:smoke`): what can break on another Node.js line or another PostgreSQL server while
 * the whole suite passes on Node.js 24 and the machine's PostgreSQL. It starts the service and its command line as
 * processes of their own, loads both database drivers and sharp, and answers at least one request of every route
 * family on both databases. CI runs it on Node.js 22 and 26 and on the embedded PostgreSQL; `npm test` runs these
 * files too, with everything else. The run is the suite's (`vitest.config.ts`): the same PostgreSQL choice, timeouts
 * and workers.
 */
export const SMOKE_FILES = [
  // Start-up: the Node.js version check, the CLI (migrate, users and their password hashing, catalog import) and
  // `serve` (settings, start-up messages, SIGTERM and draining, `npm start` and `npx mixtape serve`) as processes.
  'src/node-version.test.ts',
  'test/ops/cli.test.ts',
  'test/ops/shutdown.test.ts',
  // The drivers: better-sqlite3's native binary on this Node.js, and pg's prepared statements on this server.
  'test/db/sqlite-driver.test.ts',
  'test/db/prepared-statements.test.ts',
  // Worker threads: file reading and diffs off the main thread.
  'src/workers/worker-pool.test.ts',
  // Every documented operation, once on each database: playlists, files and import, songs, covers, versions, diffs,
  // restores, the change feed, entries and merged edits, share links and their page, members.
  'test/http/openapi-answers.test.ts',
  // Playlists in depth, with the health, readiness and metrics endpoints.
  'test/playlists/playlists.test.ts',
  // Covers drawn by sharp's native binary: PNG, JPEG and SVG, every size, with the bundled fonts.
  'test/covers/covers.test.ts',
  // Smart playlists' rules, and search, on each database.
  'test/smart/smart-playlists.test.ts',
  'test/search/search.test.ts',
];

export default defineConfig({
  test: {
    ...base.test,
    root: new URL('..', import.meta.url).pathname,
    include: SMOKE_FILES,
  },
});
