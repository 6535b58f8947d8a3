import { performance } from 'node:perf_hooks';
import { setImmediate as nextTurn } from 'node:timers/promises';
import cliProgress from 'cli-progress';
import { hashPassword } from '../src/credentials/password.js';
import {
  GENERATOR_VERSION,
  PASSWORD,
  PLANTED_WORD,
  USERS_CREATED_AT,
  assertPlantedWordUnused,
  buildCatalog,
  generatePlaylists,
  planUsers,
  sameParams,
  shareWithNeighbours,
  type DatasetMeta,
  type DatasetParams,
} from './dataset.js';
import type { DatasetStore } from './store.js';

/** Playlists per transaction (SQLite) or per set of `unnest` inserts (PostgreSQL). */
const BATCH = 5000;

export interface Dataset {
  readonly meta: DatasetMeta;
  /** False when an earlier generation with the same parameters was reused. */
  readonly generated: boolean;
}

const seconds = (since: number) => (performance.now() - since) / 1000;

/**
 * The data set for these parameters: the stored one when its parameters and generator version match (and
 * `regenerate` is off), else a new one. Either way it is brought back to its generated state first.
 */
export async function ensureDataset(store: DatasetStore, params: DatasetParams, regenerate: boolean): Promise<Dataset> {
  const existing = regenerate ? undefined : await store.readMeta();
  if (existing?.generatorVersion === GENERATOR_VERSION && sameParams(existing.params, params)) {
    const removed = await store.reset(existing);
    console.log(
      `Data set: reusing ${store.location} (generated in ${existing.generationSeconds.toFixed(1)} s)` +
        (removed > 0 ? `; removed ${removed} playlists added by an earlier run` : ''),
    );
    return { meta: existing, generated: false };
  }
  return { meta: await generate(store, params), generated: true };
}

async function generate(store: DatasetStore, params: DatasetParams): Promise<DatasetMeta> {
  assertPlantedWordUnused();
  const started = performance.now();
  console.log(`Data set: generating ${params.playlists} playlists into ${store.location}`);
  const writer = await store.create();

  const catalog = buildCatalog(params);
  await writer.insertSongs(catalog);
  const users = planUsers(params);
  // One scrypt hash for every user, made by the service's own code.
  await writer.insertUsers(users, await hashPassword(PASSWORD), USERS_CREATED_AT);
  console.log(`  ${catalog.length} songs and ${users.length} users in ${seconds(started).toFixed(1)} s`);

  const bar = new cliProgress.SingleBar(
    {
      format: '  playlists {bar} {percentage}% | {value}/{total} | {speed}/s | ETA {eta_formatted}',
      // Without a terminal (a log file), a line every 10 s instead of a redrawn bar.
      noTTYOutput: true,
      notTTYSchedule: 10_000,
    },
    cliProgress.Presets.shades_classic,
  );
  const loadStarted = performance.now();
  bar.start(params.playlists, 0, { speed: 0 });
  let done = 0;
  let playlistSongs = 0;
  for (const batch of generatePlaylists(params, catalog, users, BATCH)) {
    await writer.insertPlaylists(batch);
    done += batch.ids.length;
    playlistSongs += batch.entrySongIds.length;
    bar.update(done, { speed: Math.round(done / seconds(loadStarted)) });
    // SQLite writes synchronously: without a turn of the event loop the bar's timer never fires to redraw it.
    await nextTurn();
  }
  bar.stop();

  const sharingStarted = performance.now();
  const sharing = shareWithNeighbours(params, users);
  await writer.insertSharing(sharing);
  console.log(
    `  ${sharing.memberUserIds.length} memberships and ${sharing.linkDigests.length} links in ` +
      `${seconds(sharingStarted).toFixed(1)} s`,
  );

  // Each phase's time is printed when the next one starts, or when the last one ends.
  let phase: { name: string; started: number } | undefined;
  const endPhase = () => {
    if (phase !== undefined) console.log(`  ${phase.name}: ${seconds(phase.started).toFixed(1)} s`);
  };
  await writer.finish((name) => {
    endPhase();
    phase = { name, started: performance.now() };
  });
  endPhase();

  const meta: DatasetMeta = {
    generatorVersion: GENERATOR_VERSION,
    params,
    password: PASSWORD,
    plantedWord: PLANTED_WORD,
    lastPlaylistId: params.playlists,
    playlistSongs,
    generationSeconds: seconds(started),
    users,
  };
  await writer.storeMeta(meta);
  console.log(`Data set: generated in ${meta.generationSeconds.toFixed(1)} s (${playlistSongs} playlist entries)`);
  return meta;
}
