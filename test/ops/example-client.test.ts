import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAllServers, startServer, type ServerProcess } from '../helpers/server-process.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const USER = 'syncer';
const PASSWORD = 'offline and back';
const SECURITY = `Basic ${Buffer.from(`${USER}:${PASSWORD}`, 'utf8').toString('base64')}`;
const run = promisify(execFile);

/**
 * examples/sync-client.mjs, the small client docs/api.md shows, run as an app would run it against a live service
 * (SQLite): a first sync, a sync after a change, a replay of an offline queue too long for one request, and a watch
 * answered by another client's change.
 */
describe('the example sync client against a live service', () => {
  let server: ServerProcess;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mixtape-example-client-'));
    server = await startServer({
      databaseUrl: `sqlite:${join(dir, 'mixtape.db')}`,
      bootstrapUser: `${USER}:${PASSWORD}`,
    });
  });
  afterAll(async () => {
    await killAllServers();
    rmSync(dir, { recursive: true, force: true });
  });

  const client = async (...args: string[]) => {
    const { stdout } = await run(
      process.execPath,
      ['examples/sync-client.mjs', `${server.url}/v3`, `${USER}:${PASSWORD}`, join(dir, 'copy.json'), ...args],
      { cwd: ROOT, timeout: 60_000 },
    );
    return stdout.trim().split('\n').filter(Boolean);
  };
  const api = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${server.url}/v3${path}`, {
      method,
      headers: { security: SECURITY, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    expect(response.status, await response.clone().text()).toBe(200);
    return (await response.json()) as Record<string, unknown>;
  };

  it('keeps a copy, replays a long offline queue with seen keys, and hears a change while it watches', async () => {
    expect(await client('sync')).toEqual([]);
    const { id } = (await api('POST', '/playlist', { name: 'Trip', songIds: [1, 2, 3] })) as { id: number };
    const [line] = await client('sync');
    expect(line).toMatch(new RegExp(`^${id}\tTrip\tv1\t.+ \\| .+ \\| .+$`));

    // Made offline on version 1: a rename, 120 inserts, and a second rename, 122 ops: two requests.
    const ops = [
      { op: 'rename', name: 'Trip, offline' },
      ...Array.from({ length: 120 }, (_, i) => ({ op: 'insert', songIds: [(i % 200) + 1] })),
      { op: 'rename', name: 'Trip, offline again' },
    ];
    writeFileSync(join(dir, 'queue.json'), JSON.stringify({ playlist: id, base: 1, ops }));
    const replayed = await client('replay', join(dir, 'queue.json'));
    // Every op applied (a refused one would print a line of its own), the second rename too.
    expect(replayed).toHaveLength(1);
    expect(replayed[0]).toMatch(new RegExp(`^${id}\tTrip, offline again\tv3\t`));
    expect(replayed[0]!.split('\t')[3]!.split(' | ')).toHaveLength(123);
    // Replayed again (the answers were lost, say): the keys answer what they answered, nothing applies twice.
    expect(await client('replay', join(dir, 'queue.json'))).toEqual(replayed);

    // Another device renames it while this one watches.
    const watching = client('watch', '20');
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const started = Date.now();
    await api('PATCH', `/playlist/${id}`, { name: 'Trip, renamed elsewhere' });
    const [watched] = await watching;
    expect(watched).toMatch(new RegExp(`^${id}\tTrip, renamed elsewhere\tv4\t`));
    expect(Date.now() - started).toBeLessThan(15_000);
  });
});
