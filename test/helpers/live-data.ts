import { randomInt } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { expect } from 'vitest';
import { importCatalogPath } from '../../src/catalog/catalog-files.js';
import type { Db } from '../../src/db/database.js';
import { userService } from '../../src/users/user.service.js';
import { basic } from './app.js';
import { runCli } from './cli-process.js';
import type { PlaylistBody } from './requests.js';
import type { ServerProcess } from './server-process.js';
import { call } from './traffic.js';

/**
 * Data for tests against running service processes (server-process.ts): users and songs are written straight into
 * their database, as the operator's tools do, since the API creates neither.
 */

/** A catalog entry as `mixtape catalog import` reads it from a JSON file. */
export interface CatalogEntry {
  readonly id: number;
  readonly title: string;
  readonly artist: string;
}

/** The stem and six random lower-case letters: a search word that matches nothing else. */
export function uniqueWord(stem: string): string {
  let word = stem;
  for (let i = 0; i < 6; i++) word += String.fromCharCode(97 + randomInt(26));
  return word;
}

/** Creates a user and returns the value of a `security` header that signs in as them. */
export async function addUser(db: Db, name = uniqueWord('user'), password = 'correct horse'): Promise<string> {
  expect(await userService(db).add(name, password)).toBe(true);
  return basic(name, password);
}

/** Runs `work` with a JSON catalog file of these songs, then removes it. */
async function withCatalogFile<T>(songs: readonly CatalogEntry[], work: (path: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'mixtape-catalog-'));
  try {
    const path = join(dir, 'songs.json');
    writeFileSync(path, JSON.stringify(songs));
    return await work(path);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Adds songs with explicit ids to the catalog, from this process. */
export async function addSongs(db: Db, songs: readonly CatalogEntry[]): Promise<void> {
  const result = await withCatalogFile(songs, (path) => importCatalogPath(db, path, new PassThrough()));
  expect(result).toEqual({ inserted: songs.length, updated: 0, unchanged: 0 });
}

/** Changes songs (same ids, new titles or artists) with `mixtape catalog import`, as an operator would. */
export async function renameWithCli(databaseUrl: string, songs: readonly CatalogEntry[]): Promise<void> {
  const run = await withCatalogFile(songs, (path) => runCli(databaseUrl, ['catalog', 'import', path]));
  expect(run, run.stderr).toMatchObject({
    code: 0,
    stdout: `Catalog import: 0 added, ${songs.length} updated, 0 unchanged.\n`,
  });
}

/** Creates a playlist through a running service and returns it; anything but 200 fails the test. */
export async function createThrough(
  server: ServerProcess,
  security: string,
  name: string,
  songIds: number[],
): Promise<PlaylistBody> {
  const answer = await call(`${server.url}/v3/playlist`, {
    method: 'POST',
    headers: { security },
    body: { name, songIds },
  });
  expect(answer.status, answer.body).toBe(200);
  return JSON.parse(answer.body) as PlaylistBody;
}
