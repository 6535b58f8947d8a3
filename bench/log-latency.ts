/**
 * The other user's latency as the service itself saw it, from a hostile scenario's service log (the `request` lines'
 * `ms`, from the request's arrival in the service to its answer): for each phase, found as the span of the hostile
 * user's requests to one URL (hostile-writes: eve's PATCHes of each playlist) or of their searches (hostile-search:
 * mallory's, trudy's), the p99 of the other user's GETs and POSTs inside it. What the scenario's own table shows is
 * timed by its client from when each request was due, on the core the hostile loops and PostgreSQL share, so the two
 * together tell the service's part from the client's.
 *
 * `npx tsx bench/log-latency.ts bench/data/service-hostile-writes-postgres.log [more logs]`
 */
import { readFileSync } from 'node:fs';
import { percentile } from './neighbours.js';

interface RequestLine {
  readonly time: number;
  readonly method: string;
  readonly url: string;
  readonly ms: number;
  readonly user?: string;
}

function requests(path: string): RequestLine[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.includes('"msg":"request"'))
    .map((line) => JSON.parse(line) as RequestLine);
}

/** The phases: spans of the hostile user's requests, grouped by `key`, of more than 100 requests each. */
function phases(
  lines: readonly RequestLine[],
  hostile: readonly string[],
  key: (line: RequestLine) => string | undefined,
) {
  const spans = new Map<string, { from: number; to: number; count: number }>();
  for (const line of lines) {
    if (line.user === undefined || !hostile.includes(line.user)) continue;
    const name = key(line);
    if (name === undefined) continue;
    const span = spans.get(name) ?? { from: line.time, to: line.time, count: 0 };
    spans.set(name, { from: Math.min(span.from, line.time), to: Math.max(span.to, line.time), count: span.count + 1 });
  }
  return [...spans].filter(([, span]) => span.count > 100).sort(([, a], [, b]) => a.from - b.from);
}

for (const path of process.argv.slice(2)) {
  const lines = requests(path);
  // hostile-search's log has mallory's searches; hostile-writes' has eve's edits.
  const search = lines.some((line) => line.user === 'mallory');
  const victim = search ? 'victim' : 'bob';
  const found = search
    ? phases(lines, ['mallory', 'trudy'], (line) => (line.url.includes('search=') ? line.user : undefined))
    : phases(lines, ['eve'], (line) => (line.method === 'PATCH' ? line.url : undefined));
  const cells = found.map(([name, span]) => {
    const p99 = (method: string) => {
      const times = lines
        .filter((l) => l.user === victim && l.method === method && l.time >= span.from && l.time <= span.to)
        .map((l) => l.ms)
        .sort((a, b) => a - b);
      return times.length === 0 ? '–' : `${percentile(times, 0.99)} (${times.length})`;
    };
    return `${name}: ${victim}'s GET p99 ${p99('GET')}, POST p99 ${p99('POST')}`;
  });
  console.log(`${path}\n  ${cells.join('\n  ')}`);
}
