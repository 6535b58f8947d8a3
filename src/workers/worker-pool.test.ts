import { afterAll, expect, it } from 'vitest';
import { WorkerPool } from './worker-pool.js';

const pool = new WorkerPool({ threads: 1, queue: 1 });
afterAll(() => pool.close());

it('reads a playlist file on a thread, its tracks normalised for matching', async () => {
  const text = '#EXTM3U\n#PLAYLIST:Road trip\n#EXTINF:100,Ａｂｂａ - Ｗａｔｅｒｌｏｏ\nx.mp3\n';
  const answer = await pool.run('readFile', { format: 'm3u8', text, tracks: 10 });
  expect(answer).toMatchObject({
    file: { title: 'Road trip', tracks: [{ title: 'Ｗａｔｅｒｌｏｏ', artist: 'Ａｂｂａ' }] },
    normalised: [{ title: 'waterloo', artist: 'abba', album: '' }],
  });
});

it('says why a file cannot be read, as the reader does', async () => {
  const answer = await pool.run('readFile', { format: 'xspf', text: '<nothing/>', tracks: 10 });
  expect(answer).toHaveProperty('unreadable');
  expect((answer as { unreadable: string }).unreadable).toMatch(/playlist/i);
});

it('diffs two versions on a thread', async () => {
  const operations = await pool.run('diff', {
    from: { name: 'a', songs: [1, 2, 3] },
    to: { name: 'b', songs: [1, 3] },
  });
  expect(operations).toEqual([
    { op: 'replace', path: '/name', value: 'b' },
    { op: 'remove', path: '/songs/1' },
  ]);
});

const long = { name: 'a', songs: Array.from({ length: 100_000 }, (_v, i) => i) };
const reversed = { name: 'a', songs: [...long.songs].reverse() };
const statuses = (results: PromiseSettledResult<unknown>[]) =>
  results.map((r) => (r.status === 'fulfilled' ? 200 : (r.reason as { statusCode: number }).statusCode));

it('refuses with 503 what does not fit in the threads and the queue', async () => {
  const results = await Promise.allSettled([1, 2, 3, 4].map(() => pool.run('diff', { from: long, to: reversed })));
  expect(statuses(results)).toEqual([200, 200, 503, 503]);
});
