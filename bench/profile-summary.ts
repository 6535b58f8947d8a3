/**
 * Where a CPU profile's time went: self time by area of the request path (as shares of the busy time, idle left
 * out), by package (or file) and by function (as shares of all samples).
 *
 *   npx tsx bench/profile-summary.ts bench/profiles/CPU.*.cpuprofile [functions=30]
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
}
interface Profile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

const [file, count = '30'] = process.argv.slice(2);
if (file === undefined) {
  console.error('Usage: tsx bench/profile-summary.ts FILE.cpuprofile [functions]');
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const nodes = new Map(profile.nodes.map((node) => [node.id, node]));

/** Areas of the request path, tried in order on a sample's file and function; the first that matches wins. */
const AREAS: readonly (readonly [string, RegExp])[] = [
  ['idle', /^\(idle\)/],
  ['garbage collection', /^\(garbage collector\)/],
  [
    'start-up (loading modules)',
    /node:internal\/modules|^(wrapSafe|compileSourceTextModule|openFileHandle|readFileUtf8|internalModuleStat|realpathSync|lstat|fstat) /,
  ],
  ['request log (pino, writes to stdout)', /node_modules\/(pino|sonic-boom|fast-redact)|^writeString|^\S+ node:fs:/],
  ['metrics (prom-client)', /node_modules\/prom-client/],
  ['credential check (HMAC, cache)', /dist\/credentials|node:internal\/crypto|^(hash|digest|Hmac) /],
  ['cache coherence (data_version)', /dist\/db\/database\.js/],
  ['database and query layer', /node_modules\/(kysely|better-sqlite3|pg|pg-protocol)|dist\/db\/|\.repository\.js/],
  ['validation (Ajv)', /node_modules\/ajv|dist\/http\/validation/],
  ['playlists (service, cache, JSON)', /dist\/playlists/],
  ['Fastify (routing, hooks, reply)', /node_modules\/(fastify|find-my-way|@fastify|avvio|light-my-request)/],
  [
    'Node HTTP and sockets',
    /node:(_http|net|internal\/stream|internal\/streams|stream|events|internal\/http)|^(writev|writeBuffer|writeUtf8String|writeLatin1String) |^parserOn/,
  ],
  ['promises and ticks', /node:internal\/process\/task_queues|^runMicrotasks /],
];

const byFunction = new Map<string, number>();
const byPackage = new Map<string, number>();
const byArea = new Map<string, number>();
let total = 0;
profile.samples.forEach((id, i) => {
  const micros = profile.timeDeltas[i] ?? 0;
  total += micros;
  const { functionName, url, lineNumber } = nodes.get(id)!.callFrame;
  const path = url
    .replace(/^file:\/\/.*?\/node_modules\//, 'node_modules/')
    .replace(/^file:\/\/.*?\/(dist|src)\//, '$1/');
  const parts = path.split('/');
  const pkg = path.startsWith('node_modules/')
    ? parts.slice(0, parts[1]?.startsWith('@') === true ? 3 : 2).join('/')
    : path === ''
      ? `(${functionName})`
      : path;
  const name = `${functionName === '' ? '(anonymous)' : functionName} ${path}${path === '' ? '' : `:${lineNumber + 1}`}`;
  byFunction.set(name, (byFunction.get(name) ?? 0) + micros);
  const area = AREAS.find(([, pattern]) => pattern.test(name))?.[0] ?? 'other';
  byArea.set(area, (byArea.get(area) ?? 0) + micros);
  byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + micros);
});

const top = (map: Map<string, number>, n: number) =>
  [...map]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([name, micros]) => `${((100 * micros) / total).toFixed(1).padStart(5)}%  ${name}`)
    .join('\n');

const busy = total - (byArea.get('idle') ?? 0);
const areas = [...byArea]
  .filter(([area]) => area !== 'idle')
  .sort((a, b) => b[1] - a[1])
  .map(([area, micros]) => `${((100 * micros) / busy).toFixed(1).padStart(5)}%  ${area}`)
  .join('\n');
console.log(
  `${(total / 1000).toFixed(0)} ms sampled, ${(busy / 1000).toFixed(0)} ms busy\n\nby area, of the busy time:\n${areas}`,
);
console.log(`\nby package or file:\n${top(byPackage, 15)}`);
console.log(`\nby function (self time):\n${top(byFunction, Number(count))}`);
