/**
 * Long playlist files: the import (`POST /v3/playlist/import`) and the export (`GET /v3/playlist/{id}?format=`) of
 * playlists of 10, 1 000 and 10 000 songs in XSPF, JSPF and M3U8, one request at a time. The files to import are
 * written by the service's own writers with links of another site, so that each track is matched to the catalog by
 * its title and artist (album to choose among several), as a file from elsewhere is; the export is of the playlist
 * the import made. The catalog holds 10 000 songs besides the demo catalog, imported through `mixtape catalog import`
 * from bench/dataset.ts's generator.
 *
 * Each row is measured on a service just started for it (the built one, on CPU 0; this process on CPU 1), after a
 * warm-up of three imports and exports of a 100-song file of the format, so that one row's garbage and grown heap do
 * not count in the next: the time to the answer's last byte (median and largest of the runs), the longest the
 * service's event loop was held (`nodejs_eventloop_lag_max_seconds` of /metrics, reset at each scrape; its resolution
 * is 10 ms, so an idle loop shows about 10), and how much the service's resident memory grew at its peak during the
 * first run (`VmHWM` of /proc, reset before it through `clear_refs`; Linux, as root), beside the file's size.
 *
 * Build first (`npm run build`), then `npx tsx bench/long-files.ts [--dialect sqlite|postgres] [--pg-url URL]
 * [--runs N] [--formats xspf,jspf,m3u8] [--sizes 10,1000,10000] [--setting NAME=VALUE]… [--profile] [--root DIR]`:
 * `--setting` adds a setting of the service, `--profile` writes each service's CPU profile to bench/profiles/,
 * `--root` serves another checkout's build (`DIR/dist`) to compare two commits on one machine.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { MEDIA_TYPES, WRITERS, type FileFormat } from '../src/formats/formats.js';
import type { ExportLinks, ExportTrack } from '../src/formats/playlist-format.js';
import { serviceEnvironment } from '../test/helpers/service-environment.js';
import { buildCatalog } from './dataset.js';
import { auth, metric, percentile, scrape } from './load.js';
import {
  DATA_DIR,
  DEFAULT_PG_URL,
  ROOT,
  SERVICE_CPU,
  addUser,
  newDatabase,
  pinBench,
  startService,
  type RunningService,
} from './service.js';

const CATALOG_SONGS = 10_000;
const WARM_UP_SONGS = 100;
const WARM_UPS = 3;
const FORMATS: readonly FileFormat[] = ['xspf', 'jspf', 'm3u8'];
const SIZES: readonly number[] = [10, 1000, 10_000];
const USER = 'bob';

interface Options {
  readonly runs: number;
  readonly formats: readonly FileFormat[];
  readonly sizes: readonly number[];
  readonly settings: Readonly<Record<string, string>>;
  readonly profile: boolean;
  /** Another checkout whose build is served (`--root`), to measure two commits on one machine. */
  readonly root: string | undefined;
}

/** One direction of one row: times of the runs, the loop's longest hold over them, the first run's memory. */
interface Measured {
  readonly p50Ms: number;
  readonly maxMs: number;
  readonly loopMaxMs: number;
  readonly rssGrowthBytes: number | undefined;
  /** The answer's bytes (the export's file; the import's JSON). */
  readonly answerBytes: number;
}

interface Row {
  readonly format: FileFormat;
  readonly songs: number;
  readonly fileBytes: number;
  readonly import: Measured;
  readonly export: Measured;
}

/** The catalog's songs as the generator makes them (its song i is the catalog import's entry i). */
const catalog = buildCatalog({ songs: CATALOG_SONGS, seed: 1, playlists: 0, playlistsPerUser: 1 });

/** A file of `songs` catalog songs in a shuffled order, as another site would export them. */
function fileOf(format: FileFormat, songs: number): Buffer {
  // 7 919 is prime, so i → 7 919 i mod 10 000 visits every song once.
  const tracks: ExportTrack[] = Array.from({ length: songs }, (_v, i) => {
    const song = catalog[(i * 7919) % CATALOG_SONGS]!;
    return { id: i + 1, title: song.title, artist: song.artist, album: song.album, duration: song.duration };
  });
  const links: ExportLinks = {
    playlist: 'https://elsewhere.example/lists/1',
    song: (id) => `https://elsewhere.example/track/${id}`,
    location: (id) => `file:///music/${id}.mp3`,
  };
  return WRITERS[format]({ id: 1, name: `Long ${format} ${songs}`, tracks }, links);
}

const agent = new Agent({ keepAlive: true, maxSockets: 1 });

/** One request, its whole answer read (identity coding, nothing decompressed). */
function send(url: string, method: string, path: string, headers: Record<string, string>, body?: Buffer) {
  return new Promise<{ status: number; body: Buffer }>((resolve, reject) => {
    const sent = request(`${url}${path}`, { method, agent, headers: { ...headers, ...auth(USER) } }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
      });
      response.on('error', reject);
      response.on('end', () => {
        resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks) });
      });
    });
    sent.on('error', reject);
    sent.end(body);
  });
}

async function importFile(url: string, format: FileFormat, file: Buffer) {
  const answer = await send(url, 'POST', '/v3/playlist/import', { 'content-type': MEDIA_TYPES[format][0]! }, file);
  if (answer.status !== 200) throw new Error(`import: ${answer.status} ${answer.body.toString().slice(0, 300)}`);
  return answer;
}

async function exportFile(url: string, format: FileFormat, id: number) {
  const answer = await send(url, 'GET', `/v3/playlist/${id}?format=${format}`, { 'accept-encoding': 'identity' });
  if (answer.status !== 200) throw new Error(`export: ${answer.status} ${answer.body.toString().slice(0, 300)}`);
  return answer;
}

const imported = (body: Buffer) =>
  JSON.parse(body.toString()) as { playlist: { id: number; songs: unknown[] }; unmatched: unknown[] };

/** The longest delay of the service's event loop since the last scrape (which resets it), in ms. */
const loopMax = async (url: string) => 1000 * (metric(await scrape(url), 'nodejs_eventloop_lag_max_seconds') ?? NaN);

const statusField = (pid: number, name: string): number | undefined => {
  const match = new RegExp(`^${name}:\\s+(\\d+) kB$`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match === null ? undefined : Number(match[1]) * 1024;
};

/** Sets the process's peak resident size (VmHWM) to its size now; false where Linux does not let this process. */
function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** `runs` calls of `work`, each timed; the loop's longest hold over them; the first one's peak memory growth. */
async function measure(service: RunningService, runs: number, work: () => Promise<Buffer>): Promise<Measured> {
  const pid = service.pid!;
  const times: number[] = [];
  let loop = 0;
  let rssGrowthBytes: number | undefined;
  let answerBytes = 0;
  for (let run = 0; run < runs; run++) {
    await loopMax(service.url);
    // The monitor's first tick after the reset only starts its clock: a hold before it would go unseen.
    await sleep(30);
    const peakKnown = run === 0 && resetPeak(pid);
    const before = statusField(pid, 'VmRSS') ?? 0;
    const started = performance.now();
    const answer = await work();
    times.push(performance.now() - started);
    if (peakKnown) rssGrowthBytes = (statusField(pid, 'VmHWM') ?? before) - before;
    loop = Math.max(loop, await loopMax(service.url));
    answerBytes = answer.length;
  }
  times.sort((a, b) => a - b);
  return { p50Ms: percentile(times, 0.5), maxMs: times.at(-1) ?? 0, loopMaxMs: loop, rssGrowthBytes, answerBytes };
}

/** `mixtape catalog import` of the generated catalog, as a JSON Lines file. */
function importCatalog(databaseUrl: string): void {
  const dir = mkdtempSync(join(tmpdir(), 'mixtape-long-files-'));
  try {
    const file = join(dir, 'catalog.jsonl');
    const lines = catalog.map(({ title, artist, album, genre, duration }) =>
      JSON.stringify({ title, artist, album, genre, duration }),
    );
    writeFileSync(file, `${lines.join('\n')}\n`);
    const result = spawnSync(process.execPath, ['dist/cli.js', 'catalog', 'import', file], {
      cwd: ROOT,
      env: serviceEnvironment(process.env, { DATABASE_URL: databaseUrl }),
      encoding: 'utf8',
    });
    if (result.status !== 0) throw new Error(`mixtape catalog import failed: ${result.stderr}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function measureLongFiles(dialect: 'sqlite' | 'postgres', pgUrl: string, options: Options) {
  const database = await newDatabase(dialect, pgUrl, 'long-files');
  mkdirSync(DATA_DIR, { recursive: true });
  pinBench();
  try {
    addUser(database.url, USER);
    importCatalog(database.url);
    const largest = Math.max(...options.sizes, WARM_UP_SONGS);
    /** A service of its own for `work`, warmed up on this format's files. */
    const onFreshService = async <T>(format: FileFormat, work: (service: RunningService) => Promise<T>) => {
      const service = await startService({
        databaseUrl: database.url,
        logFile: join(DATA_DIR, `service-long-files-${dialect}.log`),
        settings: {
          LOG_LEVEL: 'info',
          // One request at a time: the load shedding would only refuse the row after a long one.
          MIXTAPE_MAX_EVENT_LOOP_DELAY_MS: '0',
          MIXTAPE_PLAYLISTS_PER_USER: '1000000',
          MIXTAPE_SONGS_MAX: String(largest),
          ...options.settings,
        },
        profile: options.profile,
        root: options.root,
        cpu: SERVICE_CPU,
      });
      try {
        const warmUp = fileOf(format, WARM_UP_SONGS);
        for (let i = 0; i < WARM_UPS; i++) {
          await exportFile(
            service.url,
            format,
            imported((await importFile(service.url, format, warmUp)).body).playlist.id,
          );
        }
        return await work(service);
      } finally {
        await service.stop();
      }
    };

    const rows: Row[] = [];
    for (const format of options.formats) {
      for (const songs of options.sizes) {
        const file = fileOf(format, songs);
        let id = 0;
        const importRow = await onFreshService(format, (service) =>
          measure(service, options.runs, async () => {
            const answer = await importFile(service.url, format, file);
            const { playlist, unmatched } = imported(answer.body);
            if (playlist.songs.length !== songs || unmatched.length !== 0) {
              throw new Error(`import of ${songs} songs: ${playlist.songs.length} matched, ${unmatched.length} not`);
            }
            id = playlist.id;
            return answer.body;
          }),
        );
        const exportRow = await onFreshService(format, (service) =>
          measure(service, options.runs, async () => (await exportFile(service.url, format, id)).body),
        );
        const row = { format, songs, fileBytes: file.length, import: importRow, export: exportRow };
        console.error(JSON.stringify(row));
        rows.push(row);
      }
    }
    return { dialect, runs: options.runs, rows };
  } finally {
    agent.destroy();
    await database.drop();
  }
}

export function formatLongFiles(r: Awaited<ReturnType<typeof measureLongFiles>>): string {
  const ms = (value: number) => value.toFixed(1);
  const mb = (bytes: number | undefined) => (bytes === undefined ? 'n/a' : (bytes / 1_048_576).toFixed(1));
  return [
    `Long playlist files (${r.dialect}): ${r.runs} runs a row on a service of its own, ms to the last byte; event ` +
      'loop max in ms (10 ms resolution); the peak resident memory growth of the first run, MB',
    '| format | songs | file MB | import p50 | import max | import loop max | import memory | export p50 | export max | export loop max | export memory |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...r.rows.map(
      (row) =>
        `| ${row.format} | ${row.songs} | ${mb(row.fileBytes)} | ${ms(row.import.p50Ms)} | ${ms(row.import.maxMs)} | ` +
        `${ms(row.import.loopMaxMs)} | ${mb(row.import.rssGrowthBytes)} | ${ms(row.export.p50Ms)} | ` +
        `${ms(row.export.maxMs)} | ${ms(row.export.loopMaxMs)} | ${mb(row.export.rssGrowthBytes)} |`,
    ),
  ].join('\n');
}

if (process.argv[1]?.endsWith('long-files.ts') === true) {
  const args = process.argv.slice(2);
  const arg = (name: string) => {
    const at = args.indexOf(name);
    return at >= 0 ? args[at + 1] : undefined;
  };
  const list = (name: string) => arg(name)?.split(',');
  const settings = Object.fromEntries(
    args.flatMap((value, i) => {
      if (args[i - 1] !== '--setting') return [];
      const equals = value.indexOf('=');
      return equals > 0 ? [[value.slice(0, equals), value.slice(equals + 1)]] : [];
    }),
  );
  measureLongFiles(arg('--dialect') === 'postgres' ? 'postgres' : 'sqlite', arg('--pg-url') ?? DEFAULT_PG_URL, {
    runs: Number(arg('--runs') ?? 3),
    formats: (list('--formats') as FileFormat[] | undefined) ?? FORMATS,
    sizes: list('--sizes')?.map(Number) ?? SIZES,
    settings,
    profile: args.includes('--profile'),
    root: arg('--root'),
  })
    .then((results) => {
      console.log(formatLongFiles(results));
    })
    .catch((error: unknown) => {
      console.error('bench:', error);
      process.exitCode = 1;
    });
}
