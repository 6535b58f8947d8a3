/**
 * What the benchmark asks of the service. A scenario is a list of requests spread over the users, and a check of
 * one sample answer, made before measuring, so that a wrong data set or a changed API fails loudly instead of
 * being measured. Adding a scenario is adding an object to `SCENARIOS`.
 */
import type { Answer } from './baseline.js';
import type { BenchUser, DatasetMeta } from './dataset.js';
import type { BenchRequest } from './load.js';
import type { Random } from './random.js';
import * as words from './words.js';

/** A request of a scenario, and the user it is made for. */
export interface ScenarioRequest extends BenchRequest {
  readonly user: BenchUser;
}

export interface ScenarioContext {
  readonly meta: DatasetMeta;
  /** The users the load is spread over. */
  readonly users: readonly BenchUser[];
  readonly random: Random;
}

export interface Scenario {
  readonly name: string;
  readonly description: string;
  /** Also measured at half its peak rate, for its p99 under a load the service keeps up with. */
  readonly halfPeak?: boolean;
  /** Each connection sends its own share of the requests, never another's (see LoadOptions.exclusive). */
  readonly exclusive?: boolean;
  /** Called before each run of the service: forgets what the requests learnt from the answers of the run before. */
  readonly beforeRun?: () => void;
  /** Called once, before `requests`, on the service to be measured: what the scenario needs to exist there first. */
  readonly prepare?: (url: string, context: ScenarioContext) => Promise<void>;
  /** Settings this scenario needs the service started with (a service of its own is started for it). */
  readonly settings?: Readonly<Record<string, string>>;
  /** The requests the load cycles through. */
  requests(context: ScenarioContext): ScenarioRequest[];
  /** What is wrong with the service's answer to one of them, if anything. */
  check(answer: Answer, request: ScenarioRequest, meta: DatasetMeta): string | undefined;
}

/** Different requests a scenario cycles through, at most: enough to spread the load, few enough to build fast. */
const VARIANTS = 2000;
const PAGE = 20;
const NEW_PLAYLIST_SONGS = 10;

/** Basic credentials in the standard header, as clients generated from the OpenAPI description send them. */
export function authorization(user: BenchUser, password: string): Record<string, string> {
  return { authorization: `Basic ${Buffer.from(`${user.name}:${password}`).toString('base64')}` };
}

const get = (meta: DatasetMeta, user: BenchUser, path: string): ScenarioRequest => ({
  method: 'GET',
  path,
  headers: authorization(user, meta.password),
  user,
});

function parse(answer: Answer): unknown {
  try {
    return JSON.parse(answer.body.toString('utf8'));
  } catch {
    return undefined;
  }
}

const field = (value: unknown, name: string): unknown =>
  typeof value === 'object' && value !== null && name in value ? (value as Record<string, unknown>)[name] : undefined;

const songCount = (playlist: unknown): number | undefined => {
  const songs = field(playlist, 'songs');
  return Array.isArray(songs) ? songs.length : undefined;
};

/** The covers of the callers' ten-song playlists: a few thousand, well within the default cover cache. */
const covers = ({ meta, users }: ScenarioContext): ScenarioRequest[] =>
  users
    .flatMap((user) => user.tenSongPlaylistIds.map((id) => get(meta, user, `/v3/playlist/${id}/image`)))
    .slice(0, VARIANTS);

function checkCover(answer: Answer): string | undefined {
  const failed = expect200(answer);
  if (failed !== undefined) return failed;
  const png = answer.body.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
  return answer.headers['content-type'] === 'image/png' && png ? undefined : 'not a PNG';
}

function expect200(answer: Answer): string | undefined {
  return answer.status === 200 ? undefined : `status ${answer.status}: ${answer.body.toString('utf8').slice(0, 300)}`;
}

/**
 * The edit scenario's requests: append one song to one of the caller's ten-song playlists, with `If-Match` set to
 * the ETag the last answer for that playlist gave (`*` the first time), as a client that keeps its copy up to date
 * does. The ten-song playlists share the load (a few hundred songs each at most by the end of a run, a reset cuts
 * them back); each connection edits playlists of its own (the scenario is `exclusive`), so none answers 412 for an
 * edit another connection made meanwhile. What was learnt is forgotten before each run (`*` again), since the edits
 * still in flight when a run stopped changed their playlists unseen. A 412 still takes the current ETag from its
 * answer. The baseline's answers (the first playlist's, whatever was asked) are not taken: the run gives the
 * baseline's requests no `onResponse`.
 */
function appends({ meta, users, random }: ScenarioContext, etags: Map<number, string>): ScenarioRequest[] {
  return users
    .flatMap((user) =>
      user.tenSongPlaylistIds.map((id): ScenarioRequest => {
        const headers = { ...authorization(user, meta.password), 'content-type': 'application/json' };
        return {
          method: 'POST',
          path: `/v3/playlist/${id}/songs`,
          headers,
          body: JSON.stringify({ songIds: [random.between(1, meta.params.songs)] }),
          user,
          setupRequest: (request) => ({ ...request, headers: { ...headers, 'if-match': etags.get(id) ?? '*' } }),
          onResponse: (status, body, _context, answered) => {
            const current = status === 412 || (status === 200 && body.startsWith(`{"id":${id},`));
            if (current && answered.etag !== undefined) etags.set(id, answered.etag);
          },
        };
      }),
    )
    .slice(0, VARIANTS);
}

/** Text as the share page's templates print it (Eta's escape), to find a playlist's name in the page. */
const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** The user who owns this ten-song playlist, as the data set made it. */
const ownerOf = (meta: DatasetMeta, playlistId: number) =>
  meta.users.find((user) => user.tenSongPlaylistIds.includes(playlistId));

/** What is wrong with a member's copy of a playlist: the owner's name and the caller's role must be in it. */
function checkShared(playlist: unknown, meta: DatasetMeta): string | undefined {
  const id = field(playlist, 'id');
  const owner = typeof id === 'number' ? ownerOf(meta, id) : undefined;
  if (owner === undefined) return `not a ten-song playlist of the data set: ${JSON.stringify(playlist).slice(0, 300)}`;
  if (field(playlist, 'owner') !== owner.name) return `"owner" is ${JSON.stringify(field(playlist, 'owner'))}`;
  const role = field(playlist, 'role');
  return role === 'viewer' ? undefined : `"role" is ${JSON.stringify(role)}, not "viewer"`;
}

/** The ETags the edit scenario's answers gave, by playlist (see appends). */
const editTags = new Map<number, string>();

const MERGE_SONGS = 200;
/** A merged edit's base is 1 to this many versions behind the newest version an answer showed. */
const MERGE_BEHIND = 8;
/** Every this many answers, the entries the ops name are read again from an answer. */
const MERGE_REFRESH = 500;

/**
 * The merge scenario's playlist, as its set-up and the answers left it: the entries the ops name and the version they
 * were read at, the newest version an answer showed, and the entries its inserts made (which its removes take).
 */
const merging = {
  id: 0,
  entries: [] as string[],
  entriesVersion: 1,
  newest: 1,
  inserted: [] as string[],
  answers: 0,
};

interface EntriesAnswer {
  readonly version: number;
  readonly entries: readonly { readonly entry: string }[];
}

/** Makes the merge scenario's playlist of 200 songs for the first active user, and reads its entries. */
async function prepareMerge(url: string, { meta, users, random }: ScenarioContext): Promise<void> {
  const user = users[0]!;
  const headers = { ...authorization(user, meta.password), 'content-type': 'application/json' };
  const songIds = Array.from({ length: MERGE_SONGS }, () => random.between(1, meta.params.songs));
  const created = await fetch(`${url}/v3/playlist`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ name: 'Merged edits', songIds }),
  });
  if (created.status !== 200) throw new Error(`The merge scenario's playlist: status ${created.status}`);
  merging.id = (JSON.parse(await created.text()) as { id: number }).id;
  const read = await fetch(`${url}/v3/playlist/${merging.id}/entries`, { headers });
  const answer = JSON.parse(await read.text()) as EntriesAnswer;
  merging.entries = answer.entries.map((e) => e.entry);
  merging.entriesVersion = answer.version;
  merging.newest = answer.version;
  merging.inserted = [];
  merging.answers = 0;
}

/**
 * The merge scenario's body for the `i`-th request: an insert after a random entry, a move of a random entry after
 * another, or (every fourth) a remove of an entry an earlier insert made, so that the playlist stays near its 200
 * songs over a run (a move when none is known yet). Made on a base 1 to 8 versions behind the newest version seen,
 * and never older than the version the named entries were read at (none of those is removed in between but by the
 * scenario's own removes, which the merge answers as `removed`).
 */
function mergeBody(i: number, random: Random): string {
  const base = Math.max(merging.entriesVersion, merging.newest - 1 - random.int(MERGE_BEHIND));
  const some = () => random.pick(merging.entries);
  let op: object;
  const removable = i % 4 === 2 ? merging.inserted.shift() : undefined;
  if (removable !== undefined) op = { op: 'remove', entry: removable };
  else if (i % 4 === 0) op = { op: 'insert', songIds: [1 + random.int(1000)], after: some() };
  else op = { op: 'move', entry: some(), after: some() };
  return JSON.stringify({ base, ops: [op] });
}

/** What a merged edit's answer tells: the playlist's version, an insert's entry, and (now and then) all its entries. */
function learnFromMerge(status: number, body: string): void {
  if (status !== 200) return;
  merging.answers += 1;
  if (merging.answers % MERGE_REFRESH === 0) {
    const { playlist } = JSON.parse(body) as { playlist: EntriesAnswer };
    merging.entries = playlist.entries.map((e) => e.entry);
    merging.entriesVersion = playlist.version;
  }
  const version = /"version":(\d+)/.exec(body.slice(0, 200));
  if (version !== null) merging.newest = Math.max(merging.newest, Number(version[1]));
  const inserted = /"entries":\["(e\d+)"\]\}\]\}$/.exec(body);
  if (inserted !== null) merging.inserted.push(inserted[1]!);
}

export const SCENARIOS: readonly Scenario[] = [
  {
    name: 'get',
    description: "GET /v3/playlist/{id}: one of the caller's playlists of 10 songs",
    requests: ({ meta, users }) =>
      users
        .flatMap((user) => user.tenSongPlaylistIds.map((id) => get(meta, user, `/v3/playlist/${id}`)))
        .slice(0, VARIANTS),
    check: (answer) => {
      const songs = songCount(parse(answer));
      return expect200(answer) ?? (songs === 10 ? undefined : `expected 10 songs, got ${songs ?? 'no list'}`);
    },
  },
  {
    name: 'list',
    description: `GET /v3/playlist?limit=${PAGE}: the first page of the caller's playlists`,
    requests: ({ meta, users }) => users.map((user) => get(meta, user, `/v3/playlist?limit=${PAGE}`)),
    check: (answer, { user }) => {
      const failed = expect200(answer);
      if (failed !== undefined) return failed;
      const body = parse(answer);
      const total = answer.headers['x-total-count'];
      if (!Array.isArray(body) || body.length !== Math.min(PAGE, user.playlists)) return 'not a full page';
      return total === String(user.playlists)
        ? undefined
        : `X-Total-Count ${total ?? 'missing'}, not ${user.playlists}`;
    },
  },
  {
    name: 'search',
    description: "GET /v3/playlist?search=<word>: a word in the names of 1% of the caller's playlists",
    halfPeak: true,
    requests: ({ meta, users }) => users.map((user) => get(meta, user, `/v3/playlist?search=${meta.plantedWord}`)),
    check: (answer, { user }, meta) => {
      const failed = expect200(answer);
      if (failed !== undefined) return failed;
      const body = parse(answer);
      const total = answer.headers['x-total-count'];
      if (total !== String(user.planted)) return `X-Total-Count ${total ?? 'missing'}, not ${user.planted}`;
      const named = (p: unknown) => String(field(p, 'name')).toLowerCase().includes(meta.plantedWord);
      return Array.isArray(body) && body.every(named) ? undefined : 'a match without the word in its name';
    },
  },
  {
    name: 'image',
    description: 'GET /v3/playlist/{id}/image: the 600x600 PNG cover, drawn once and then served from memory',
    requests: covers,
    check: checkCover,
  },
  {
    name: 'image-uncached',
    description: 'GET /v3/playlist/{id}/image with the cover cache off: every answer is drawn',
    settings: { MIXTAPE_IMAGE_CACHE_MB: '0' },
    requests: covers,
    check: checkCover,
  },
  {
    name: 'member-get',
    description: 'GET /v3/playlist/{id}: a playlist of 10 songs shared with the caller as a viewer',
    requests: ({ meta, users }) =>
      users
        .flatMap((user) => user.sharedPlaylistIds.map((id) => get(meta, user, `/v3/playlist/${id}`)))
        .slice(0, VARIANTS),
    check: (answer, _request, meta) => {
      const playlist = parse(answer);
      const songs = songCount(playlist);
      return (
        expect200(answer) ??
        (songs === 10 ? undefined : `expected 10 songs, got ${songs ?? 'no list'}`) ??
        checkShared(playlist, meta)
      );
    },
  },
  {
    name: 'member-list',
    description: 'GET /v3/playlist?scope=shared: the playlists shared with the caller (3 of 10 songs)',
    requests: ({ meta, users }) =>
      users
        .filter((user) => user.sharedPlaylistIds.length > 0)
        .map((user) => get(meta, user, '/v3/playlist?scope=shared')),
    check: (answer, { user }, meta) => {
      const failed = expect200(answer);
      if (failed !== undefined) return failed;
      const body = parse(answer);
      const total = answer.headers['x-total-count'];
      const expected = user.sharedPlaylistIds.length;
      if (total !== String(expected)) return `X-Total-Count ${total ?? 'missing'}, not ${expected}`;
      if (!Array.isArray(body)) return 'not a list';
      const ids = body.map((p) => field(p, 'id'));
      if (JSON.stringify(ids) !== JSON.stringify(user.sharedPlaylistIds)) return `ids ${JSON.stringify(ids)}`;
      return body.map((p) => checkShared(p, meta)).find((problem) => problem !== undefined);
    },
  },
  {
    name: 'share-page',
    description:
      'GET /s/{token}: the page of a link to a playlist of 10 songs, without credentials (the /s/ throttle off)',
    // One client address makes every request here: the throttle (120 a minute by default) would answer 429.
    settings: { MIXTAPE_SHARE_PER_MINUTE: '0' },
    requests: ({ users }) =>
      users
        .flatMap((user) =>
          user.links.map((link): ScenarioRequest => ({
            method: 'GET',
            path: `/s/${link.token}`,
            headers: { accept: 'text/html' },
            user,
          })),
        )
        .slice(0, VARIANTS),
    check: (answer, { user, path }) => {
      const failed = expect200(answer);
      if (failed !== undefined) return failed;
      const type = answer.headers['content-type'] ?? '';
      if (!type.startsWith('text/html')) return `Content-Type ${type || 'missing'}`;
      const link = user.links.find((l) => path === `/s/${l.token}`);
      if (link === undefined) return 'not a link of the data set';
      return answer.body.toString('utf8').includes(escapeHtml(link.name))
        ? undefined
        : `the page does not show the playlist's name "${link.name}"`;
    },
  },
  {
    name: 'create',
    description: `POST /v3/playlist: a new playlist of ${NEW_PLAYLIST_SONGS} catalog songs`,
    requests: ({ meta, users, random }) =>
      Array.from({ length: VARIANTS }, (_, i) => {
        const user = users[i % users.length]!;
        const name = `${random.pick(words.ADJECTIVES)} ${random.pick(words.MOMENTS)} ${random.pick(words.PLAYLIST_SUFFIXES)}`;
        const songIds = Array.from({ length: NEW_PLAYLIST_SONGS }, () => random.between(1, meta.params.songs));
        return {
          method: 'POST',
          path: '/v3/playlist',
          headers: { ...authorization(user, meta.password), 'content-type': 'application/json' },
          body: JSON.stringify({ name, songIds }),
          user,
        };
      }),
    check: (answer) => {
      const songs = songCount(parse(answer));
      return (
        expect200(answer) ?? (songs === NEW_PLAYLIST_SONGS ? undefined : `expected 10 songs, got ${songs ?? 'none'}`)
      );
    },
  },
  {
    name: 'edit',
    description: "POST /v3/playlist/{id}/songs with If-Match: one song appended to one of the caller's playlists",
    exclusive: true,
    beforeRun: () => {
      editTags.clear();
    },
    requests: (context) => appends(context, editTags),
    check: (answer) => {
      const songs = songCount(parse(answer));
      if (expect200(answer) !== undefined) return expect200(answer);
      if (answer.headers.etag === undefined) return 'no ETag';
      return songs !== undefined && songs > 10 ? undefined : `expected more than 10 songs, got ${songs ?? 'none'}`;
    },
  },
  {
    name: 'merge',
    description:
      'POST /v3/playlist/{id}/edits: every connection on one playlist of 200 songs, an insert after an entry or a move, on a base a few versions old',
    prepare: prepareMerge,
    requests: ({ meta, users, random }) => {
      const user = users[0]!;
      const headers = { ...authorization(user, meta.password), 'content-type': 'application/json' };
      const path = `/v3/playlist/${merging.id}/edits`;
      return Array.from({ length: VARIANTS }, (_, i): ScenarioRequest => {
        // The body sent as is (the sample the run checks first) is an insert on the version read at set-up.
        const body = JSON.stringify({
          base: merging.entriesVersion,
          ops: [{ op: 'insert', songIds: [1 + random.int(1000)], after: random.pick(merging.entries) }],
        });
        return {
          method: 'POST',
          path,
          headers,
          body,
          user,
          setupRequest: (request) => ({ ...request, body: mergeBody(i, random) }),
          onResponse: learnFromMerge,
        };
      });
    },
    check: (answer) => {
      const failed = expect200(answer);
      if (failed !== undefined) return failed;
      const body = parse(answer);
      const entries = field(field(body, 'playlist'), 'entries');
      const results = field(body, 'results');
      if (!Array.isArray(entries) || entries.length !== MERGE_SONGS + 1) return 'not the playlist with one more entry';
      return Array.isArray(results) && field(results[0], 'applied') === true ? undefined : 'the insert was not applied';
    },
  },
];
