import type { EntryWritesResults } from './entry-writes.js';
import type { HostileResults } from './hostile-search.js';
import type { HostileWritesResults } from './hostile-writes.js';
import type { SignInResults } from './hostile-sign-in.js';
import type { HostileFilesResults } from './hostile-files.js';
import type { NeighbourResults } from './neighbours.js';
/** The results file of a benchmark run, and its text and Markdown tables. */
import type { DatasetParams } from './dataset.js';
import type { Measurement } from './load.js';
import type { CpuPerRequest } from './cpu.js';

export interface LevelResult {
  readonly connections: number;
  readonly service: Measurement;
  readonly baseline: Measurement;
  /** Service req/s ÷ baseline req/s at the same concurrency. */
  readonly ratio: number;
  /** CPU ms a response cost the service, and its PostgreSQL server processes (0 on SQLite), over the level. */
  readonly cpu?: CpuPerRequest | undefined;
}

/** The scenario again at half its peak rate, paced evenly (open loop), for p99 under a sustainable load. */
export interface HalfPeakResult {
  readonly rate: number;
  readonly connections: number;
  readonly service: Measurement;
  readonly baseline: Measurement;
}

export interface ScenarioResult {
  readonly name: string;
  readonly description: string;
  readonly levels: LevelResult[];
  readonly halfPeak?: HalfPeakResult;
}

export interface BenchResults {
  /** The noisy-neighbours measurement (bench/neighbours.ts), when it was run. */
  readonly neighbours?: NeighbourResults;
  /** The hostile-search measurement (bench/hostile-search.ts), when it was run. */
  readonly hostileSearch?: HostileResults;
  /** The hostile-writes measurement (bench/hostile-writes.ts), when it was run. */
  readonly hostileWrites?: HostileWritesResults;
  /** The hostile-sign-in measurement (bench/hostile-sign-in.ts), when it was run. */
  readonly hostileSignIn?: SignInResults;
  /** The hostile-files measurement (bench/hostile-files.ts), when it was run. */
  readonly hostileFiles?: HostileFilesResults;
  readonly entryWrites?: EntryWritesResults;
  readonly date: string;
  readonly command: string;
  readonly git: { readonly commit: string; readonly dirty: boolean } | undefined;
  readonly machine: {
    readonly cpuModel: string;
    readonly cores: number;
    readonly ramBytes: number;
    readonly node: string;
    readonly os: string;
    /** 1, 5 and 15 minute load averages when the run began: anything else busy on the machine shows here. */
    readonly loadAverage: readonly number[];
  };
  readonly dialect: string;
  readonly dataset: {
    readonly params: DatasetParams;
    readonly generatorVersion: number;
    readonly location: string;
    readonly users: number;
    readonly playlistSongs: number;
    readonly diskBytes: number;
    readonly generationSeconds: number;
    /** False when a data set generated earlier was reused (generationSeconds is then that generation's). */
    readonly generatedThisRun: boolean;
  };
  readonly settings: {
    readonly durationSeconds: number;
    readonly warmupSeconds: number;
    readonly connections: readonly number[];
    readonly activeUsers: number;
    readonly service: Readonly<Record<string, string>>;
  };
  readonly service: {
    readonly startMs: number;
    readonly rssAtReadyBytes: number;
    readonly maxRssBytes: number;
    readonly signInWarmupMs: number;
  };
  readonly scenarios: readonly ScenarioResult[];
  /** Scenarios that had non-2xx answers or errors: their figures are not to be trusted. */
  readonly problems: readonly string[];
}

const MIB = 1024 * 1024;
const fixed = (n: number, digits: number) => n.toFixed(digits);
const rps = (n: number) => Math.round(n).toString();
const ms = (n: number) => (n < 10 ? fixed(n, 2) : fixed(n, 1));

const HEADER = [
  'scenario',
  'load',
  'req/s',
  'p50 ms',
  'p99 ms',
  'baseline req/s',
  'baseline p50',
  'baseline p99',
  'ratio',
  'cpu ms/req',
  'db cpu ms/req',
  'non-2xx',
  'errors',
];

function rows(results: BenchResults): string[][] {
  const row = (name: string, load: string, s: Measurement, b: Measurement, ratio: string, cpu?: CpuPerRequest) => [
    name,
    load,
    rps(s.rps),
    ms(s.p50),
    ms(s.p99),
    rps(b.rps),
    ms(b.p50),
    ms(b.p99),
    ratio,
    cpu === undefined ? '' : fixed(cpu.serviceMs, 3),
    cpu === undefined ? '' : fixed(cpu.databaseMs, 3),
    String(s.non2xx),
    String(s.errors),
  ];
  const out: string[][] = [];
  for (const scenario of results.scenarios) {
    for (const level of scenario.levels) {
      const load = `${level.connections} conn`;
      out.push(row(scenario.name, load, level.service, level.baseline, fixed(level.ratio, 3), level.cpu));
    }
    const half = scenario.halfPeak;
    if (half !== undefined) {
      const load = `${half.rate}/s, ${half.connections} conn`;
      out.push(row(`${scenario.name} (half peak)`, load, half.service, half.baseline, ''));
    }
  }
  return out;
}

function summary(results: BenchResults): string[] {
  const { machine, dataset, service, settings } = results;
  const dialect = results.dialect === 'sqlite' ? 'SQLite' : 'PostgreSQL';
  return [
    `${dialect}, ${dataset.params.playlists} playlists (${dataset.users} users, ${dataset.params.songs} songs, ` +
      `${dataset.playlistSongs} playlist entries, ${fixed(dataset.diskBytes / MIB, 0)} MiB on disk), ` +
      `generated in ${fixed(dataset.generationSeconds, 1)} s`,
    `${machine.cpuModel}, ${machine.cores} cores, ${fixed(machine.ramBytes / 1024 ** 3, 0)} GiB RAM, ` +
      `Node ${machine.node}, ${machine.os}, load average ${machine.loadAverage.map((l) => fixed(l, 2)).join(' ')}`,
    `${settings.durationSeconds} s per level after ${settings.warmupSeconds} s of warm-up, ` +
      `spread over ${settings.activeUsers} users; service start ${fixed(service.startMs, 0)} ms, ` +
      `RSS ${fixed(service.rssAtReadyBytes / MIB, 0)} MiB when ready, ${fixed(service.maxRssBytes / MIB, 0)} MiB at most`,
    `${results.date}, ${results.git === undefined ? 'no git' : results.git.commit.slice(0, 12) + (results.git.dirty ? ' (uncommitted changes)' : '')}: ${results.command}`,
  ];
}

export function formatText(results: BenchResults): string {
  const table = [HEADER, ...rows(results)];
  const widths = HEADER.map((_, column) => Math.max(...table.map((row) => row[column]!.length)));
  // Text left-aligned, numbers right-aligned.
  const line = (row: string[]) =>
    row.map((cell, column) => (column < 2 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join('  ');
  return [...summary(results), '', line(HEADER), ...rows(results).map(line)].join('\n');
}

export function formatMarkdown(results: BenchResults): string {
  const line = (row: string[]) => `| ${row.join(' | ')} |`;
  const align = HEADER.map((_, column) => (column < 2 ? '---' : '--:'));
  return [
    ...summary(results).map((text) => `- ${text}`),
    '',
    line(HEADER),
    line(align),
    ...rows(results).map(line),
  ].join('\n');
}
