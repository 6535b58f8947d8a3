/** Results: the files a run writes, its tables, and what the service's own log tells. */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import type { DatasetParams } from './dataset.js';
import type { Measurement } from './load.js';
import { ROOT, type CpuReading, type OwnScenario } from './service.js';

export interface ScenarioResult {
  readonly name: string;
  readonly description: string;
  /** The scenario this one is a variant of (see `versusLines`). */
  readonly versus?: string;
  /**
   * Each level: the service's figures and the baseline's, their req/s ratio, the CPU ms a response cost; for the
   * scenarios the plain way answers (bench/plain-way.ts), its figures and the service's req/s ÷ its req/s.
   */
  readonly levels: {
    connections: number;
    service: Measurement;
    baseline: Measurement;
    ratio: number;
    plain?: Measurement;
    vsPlain?: number;
    cpu?: CpuReading;
  }[];
  /** Again at half the peak rate, paced evenly, for p99 under a load the service keeps up with. */
  readonly halfPeak?: { rate: number; connections: number; service: Measurement; baseline: Measurement };
}

/** A results file: the run, and the load scenarios' figures (when any ran) and each other scenario's by its name. */
export interface BenchResults {
  readonly date: string;
  readonly command: string;
  readonly git: { readonly commit: string; readonly dirty: boolean } | undefined;
  readonly machine: ReturnType<typeof machine>;
  readonly dialect: string;
  readonly dataset?: {
    params: DatasetParams;
    users: number;
    playlistSongs: number;
    diskBytes: number;
    generationSeconds: number;
  };
  readonly settings?: { durationSeconds: number; warmupSeconds: number; activeUsers: number };
  readonly service?: { startMs: number; rssAtReadyBytes: number; maxRssBytes: number };
  readonly scenarios?: readonly ScenarioResult[];
  /** Scenarios that had non-2xx answers or errors: their figures are not to be trusted. */
  readonly problems?: readonly string[];
  readonly [own: string]: unknown;
}

/** The commit, and whether the tree differs from it; read-only (no index refresh), undefined outside git. */
export function gitState(): BenchResults['git'] {
  const git = (...args: string[]) =>
    execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', env: { ...process.env, GIT_OPTIONAL_LOCKS: '0' } });
  try {
    return { commit: git('rev-parse', 'HEAD').trim(), dirty: git('status', '--porcelain').trim() !== '' };
  } catch {
    return undefined;
  }
}

/** The machine; the load averages when the run began show anything else busy on it. */
export const machine = (loadAverage = os.loadavg()) => ({
  ...{ cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown', cores: os.cpus().length, ramBytes: os.totalmem() },
  ...{ node: process.version, os: `${os.type()} ${os.release()}`, loadAverage },
});

/**
 * Where a run's results go: `bench/results/<date>-<dialect>-<label>.json`; with `out`, that file when it ends in
 * `.json`, else `out/<label>-<dialect>[-<tag>].json`.
 */
export function resultsFile(label: string, dialect: string, out?: string, tag?: string): string {
  const date = new Date().toISOString().slice(0, 10);
  if (out === undefined) return join(ROOT, 'bench/results', `${date}-${dialect}-${label}.json`);
  return out.endsWith('.json') ? out : join(out, `${label}-${dialect}${tag === undefined ? '' : `-${tag}`}.json`);
}

/** Written whole or not at all: a half-written results file would read as a broken run. */
export function writeJson(file: string, data: unknown): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(`${file}.tmp`, `${JSON.stringify(data, null, 2)}\n`);
  renameSync(`${file}.tmp`, file);
}

/** A Markdown table; the header as `name|name|…`. */
export function table(header: string, rows: readonly (readonly unknown[])[]): string {
  const line = (cells: readonly unknown[]) =>
    `| ${cells.map((c) => (typeof c === 'string' ? c : JSON.stringify(c))).join(' | ')} |`;
  const names = header.split('|');
  return [line(names), line(names.map(() => '---')), ...rows.map(line)].join('\n');
}

/** `value ÷ base` with one decimal, or '' without a base. */
export const ratio = (value: number, base: number | undefined) =>
  base === undefined || base === 0 ? '' : (value / base).toFixed(1);

/** A line of the service's request log: one a request, its `ms` from the arrival to the answer. */
export interface RequestLine {
  readonly time: number;
  readonly method: string;
  readonly url: string;
  readonly ms: number;
  readonly status: number;
  readonly user?: string;
  readonly level?: number;
  readonly msg?: string;
}

export const logLines = (file: string) =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Partial<RequestLine>);

export const requestLines = (file: string) => logLines(file).filter((line) => line.msg === 'request') as RequestLine[];

/** What the services' logs hold besides answers below 500: lines at warn and above, and 5xx answers by route. */
export function logSummary(files: readonly string[]) {
  const [warnings, serverErrors] = [{} as Record<string, number>, {} as Record<string, number>];
  for (const { level = 30, msg = '', method, url = '', status = 0 } of files.flatMap(logLines)) {
    if (level >= 40) warnings[`${level} ${msg}`.slice(0, 300)] = (warnings[`${level} ${msg}`.slice(0, 300)] ?? 0) + 1;
    const route = `${method} ${url.replace(/\?.*$/, '').replace(/\/\d+/g, '/N')} ${status}`;
    if (msg === 'request' && status >= 500) serverErrors[route] = (serverErrors[route] ?? 0) + 1;
  }
  return { warnings, serverErrors };
}

const HEADER =
  'scenario|load|req/s|p50 ms|p99 ms|baseline req/s|baseline p50|baseline p99|ratio|' +
  'plain req/s|plain p50|plain p99|÷ plain|cpu ms/req|db cpu ms/req';

/**
 * Each scenario that is a variant of another that ran too (`versus`), level by level: its req/s and CPU ms a request
 * (the service's, and the database's on PostgreSQL) ÷ the other's, with both figures.
 */
export function versusLines(scenarios: readonly ScenarioResult[]): string[] {
  const fixed = (n: number) => n.toFixed(3);
  return scenarios.flatMap(({ name, versus, levels }) => {
    const other = scenarios.find((s) => s.name === versus);
    if (other === undefined) return [];
    return levels.flatMap(({ connections, service: s, cpu }) => {
      const base = other.levels.find((l) => l.connections === connections);
      if (base === undefined) return [];
      const cpuText =
        cpu === undefined || base.cpu === undefined
          ? ''
          : `; CPU ms a request ${fixed(cpu.serviceMs / base.cpu.serviceMs)} (${fixed(cpu.serviceMs)} ÷ ${fixed(base.cpu.serviceMs)})` +
            (base.cpu.databaseMs > 0
              ? `, database ${fixed(cpu.databaseMs / base.cpu.databaseMs)} (${fixed(cpu.databaseMs)} ÷ ${fixed(base.cpu.databaseMs)})`
              : '');
      return [
        `${name} ÷ ${versus!}, ${connections} conn: req/s ${fixed(s.rps / base.service.rps)} (${Math.round(s.rps)} ÷ ${Math.round(base.service.rps)})${cpuText}`,
      ];
    });
  });
}

/** The load scenarios' figures as a Markdown table, or as aligned text (numbers to the right). */
export function formatLoad(results: BenchResults, markdown: boolean): string {
  const [fixed, mib] = [(n: number, digits = 0) => n.toFixed(digits), (bytes: number) => (bytes / 2 ** 20).toFixed(0)];
  const ms = (n: number) => (n < 10 ? fixed(n, 2) : fixed(n, 1));
  type Plain = { measured?: Measurement | undefined; vs: string };
  const row = (
    name: string,
    load: string,
    s: Measurement,
    b: Measurement,
    ratio: string,
    p: Plain,
    cpu?: CpuReading,
  ) => [
    ...[name, load, fixed(s.rps), ms(s.p50), ms(s.p99), fixed(b.rps), ms(b.p50), ms(b.p99), ratio],
    ...(p.measured === undefined ? ['', '', ''] : [fixed(p.measured.rps), ms(p.measured.p50), ms(p.measured.p99)]),
    p.vs,
    ...[cpu === undefined ? '' : fixed(cpu.serviceMs, 3), cpu === undefined ? '' : fixed(cpu.databaseMs, 3)],
    ...[String(s.non2xx), String(s.errors)],
  ];
  const rows = (results.scenarios ?? []).flatMap(({ name, levels, halfPeak: h }) => [
    ...levels.map((l) => {
      const plain = { measured: l.plain, vs: l.vsPlain === undefined ? '' : fixed(l.vsPlain, 3) };
      return row(name, `${l.connections} conn`, l.service, l.baseline, fixed(l.ratio, 3), plain, l.cpu);
    }),
    ...(h === undefined
      ? []
      : [row(`${name} (half peak)`, `${h.rate}/s, ${h.connections} conn`, h.service, h.baseline, '', { vs: '' })]),
  ]);
  const { machine: m, dataset: d, service: s, settings: t, git } = results;
  const summary = [
    ...(d === undefined
      ? []
      : [
          `${results.dialect}, ${d.params.playlists} playlists (${d.users} users, ${d.params.songs} songs, ` +
            `${d.playlistSongs} playlist entries, ${mib(d.diskBytes)} MiB on disk), generated in ${fixed(d.generationSeconds, 1)} s`,
        ]),
    `${m.cpuModel}, ${m.cores} cores, ${fixed(m.ramBytes / 2 ** 30)} GiB RAM, Node ${m.node}, ${m.os}, ` +
      `load average ${m.loadAverage.map((l) => fixed(l, 2)).join(' ')}`,
    ...(t === undefined || s === undefined
      ? []
      : [
          `${t.durationSeconds} s per level after ${t.warmupSeconds} s of warm-up, spread over ${t.activeUsers} users; ` +
            `service start ${fixed(s.startMs)} ms, RSS ${mib(s.rssAtReadyBytes)} MiB when ready, ${mib(s.maxRssBytes)} MiB at most`,
        ]),
    `${results.date}, ${git === undefined ? 'no git' : git.commit.slice(0, 12) + (git.dirty ? ' (uncommitted changes)' : '')}: ${results.command}`,
  ];
  const header = `${HEADER}|non-2xx|errors`.split('|');
  const versus = versusLines(results.scenarios ?? []);
  const after = versus.length === 0 ? [] : ['', ...versus.map((text) => (markdown ? `- ${text}` : text))];
  if (markdown) return [...summary.map((text) => `- ${text}`), '', table(header.join('|'), rows), ...after].join('\n');
  const widths = header.map((_, column) => Math.max(...[header, ...rows].map((r) => r[column]!.length)));
  const line = (r: string[]) =>
    r.map((cell, c) => (c < 2 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  ');
  return [...summary, '', line(header), ...rows.map(line), ...after].join('\n');
}

/** A figure as a cell: a measurement as req/s, p50 / p99 ms; a latency as p50 / p99 / max ms; a list, joined. */
function cell(value: unknown): string {
  if (typeof value === 'number') return String(Math.round(value * 100) / 100);
  if (Array.isArray(value)) return value.length > 5 ? `(${value.length})` : value.map(cell).join(', ');
  if (value === null || value === undefined) return 'none';
  if (typeof value === 'string') return value.replace(/\s*\n\s*/g, ' ');
  if (typeof value !== 'object') return JSON.stringify(value);
  const v = value as Record<string, number | undefined>;
  const failed = (v.failures ?? (v.non2xx ?? 0) + (v.errors ?? 0)) > 0 ? ` (${v.failures ?? v.non2xx} failed)` : '';
  if (v.rps !== undefined) return `${Math.round(v.rps)} req/s, ${cell(v.p50)} / ${cell(v.p99)} ms${failed}`;
  if (v.count !== undefined && v.max !== undefined) return `${v.p50} / ${v.p99} / ${v.max} ms of ${v.count}${failed}`;
  return JSON.stringify(value);
}

const plain = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && cell(value).startsWith('{');

/**
 * Any scenario's results as Markdown: a line a figure (the keys of nested objects joined by dots), a table a list of
 * objects (an object in a row spread over columns of its own); long lists stay in the JSON.
 */
export function render(results: Record<string, unknown>, prefix = ''): string[] {
  return Object.entries(results).flatMap(([key, value]): string[] => {
    if (plain(value)) return render(value, `${prefix}${key}.`);
    if (!Array.isArray(value) || !value.some(plain)) return [`- ${prefix}${key}: ${cell(value)}`];
    const flat = (row: Record<string, unknown>, at = ''): [string, unknown][] =>
      Object.entries(row).flatMap(([k, v]) => (plain(v) ? flat(v, `${at}${k}.`) : [[`${at}${k}`, v]]));
    const rows = (value as Record<string, unknown>[]).map((row) => Object.fromEntries(flat(row)));
    const columns = [...new Set(rows.flatMap(Object.keys))];
    const cells = rows.map((r) => columns.map((c) => cell(r[c])));
    return ['', `${prefix}${key}:`, table(columns.join('|'), cells), ''];
  });
}

/** A scenario's results: its own table, or every figure. */
export const report = (scenario: OwnScenario, results: unknown) =>
  scenario.format?.(results) ??
  [`${scenario.name}: ${scenario.description}`, ...render(results as Record<string, unknown>)].join('\n');
