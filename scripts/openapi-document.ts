import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/database.js';

/** A copy of `value` with every object's keys in sorted order; arrays keep theirs. */
export function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object') {
    const sorted: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) sorted[key] = sortKeys((value as Record<string, unknown>)[key]);
    return sorted;
  }
  return value;
}

/** The text of `docs/openapi.json`: 2-space indent, trailing newline. */
export const formatDocument = (document: unknown): string => `${JSON.stringify(document, null, 2)}\n`;

/**
 * The OpenAPI document as the code describes it, keys sorted: the app with the default configuration (the
 * environment is not read, so the limits in the document are the defaults) on an in-memory database that is never
 * migrated, since building the document runs no query.
 */
export async function openApiDocument(): Promise<Record<string, unknown>> {
  const config = loadConfig({ DATABASE_URL: 'sqlite::memory:' });
  const db = openDatabase(config.database);
  try {
    const app = await buildApp({ config, db });
    try {
      await app.ready();
      return sortKeys(app.swagger()) as Record<string, unknown>;
    } finally {
      await app.close();
    }
  } finally {
    await db.close();
  }
}
