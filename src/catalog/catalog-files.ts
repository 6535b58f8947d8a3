import { stat } from 'node:fs/promises';
import cliProgress from 'cli-progress';
import type { Db } from '../db/database.js';
import { characterCount } from '../domain/search-text.js';
import { songsWithTitles } from './catalog.repository.js';
import { importCatalog, type CatalogEntry, type ImportResult } from './catalog.service.js';
import {
  AUDIO_EXTENSIONS,
  CatalogFileError,
  findAudioFiles,
  isAudioFile,
  readAudioFiles,
  readDataFile,
  type RawEntry,
} from './catalog-readers.js';

export { CatalogFileError };

export const TEXT_MAX_LENGTH = 500;
/** Seconds; the most an `integer` column holds on PostgreSQL. */
export const DURATION_MAX = 2 ** 31 - 1;

/**
 * Imports songs from a CSV, JSON or JSON Lines file (chosen by extension), from one audio file, or from the
 * audio files under a folder (by their tags). Every entry is checked before anything is written: a bad one
 * stops the import with an error that names the file, the line or index, and the field. Progress shows on
 * `progress` when it is a terminal; otherwise nothing is written to it, except a note about skipped
 * duplicate audio files at the end.
 */
export async function importCatalogPath(
  db: Db,
  path: string,
  progress: NodeJS.WriteStream | NodeJS.WritableStream,
): Promise<ImportResult> {
  const tty = 'isTTY' in progress && progress.isTTY;
  const isFolder = (await statPath(path)).isDirectory();
  let raw: RawEntry[];
  if (isFolder) {
    const files = await findAudioFiles(path);
    if (files.length === 0)
      throw new CatalogFileError(`${path}: no audio files (${AUDIO_EXTENSIONS.join(' ')}) in this folder`);
    raw = await withBar(tty ? progress : undefined, 'Reading tags', files.length, (update) =>
      readAudioFiles(files, update),
    );
  } else {
    raw = isAudioFile(path) ? await readAudioFiles([path], () => {}) : await readDataFile(path);
  }
  const { entries, places, skipped } = checkEntries(raw, isFolder);
  await checkAgainstCatalog(db, entries, places);
  const result = await withBar(tty ? progress : undefined, 'Importing', entries.length, (update) =>
    importCatalog(db, entries, update),
  );
  if (skipped.length > 0) {
    const shown = skipped.slice(0, 5).join('\n  ');
    const more = skipped.length > 5 ? `\n  … and ${skipped.length - 5} more` : '';
    progress.write(`Skipped ${skipped.length} audio file(s) whose tags repeat another file's:\n  ${shown}${more}\n`);
  }
  return result;
}

async function statPath(path: string) {
  try {
    return await stat(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new CatalogFileError(code === 'ENOENT' ? `${path}: no such file or folder` : `${path}: ${String(error)}`);
  }
}

async function withBar<T>(
  stream: NodeJS.WritableStream | undefined,
  label: string,
  total: number,
  work: (update: (done: number) => void) => Promise<T>,
): Promise<T> {
  if (stream === undefined) return work(() => {});
  const bar = new cliProgress.SingleBar(
    { stream, format: `${label} [{bar}] {percentage}% {value}/{total}`, hideCursor: true },
    cliProgress.Presets.shades_classic,
  );
  bar.start(total, 0);
  try {
    const result = await work((done) => {
      bar.update(done);
    });
    bar.update(total);
    return result;
  } finally {
    bar.stop();
  }
}

/**
 * Checks every entry and the file as a whole: two entries may not share an id, nor a title, artist and
 * album (the catalog's natural key). Audio files that repeat another's tags are skipped instead, since a
 * folder often holds one recording in two formats.
 */
export function checkEntries(
  raw: readonly RawEntry[],
  skipDuplicates: boolean,
): { entries: CatalogEntry[]; places: string[]; skipped: string[] } {
  const entries: CatalogEntry[] = [];
  const places: string[] = [];
  const skipped: string[] = [];
  const ids = new Map<number, string>();
  const keys = new Map<string, string>();
  for (const item of raw) {
    const entry = checkEntry(item);
    const key = JSON.stringify([entry.title, entry.artist, entry.album]);
    const sameKey = keys.get(key);
    if (sameKey !== undefined) {
      if (skipDuplicates) {
        skipped.push(item.where);
        continue;
      }
      throw new CatalogFileError(`${item.where}: the same title, artist and album as ${sameKey}`);
    }
    if (entry.id !== undefined) {
      const sameId = ids.get(entry.id);
      if (sameId !== undefined) throw new CatalogFileError(`${item.where}: id ${entry.id} is also used by ${sameId}`);
      ids.set(entry.id, item.where);
    }
    keys.set(key, item.where);
    entries.push(entry);
    places.push(item.where);
  }
  return { entries, places, skipped };
}

/**
 * Refuses an entry whose id and title, artist and album name two different songs of the catalog: the
 * import could neither add it (the natural key is taken) nor rename the song of that id to it.
 */
async function checkAgainstCatalog(db: Db, entries: readonly CatalogEntry[], places: readonly string[]) {
  const withIds = entries.flatMap((entry, i) => (entry.id === undefined ? [] : [{ entry, where: places[i]! }]));
  for (let start = 0; start < withIds.length; start += 500) {
    const chunk = withIds.slice(start, start + 500);
    const titles = [...new Set(chunk.map(({ entry }) => entry.title))];
    const rows = await songsWithTitles(db.kysely, titles);
    const byKey = new Map(rows.map((row) => [JSON.stringify([row.title, row.artist, row.album]), row.id]));
    for (const { entry, where } of chunk) {
      const other = byKey.get(JSON.stringify([entry.title, entry.artist, entry.album]));
      if (other !== undefined && other !== entry.id) {
        throw new CatalogFileError(
          `${where}: id ${entry.id} does not match song ${other}, which has this title, artist and album; use id ${other} or leave the id out`,
        );
      }
    }
  }
}

const shown = (value: unknown): string => {
  const text = value === undefined ? 'nothing' : JSON.stringify(value);
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
};

/** One entry, checked and normalised: text trimmed, album and genre '' when absent, duration rounded. */
export function checkEntry({ where, fields }: RawEntry): CatalogEntry {
  if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) {
    throw new CatalogFileError(`${where}: must be an object with a title and an artist (got ${shown(fields)})`);
  }
  const record = fields as Record<string, unknown>;
  const fail = (field: string, rule: string) =>
    new CatalogFileError(`${where}: ${field} ${rule} (got ${shown(record[field])})`);

  const text = (field: string, required: boolean): string => {
    const value = record[field];
    if (value === undefined || value === null) {
      if (required) throw new CatalogFileError(`${where}: ${field} is missing`);
      return '';
    }
    if (typeof value !== 'string') throw fail(field, 'must be a string');
    const trimmed = value.trim();
    if (required && trimmed === '') throw new CatalogFileError(`${where}: ${field} must not be empty`);
    if (characterCount(trimmed) > TEXT_MAX_LENGTH) {
      throw new CatalogFileError(
        `${where}: ${field} must be at most ${TEXT_MAX_LENGTH} characters (got ${characterCount(trimmed)})`,
      );
    }
    return trimmed;
  };

  const entry: CatalogEntry = {
    title: text('title', true),
    artist: text('artist', true),
    album: text('album', false),
    genre: text('genre', false),
    duration: null,
  };
  const { id, duration } = record;
  if (id !== undefined && id !== null) {
    if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 1) {
      throw fail('id', `must be a whole number from 1 to ${Number.MAX_SAFE_INTEGER}`);
    }
    entry.id = id;
  }
  if (duration !== undefined && duration !== null) {
    if (typeof duration !== 'number' || !Number.isFinite(duration) || duration < 0 || duration > DURATION_MAX) {
      throw fail('duration', `must be a number of seconds from 0 to ${DURATION_MAX}`);
    }
    entry.duration = Math.round(duration);
  }
  return entry;
}
