/**
 * Every scenario of bench/run.ts. The load scenarios run on the generated data set: each a list of requests spread
 * over the users, and a check of one sample answer made before measuring, so that a wrong data set or a changed API
 * fails loudly instead of being measured; adding one is adding an object to `SCENARIOS`. The others (`OWN`) run on a
 * database and service of their own.
 */
import type { Answer } from './floor-server.js';
import type { BenchUser, DatasetMeta } from './dataset.js';
import { ENTRY_WRITES } from './entry-writes.js';
import { HOSTILE } from './hostile.js';
import { LIBRARY } from './library.js';
import { LIVE } from './live.js';
import { LONG_PLAYLISTS } from './long-playlists.js';
import { auth, type BenchRequest } from './load.js';
import type { Random } from './random.js';
import type { OwnScenario } from './service.js';
import { SMART } from './smart.js';
import * as words from './words.js';

export const OWN: readonly OwnScenario[] = [...HOSTILE, ...SMART, LIVE, ENTRY_WRITES, LONG_PLAYLISTS, LIBRARY];

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
  /** Each connection sends its own share of the requests, never another's (see `measure`). */
  readonly exclusive?: boolean;
  /** Also measured on the plain way (bench/plain-way.ts), which answers its requests as the service does. */
  readonly plain?: boolean;
  /** Called before each run of the service: forgets what the requests learnt from the answers of the run before. */
  readonly beforeRun?: () => void;
  /** Called once, before `requests`, on the service to be measured: what must exist there first. */
  readonly prepare?: (url: string, context: ScenarioContext) => Promise<void>;
  /**
   * The scenario this one is a variant of: when both run, their req/s and CPU ms a request are set side by side,
   * this one's ÷ that one's, level by level.
   */
  readonly versus?: string;
  /** Settings the service must be started with (a service of its own is started for the scenario). */
  readonly settings?: Readonly<Record<string, string>>;
  requests(context: ScenarioContext): ScenarioRequest[];
  /** What is wrong with the service's answer to one of them, if anything. */
  check(answer: Answer, request: ScenarioRequest, meta: DatasetMeta): string | undefined;
}

/** Different requests a scenario cycles through, at most: enough to spread the load, few enough to build fast. */
const VARIANTS = 2000;
const PAGE = 20;
const HTML = { accept: 'text/html' };

const get = (user: BenchUser, path: string): ScenarioRequest => ({
  method: 'GET',
  path,
  headers: auth(user.name),
  user,
});
const post = (user: BenchUser, path: string, body: unknown, headers = {}): ScenarioRequest => ({
  method: 'POST',
  path,
  headers: { ...auth(user.name), 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
  user,
});

/** A GET of `path` (`{id}` each of the users' playlists `ids` names), at most VARIANTS. */
const each = (users: readonly BenchUser[], ids: 'tenSongPlaylistIds' | 'sharedPlaylistIds', path: string) =>
  users.flatMap((user) => user[ids].map((id) => get(user, path.replace('{id}', String(id))))).slice(0, VARIANTS);

function parse(answer: Answer): unknown {
  try {
    return JSON.parse(answer.body.toString('utf8'));
  } catch {
    return undefined;
  }
}

const field = (value: unknown, name: string): unknown =>
  typeof value === 'object' && value !== null && name in value ? (value as Record<string, unknown>)[name] : undefined;

const expect200 = (answer: Answer) =>
  answer.status === 200 ? undefined : `status ${answer.status}: ${answer.body.toString('utf8').slice(0, 300)}`;

/** A 200 whose playlist has `songs` songs (more than 10 with `more`). */
function checkSongs(answer: Answer, songs: number, more = false): string | undefined {
  const list = field(parse(answer), 'songs');
  const count = Array.isArray(list) ? list.length : undefined;
  const right = count !== undefined && (more ? count > songs : count === songs);
  return (
    expect200(answer) ??
    (right ? undefined : `expected ${more ? 'more than ' : ''}${songs} songs, got ${count ?? 'none'}`)
  );
}

/** A 200 with a list whose `X-Total-Count` is `total`. */
function checkList(answer: Answer, total: number): string | undefined {
  const given = answer.headers['x-total-count'];
  return (
    expect200(answer) ?? (given === String(total) ? undefined : `X-Total-Count ${given ?? 'missing'}, not ${total}`)
  );
}

function checkCover(answer: Answer): string | undefined {
  const png = answer.body.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
  return expect200(answer) ?? (answer.headers['content-type'] === 'image/png' && png ? undefined : 'not a PNG');
}

/** A member's copy of a ten-song playlist: its owner's name and the caller's role must be in it. */
function checkShared(playlist: unknown, meta: DatasetMeta): string | undefined {
  const id = field(playlist, 'id');
  const owner = meta.users.find((user) => typeof id === 'number' && user.tenSongPlaylistIds.includes(id));
  if (owner === undefined) return `not a ten-song playlist of the data set: ${JSON.stringify(playlist).slice(0, 300)}`;
  if (field(playlist, 'owner') !== owner.name) return `"owner" is ${JSON.stringify(field(playlist, 'owner'))}`;
  const role = field(playlist, 'role');
  return role === 'viewer' ? undefined : `"role" is ${JSON.stringify(role)}, not "viewer"`;
}

/** Text as the share page's templates print it (Eta's escape). */
const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** The ETags the edit scenario's answers gave, by playlist. */
const editTags = new Map<number, string>();

/**
 * The merge scenario's playlist of 200 songs: the entries the ops name and the version they were read at (read again
 * every 500th answer), the newest version an answer showed, and the entries its inserts made.
 */
const merging = { id: 0, entries: [] as string[], entriesVersion: 1, newest: 1, inserted: [] as string[], answers: 0 };

interface EntriesAnswer {
  readonly version: number;
  readonly entries: readonly { readonly entry: string }[];
}

/** Makes the merge scenario's playlist for the first active user, and reads its entries. */
async function prepareMerge(url: string, { meta, users, random }: ScenarioContext): Promise<void> {
  const headers = { ...auth(users[0]!.name), 'content-type': 'application/json' };
  const songIds = Array.from({ length: 200 }, () => random.between(1, meta.params.songs));
  const body = JSON.stringify({ name: 'Merged edits', songIds });
  const created = await fetch(`${url}/v3/playlist`, { method: 'POST', headers, body });
  if (created.status !== 200) throw new Error(`The merge scenario's playlist: status ${created.status}`);
  merging.id = (JSON.parse(await created.text()) as { id: number }).id;
  const read = JSON.parse(
    await (await fetch(`${url}/v3/playlist/${merging.id}/entries`, { headers })).text(),
  ) as unknown;
  const { version, entries } = read as EntriesAnswer;
  Object.assign(merging, { entries: entries.map((e) => e.entry), entriesVersion: version, newest: version });
  Object.assign(merging, { inserted: [], answers: 0 });
}

/**
 * The `i`-th merged edit: an insert after a random entry, a move of one after another, or (every fourth) a remove of
 * an entry an earlier insert made, so that the playlist stays near 200 songs; on a base 1 to 8 versions behind the
 * newest seen, never older than the version the named entries were read at.
 */
function mergeBody(i: number, random: Random): string {
  const base = Math.max(merging.entriesVersion, merging.newest - 1 - random.int(8));
  const some = () => random.pick(merging.entries);
  const removable = i % 4 === 2 ? merging.inserted.shift() : undefined;
  const op =
    removable !== undefined
      ? { op: 'remove', entry: removable }
      : i % 4 === 0
        ? { op: 'insert', songIds: [1 + random.int(1000)], after: some() }
        : { op: 'move', entry: some(), after: some() };
  return JSON.stringify({ base, ops: [op] });
}

function learnFromMerge(status: number, body: string): void {
  if (status !== 200) return;
  if (++merging.answers % 500 === 0) {
    const { playlist } = JSON.parse(body) as { playlist: EntriesAnswer };
    Object.assign(merging, { entries: playlist.entries.map((e) => e.entry), entriesVersion: playlist.version });
  }
  const version = /"version":(\d+)/.exec(body.slice(0, 200));
  if (version !== null) merging.newest = Math.max(merging.newest, Number(version[1]));
  const inserted = /"entries":\["(e\d+)"\]\}\]\}$/.exec(body);
  if (inserted !== null) merging.inserted.push(inserted[1]!);
}

const GET: Scenario = {
  name: 'get',
  plain: true,
  description: "GET /v3/playlist/{id}: one of the caller's playlists of 10 songs",
  requests: ({ users }) => each(users, 'tenSongPlaylistIds', '/v3/playlist/{id}'),
  check: (answer) => checkSongs(answer, 10),
};

/** What the get-token scenario's tokens are named: a run revokes those an earlier run made before making its own. */
const BENCH_TOKEN = 'bench get-token';

/** Each active user's app token, made by the get-token scenario's set-up. */
const appTokens = new Map<string, string>();

/**
 * One read token for each active user, made with the password (POST /v3/token); the tokens of an earlier run on the
 * same data set are revoked first, so that runs never reach the limit of live tokens a user may have.
 */
async function prepareTokens(url: string, { users }: ScenarioContext): Promise<void> {
  appTokens.clear();
  const queue = [...users];
  const worker = async () => {
    for (let user = queue.shift(); user !== undefined; user = queue.shift()) {
      const headers = { ...auth(user.name), 'content-type': 'application/json' };
      const listed = await fetch(`${url}/v3/token`, { headers: auth(user.name) });
      if (listed.status !== 200) throw new Error(`Listing ${user.name}'s tokens: status ${listed.status}`);
      for (const { id, name } of (await listed.json()) as { id: number; name: string }[]) {
        if (name === BENCH_TOKEN) await fetch(`${url}/v3/token/${id}`, { method: 'DELETE', headers: auth(user.name) });
      }
      const body = JSON.stringify({ name: BENCH_TOKEN, scope: 'read' });
      const made = await fetch(`${url}/v3/token`, { method: 'POST', headers, body });
      if (made.status !== 200) throw new Error(`A token for ${user.name}: status ${made.status}`);
      appTokens.set(user.name, ((await made.json()) as { token: string }).token);
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
}

export const SCENARIOS: readonly Scenario[] = [
  GET,
  {
    // The get scenario's requests and check, each user's with their app token instead of their password.
    ...GET,
    name: 'get-token',
    plain: false,
    versus: 'get',
    description: "GET /v3/playlist/{id} as get, with a read token of the caller's (Authorization: Bearer)",
    prepare: prepareTokens,
    requests: (context) =>
      GET.requests(context).map((request) => ({
        ...request,
        headers: { ...request.headers, authorization: `Bearer ${appTokens.get(request.user.name)!}` },
      })),
  },
  {
    name: 'list',
    plain: true,
    description: `GET /v3/playlist?limit=${PAGE}: the first page of the caller's playlists`,
    requests: ({ users }) => users.map((user) => get(user, `/v3/playlist?limit=${PAGE}`)),
    check: (answer, { user }) => {
      const body = parse(answer);
      const full = Array.isArray(body) && body.length === Math.min(PAGE, user.playlists);
      return checkList(answer, user.playlists) ?? (full ? undefined : 'not a full page');
    },
  },
  {
    name: 'search',
    plain: true,
    description: "GET /v3/playlist?search=<word>: a word in the names of 1% of the caller's playlists",
    halfPeak: true,
    requests: ({ meta, users }) => users.map((user) => get(user, `/v3/playlist?search=${meta.plantedWord}`)),
    check: (answer, { user }, meta) => {
      const body = parse(answer);
      const named = (p: unknown) => String(field(p, 'name')).toLowerCase().includes(meta.plantedWord);
      const right = Array.isArray(body) && body.every(named);
      return checkList(answer, user.planted) ?? (right ? undefined : 'a match without the word in its name');
    },
  },
  {
    name: 'image',
    description: 'GET /v3/playlist/{id}/image: the 600x600 PNG cover, drawn once and then served from memory',
    requests: ({ users }) => each(users, 'tenSongPlaylistIds', '/v3/playlist/{id}/image'),
    check: checkCover,
  },
  {
    name: 'image-uncached',
    description: 'GET /v3/playlist/{id}/image with the cover cache off: every answer is drawn',
    settings: { MIXTAPE_IMAGE_CACHE_MB: '0' },
    requests: ({ users }) => each(users, 'tenSongPlaylistIds', '/v3/playlist/{id}/image'),
    check: checkCover,
  },
  {
    name: 'member-get',
    description: 'GET /v3/playlist/{id}: a playlist of 10 songs shared with the caller as a viewer',
    requests: ({ users }) => each(users, 'sharedPlaylistIds', '/v3/playlist/{id}'),
    check: (answer, _request, meta) => checkSongs(answer, 10) ?? checkShared(parse(answer), meta),
  },
  {
    name: 'member-list',
    description: 'GET /v3/playlist?scope=shared: the playlists shared with the caller (3 of 10 songs)',
    requests: ({ users }) =>
      users.filter((user) => user.sharedPlaylistIds.length > 0).map((user) => get(user, '/v3/playlist?scope=shared')),
    check: (answer, { user }, meta) => {
      const body = parse(answer);
      if (!Array.isArray(body)) return checkList(answer, user.sharedPlaylistIds.length) ?? 'not a list';
      const ids = body.map((p) => field(p, 'id'));
      if (JSON.stringify(ids) !== JSON.stringify(user.sharedPlaylistIds)) return `ids ${JSON.stringify(ids)}`;
      return checkList(answer, ids.length) ?? body.map((p) => checkShared(p, meta)).find((e) => e !== undefined);
    },
  },
  {
    name: 'share-page',
    description:
      'GET /s/{token}: the page of a link to a playlist of 10 songs, without credentials (the /s/ throttle off)',
    // Every request here comes from one address: the throttle (120 a minute by default) would answer 429.
    settings: { MIXTAPE_SHARE_PER_MINUTE: '0' },
    requests: ({ users }) =>
      users
        .flatMap((user) => user.links.map((l) => ({ ...get(user, `/s/${l.token}`), headers: HTML })))
        .slice(0, VARIANTS),
    check: (answer, { user, path }) => {
      const type = answer.headers['content-type'] ?? '';
      const link = user.links.find((l) => path === `/s/${l.token}`);
      if (expect200(answer) !== undefined || !type.startsWith('text/html'))
        return expect200(answer) ?? `Content-Type ${type}`;
      if (link === undefined) return 'not a link of the data set';
      return answer.body.toString('utf8').includes(escapeHtml(link.name)) ? undefined : `no "${link.name}" in the page`;
    },
  },
  {
    name: 'create',
    plain: true,
    description: 'POST /v3/playlist: a new playlist of 10 catalog songs',
    requests: ({ meta, users, random }) =>
      Array.from({ length: VARIANTS }, (_, i) => {
        const name = `${random.pick(words.ADJECTIVES)} ${random.pick(words.MOMENTS)} ${random.pick(words.PLAYLIST_SUFFIXES)}`;
        const songIds = Array.from({ length: 10 }, () => random.between(1, meta.params.songs));
        return post(users[i % users.length]!, '/v3/playlist', { name, songIds });
      }),
    check: (answer) => checkSongs(answer, 10),
  },
  {
    // One song appended to a ten-song playlist with `If-Match` set to the ETag the last answer for it gave (`*` the
    // first time), as a client that keeps its copy up to date does; each connection edits playlists of its own, so
    // none answers 412 for another's edit. What was learnt is forgotten before each run, since the edits in flight
    // when a run stopped changed their playlists unseen; a 412 still gives the current ETag. The baseline's answers
    // teach nothing: its requests have no `onResponse`.
    name: 'edit',
    plain: true,
    description: "POST /v3/playlist/{id}/songs with If-Match: one song appended to one of the caller's playlists",
    exclusive: true,
    beforeRun: () => {
      editTags.clear();
    },
    requests: ({ meta, users, random }) =>
      users
        .flatMap((user) =>
          user.tenSongPlaylistIds.map((id): ScenarioRequest => {
            const request = post(user, `/v3/playlist/${id}/songs`, { songIds: [random.between(1, meta.params.songs)] });
            return {
              ...request,
              setupRequest: (r) => ({ ...r, headers: { ...request.headers, 'if-match': editTags.get(id) ?? '*' } }),
              onResponse: (status, body, _context, headers) => {
                const current = status === 412 || (status === 200 && body.startsWith(`{"id":${id},`));
                if (current && headers.etag !== undefined) editTags.set(id, headers.etag);
              },
            };
          }),
        )
        .slice(0, VARIANTS),
    check: (answer) => checkSongs(answer, 10, true) ?? (answer.headers.etag === undefined ? 'no ETag' : undefined),
  },
  {
    name: 'merge',
    description:
      'POST /v3/playlist/{id}/edits: every connection on one playlist of 200 songs, an insert after an entry or a move, on a base a few versions old',
    prepare: prepareMerge,
    requests: ({ users, random }) =>
      Array.from({ length: VARIANTS }, (_, i): ScenarioRequest => {
        // The body sent as is (the sample checked first) is an insert on the version read at set-up.
        const ops = [{ op: 'insert', songIds: [1 + random.int(1000)], after: random.pick(merging.entries) }];
        const request = post(users[0]!, `/v3/playlist/${merging.id}/edits`, { base: merging.entriesVersion, ops });
        return { ...request, setupRequest: (r) => ({ ...r, body: mergeBody(i, random) }), onResponse: learnFromMerge };
      }),
    check: (answer) => {
      const body = parse(answer);
      const entries = field(field(body, 'playlist'), 'entries');
      const results = field(body, 'results');
      if (expect200(answer) !== undefined) return expect200(answer);
      if (!Array.isArray(entries) || entries.length !== 201) return 'not the playlist with one more entry';
      return Array.isArray(results) && field(results[0], 'applied') === true ? undefined : 'the insert was not applied';
    },
  },
];
