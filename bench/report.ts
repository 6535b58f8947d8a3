/**
 * Prints the tables of a results file: `tsx bench/report.ts [--markdown] bench/results/FILE.json`; with
 * --markdown, as Markdown for docs/benchmarks.md.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { formatMarkdown, formatText, type BenchResults } from './results.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { markdown: { type: 'boolean', default: false } },
});
if (positionals.length === 0) {
  console.error('Usage: tsx bench/report.ts [--markdown] bench/results/FILE.json ...');
  process.exit(2);
}
const tables = positionals.map((file) => {
  const results = JSON.parse(readFileSync(file, 'utf8')) as BenchResults;
  return values.markdown ? formatMarkdown(results) : formatText(results);
});
console.log(tables.join('\n\n'));
