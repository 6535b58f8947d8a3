import { sql } from 'kysely';
import type { Db } from './database.js';

/** PostgreSQL's channel of wake-ups between instances (src/live/wakeups.ts listens on it and sends on it). */
export const LIVE_CHANNEL = 'mixtape_live';

/**
 * After a commit by a process that serves no requests (the command line's catalog import or restore): wakes every
 * request waiting for changes on every instance, to read the feed again. A signal only, sent on PostgreSQL; on
 * SQLite each instance notices another process's commits by itself.
 */
export async function wakeEveryInstance(db: Db): Promise<void> {
  if (db.dialect !== 'postgres') return;
  await sql`SELECT pg_notify(${LIVE_CHANNEL}, '{}')`.execute(db.kysely);
}
