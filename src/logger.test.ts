import { spawnSync } from 'node:child_process';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { LineBatch } from './logger.js';

/** A destination that records what it is handed. */
function recorder() {
  const writes: string[] = [];
  let syncFlushes = 0;
  return {
    writes,
    syncFlushes: () => syncFlushes,
    destination: {
      write(text: string) {
        writes.push(text);
        return true;
      },
      flush(callback?: (error?: Error) => void) {
        callback?.();
      },
      flushSync() {
        syncFlushes += 1;
      },
    },
  };
}

describe('LineBatch', () => {
  it("hands a turn's lines to the destination as one write, in order, at the end of the turn", async () => {
    const { writes, destination } = recorder();
    const batch = new LineBatch(destination);
    batch.write('{"a":1}\n');
    batch.write('{"b":2}\n');
    batch.write('{"c":3}\n');
    expect(writes).toEqual([]);
    await nextTurn();
    expect(writes).toEqual(['{"a":1}\n{"b":2}\n{"c":3}\n']);
    batch.write('{"d":4}\n');
    await nextTurn();
    expect(writes).toEqual(['{"a":1}\n{"b":2}\n{"c":3}\n', '{"d":4}\n']);
  });

  it('hands its lines over at once when flushed, and flushes the destination too', () => {
    const { writes, syncFlushes, destination } = recorder();
    const batch = new LineBatch(destination);
    batch.write('{"a":1}\n');
    batch.flushSync();
    expect(writes).toEqual(['{"a":1}\n']);
    expect(syncFlushes()).toBe(1);
  });

  it('writes the lines of the turn in which the process exits', () => {
    const logger = fileURLToPath(new URL('./logger.ts', import.meta.url));
    const script = [
      `import pino from 'pino';`,
      `import { logStream } from ${JSON.stringify(logger)};`,
      `const log = pino({}, logStream(1));`,
      `for (let i = 0; i < 500; i++) log.info({ i }, 'line');`,
      `log.info('last');`,
      `process.exit(0);`,
    ].join('\n');
    const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '--eval', script], {
      cwd: fileURLToPath(new URL('..', import.meta.url)),
      encoding: 'utf8',
    });
    expect(run.stderr).toBe('');
    const lines = run.stdout.trim().split('\n');
    expect(lines).toHaveLength(501);
    expect(JSON.parse(lines[500]!)).toMatchObject({ msg: 'last', level: 30 });
  });
});
