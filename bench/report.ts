/**
 * Prints the tables of results files: `npx tsx bench/report.ts [--markdown] bench/results/FILE.json ...`; the load
 * scenarios' as aligned text, or with --markdown as Markdown for docs/benchmarks.md, and every other scenario's.
 */
import { readFileSync } from 'node:fs';
import { formatLoad, report, type BenchResults } from './results.js';
import { OWN } from './scenarios.js';

const markdown = process.argv.includes('--markdown');
const files = process.argv.slice(2).filter((arg) => arg !== '--markdown');
if (files.length === 0) {
  console.error('Usage: npx tsx bench/report.ts [--markdown] bench/results/FILE.json ...');
  process.exit(2);
}
for (const file of files) {
  const results = JSON.parse(readFileSync(file, 'utf8')) as BenchResults;
  if (results.scenarios !== undefined) console.log(`${formatLoad(results, markdown)}\n`);
  for (const scenario of OWN.filter((s) => results[s.name] !== undefined))
    console.log(`${report(scenario, results[scenario.name])}\n`);
}
