/**
 * The content of a benchmark data set: a song catalog, users and their playlists, all drawn from word lists with
 * a seeded generator, so that the same parameters give the same rows everywhere. Search documents come from the
 * service's own functions, so the rows are exactly what the service would have written.
 */
import { createHmac } from 'node:crypto';
import { normaliseText, playlistDocument, searchDocument } from '../src/domain/search-text.js';
import { tokenDigest } from '../src/sharing/links.service.js';
import { Random } from './random.js';
import * as words from './words.js';

/** Bumped whenever the generated content or its storage changes, so that older data sets are regenerated. */
export const GENERATOR_VERSION = 5;

/** The rare word in exactly 1% of each user's playlist names (at least one), and nowhere else. */
export const PLANTED_WORD = 'zephyrine';
const PLANTED_SHARE = 0.01;

/** Every user has this many playlists of exactly ten songs, for the "get one playlist" scenario. */
const TEN_SONG_PLAYLISTS_PER_USER = 3;

/** One password for every user: hashing it once keeps generation fast, and any user can sign in. */
export const PASSWORD = 'bench-password';

// Fixed timestamps keep two generations with the same parameters identical.
export const USERS_CREATED_AT = Date.UTC(2025, 0, 1);
const PLAYLIST_INTERVAL_MS = 60_000;

// Playlist lengths: log-normal around a median of 15 songs, cut to 5..100, so most are short and a few are long.
const MEDIAN_SONGS = 15;
const SONGS_SPREAD = 0.75;
const MIN_SONGS = 5;
const MAX_SONGS = 100;

export interface DatasetParams {
  readonly playlists: number;
  readonly playlistsPerUser: number;
  readonly songs: number;
  readonly seed: number;
  /** Every playlist this long (bench/footprint.ts), instead of the log-normal lengths and the ten-song playlists. */
  readonly songsPerPlaylist?: number;
}

export interface CatalogSong {
  readonly title: string;
  readonly artist: string;
  readonly album: string;
  readonly genre: string;
  readonly duration: number;
  readonly searchDoc: string;
}

/** A link to one of a user's ten-song playlists, as its owner would have made it: for the `share-page` scenario. */
export interface BenchLink {
  readonly playlistId: number;
  /** The link's secret token, as the URL the service would have shown its owner ends (`/s/{token}`). */
  readonly token: string;
  /** The playlist's name, which its page shows. */
  readonly name: string;
}

export interface BenchUser {
  /** Users get ids 1, 2, … in this order. */
  readonly id: number;
  readonly name: string;
  readonly playlists: number;
  /** How many of the user's playlist names contain `PLANTED_WORD`. */
  readonly planted: number;
  /** Filled in as the playlists are generated. */
  readonly tenSongPlaylistIds: number[];
  /** One link to each of `tenSongPlaylistIds`; filled in as the playlists are generated. */
  readonly links: BenchLink[];
  /** The playlists shared with this user as a viewer: the next user's ten-song playlists (see `shareWithNeighbours`). */
  readonly sharedPlaylistIds: number[];
}

/** What a generated database holds; stored in it, written last, so that an interrupted generation is redone. */
export interface DatasetMeta {
  readonly generatorVersion: number;
  readonly params: DatasetParams;
  readonly password: string;
  readonly plantedWord: string;
  /** Playlists above this id were added by a benchmark run (the create scenario) and are removed before the next. */
  readonly lastPlaylistId: number;
  readonly playlistSongs: number;
  readonly generationSeconds: number;
  readonly users: readonly BenchUser[];
}

/** Playlists in id order, as parallel columns: what both databases' bulk inserts take. */
export interface PlaylistBatch {
  readonly ids: number[];
  readonly ownerIds: number[];
  readonly names: string[];
  readonly createdAt: number[];
  readonly docs: string[];
  readonly entryPlaylistIds: number[];
  readonly entryPositions: number[];
  readonly entrySongIds: number[];
}

export function sameParams(a: DatasetParams, b: DatasetParams): boolean {
  return (
    a.playlists === b.playlists &&
    a.playlistsPerUser === b.playlistsPerUser &&
    a.songs === b.songs &&
    a.seed === b.seed &&
    a.songsPerPlaylist === b.songsPerPlaylist
  );
}

// Each part of the data set draws from its own stream, so that changing one part does not reshuffle the others.
const stream = (params: DatasetParams, part: number) => new Random((params.seed * 0x9e3779b1 + part) >>> 0);

/** A word made up for the benchmark is useless if some list already contains it: searching it would find more. */
export function assertPlantedWordUnused(): void {
  for (const list of words.ALL_WORDS) {
    const found = list.find((word) => normaliseText(word).includes(PLANTED_WORD));
    if (found !== undefined) throw new Error(`The word list entry "${found}" contains the planted word.`);
  }
}

function uniqueNames(count: number, make: () => string): string[] {
  const names = new Set<string>();
  while (names.size < count) names.add(make());
  return [...names];
}

function artistName(random: Random): string {
  const roll = random.next();
  if (roll < 0.4) return `${random.pick(words.FIRST_NAMES)} ${random.pick(words.LAST_NAMES)}`;
  if (roll < 0.65) return `The ${random.pick(words.ADJECTIVES)} ${random.pick(words.NOUNS)}s`;
  if (roll < 0.85) return `${random.pick(words.ADJECTIVES)} ${random.pick(words.NOUNS)}`;
  if (roll < 0.93) return `${random.pick(words.FIRST_NAMES)} & the ${random.pick(words.NOUNS)}s`;
  return `DJ ${random.pick(words.FIRST_NAMES)} ${random.pick(words.NOUNS)}`;
}

function albumTitle(random: Random): string {
  const roll = random.next();
  if (roll < 0.5) return `${random.pick(words.ADJECTIVES)} ${random.pick(words.NOUNS)}`;
  if (roll < 0.7) return `${random.pick(words.NOUNS)} of the ${random.pick(words.NOUNS)}`;
  if (roll < 0.85) return `Live at the ${random.pick(words.NOUNS)}`;
  return `${random.pick(words.NOUNS)}s`;
}

function songTitle(random: Random): string {
  const roll = random.next();
  if (roll < 0.35) return `${random.pick(words.ADJECTIVES)} ${random.pick(words.NOUNS)}`;
  if (roll < 0.55)
    return `${random.pick(words.VERBS)} ${random.pick(words.PREPOSITIONS)} the ${random.pick(words.NOUNS)}`;
  if (roll < 0.7) return `${random.pick(words.NOUNS)} of ${random.pick(words.NOUNS)}`;
  if (roll < 0.8) return `The ${random.pick(words.NOUNS)}`;
  if (roll < 0.9) return random.pick(words.NOUNS);
  return `${random.pick(words.ADJECTIVES)} ${random.pick(words.NOUNS)} (${random.pick(words.ADJECTIVES)} Mix)`;
}

/** The catalog: song id i + 1 is element i. About 20 songs per artist, one to six albums each. */
export function buildCatalog(params: DatasetParams): CatalogSong[] {
  const random = stream(params, 1);
  const artists = uniqueNames(Math.min(Math.max(Math.round(params.songs / 20), 50), 20_000), () => artistName(random));
  const mainGenre = artists.map(() => random.pick(words.GENRES));
  const albums = artists.map(() => Array.from({ length: random.between(1, 6) }, () => albumTitle(random)));
  // The catalog's natural key (title, artist, album) is unique.
  const keys = new Set<string>();
  const songs: CatalogSong[] = [];
  while (songs.length < params.songs) {
    const a = random.int(artists.length);
    const artist = artists[a]!;
    const album = random.pick(albums[a]!);
    const title = songTitle(random);
    const key = `${title}\u0000${artist}\u0000${album}`;
    if (keys.has(key)) continue;
    keys.add(key);
    const genre = random.chance(0.8) ? mainGenre[a]! : random.pick(words.GENRES);
    const searchDoc = searchDocument([title, artist, album, genre]);
    songs.push({ title, artist, album, genre, duration: random.between(90, 480), searchDoc });
  }
  return songs;
}

/** The users: the playlists shared out evenly, about `playlistsPerUser` each. */
export function planUsers(params: DatasetParams): BenchUser[] {
  const count = Math.max(1, Math.round(params.playlists / params.playlistsPerUser));
  const base = Math.floor(params.playlists / count);
  const digits = String(count).length;
  return Array.from({ length: count }, (_, i) => {
    const playlists = base + (i < params.playlists % count ? 1 : 0);
    return {
      id: i + 1,
      name: `bench-user-${String(i + 1).padStart(digits, '0')}`,
      playlists,
      planted: Math.max(1, Math.round(playlists * PLANTED_SHARE)),
      tenSongPlaylistIds: [],
      links: [],
      sharedPlaylistIds: [],
    };
  });
}

function playlistName(random: Random): string {
  const roll = random.next();
  let name: string;
  if (roll < 0.25) name = `${random.pick(words.ADJECTIVES)} ${random.pick(words.NOUNS)}`;
  else if (roll < 0.45) name = `${random.pick(words.MOMENTS)} ${random.pick(words.PLAYLIST_SUFFIXES)}`;
  else if (roll < 0.6) name = `${random.pick(words.GENRES)} ${random.pick(words.PLAYLIST_SUFFIXES)}`;
  else if (roll < 0.72) name = `${random.pick(words.FIRST_NAMES)}'s ${random.pick(words.PLAYLIST_SUFFIXES)}`;
  else if (roll < 0.84) name = `${random.pick(words.MOMENTS)} ${random.between(1990, 2025)}`;
  else name = `${random.pick(words.ADJECTIVES)} ${random.pick(words.MOMENTS)} ${random.pick(words.PLAYLIST_SUFFIXES)}`;
  return random.chance(0.05) ? `${name} ${random.pick(words.EMOJI)}` : name;
}

function plantedName(random: Random): string {
  return random.chance(0.5)
    ? `${random.pick(words.ADJECTIVES)} Zephyrine ${random.pick(words.PLAYLIST_SUFFIXES)}`
    : `Zephyrine ${random.pick(words.MOMENTS)}`;
}

function playlistLength(random: Random): number {
  const length = Math.round(MEDIAN_SONGS * Math.exp(SONGS_SPREAD * random.normal()));
  return Math.min(MAX_SONGS, Math.max(MIN_SONGS, length));
}

/** A song index in `count`, skewed so that low indexes (the hits) come up far more often. */
const popular = (random: Random, count: number) => Math.floor(count * random.next() ** 2);

// Roles of a playlist; 0, the default, is an ordinary one.
const ROLE_PLANTED = 1;
const ROLE_TEN_SONGS = 2;

/**
 * The token of the playlist's link: 32 bytes in base64url, as the service makes them, but drawn from the seed and the
 * playlist id (an HMAC), so that the same parameters give the same links, and a token is known without storing it.
 */
export function linkToken(params: DatasetParams, playlistId: number): string {
  return createHmac('sha256', `mixtape-bench-link-${params.seed}`).update(String(playlistId)).digest('base64url');
}

/**
 * The playlists in id order, in batches. Owners are interleaved, as creation order is on a live service; half the
 * playlists lean on one genre. Fills in each user's `tenSongPlaylistIds`.
 */
export function* generatePlaylists(
  params: DatasetParams,
  catalog: readonly CatalogSong[],
  users: readonly BenchUser[],
  batchSize: number,
): Generator<PlaylistBatch> {
  const random = stream(params, 2);
  const owners = new Int32Array(params.playlists);
  let filled = 0;
  for (const user of users) owners.fill(user.id, filled, (filled += user.playlists));
  random.shuffle(owners);

  // Which of each user's playlists (counted in creation order) are planted or have ten songs.
  const roles = users.map((user) => {
    const role = new Uint8Array(user.playlists);
    const order = random.shuffle(Array.from({ length: user.playlists }, (_, i) => i));
    for (const i of order.slice(0, user.planted)) role[i] = ROLE_PLANTED;
    for (const i of order.slice(user.planted, user.planted + TEN_SONG_PLAYLISTS_PER_USER)) role[i] = ROLE_TEN_SONGS;
    return role;
  });
  const seen = new Int32Array(users.length);

  const byGenre = new Map<string, number[]>();
  catalog.forEach((song, i) => {
    const ids = byGenre.get(song.genre) ?? [];
    ids.push(i + 1);
    byGenre.set(song.genre, ids);
  });
  const genreLists = [...byGenre.values()];

  let batch = emptyBatch();
  for (let id = 1; id <= params.playlists; id += 1) {
    const user = users[owners[id - 1]! - 1]!;
    const role = roles[user.id - 1]![seen[user.id - 1]!++]!;
    const name = role === ROLE_PLANTED ? plantedName(random) : playlistName(random);
    const length = params.songsPerPlaylist ?? (role === ROLE_TEN_SONGS ? 10 : playlistLength(random));
    if (role === ROLE_TEN_SONGS && length === 10) {
      user.tenSongPlaylistIds.push(id);
      user.links.push({ playlistId: id, token: linkToken(params, id), name });
    }

    const theme = random.chance(0.5) ? random.pick(genreLists) : undefined;
    const songs: CatalogSong[] = [];
    for (let position = 0; position < length; position += 1) {
      const songId =
        theme !== undefined && random.chance(0.7)
          ? theme[popular(random, theme.length)]!
          : popular(random, catalog.length) + 1;
      songs.push(catalog[songId - 1]!);
      batch.entryPlaylistIds.push(id);
      batch.entryPositions.push(position);
      batch.entrySongIds.push(songId);
    }
    batch.ids.push(id);
    batch.ownerIds.push(user.id);
    batch.names.push(name);
    batch.createdAt.push(USERS_CREATED_AT + id * PLAYLIST_INTERVAL_MS);
    batch.docs.push(playlistDocument(name, songs));
    if (batch.ids.length === batchSize) {
      yield batch;
      batch = emptyBatch();
    }
  }
  if (batch.ids.length > 0) yield batch;
}

/** Memberships and links, as parallel columns: what both databases' bulk inserts take. */
export interface SharingRows {
  /** When every membership was added and every link made: just after the last playlist. */
  readonly at: number;
  readonly memberPlaylistIds: number[];
  readonly memberUserIds: number[];
  readonly memberOwnerIds: number[];
  readonly linkPlaylistIds: number[];
  readonly linkOwnerIds: number[];
  /** Each link's token as the service stores it: its SHA-256 in hex (the service's own `tokenDigest`). */
  readonly linkDigests: string[];
}

/**
 * Sharing, once the playlists are generated: each user is a viewer of the next user's ten-song playlists (the last
 * user of the first's), and each ten-song playlist has one link that never expires. Fills in each user's
 * `sharedPlaylistIds`. A data set of one user shares nothing (no one may be a member of their own playlist).
 * Member events are left out, as the playlists' revisions are: the generated data has no history.
 */
export function shareWithNeighbours(params: DatasetParams, users: readonly BenchUser[]): SharingRows {
  const rows: SharingRows = {
    at: USERS_CREATED_AT + (params.playlists + 1) * PLAYLIST_INTERVAL_MS,
    memberPlaylistIds: [],
    memberUserIds: [],
    memberOwnerIds: [],
    linkPlaylistIds: [],
    linkOwnerIds: [],
    linkDigests: [],
  };
  users.forEach((user, i) => {
    for (const link of user.links) {
      rows.linkPlaylistIds.push(link.playlistId);
      rows.linkOwnerIds.push(user.id);
      rows.linkDigests.push(tokenDigest(link.token));
    }
    const next = users[(i + 1) % users.length]!;
    if (next === user) return;
    for (const id of next.tenSongPlaylistIds) {
      user.sharedPlaylistIds.push(id);
      rows.memberPlaylistIds.push(id);
      rows.memberUserIds.push(user.id);
      rows.memberOwnerIds.push(next.id);
    }
  });
  return rows;
}

function emptyBatch(): PlaylistBatch {
  return {
    ids: [],
    ownerIds: [],
    names: [],
    createdAt: [],
    docs: [],
    entryPlaylistIds: [],
    entryPositions: [],
    entrySongIds: [],
  };
}
