/**
 * README.md's examples, run as a newcomer pastes them, and the links between README.md and docs/.
 *
 * Shell blocks in README.md and docs/*.md (docs/benchmarks.md aside, whose commands are the bench's) are fenced
 * ```sh, with one mark after it:
 *   ```sh          an example: run, and it must exit 0;
 *   ```sh fails    an example that shows an error: run, and it must exit non-zero with the status its comment names
 *                  first (`# 403: {"errormsg":"Only the owner …`), its output holding the text after that status up
 *                  to the first `…`; it sets nothing the next blocks use (it runs in a subshell);
 *   ```sh start    how to start the service: not run; the test starts the service itself (a fresh SQLite database, a
 *                  free port) with the settings that line writes before `npm start`;
 *   ```sh manual   not run: it needs what this test does not have (npm itself, PostgreSQL, a container tool,
 *                  HAProxy, a cluster).
 * Any other shell fence (bash, shell, console, another mark) fails the test, so that none goes untested unseen.
 *
 * The run blocks of README.md, then those of docs/api.md (which go on from README's quick start: its API, AUTH, BOB
 * and ID), run in that order in one bash session (`set -euo pipefail`), in an empty folder holding a link to the
 * checkout's examples/, with a PATH of curl, jq (README's prerequisites) and POSIX tools only. The one line
 * `API=http://127.0.0.1:8080/v3` is pointed at the test's service; no other executed text may name port 8080.
 * `npx mixtape …` runs the checkout's CLI from src/cli.ts through tsx (as test/helpers/cli-process.ts does), on the
 * service's database, since a newcomer's `npx mixtape` runs the same CLI on the same ./data/mixtape.db.
 */
import { spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAllServers, startServer, type ServerProcess } from '../helpers/server-process.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

/** The documents whose shell blocks follow the convention above; the run blocks of RUN_IN_ORDER are run. */
const DOCS = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];
const BENCH_DOC = 'docs/benchmarks.md';
const RUN_IN_ORDER = ['README.md', 'docs/api.md'];
const MARKS = ['run', 'fails', 'start', 'manual'] as const;
type Mark = (typeof MARKS)[number];

interface Block {
  readonly file: string;
  /** The line of its opening fence, from 1. */
  readonly line: number;
  readonly language: string;
  readonly mark: string;
  readonly text: string;
}

/** Every fenced code block of a Markdown file. */
function fencedBlocks(file: string): Block[] {
  const lines = read(file).split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^\s*```(\S*)\s*(.*)$/.exec(lines[i]!);
    if (open === null) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^\s*```\s*$/.test(lines[i]!); i++) body.push(lines[i]!);
    blocks.push({
      file,
      line: start + 1,
      language: open[1]!,
      mark: open[2]!.trim() === '' ? 'run' : open[2]!.trim(),
      text: body.join('\n'),
    });
  }
  return blocks;
}

const SHELLS = new Set(['sh', 'bash', 'shell', 'console', 'zsh', 'shell-session']);
const shellBlocks = (file: string) => fencedBlocks(file).filter((block) => SHELLS.has(block.language));
const where = (block: Block) => `${block.file}:${block.line}`;

const runBlocks = RUN_IN_ORDER.flatMap((file) =>
  shellBlocks(file).filter((block) => block.mark === 'run' || block.mark === 'fails'),
);

/** `'…'`: one word for bash, whatever it holds. */
const quoted = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

/** The executed part of a block's lines: comments dropped (a `#` at the start or after white space). */
const executed = (text: string) =>
  text
    .split('\n')
    .map((line) => line.replace(/(^|\s)#.*$/, ''))
    .join('\n');

const API_LINE = /^API=http:\/\/127\.0\.0\.1:8080\/v3$/m;

/** What a `fails` block promises: the HTTP status, and the start of what it prints. */
function promised(block: Block): { status: string; text: string | undefined } {
  const comment = /#\s*(\d{3})(?::\s*(.*))?$/m.exec(block.text);
  if (comment === null) throw new Error(`${where(block)}: a fails block names its status in a comment (# 404: …)`);
  const text = comment[2]?.split('…')[0]?.trim();
  return { status: comment[1]!, text: text === '' ? undefined : text };
}

/** The tools README's examples may use: curl and jq (its prerequisites), and what any POSIX system has. */
const TOOLS = ['curl', 'jq', 'base64', 'cat', 'cut', 'grep', 'sed', 'tr', 'head', 'tail', 'ls', 'rm', 'sleep', 'wc'];

function which(tool: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir !== '' && existsSync(join(dir, tool))) return join(dir, tool);
  }
  return undefined;
}

interface Outcome {
  /** The block's exit status; undefined when the session never reached it. */
  readonly status: number | undefined;
  readonly output: string;
}

describe('README.md and docs/', () => {
  it('mark every shell block: sh, with no mark or fails, start or manual; start only in README.md', () => {
    const bad = DOCS.filter((file) => file !== BENCH_DOC)
      .flatMap(shellBlocks)
      .filter(
        (block) =>
          block.language !== 'sh' ||
          !(MARKS as readonly string[]).includes(block.mark) ||
          (block.mark === 'start' && block.file !== 'README.md') ||
          (!RUN_IN_ORDER.includes(block.file) && (block.mark as Mark) !== 'manual'),
      )
      .map((block) => `${where(block)}: \`\`\`${block.language} ${block.mark}`);
    expect(bad).toEqual([]);
    expect(runBlocks.length).toBeGreaterThan(20);
    for (const block of runBlocks.filter((b) => b.mark === 'fails')) expect(promised(block).status).toMatch(/^4\d\d$/);
  });

  it('link only to files, and headings, that exist', () => {
    const broken: string[] = [];
    for (const file of DOCS) {
      const text = read(file).replace(/```[\s\S]*?```/g, '');
      const targets = [
        ...[...text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]!),
        ...[...text.matchAll(/<img\s[^>]*src="([^"]+)"/g)].map((m) => m[1]!),
      ];
      for (const target of targets) {
        if (/^[a-z]+:/i.test(target)) continue;
        const [path, anchor] = target.split('#') as [string, string | undefined];
        const into = path === '' ? file : relative(ROOT, resolve(ROOT, dirname(file), path));
        if (!existsSync(join(ROOT, into))) {
          broken.push(`${file}: ${target} (no such file)`);
          continue;
        }
        if (anchor !== undefined && into.endsWith('.md') && !headingAnchors(into).has(anchor)) {
          broken.push(`${file}: ${target} (no such heading in ${into})`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('name in docs/operations.md every setting the service reads', () => {
    const config = read('src/config.ts');
    const settings = new Set(
      config.match(/\b(?:MIXTAPE|DATABASE)_[A-Z0-9_]+\b|\b(?:REDIS_URL|PORT|HOST|LOG_LEVEL)\b/g),
    );
    expect(settings.size).toBeGreaterThan(40);
    const operations = read('docs/operations.md');
    expect([...settings].filter((name) => !operations.includes(`\`${name}\``))).toEqual([]);
  });
});

/** The anchors GitHub gives a Markdown file's headings. */
function headingAnchors(file: string): Set<string> {
  const anchors = new Set<string>();
  const text = read(file).replace(/```[\s\S]*?```/g, '');
  for (const match of text.matchAll(/^#{1,6}\s+(.+)$/gm)) {
    const words = match[1]!.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/`/g, '');
    const base = words
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    let anchor = base;
    for (let n = 1; anchors.has(anchor); n++) anchor = `${base}-${n}`;
    anchors.add(anchor);
  }
  return anchors;
}

describe('the examples of README.md and docs/api.md, run in order as they are written, against a fresh service', () => {
  const outcomes = new Map<Block, Outcome>();
  /** What bash printed outside the blocks, and how it ended. */
  let session = '';
  let server: ServerProcess | undefined;
  let dir: string | undefined;

  beforeAll(async () => {
    const missing = ['curl', 'jq'].filter((tool) => which(tool) === undefined);
    if (missing.length > 0) {
      throw new Error(`README's examples need ${missing.join(' and ')}: apt-get install -y ${missing.join(' ')}`);
    }
    dir = mkdtempSync(join(tmpdir(), 'mixtape-readme-'));
    const [work, bin, home, blocks] = ['work', 'bin', 'home', 'blocks'].map((name) => join(dir!, name)) as [
      string,
      string,
      string,
      string,
    ];
    for (const folder of [work, bin, home, blocks]) mkdirSync(folder);
    symlinkSync(join(ROOT, 'examples'), join(work, 'examples'));
    for (const tool of TOOLS) {
      const found = which(tool);
      if (found !== undefined) symlinkSync(found, join(bin, tool));
    }

    const start = shellBlocks('README.md').filter((block) => block.mark === 'start');
    expect(start.length, 'README.md has one ```sh start block').toBe(1);
    const command = /^((?:[A-Z_]+=\S+\s+)*)npm start\b/m.exec(start[0]!.text);
    expect(command, `${where(start[0]!)} starts the service with npm start`).not.toBeNull();
    const settings = Object.fromEntries(
      [...command![1]!.matchAll(/([A-Z_]+)=(\S+)/g)].map((m) => [m[1]!, m[2]!] as [string, string]),
    );
    const databaseUrl = `sqlite:${join(dir, 'mixtape.db')}`;
    server = await startServer({ databaseUrl, env: settings });

    const apiLines = runBlocks.filter((block) => API_LINE.test(block.text));
    expect(apiLines.map(where), 'one run block sets API=http://127.0.0.1:8080/v3').toHaveLength(1);
    expect(apiLines[0]!.file).toBe('README.md');
    const hardCoded = runBlocks.filter((block) => /:8080\b/.test(executed(block.text.replace(API_LINE, ''))));
    expect(hardCoded.map(where), 'no executed line but API= names port 8080').toEqual([]);

    const tsx = import.meta.resolve('tsx');
    const script = [
      'set -euo pipefail',
      // npx mixtape: the checkout's CLI; no other package is fetched.
      'npx() {',
      '  if [ "${1-}" != mixtape ]; then echo "npx $*: only npx mixtape runs here" >&2; return 127; fi',
      `  shift; ${quoted(process.execPath)} --import ${quoted(tsx)} ${quoted(join(ROOT, 'src/cli.ts'))} "$@"`,
      '}',
      ...runBlocks.map((block, i) => {
        const file = join(blocks, `${i}.sh`);
        writeFileSync(file, `${block.text.replace(API_LINE, `API=${server!.url}/v3`)}\n`);
        const log = quoted(join(blocks, `${i}.log`));
        const status = `echo "${i} $?" >> ${quoted(join(blocks, 'status'))}`;
        return block.mark === 'fails'
          ? `set +e; ( set -e; source ${quoted(file)} ) > ${log} 2>&1; ${status}; set -e`
          : `source ${quoted(file)} > ${log} 2>&1; ${status}`;
      }),
    ].join('\n');
    session = await runBash(script, work, {
      PATH: bin,
      HOME: home,
      LANG: 'C.UTF-8',
      DATABASE_URL: databaseUrl,
    });
    const statuses = new Map(
      (existsSync(join(blocks, 'status')) ? readFileSync(join(blocks, 'status'), 'utf8') : '')
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => line.split(' ').map(Number) as [number, number]),
    );
    runBlocks.forEach((block, i) => {
      const log = join(blocks, `${i}.log`);
      outcomes.set(block, {
        status: statuses.get(i) ?? (existsSync(log) ? -1 : undefined),
        output: existsSync(log) ? readFileSync(log, 'utf8') : '',
      });
    });
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
    await killAllServers();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it.each(runBlocks.map((block) => [where(block), block] as const))('%s', (_where, block) => {
    const outcome = outcomes.get(block);
    const shown = `${block.text}\n--- printed:\n${outcome?.output ?? ''}`;
    expect(outcome?.status, `not reached: a block before it stopped the session (${session})\n${shown}`).not.toBe(
      undefined,
    );
    if (block.mark === 'run') {
      expect(outcome!.status, shown).toBe(0);
      return;
    }
    const { status, text } = promised(block);
    expect(outcome!.status, shown).not.toBe(0);
    expect(outcome!.output, shown).toContain(`The requested URL returned error: ${status}`);
    if (text !== undefined) expect(outcome!.output, shown).toContain(text);
  });
});

/**
 * Runs the script in bash with exactly this environment, and answers what bash itself printed (each block's output
 * goes to its own log); settles when it exits, or kills it after 75 s.
 */
function runBash(script: string, cwd: string, env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/bash', ['-c', script], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let printed = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (printed += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (printed += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), 75_000);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve(`${printed}(bash ended: ${signal ?? `exit ${code}`})`);
    });
  });
}
