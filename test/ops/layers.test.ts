import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/*
 * The floors of src/ (docs/development.md, Layout). Every module belongs to a unit: its top-level folder, or a part of
 * one named below; the root files are the bottom (settings, the log) or the top (what wires and starts the service).
 * The units stand on floors, lowest first, and a module imports only from its own unit or a lower floor: so no two
 * units import each other, however indirectly. Read from the sources as they are (relative imports and re-exports,
 * type-only ones included, and `import()`), with no database and no build.
 *
 * A module that needs something of a higher floor takes it as a parameter or an interface of its own, which the
 * higher floor (in the end app.ts) passes in; shared vocabulary moves down to `domain/`. UPWARD lists the imports
 * that go up all the same, at most three, each with its reason; none of them may close a loop.
 */

/** A unit: the folders (ending in `/`) and files under src/ it holds; a path names its longest match's unit. */
interface Unit {
  readonly name: string;
  readonly paths: readonly string[];
}

/** Lowest first. */
const FLOORS: readonly Unit[] = [
  // The settings, the log, the Node.js version check and the stop signals: everything may read them.
  { name: 'base', paths: ['config.ts', 'logger.ts', 'node-version.ts', 'stop-requests.ts'] },
  // The words several features share: roles, change kinds, how text is searched and counted, the JSON Patch.
  { name: 'domain', paths: ['domain/'] },
  // How the API names a playlist's entry (`e12`), which merged edits and the history's diffs share: vocabulary, kept
  // beside merged edits, which named it first.
  { name: 'playlists/entry-names', paths: ['playlists/edits/entry-names.ts'] },
  // A limit on concurrent work with a bounded queue.
  { name: 'concurrency', paths: ['concurrency/'] },
  // The connections, the schema, migrations, and the query parts every feature builds on (the access rule).
  { name: 'db', paths: ['db/'] },
  // What every route shares: errors, validation, answers and revalidation, OpenAPI, limits, the caller, shutdown.
  { name: 'http', paths: ['http/'] },
  // Playlist files (M3U8, XSPF, JSPF) read and written.
  { name: 'formats', paths: ['formats/'] },
  // Users: names, the password rule and prompt, their rows.
  { name: 'users', paths: ['users/'] },
  // Basic credentials, their hashes and cache, the sign-in throttle; the HMAC key.
  { name: 'credentials', paths: ['credentials/'] },
  // App tokens (1.11.0): made, listed and revoked, and the check of a Bearer credential that the authenticator calls.
  { name: 'tokens', paths: ['tokens/'] },
  // The wake-ups after each commit across instances, reads that wait for one, and the stream's tickets.
  { name: 'live', paths: ['live/'] },
  // Search by words: the playlists' documents and bounded searches of them and of the catalog.
  { name: 'search', paths: ['search/'] },
  // The query of a page of a list (`limit`, `offset`, `search`) and its headers.
  { name: 'http/pages', paths: ['http/schemas.ts', 'http/paging.ts'] },
  // The song catalog's import.
  { name: 'catalog', paths: ['catalog/'] },
  // The catalog's songs: their rows, and the songs API.
  { name: 'songs', paths: ['songs/'] },
  // What history keeps of every write (the revisions), and the diffs of two versions (JSON Patch, merged edits' ops).
  {
    name: 'history/revisions',
    paths: [
      'history/revision-policy.ts',
      'history/revision.repository.ts',
      'history/myers.ts',
      'history/diff.ts',
      'history/entries-diff.ts',
    ],
  },
  // Worker threads and what they run: reading playlist files, diffs.
  { name: 'workers', paths: ['workers/'] },
  // Smart playlists' rules: read, checked, compiled to SQL and run off the event loop; what is stored of them.
  { name: 'smart/rules', paths: ['smart/'] },
  // Each user's folders and order, as rows: the store and the membership writes count up a tree's version and take
  // a playlist out of it in their transactions, and a list of playlists reads what a folder holds.
  { name: 'library/store', paths: ['library/library.repository.ts'] },
  // What a playlist is and the one module that writes it: schemas, snapshots and answers, entries, the store.
  {
    name: 'playlists/store',
    paths: [
      'playlists/playlist.schemas.ts',
      'playlists/playlist.render.ts',
      'playlists/playlist.errors.ts',
      'playlists/write/events.ts',
      'playlists/entry-order.ts',
      'playlists/write/store.repository.ts',
      'playlists/write/store.ts',
    ],
  },
  // Smart playlists' refreshes: through the store, after each write and before a read of a stale one.
  { name: 'smart', paths: ['smart/smart.refresh.ts'] },
  // Playlists' services and routes: access, the cache, create, read, edit, import, export.
  { name: 'playlists', paths: ['playlists/'] },
  // Covers drawn from a playlist.
  { name: 'covers', paths: ['covers/'] },
  // Merged edits: ops made on an older version merged onto the current one.
  { name: 'playlists/edits', paths: ['playlists/edits/'] },
  // Share links, the page they open, and members with their roles.
  { name: 'sharing', paths: ['sharing/'] },
  // Each user's folders and own order of the playlists they may read (1.10.0): the tree, its writes and routes.
  { name: 'library', paths: ['library/'] },
  // Versions, diffs and restores, the change feed, pruning, the history commands.
  { name: 'history', paths: ['history/'] },
  // The change feed that waits for a change and streams it.
  { name: 'live/feed', paths: ['live/live-changes.ts', 'live/stream.ts'] },
  // `/healthz`, `/readyz`, `/metrics`.
  { name: 'ops', paths: ['ops/'] },
  // The operator's user management (the `user` commands, the bootstrap user): a user removed leaves their shares.
  { name: 'users/admin', paths: ['users/user.service.ts'] },
  // What wires and starts the service: the app, the server, the command line, the start-up.
  { name: 'top', paths: ['app.ts', 'server.ts', 'cli.ts', 'cli-actions.ts', 'startup.ts'] },
];

/** Imports that go up a floor all the same (at most three): `from` and `to` under src/, and why. */
const UPWARD: readonly { readonly from: string; readonly to: string; readonly why: string }[] = [];

const SRC = fileURLToPath(new URL('../../src', import.meta.url));

/** A path under src/ as the units name it: `playlists/write/store.ts`. */
const underSrc = (path: string) => relative(SRC, path).split(sep).join('/');

/** Every module of src/ that is not a test's, as paths under src/. */
function modules(folder = SRC): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return modules(path);
    const isModule = entry.name.endsWith('.ts') && !/\.test(-helpers)?\.ts$/.test(entry.name);
    return isModule ? [underSrc(path)] : [];
  });
}

/** The unit of a path under src/ and its floor; undefined when no unit holds it. */
function unitOf(path: string): { unit: string; floor: number } | undefined {
  let found: { unit: string; floor: number; length: number } | undefined;
  FLOORS.forEach((unit, floor) => {
    for (const held of unit.paths) {
      const matches = held.endsWith('/') ? path.startsWith(held) : path === held;
      if (matches && held.length > (found?.length ?? -1)) found = { unit: unit.name, floor, length: held.length };
    }
  });
  return found && { unit: found.unit, floor: found.floor };
}

interface Import {
  readonly from: string;
  readonly to: string;
}

/** The relative imports of a module (imports, re-exports, `import()`, type-only ones too), as paths under src/. */
function importsOf(path: string): Import[] {
  const text = readFileSync(join(SRC, path), 'utf8');
  return ts
    .preProcessFile(text, true, true)
    .importedFiles.map((file) => file.fileName)
    .filter((name) => name.startsWith('./') || name.startsWith('../'))
    .map((name) => ({
      from: path,
      to: underSrc(resolve(SRC, dirname(path), name.replace(/\.js$/, '.ts'))),
    }));
}

const MODULES = modules();
const IMPORTS = MODULES.flatMap(importsOf);
const shown = (i: Import) => `src/${i.from} → src/${i.to}`;
const isAllowed = (i: Import) => UPWARD.some((up) => up.from === i.from && up.to === i.to);

describe('the floors of src/', () => {
  it('place every module in a unit, and name each unit and path once', () => {
    expect(MODULES.length).toBeGreaterThan(100);
    expect(MODULES.filter((path) => unitOf(path) === undefined)).toEqual([]);
    const names = FLOORS.map((unit) => unit.name);
    expect(names.filter((name, i) => names.indexOf(name) !== i)).toEqual([]);
    const paths = FLOORS.flatMap((unit) => unit.paths);
    expect(paths.filter((path, i) => paths.indexOf(path) !== i)).toEqual([]);
  });

  it('see every relative import reach a file under src/', () => {
    const known = new Set(MODULES);
    const outside = IMPORTS.filter((i) => i.to.startsWith('../') || (i.to.endsWith('.ts') && !known.has(i.to)));
    expect(outside.map(shown)).toEqual([]);
  });

  it('have no import from a lower floor to a higher one but those UPWARD lists', () => {
    const up = IMPORTS.filter((i) => {
      const from = unitOf(i.from);
      const to = unitOf(i.to);
      return from !== undefined && to !== undefined && to.floor > from.floor && !isAllowed(i);
    });
    const message = up
      .map((i) => `${shown(i)} (${unitOf(i.from)!.unit} → ${unitOf(i.to)!.unit}, a higher floor)`)
      .join('\n');
    expect(up.length, `Imports up a floor (take it as a parameter from app.ts, or move it down):\n${message}`).toBe(0);
  });

  it('allow at most three imports up, each one still made and explained', () => {
    expect(UPWARD.length).toBeLessThanOrEqual(3);
    for (const up of UPWARD) {
      expect(up.why.length, `${up.from} → ${up.to}: why`).toBeGreaterThan(20);
      expect(
        IMPORTS.some((i) => i.from === up.from && i.to === up.to),
        `${up.from} → ${up.to}: no longer made`,
      ).toBe(true);
      expect(unitOf(up.to)!.floor, `${up.from} → ${up.to}: not up a floor`).toBeGreaterThan(unitOf(up.from)!.floor);
    }
  });

  it('hence have no loop between units, even through the imports UPWARD allows', () => {
    // unit → unit → one import that makes the edge.
    const edges = new Map<string, Map<string, Import>>();
    for (const i of IMPORTS) {
      const from = unitOf(i.from)?.unit;
      const to = unitOf(i.to)?.unit;
      if (from === undefined || to === undefined || from === to) continue;
      const out = edges.get(from) ?? new Map<string, Import>();
      if (!out.has(to)) out.set(to, i);
      edges.set(from, out);
    }
    const loops: string[] = [];
    const done = new Set<string>();
    const path: string[] = [];
    const visit = (unit: string): void => {
      const at = path.indexOf(unit);
      if (at >= 0) {
        const loop = [...path.slice(at), unit];
        const made = loop.slice(1).map((to, n) => shown(edges.get(loop[n]!)!.get(to)!));
        loops.push(`${loop.join(' → ')}:\n  ${made.join('\n  ')}`);
        return;
      }
      if (done.has(unit)) return;
      path.push(unit);
      for (const to of edges.get(unit)?.keys() ?? []) visit(to);
      path.pop();
      done.add(unit);
    };
    for (const unit of FLOORS) visit(unit.name);
    expect(loops.length, `Loops between units:\n${loops.join('\n')}`).toBe(0);
  });
});
