import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../../bench/service.js';
import { sleep } from '../../helpers/traffic.js';

/** The proxy configuration the repository ships, run here as it is, its addresses given by the environment. */
export const HAPROXY_CONFIG = fileURLToPath(new URL('../../../deploy/haproxy/haproxy.cfg', import.meta.url));

/** Debian's HAProxy (`apt-get install haproxy`; `.ci/run` installs it when missing) on free loopback ports. */
export interface PrivateHaproxy {
  readonly httpUrl: string;
  readonly httpsUrl: string;
  /** The servers' states from the runtime API (`show stat`): e.g. `{ a: 'UP', b: 'DOWN' }`. */
  states(): Promise<Record<string, string>>;
  /** Waits until every named server is in the state, for at most `timeoutMs`. */
  waitFor(states: Record<string, string>, timeoutMs?: number): Promise<void>;
  output(): string;
  stop(): Promise<void>;
}

export interface HaproxyOptions {
  /** The instances' `host:port`, by server name (`a`, `b`, as the configuration names them). */
  readonly servers: { readonly a: string; readonly b: string };
  /** How often the proxy asks each instance's /readyz (HAProxy's time format, e.g. `250ms`). */
  readonly checkInterval: string;
}

function haproxyBinary(): string {
  for (const candidate of ['haproxy', '/usr/sbin/haproxy']) {
    try {
      execFileSync(candidate, ['-v'], { stdio: 'ignore' });
      return candidate;
    } catch {
      // next candidate
    }
  }
  throw new Error('HAProxy is not installed: apt-get install haproxy (.ci/run installs it when missing)');
}

/** A self-signed certificate and its key in one PEM file, for the HTTPS listener. */
function selfSignedPem(folder: string): string {
  const key = join(folder, 'key.pem');
  const cert = join(folder, 'cert.pem');
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1'].concat([
      '-subj',
      '/CN=music.example.test',
      '-keyout',
      key,
      '-out',
      cert,
    ]),
    { stdio: 'ignore' },
  );
  const pem = join(folder, 'mixtape.pem');
  execFileSync('sh', ['-c', `cat "${cert}" "${key}" > "${pem}"`]);
  return pem;
}

/** One command on the runtime API's socket; the whole answer. */
function runtimeCommand(socket: string, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const client = connect(socket);
    let text = '';
    const timer = setTimeout(() => {
      client.destroy(new Error(`no answer to "${command}" within 5 s`));
    }, 5000);
    client.setEncoding('utf8');
    client.on('data', (chunk: string) => (text += chunk));
    client.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    client.on('close', () => {
      clearTimeout(timer);
      resolve(text);
    });
    client.end(`${command}\n`);
  });
}

export async function privateHaproxy(options: HaproxyOptions): Promise<PrivateHaproxy> {
  const binary = haproxyBinary();
  const folder = mkdtempSync(join(tmpdir(), 'mixtape-haproxy-'));
  const [httpPort, httpsPort] = [await freePort(), await freePort()];
  const socket = join(folder, 'stats.sock');
  let output = '';
  let child: ChildProcess | undefined;
  const stop = async () => {
    const running = child;
    child = undefined;
    if (running !== undefined && running.exitCode === null && running.signalCode === null) {
      const closed = new Promise((resolve) => running.once('close', resolve));
      running.kill('SIGTERM');
      const force = setTimeout(() => running.kill('SIGKILL'), 5000);
      await closed;
      clearTimeout(force);
    }
    rmSync(folder, { recursive: true, force: true });
  };
  try {
    const env = {
      ...process.env,
      MIXTAPE_PROXY_HTTP: `127.0.0.1:${httpPort}`,
      MIXTAPE_PROXY_HTTPS: `127.0.0.1:${httpsPort}`,
      MIXTAPE_PROXY_CERT: selfSignedPem(folder),
      MIXTAPE_PROXY_STATS: socket,
      MIXTAPE_A: options.servers.a,
      MIXTAPE_B: options.servers.b,
      MIXTAPE_CHECK_INTERVAL: options.checkInterval,
    };
    const started = spawn(binary, ['-db', '-f', HAPROXY_CONFIG], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    child = started;
    started.stdout.setEncoding('utf8');
    started.stderr.setEncoding('utf8');
    started.stdout.on('data', (chunk: string) => (output += chunk));
    started.stderr.on('data', (chunk: string) => (output += chunk));
    const states = async (): Promise<Record<string, string>> => {
      const csv = await runtimeCommand(socket, 'show stat');
      const rows = csv.split('\n').map((line) => line.split(','));
      const header = rows[0] ?? [];
      const [proxy, server, status] = ['# pxname', 'svname', 'status'].map((name) => header.indexOf(name));
      const found: Record<string, string> = {};
      for (const row of rows.slice(1)) {
        const name = row[server ?? -1];
        if (row[proxy ?? -1] === 'mixtape' && name !== undefined && name !== 'BACKEND') {
          found[name] = row[status ?? -1] ?? '';
        }
      }
      return found;
    };
    const waitFor = async (wanted: Record<string, string>, timeoutMs = 15_000) => {
      const deadline = Date.now() + timeoutMs;
      let last: Record<string, string> = {};
      while (Date.now() < deadline) {
        if (started.exitCode !== null) throw new Error(`HAProxy exited:\n${output}`);
        try {
          last = await states();
          if (Object.entries(wanted).every(([name, state]) => last[name]?.startsWith(state))) return;
        } catch {
          // the socket is not there yet
        }
        await sleep(50);
      }
      throw new Error(`HAProxy's servers were ${JSON.stringify(last)}, not ${JSON.stringify(wanted)}:\n${output}`);
    };
    return {
      httpUrl: `http://127.0.0.1:${httpPort}`,
      httpsUrl: `https://127.0.0.1:${httpsPort}`,
      states,
      waitFor,
      output: () => output,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
