import { afterAll, expect, it } from 'vitest';
import { describeEachEmptyDatabase } from '../helpers/each-database.js';
import { runCli } from '../helpers/cli-process.js';
import { killAllServers, startServer, type ServerProcess } from '../helpers/server-process.js';
import { eventually, sleep } from '../helpers/traffic.js';
import { seededRandom } from '../helpers/seeded-random.js';

/**
 * An acknowledged write is never lost; it survives `kill -9` of the process at any moment.
 * A stream of creates, edits (PUT of a whole playlist) and shares (PUT of a member's role) runs against the real
 * service; at a random moment the process is killed with SIGKILL and started again on the same database; every
 * create, edit and share that was answered 200 must be there, exactly as answered, with its revision in the
 * playlist's history and the member's role in its members.
 */

const CYCLES = 5;
const CONCURRENCY = 8;
const USER = 'crash';
const PASSWORD = 'kill -9 ünïcode';
const SECURITY = `Basic ${Buffer.from(`${USER}:${PASSWORD}`, 'utf8').toString('base64')}`;
/** The user the playlists are shared with. */
const FRIEND = 'crash-friend';
const ROLES = ['viewer', 'editor'] as const;
type Role = (typeof ROLES)[number];

interface Created {
  readonly name: string;
  readonly songIds: readonly number[];
}

interface PlaylistBody {
  id: number;
  name: string;
  songs: { id: number; title: string; artist: string }[];
}

// Whole code points only: letters, accents, CJK, emoji, quotes and the LIKE metacharacters; no control characters.
const NAME_CHARACTERS: readonly string[] = [
  ...Array.from('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'),
  ...Array.from('     '),
  ...Array.from('éèßøñüÅÇ漢字音楽Ωж'),
  '🎵',
  '🎸',
  '👩‍🎤',
  ...Array.from(`"'\\%_-.,;:!?&<>/#`),
];

function randomName(random: () => number): string {
  const pick = () => NAME_CHARACTERS[Math.floor(random() * NAME_CHARACTERS.length)] ?? 'x';
  const length = 1 + Math.floor(random() * 40);
  let name = '';
  for (let i = 0; i < length; i++) name += pick();
  // A name is never blank: put a letter somewhere when the draw was all spaces.
  return /\S/.test(name) ? name : `${name}x`;
}

function randomSongIds(random: () => number): number[] {
  const count = 1 + Math.floor(random() * 30);
  return Array.from({ length: count }, () => 1 + Math.floor(random() * 240));
}

/** Runs `task` over `items` with at most `limit` at a time. */
async function inPool<T>(items: readonly T[], limit: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++] as T;
      await task(item);
    }
  };
  await Promise.all(Array.from({ length: limit }, worker));
}

interface Ledger {
  /** Playlists known to be committed: answered 200, or seen after a restart. */
  readonly durable: Map<number, Created>;
  /** Every create sent, by name, whether or not it was answered. */
  readonly sent: Map<string, (readonly number[])[]>;
  /** Edits sent and not answered, by playlist: after a restart the playlist may hold any one of them. */
  readonly unsure: Map<number, Created[]>;
  /** Edits answered 200, by playlist: each one a revision that must be in its history. */
  readonly edits: Map<number, number>;
  /** The friend's role as last acknowledged, by playlist. */
  readonly shares: Map<number, Role>;
  /** Shares sent and not answered, by playlist: after a restart the friend may hold any one of these roles. */
  readonly unsureShares: Map<number, Role[]>;
  attempts: number;
}

interface LoadResult {
  readonly acknowledged: number;
  /** Answers other than 200 while the server was up, and broken answers: each one a failure. */
  readonly problems: string[];
}

/**
 * Sends creates with CONCURRENCY workers over keep-alive connections until `stopped()`; records every 200.
 * Failures after `stopped()` are the kill and are expected; anything else odd goes to `problems`.
 */
async function createLoad(
  url: string,
  random: () => number,
  ledger: Ledger,
  stopped: () => boolean,
): Promise<LoadResult> {
  let acknowledged = 0;
  const problems: string[] = [];
  // One edit at a time per playlist, so that a kill leaves at most one unanswered edit of each in doubt.
  const editing = new Set<number>();
  const edit = async (id: number) => {
    const next = { name: randomName(random), songIds: randomSongIds(random) };
    ledger.unsure.set(id, [...(ledger.unsure.get(id) ?? []), next]);
    editing.add(id);
    try {
      const response = await fetch(`${url}/v3/playlist/${id}`, {
        method: 'PUT',
        headers: { security: SECURITY, 'content-type': 'application/json' },
        body: JSON.stringify(next),
        signal: AbortSignal.timeout(20_000),
      });
      const text = await response.text();
      if (response.status !== 200) {
        if (!stopped()) problems.push(`edit of ${id} answered ${response.status}: ${text}`);
        return;
      }
      const body = JSON.parse(text) as PlaylistBody;
      const answered = { name: body.name, songIds: body.songs.map((s) => s.id) };
      if (JSON.stringify(answered) !== JSON.stringify(next)) problems.push(`edit of ${id} answered ${text}`);
      ledger.durable.set(id, next);
      ledger.unsure.delete(id);
      ledger.edits.set(id, (ledger.edits.get(id) ?? 0) + 1);
      acknowledged += 1;
    } catch (error) {
      if (!stopped()) problems.push(`edit failed while the server was up: ${String(error)}`);
    } finally {
      editing.delete(id);
    }
  };
  const share = async (id: number) => {
    const role = ROLES[Math.floor(random() * ROLES.length)]!;
    ledger.unsureShares.set(id, [...(ledger.unsureShares.get(id) ?? []), role]);
    editing.add(id);
    try {
      const response = await fetch(`${url}/v3/playlist/${id}/members/${FRIEND}`, {
        method: 'PUT',
        headers: { security: SECURITY, 'content-type': 'application/json' },
        body: JSON.stringify({ role }),
        signal: AbortSignal.timeout(20_000),
      });
      const text = await response.text();
      if (response.status !== 200) {
        if (!stopped()) problems.push(`share of ${id} answered ${response.status}: ${text}`);
        return;
      }
      ledger.shares.set(id, role);
      ledger.unsureShares.delete(id);
      acknowledged += 1;
    } catch (error) {
      if (!stopped()) problems.push(`share failed while the server was up: ${String(error)}`);
    } finally {
      editing.delete(id);
    }
  };
  const worker = async () => {
    while (!stopped()) {
      if (random() < 0.15) {
        const ids = [...ledger.durable.keys()].filter((id) => !editing.has(id));
        const id = ids[Math.floor(random() * ids.length)];
        if (id !== undefined) {
          await share(id);
          continue;
        }
      }
      if (random() < 0.3) {
        const ids = [...ledger.durable.keys()].filter((id) => !editing.has(id));
        const id = ids[Math.floor(random() * ids.length)];
        if (id !== undefined) {
          await edit(id);
          continue;
        }
      }
      const name = randomName(random);
      const songIds = randomSongIds(random);
      ledger.attempts += 1;
      ledger.sent.set(name, [...(ledger.sent.get(name) ?? []), songIds]);
      try {
        const response = await fetch(`${url}/v3/playlist`, {
          method: 'POST',
          headers: { security: SECURITY, 'content-type': 'application/json' },
          body: JSON.stringify({ name, songIds }),
          signal: AbortSignal.timeout(20_000),
        });
        const text = await response.text();
        if (response.status !== 200) {
          if (!stopped()) problems.push(`create answered ${response.status}: ${text}`);
          continue;
        }
        const body = JSON.parse(text) as PlaylistBody;
        const answered = { name: body.name, songIds: body.songs.map((s) => s.id) };
        if (JSON.stringify(answered) !== JSON.stringify({ name, songIds })) {
          problems.push(`create of ${JSON.stringify({ name, songIds })} answered ${text}`);
        }
        if (ledger.durable.has(body.id)) problems.push(`id ${body.id} was handed out twice`);
        ledger.durable.set(body.id, { name, songIds });
        acknowledged += 1;
      } catch (error) {
        if (!stopped()) problems.push(`create failed while the server was up: ${String(error)}`);
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return { acknowledged, problems };
}

async function getJson(url: string): Promise<{ status: number; headers: Headers; body: unknown }> {
  const response = await fetch(url, { headers: { security: SECURITY }, signal: AbortSignal.timeout(20_000) });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

/**
 * After a restart: every durable playlist is there exactly as acknowledged, the list holds all of them, and
 * anything else in the list is a whole playlist that some unanswered create sent (no half-written playlist).
 * Those join the durable ones: they are committed now and must survive the next kill too.
 */
async function verify(server: ServerProcess, ledger: Ledger, seed: number): Promise<void> {
  const problems: string[] = [];
  await inPool([...ledger.durable.entries()], CONCURRENCY, async ([id, expected]) => {
    const { status, body: answer } = await getJson(`${server.url}/v3/playlist/${id}`);
    const body = answer as PlaylistBody;
    if (status !== 200) {
      problems.push(`GET /v3/playlist/${id} answered ${status}: ${JSON.stringify(body)}`);
      return;
    }
    const found = { name: body.name, songIds: body.songs.map((s) => s.id) };
    // The acknowledged version, or an edit of it whose answer the kill cut off.
    const allowed = [expected, ...(ledger.unsure.get(id) ?? [])].map((c) => JSON.stringify(c));
    if (body.id !== id || !allowed.includes(JSON.stringify(found))) {
      problems.push(`playlist ${id}: acknowledged ${JSON.stringify(expected)}, found ${JSON.stringify(found)}`);
      return;
    }
    // Its history holds the create and every acknowledged edit, the newest being what the playlist now is.
    const history = await getJson(`${server.url}/v3/playlist/${id}/versions?limit=1`);
    const [newest] = history.body as { version: number; name: string; songCount: number }[];
    const total = Number(history.headers.get('x-total-count'));
    if (
      newest?.name !== found.name ||
      newest.songCount !== found.songIds.length ||
      newest.version !== total ||
      total < 1 + (ledger.edits.get(id) ?? 0)
    ) {
      problems.push(
        `playlist ${id}: ${ledger.edits.get(id) ?? 0} edits acknowledged, history ${JSON.stringify(history.body)}`,
      );
    }
    // The friend's role: the acknowledged one, or one a share whose answer the kill cut off sent.
    const roles = [ledger.shares.get(id), ...(ledger.unsureShares.get(id) ?? [])].filter((r) => r !== undefined);
    if (roles.length > 0) {
      const members = await getJson(`${server.url}/v3/playlist/${id}/members`);
      const friend = (members.body as { user: string; role: string }[]).find((m) => m.user === FRIEND);
      const acknowledged = ledger.shares.get(id);
      if (friend === undefined ? acknowledged !== undefined : !roles.includes(friend.role as Role)) {
        problems.push(
          `playlist ${id}: shared as ${acknowledged ?? 'nothing'}, members ${JSON.stringify(members.body)}`,
        );
      }
      if (friend !== undefined) ledger.shares.set(id, friend.role as Role);
      ledger.unsureShares.delete(id);
    }
    ledger.durable.set(id, found);
    ledger.unsure.delete(id);
  });
  expect(problems, `seed ${seed}`).toEqual([]);

  const listed = new Map<number, PlaylistBody>();
  let total = -1;
  for (let offset = 0; total === -1 || offset < total; offset += 100) {
    const page = await getJson(`${server.url}/v3/playlist?limit=100&offset=${offset}`);
    expect(page.status, `seed ${seed}`).toBe(200);
    total = Number(page.headers.get('x-total-count'));
    const playlists = page.body as PlaylistBody[];
    for (const playlist of playlists) listed.set(playlist.id, playlist);
    if (playlists.length === 0) break;
  }
  expect(listed.size, `seed ${seed}: X-Total-Count against the pages`).toBe(total);
  expect(total, `seed ${seed}: listed against acknowledged`).toBeGreaterThanOrEqual(ledger.durable.size);
  expect(total, `seed ${seed}: listed against creates sent`).toBeLessThanOrEqual(ledger.attempts);
  for (const id of ledger.durable.keys()) {
    if (!listed.has(id)) problems.push(`acknowledged playlist ${id} is missing from the list`);
  }
  for (const [id, playlist] of listed) {
    if (ledger.durable.has(id)) continue;
    const songIds = playlist.songs.map((s) => s.id);
    const candidates = ledger.sent.get(playlist.name) ?? [];
    if (!candidates.some((sent) => JSON.stringify(sent) === JSON.stringify(songIds))) {
      problems.push(`playlist ${id} (${JSON.stringify({ name: playlist.name, songIds })}) matches no create sent`);
      continue;
    }
    ledger.durable.set(id, { name: playlist.name, songIds });
  }
  expect(problems, `seed ${seed}`).toEqual([]);
}

describeEachEmptyDatabase('kill -9 while creating, editing and sharing playlists (%s)', (database, dialect) => {
  afterAll(async () => {
    await killAllServers();
  });

  it(`keeps every acknowledged create, edit and share through ${CYCLES} kill -9 and restart cycles`, async () => {
    const seed = Math.floor(Math.random() * 2 ** 31);
    const random = seededRandom(seed);
    const ledger: Ledger = {
      durable: new Map(),
      sent: new Map(),
      unsure: new Map(),
      edits: new Map(),
      shares: new Map(),
      unsureShares: new Map(),
      attempts: 0,
    };
    const databaseUrl = database.url;
    const start = () => startServer({ databaseUrl, bootstrapUser: `${USER}:${PASSWORD}` });
    // The friend exists before the first share: the first start migrates the database, then the CLI adds them.
    await (await start()).stop('SIGTERM');
    const added = await runCli(databaseUrl, ['user', 'add', FRIEND, '--password-stdin'], {
      input: 'a friend of the crash\n',
    });
    expect(added.code, added.stderr).toBe(0);

    for (let cycle = 1; cycle <= CYCLES; cycle++) {
      const server = await start();
      // Also signs in once, so that the creates below do not all wait for the password hash.
      await verify(server, ledger, seed);

      let stopped = false;
      const durableBefore = ledger.durable.size;
      const load = createLoad(server.url, random, ledger, () => stopped);
      // The kill comes at a random moment after the first create is acknowledged (a loaded machine can take a while
      // to answer the first one), so that every cycle has acknowledged writes to find again.
      expect(await eventually(() => Promise.resolve(ledger.durable.size > durableBefore), 20_000), `seed ${seed}`).toBe(
        true,
      );
      const killAfterMs = Math.floor(random() * 1300);
      await sleep(killAfterMs);
      stopped = true;
      server.process.kill('SIGKILL');
      const exit = await server.exited;
      const { acknowledged, problems } = await load;

      expect(exit, `seed ${seed}, cycle ${cycle}`).toEqual({ code: null, signal: 'SIGKILL' });
      expect(problems, `seed ${seed}, cycle ${cycle}`).toEqual([]);
      expect(acknowledged, `seed ${seed}, cycle ${cycle}: writes answered before the kill`).toBeGreaterThan(0);
      console.info(
        `crash ${dialect} cycle ${cycle}: killed after ${killAfterMs} ms, ${acknowledged} writes acknowledged, ` +
          `${ledger.durable.size} playlists to find, ${ledger.attempts} creates sent (seed ${seed})`,
      );
    }

    const server = await start();
    await verify(server, ledger, seed);
    expect(ledger.shares.size, `seed ${seed}: playlists shared with the friend`).toBeGreaterThan(0);
    const exit = await server.stop('SIGTERM');
    expect(exit, server.output()).toEqual({ code: 0, signal: null });
  }, 90_000);
});
