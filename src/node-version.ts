/**
 * Refuses to start on a Node.js outside package.json's `engines` with one line naming the supported versions, before
 * any module that could crash on an older one is loaded (better-sqlite3 needs Node-API 10, which 22.14 first has).
 * The CLI imports this module first; ES modules run their imports in order, so nothing else has run yet.
 */
import { readFileSync } from 'node:fs';
import semver from 'semver';

/** The `engines.node` range of the package this file belongs to (`dist/` and `src/` both sit beside it). */
export function supportedNodeRange(): string {
  const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    engines: { node: string };
  };
  return manifest.engines.node;
}

/** The line to print when `version` is outside `range`, or undefined when it is supported. */
export function unsupportedNodeMessage(version: string, range: string): string | undefined {
  if (semver.satisfies(version, range)) return undefined;
  return `mixtape: Node.js ${version} is not supported; use Node.js ${range.replaceAll(' || ', ', ')} (package.json engines)`;
}

const message = unsupportedNodeMessage(process.version, supportedNodeRange());
if (message !== undefined) {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}
