import { join } from 'node:path';
import { ROOT } from './service.js';

type Measure<T> = (
  dialect: 'sqlite' | 'postgres',
  pgUrl: string,
  durationSeconds: number,
  dataDir: string,
) => Promise<T>;

/**
 * Runs one scenario on its own when `file` is the script started (`npx tsx bench/<file> --dialect postgres
 * --duration 15 --pg-url URL`), and prints its table; nothing when the file is imported by bench/run.ts.
 */
export function runStandalone<T>(file: string, measure: Measure<T>, format: (results: T) => string, seconds = 10) {
  if (process.argv[1]?.endsWith(file) !== true) return;
  const arg = (name: string) => {
    const at = process.argv.indexOf(name);
    return at > 0 ? process.argv[at + 1] : undefined;
  };
  const dialect = arg('--dialect') === 'postgres' ? 'postgres' : 'sqlite';
  const duration = Number(arg('--duration') ?? seconds);
  const pgUrl = arg('--pg-url') ?? 'postgres://root@127.0.0.1:5432/postgres';
  measure(dialect, pgUrl, duration, join(ROOT, 'bench', 'data'))
    .then((results) => {
      console.log(format(results));
    })
    .catch((error: unknown) => {
      console.error('bench:', error);
      process.exitCode = 1;
    });
}
