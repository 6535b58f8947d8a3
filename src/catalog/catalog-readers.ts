import { readdir, readFile } from 'node:fs/promises';
import { basename, extname, join } from 'node:path';
import { parse } from 'csv-parse/sync';

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
