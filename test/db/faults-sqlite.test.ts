import { spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, unlinkSync, writeSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, describe, expect, it } from 'vitest';
import { basic } from '../helpers/app.js';
import { killAllServers, startServer, type ServerProcess } from '../helpers/server-process.js';
import { call, eventually, isErrorBody, type Answer } from '../helpers/traffic.js';

/**
 * SQLite faults against the real service: a disk that fills up or turns read-only, and another process that holds
 * the write lock. Writes (and sign-ins, each counted by a write) answer 503 with Retry-After and the original error
 * in the log, reads and /healthz keep answering, /readyz tells, and service resumes by itself once the disk is back.
 */

const SECURITY = basic('disk', 'full');
const headers = { security: SECURITY };

const create = (server: ServerProcess, name: string) =>
  call(`${server.url}/v3/playlist`, { method: 'POST', headers, body: { name, songIds: [1, 2, 3] } });

function expectUnavailable(answer: Answer): void {
  expect(answer.status, answer.body).toBe(503);
  expect(answer.headers.get('retry-after')).toMatch(/^\d+$/);
  expect(isErrorBody(answer.body), answer.body).toBe(true);
}

/** The log line that carries a 503's entry holds the database's own error code. */
async function loggedCode(server: ServerProcess, answer: Answer): Promise<string> {
  const { entry } = (JSON.parse(answer.body) as { logdata: { entry: number } }).logdata;
  const line = await server.waitForLog((l) => l.entry === entry && l.err !== undefined, 5000);
  return String((line.err as { code?: unknown } | undefined)?.code);
}

const mounts: string[] = [];

function mountTmpfs(megabytes: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'mixtape-disk-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${megabytes}m`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(
      `This test mounts a small tmpfs to fill it, and mounting was refused (it needs root): ${String(error)}`,
    );
  }
  mounts.push(dir);
  return dir;
}

function unmount(dir: string): void {
  try {
    execFileSync('umount', [dir], { stdio: 'pipe' });
  } catch {
    execFileSync('umount', ['-l', dir], { stdio: 'pipe' });
  }
  rmSync(dir, { recursive: true, force: true });
}

/** Writes a file until the file system has no room left, in large writes and then small ones; returns its path. */
function fillUp(dir: string): string {
  const path = join(dir, 'filler');
  const fd = openSync(path, 'w');
  try {
    for (const size of [16 * 1024, 512]) {
      const chunk = Buffer.alloc(size, 1);
      for (let i = 0; i < 100_000; i++) {
        try {
          writeSync(fd, chunk);
        } catch (error) {
          if ((error as { code?: string }).code !== 'ENOSPC') throw error;
          break;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
  return path;
}

afterAll(async () => {
  await killAllServers();
  for (const dir of mounts.splice(0)) unmount(dir);
});

describe('SQLite on a disk that fills up', () => {
  it('answers 503 for writes, keeps reads, says so in /readyz, and recovers without a restart', async () => {
    const dir = mountTmpfs(4);
    const server = await startServer({ databaseUrl: `sqlite:${join(dir, 'mixtape.db')}`, bootstrapUser: 'disk:full' });
    const first = await create(server, 'before');
    expect(first.status).toBe(200);
    const { id } = JSON.parse(first.body) as { id: number };

    const filler = fillUp(dir);
    // While the disk is full, a write that fits in room the WAL file already has still commits (checkpoints run
    // in the background and let the WAL start over), so creates fail and succeed in turns. After each failure,
    // readiness is asked: it must say so at least once, with the error body.
    const answers: Answer[] = [];
    const readiness: Answer[] = [];
    for (let i = 0; i < 40; i++) {
      const answer = await create(server, `while full ${i}`);
      answers.push(answer);
      if (answer.status !== 200) readiness.push(await call(`${server.url}/readyz`));
    }
    const failed = answers.filter((a) => a.status !== 200);
    expect(failed.length).toBeGreaterThan(0);
    for (const answer of failed) expectUnavailable(answer);
    expect(await loggedCode(server, failed[0]!)).toMatch(/^SQLITE_(FULL|IOERR)/);
    const notReady = readiness.filter((a) => a.status !== 200);
    expect(notReady.length).toBeGreaterThan(0);
    for (const answer of notReady) expectUnavailable(answer);
    expect((await call(`${server.url}/v3/playlist/${id}`, { headers })).status).toBe(200);
    expect((await call(`${server.url}/healthz`)).status).toBe(200);

    unlinkSync(filler);
    expect(await eventually(async () => (await call(`${server.url}/readyz`)).status === 200, 10_000)).toBe(true);
    expect((await create(server, 'after the disk is back')).status).toBe(200);

    expect(server.process.exitCode).toBeNull();
    await server.stop();
  }, 60_000);
});

describe('another process holding the SQLite write lock', () => {
  it('keeps /healthz and reads answering, and the waiting write answers 503 after its bound', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mixtape-lock-'));
    const file = join(dir, 'mixtape.db');
    const server = await startServer({
      databaseUrl: `sqlite:${file}`,
      bootstrapUser: 'disk:full',
      env: { DATABASE_QUERY_TIMEOUT_MS: '1000' },
    });
    try {
      const first = await create(server, 'before the lock');
      expect(first.status).toBe(200);
      const { id } = JSON.parse(first.body) as { id: number };

      // Another process takes the write lock and keeps it for four seconds.
      const holder = spawn(
        process.execPath,
        [
          '-e',
          `const db = new (require('better-sqlite3'))(process.argv[1]);
           db.exec('BEGIN IMMEDIATE');
           db.exec('CREATE TABLE lock_holder (x)');
           console.log('locked');
           setTimeout(() => { db.exec('ROLLBACK'); db.close(); }, 4000);`,
          file,
        ],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      await new Promise<void>((resolve, reject) => {
        createInterface({ input: holder.stdout }).once('line', () => {
          resolve();
        });
        holder.once('exit', (code) => {
          reject(new Error(`the lock holder exited (${code})`));
        });
      });

      const write = create(server, 'while locked');
      // A sign-in that cannot be counted is not checked: 503, never a 401 or 200 that skipped the count.
      const signIn = call(`${server.url}/v3/playlist`, { headers: { security: basic('disk', 'a guess') } });
      const health: Answer[] = [];
      for (let i = 0; i < 10; i++) health.push(await call(`${server.url}/healthz`));
      const read = await call(`${server.url}/v3/playlist/${id}`, { headers });
      const written = await write;

      expect(read.status).toBe(200);
      for (const answer of health) {
        expect(answer.status).toBe(200);
        // The event loop is never held for the lock: a bound far below the write's own wait.
        expect(answer.ms).toBeLessThan(500);
      }
      expectUnavailable(written);
      expect(written.ms).toBeGreaterThan(900);
      expect(written.ms).toBeLessThan(4000);
      expect(await loggedCode(server, written)).toMatch(/^SQLITE_BUSY/);
      const refused = await signIn;
      expectUnavailable(refused);
      expect(await loggedCode(server, refused)).toMatch(/^SQLITE_BUSY/);

      await new Promise((resolve) => holder.once('exit', resolve));
      expect((await create(server, 'after the lock')).status).toBe(200);
      expect(
        (await call(`${server.url}/v3/playlist`, { headers: { security: basic('disk', 'a guess') } })).status,
      ).toBe(401);
    } finally {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
