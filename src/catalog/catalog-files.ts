import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, extname, join } from 'node:path';
import cliProgress from 'cli-progress';
import { parse } from 'csv-parse/sync';
import type { Db } from '../db/database.js';
import { characterCount } from '../domain/search-text.js';
import { songsWithTitles } from './catalog.repository.js';
import { importCatalog, type CatalogEntry, type ImportResult } from './catalog.service.js';

/*
 * The catalog's files as `mixtape catalog import` reads them: a CSV, JSON or JSON Lines file, or audio files' tags,
 * parsed (the readers, at the end), each entry checked, the file checked against the catalog, then imported.
 */

/** A file or entry that cannot be imported; the message names the file, the line or index, and the field. */
export class CatalogFileError extends Error {
  override name = 'CatalogFileError';
}

/** One entry as a file holds it, not yet checked, with where it came from for error messages. */
export interface RawEntry {
  /** `songs.csv, line 4`, `songs.json, entry 3 (index 2)`, or an audio file's path. */
  readonly where: string;
  readonly fields: unknown;
}

export const DATA_EXTENSIONS = ['.csv', '.json', '.jsonl', '.ndjson'] as const;
export const AUDIO_EXTENSIONS = ['.mp3', '.flac', '.ogg', '.opus', '.m4a', '.wav', '.aiff'] as const;

export const isAudioFile = (path: string): boolean =>
  (AUDIO_EXTENSIONS as readonly string[]).includes(extname(path).toLowerCase());

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

/** Reads a CSV, JSON or JSON Lines file, chosen by its extension. */
export async function readDataFile(path: string): Promise<RawEntry[]> {
  const extension = extname(path).toLowerCase();
  const content = await readFile(path);
  switch (extension) {
    case '.csv':
      return readCsv(path, content);
    case '.json':
      return readJson(path, content.toString('utf8'));
    case '.jsonl':
    case '.ndjson':
      return readJsonLines(path, content.toString('utf8'));
    default:
      throw new CatalogFileError(
        `${path}: unknown file type "${extension}"; use ${DATA_EXTENSIONS.join(', ')}, or a folder of audio files`,
      );
  }
}

const stripBom = (text: string): string => (text.startsWith('\uFEFF') ? text.slice(1) : text);

function readCsv(path: string, content: Buffer): RawEntry[] {
  let rows: { record: string[]; info: { bytes: number } }[];
  try {
    // With `info`, each record comes with where it ends; csv-parse's types leave that option out.
    rows = parse(content, { bom: true, info: true, skip_empty_lines: true, trim: true }) as unknown as typeof rows;
  } catch (error) {
    throw new CatalogFileError(`${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const [header, ...records] = rows;
  if (header === undefined) return [];
  const columns = header.record.map((name) => name.toLowerCase());
  for (const required of ['title', 'artist']) {
    if (!columns.includes(required)) throw new CatalogFileError(`${path}: the header row has no "${required}" column`);
  }
  // csv-parse counts lines wrongly for CRLF files with multi-line fields: count them from byte offsets.
  const NEWLINE = 0x0a;
  let line = 1;
  let position = 0;
  let previousEnd = header.info.bytes;
  return records.map(({ record, info }) => {
    let start = previousEnd;
    while (content[start] === NEWLINE || content[start] === 0x0d) start += 1;
    for (; position < start; position += 1) if (content[position] === NEWLINE) line += 1;
    previousEnd = info.bytes;
    const fields: Record<string, string> = {};
    columns.forEach((name, i) => (fields[name] = record[i] ?? ''));
    return { where: `${path}, line ${line}`, fields: fromCsv(fields) };
  });
}

/** CSV has only strings: an empty id or duration is no value, a numeric one a number. */
function fromCsv(fields: Record<string, string>): Record<string, unknown> {
  const number = (value: string | undefined): unknown =>
    value === undefined || value === ''
      ? undefined
      : /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?$/i.test(value)
        ? Number(value)
        : value;
  return { ...fields, id: number(fields.id), duration: number(fields.duration) };
}

function readJson(path: string, text: string): RawEntry[] {
  let data: unknown;
  try {
    data = JSON.parse(stripBom(text));
  } catch (error) {
    throw new CatalogFileError(`${path}: not valid JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (!Array.isArray(data)) throw new CatalogFileError(`${path}: must hold a JSON array of songs`);
  return data.map((fields: unknown, index) => ({ where: `${path}, entry ${index + 1} (index ${index})`, fields }));
}

function readJsonLines(path: string, text: string): RawEntry[] {
  const entries: RawEntry[] = [];
  stripBom(text)
    .split(/\r?\n/)
    .forEach((content, index) => {
      if (content.trim() === '') return;
      const where = `${path}, line ${index + 1}`;
      try {
        entries.push({ where, fields: JSON.parse(content) as unknown });
      } catch (error) {
        throw new CatalogFileError(
          `${where}: not valid JSON: ${error instanceof Error ? error.message : String(error)}`,
        );
      }
    });
  return entries;
}

/** The audio files under a folder, at any depth, in a stable order. */
export async function findAudioFiles(folder: string): Promise<string[]> {
  const entries = await readdir(folder, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile() && isAudioFile(entry.name))
    .map((entry) => join(entry.parentPath, entry.name))
    .sort();
}

/** Reads the tags of audio files, a few at a time; `onRead` hears how many are done. */
export async function readAudioFiles(files: readonly string[], onRead: (done: number) => void): Promise<RawEntry[]> {
  const { parseFile } = await import('music-metadata');
  const entries: RawEntry[] = new Array<RawEntry>(files.length);
  let next = 0;
  let done = 0;
  let failed = false;
  const worker = async (): Promise<void> => {
    while (next < files.length && !failed) {
      const i = next++;
      const file = files[i]!;
      let metadata;
      try {
        metadata = await parseFile(file, { skipCovers: true });
      } catch (error) {
        failed = true;
        throw new CatalogFileError(
          `${file}: cannot read the tags: ${error instanceof Error ? error.message : String(error)}`,
        );
      }
      const { common, format } = metadata;
      entries[i] = {
        where: file,
        fields: {
          title: common.title?.trim() || basename(file, extname(file)),
          artist: common.artist?.trim() || 'Unknown Artist',
          album: common.album ?? '',
          genre: common.genre?.[0] ?? '',
          duration: format.duration,
        },
      };
      onRead(++done);
    }
  };
  await Promise.all(Array.from({ length: Math.min(8, files.length) }, worker));
  return entries;
}
