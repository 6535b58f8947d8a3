/**
 * The other user's p99 as the service saw it (its request log's `ms`), in each phase of a hostile-writes or
 * hostile-search log, a phase being the span of the flooding user's requests to one URL or of their searches.
 *
 *   npx tsx bench/log-latency.ts bench/data/service-hostile-writes-postgres.log [more logs]
 */
import { percentile } from './load.js';
import { requestLines, type RequestLine } from './results.js';

for (const path of process.argv.slice(2)) {
  const lines = requestLines(path);
  const search = lines.some((line) => line.user === 'mallory');
  const [victim, hostile] = search ? ['victim', ['mallory', 'trudy']] : ['bob', ['eve']];
  const phase = (line: RequestLine) =>
    search ? (line.url.includes('search=') ? line.user : undefined) : line.method === 'PATCH' ? line.url : undefined;
  // The phases: spans of the flooding user's requests, by `phase`, of more than 100 requests each.
  const spans = new Map<string, { from: number; to: number; count: number }>();
  for (const line of lines.filter((l) => hostile.includes(l.user ?? ''))) {
    const name = phase(line);
    if (name === undefined) continue;
    const span = spans.get(name) ?? { from: line.time, to: line.time, count: 0 };
    spans.set(name, { from: Math.min(span.from, line.time), to: Math.max(span.to, line.time), count: span.count + 1 });
  }
  const found = [...spans].filter(([, span]) => span.count > 100).sort(([, a], [, b]) => a.from - b.from);
  const cells = found.map(([name, { from, to }]) => {
    const p99 = (method: string) => {
      const inside = lines.filter((l) => l.user === victim && l.method === method && l.time >= from && l.time <= to);
      const times = inside.map((l) => l.ms).sort((a, b) => a - b);
      return times.length === 0 ? '–' : `${percentile(times, 0.99)} (${times.length})`;
    };
    return `${name}: ${victim}'s GET p99 ${p99('GET')}, POST p99 ${p99('POST')}`;
  });
  console.log(`${path}\n  ${cells.join('\n  ')}`);
}
