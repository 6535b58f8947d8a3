/**
 * The content of the load data set: a song catalog, users and their playlists, drawn from word lists with a seeded
 * generator, so that the same parameters give the same rows everywhere. Search documents and link digests come from
 * the service's own functions, so the rows are exactly what the service would have written.
 */
import { createHmac } from 'node:crypto';
import { generateNKeysBetween } from 'fractional-indexing';
import { normaliseText, playlistDocument, searchDocument } from '../src/domain/search-text.js';
import { tokenDigest } from '../src/sharing/links.service.js';
import { Random } from './random.js';
import * as words from './words.js';

/** Bumped whenever the generated content or its storage changes, so that older data sets are regenerated. */
export const GENERATOR_VERSION = 5;
/** The rare word in exactly 1% of each user's playlist names (at least one), and nowhere else. */
export const PLANTED_WORD = 'zephyrine';
/** Every user has this many playlists of exactly ten songs, for the "get one playlist" scenario. */
const TEN_SONG_PLAYLISTS_PER_USER = 3;
// Fixed timestamps keep two generations with the same parameters identical.
export const USERS_CREATED_AT = Date.UTC(2025, 0, 1);
const PLAYLIST_INTERVAL_MS = 60_000;

export interface DatasetParams {
  readonly playlists: number;
  readonly playlistsPerUser: number;
  readonly songs: number;
  readonly seed: number;
  /** Every playlist this long (bench/footprint.ts), instead of log-normal lengths and ten-song playlists. */
  readonly songsPerPlaylist?: number;
}

/** A song as its row in `songs` holds it. */
export interface CatalogSong {
  readonly title: string;
  readonly artist: string;
  readonly album: string;
  readonly genre: string;
  readonly duration: number;
  readonly search_doc: string;
}

/** Rows of a table, by its columns' names. */
export type Rows = Record<string, unknown>[];

/** A link to one of a user's ten-song playlists, for the `share-page` scenario. */
export interface BenchLink {
  readonly playlistId: number;
  /** The secret token the link's URL ends with (`/s/{token}`). */
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
  /** These three are filled in as the playlists and the sharing are generated. */
  readonly tenSongPlaylistIds: number[];
  readonly links: BenchLink[];
  /** The playlists shared with this user as a viewer: the next user's ten-song playlists. */
  readonly sharedPlaylistIds: number[];
}

/** What a generated database holds; stored in it, written last, so that an interrupted generation is redone. */
export interface DatasetMeta {
  readonly generatorVersion: number;
  readonly params: DatasetParams;
  readonly password: string;
  readonly plantedWord: string;
  /** Playlists above this id were added by a run (the create scenario) and are removed before the next. */
  readonly lastPlaylistId: number;
  readonly playlistSongs: number;
  readonly generationSeconds: number;
  readonly users: readonly BenchUser[];
}

export const sameParams = (a: DatasetParams, b: DatasetParams) =>
  a.playlists === b.playlists &&
  a.playlistsPerUser === b.playlistsPerUser &&
  a.songs === b.songs &&
  a.seed === b.seed &&
  a.songsPerPlaylist === b.songsPerPlaylist;

// Each part of the data set draws from its own stream, so that changing one part does not reshuffle the others.
const stream = (params: DatasetParams, part: number) => new Random((params.seed * 0x9e3779b1 + part) >>> 0);

/** A word made up for the benchmark is useless if a list already contains it: searching it would find more. */
export function assertPlantedWordUnused(): void {
  for (const list of words.ALL_WORDS) {
    const found = list.find((word) => normaliseText(word).includes(PLANTED_WORD));
    if (found !== undefined) throw new Error(`The word list entry "${found}" contains the planted word.`);
  }
}

const LISTS: Record<string, readonly string[]> = {
  ...{ first: words.FIRST_NAMES, last: words.LAST_NAMES, adj: words.ADJECTIVES, noun: words.NOUNS, verb: words.VERBS },
  ...{ prep: words.PREPOSITIONS, genre: words.GENRES, moment: words.MOMENTS, suffix: words.PLAYLIST_SUFFIXES },
};

/** One of `forms` (`share text|…`, each share the roll's bound), its `{list}`s drawn in order, `{year}` 1990 to 2025. */
function oneOf(random: Random, forms: string): string {
  const roll = random.next();
  const form = forms.split('|').find((f) => roll < Number(f.split(' ')[0]))!;
  return form
    .replace(/^\S+ /, '')
    .replace(/\{(\w+)\}/g, (_m, list: string) =>
      list === 'year' ? String(random.between(1990, 2025)) : random.pick(LISTS[list]!),
    );
}

const ARTIST_FORMS =
  '0.4 {first} {last}|0.65 The {adj} {noun}s|0.85 {adj} {noun}|0.93 {first} & the {noun}s|1 DJ {first} {noun}';

/** The catalog: song id i + 1 is element i. About 20 songs per artist, one to six albums each. */
export function buildCatalog(params: DatasetParams): CatalogSong[] {
  const random = stream(params, 1);
  const names = new Set<string>();
  while (names.size < Math.min(Math.max(Math.round(params.songs / 20), 50), 20_000))
    names.add(oneOf(random, ARTIST_FORMS));
  const artists = [...names];
  const mainGenre = artists.map(() => random.pick(words.GENRES));
  const albumForms = '0.5 {adj} {noun}|0.7 {noun} of the {noun}|0.85 Live at the {noun}|1 {noun}s';
  const albums = artists.map(() => Array.from({ length: random.between(1, 6) }, () => oneOf(random, albumForms)));
  const titleForms = '0.35 {adj} {noun}|0.55 {verb} {prep} the {noun}|0.7 {noun} of {noun}|0.8 The {noun}|0.9 {noun}|';
  // The catalog's natural key (title, artist, album) is unique.
  const keys = new Set<string>();
  const songs: CatalogSong[] = [];
  while (songs.length < params.songs) {
    const a = random.int(artists.length);
    const [artist, album] = [artists[a]!, random.pick(albums[a]!)];
    const title = oneOf(random, `${titleForms}1 {adj} {noun} ({adj} Mix)`);
    const key = `${title}\u0000${artist}\u0000${album}`;
    if (keys.has(key)) continue;
    keys.add(key);
    const genre = random.chance(0.8) ? mainGenre[a]! : random.pick(words.GENRES);
    const search_doc = searchDocument([title, artist, album, genre]);
    songs.push({ title, artist, album, genre, duration: random.between(90, 480), search_doc });
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
    const [name, planted] = [
      `bench-user-${String(i + 1).padStart(digits, '0')}`,
      Math.max(1, Math.round(playlists * 0.01)),
    ];
    return { id: i + 1, name, playlists, planted, tenSongPlaylistIds: [], links: [], sharedPlaylistIds: [] };
  });
}

const playlistName = (random: Random) => {
  const forms =
    "0.25 {adj} {noun}|0.45 {moment} {suffix}|0.6 {genre} {suffix}|0.72 {first}'s {suffix}|0.84 {moment} {year}|";
  const name = oneOf(random, `${forms}1 {adj} {moment} {suffix}`);
  return random.chance(0.05) ? `${name} ${random.pick(words.EMOJI)}` : name;
};
const plantedName = (random: Random) => oneOf(random, '0.5 {adj} Zephyrine {suffix}|1 Zephyrine {moment}');

/** Log-normal around a median of 15 songs, cut to 5..100: most are short and a few are long. */
const playlistLength = (random: Random) =>
  Math.min(100, Math.max(5, Math.round(15 * Math.exp(0.75 * random.normal()))));

/** A song index in `count`, skewed so that low indexes (the hits) come up far more often. */
const popular = (random: Random, count: number) => Math.floor(count * random.next() ** 2);

const ROLE_PLANTED = 1;
const ROLE_TEN_SONGS = 2;

/**
 * The token of the playlist's link: 32 bytes in base64url, as the service makes them, but an HMAC of the seed and
 * the playlist id, so that the same parameters give the same links and a token is known without storing it.
 */
const linkToken = (params: DatasetParams, playlistId: number) =>
  createHmac('sha256', `mixtape-bench-link-${params.seed}`).update(String(playlistId)).digest('base64url');

const orderKeys: string[] = [];
/** The order key of the slot at `position` of a new playlist, as the service gives them (`a0`, `a1`, …). */
function orderKey(position: number): string {
  if (position >= orderKeys.length)
    orderKeys.push(...generateNKeysBetween(orderKeys.at(-1) ?? null, null, position + 1 - orderKeys.length));
  return orderKeys[position]!;
}

/**
 * The playlists in id order, in batches of rows by table. Owners are interleaved, as creation order is on a live
 * service; half the playlists lean on one genre. Fills in each user's ten-song playlists and links.
 */
export function* generatePlaylists(
  params: DatasetParams,
  catalog: readonly CatalogSong[],
  users: readonly BenchUser[],
  batchSize: number,
): Generator<Record<'playlists' | 'playlist_songs' | 'playlist_documents', Rows>> {
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
  for (const [i, song] of catalog.entries()) {
    if (!byGenre.has(song.genre)) byGenre.set(song.genre, []);
    byGenre.get(song.genre)!.push(i + 1);
  }
  const genreLists = [...byGenre.values()];
  let batch = { playlists: [] as Rows, playlist_songs: [] as Rows, playlist_documents: [] as Rows };
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
      batch.playlist_songs.push({ playlist_id: id, entry: position + 1, ord: orderKey(position), song_id: songId });
    }
    const created_at = USERS_CREATED_AT + id * PLAYLIST_INTERVAL_MS;
    batch.playlists.push({ id, owner_id: user.id, name, created_at, next_entry: length + 1 });
    batch.playlist_documents.push({ owner_id: user.id, playlist_id: id, doc: playlistDocument(name, songs) });
    if (batch.playlists.length === batchSize || id === params.playlists) {
      yield batch;
      batch = { playlists: [], playlist_songs: [], playlist_documents: [] };
    }
  }
}

/**
 * Sharing, just after the last playlist: each user is a viewer of the next user's ten-song playlists (the last
 * user of the first's), and each ten-song playlist has one link that never expires (its token stored as the service's
 * own `tokenDigest`). No member events are written, as no revisions are: the generated data has no history.
 */
export function shareWithNeighbours(params: DatasetParams, users: readonly BenchUser[]) {
  const at = USERS_CREATED_AT + (params.playlists + 1) * PLAYLIST_INTERVAL_MS;
  const rows = { playlist_members: [] as Rows, playlist_links: [] as Rows };
  users.forEach((user, i) => {
    for (const { playlistId, token } of user.links)
      rows.playlist_links.push({
        playlist_id: playlistId,
        owner_id: user.id,
        digest: tokenDigest(token),
        created_at: at,
      });
    const next = users[(i + 1) % users.length]!;
    // A data set of one user shares nothing: no one may be a member of their own playlist.
    if (next === user) return;
    for (const id of next.tenSongPlaylistIds) {
      user.sharedPlaylistIds.push(id);
      const member = { playlist_id: id, user_id: user.id, owner_id: next.id };
      rows.playlist_members.push({ ...member, role: 'viewer', added_at: at });
    }
  });
  return rows;
}
