import { accessSync, constants } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { basic } from '../helpers/app.js';
import { startServer, type ServerProcess } from '../helpers/server-process.js';

/** Debian's Chromium, unless `MIXTAPE_TEST_CHROMIUM` names another build. */
export const CHROMIUM = process.env.MIXTAPE_TEST_CHROMIUM ?? '/usr/bin/chromium';

/**
 * Flags for a headless Chromium on a machine without a network: no sandbox (root in a container), no GPU, and none
 * of the background connections (updates, sync, QUIC probes) that a closed network refuses.
 */
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export const USER = { name: 'alice', password: 'correct horse battery' } as const;

/** What a browser test runs against: the service, the pages' origins, and a browser with a profile of its own. */
export interface BrowserRig {
  /** The service, e.g. `http://127.0.0.1:40123`, with `MIXTAPE_CORS_ORIGINS` set to `pageOrigin`. */
  readonly api: string;
  /** An origin the service allows, serving a blank page at `/`. */
  readonly pageOrigin: string;
  /** An origin the service does not allow, serving the same page. */
  readonly otherOrigin: string;
  /** The value of a `security` header that signs in as `USER`. */
  readonly credential: string;
  /** The service's SQLite database, for the command line (`mixtape user add`). */
  readonly databaseUrl: string;
  readonly service: ServerProcess;
  readonly browser: BrowserContext;
  /** A new tab that records console errors, uncaught exceptions and Content-Security-Policy violations. */
  newPage(): Promise<WatchedPage>;
  close(): Promise<void>;
}

export interface WatchedPage {
  readonly page: Page;
  /** Everything that went wrong on the page so far, one line each. */
  readonly problems: string[];
}

/** Fails with what to do when the browser is not installed: the browser tests need a real one. */
function requireChromium(): void {
  try {
    accessSync(CHROMIUM, constants.X_OK);
  } catch {
    throw new Error(
      `The browser tests need Chromium at ${CHROMIUM}, and there is none: install it with ` +
        '`apt-get install -y chromium` (Debian), or set MIXTAPE_TEST_CHROMIUM to a Chromium binary. ' +
        '`npm test` does not need it.',
    );
  }
}

const PAGE_HTML =
  '<!doctype html><html lang="en"><head><title>A client of Mixtape</title><link rel="icon" href="data:,"></head>' +
  '<body></body></html>';

/** A tiny site on its own port: another origin than the service's. */
async function startPageServer(): Promise<{ origin: string; server: Server }> {
  const server = createServer((request, response) => {
    if (request.url !== '/') {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE_HTML);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

const closeServer = (server: Server) =>
  new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => {
      resolve();
    });
  });

/** Starts the page servers, the service on a new SQLite database, and Chromium; `close` undoes all of it. */
export async function startBrowserRig(): Promise<BrowserRig> {
  requireChromium();
  const dir = await mkdtemp(join(tmpdir(), 'mixtape-browser-'));
  const servers: Server[] = [];
  let browser: BrowserContext | undefined;
  let service: ServerProcess | undefined;
  const close = async () => {
    await browser?.close();
    await service?.stop();
    await Promise.all(servers.map(closeServer));
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const allowed = await startPageServer();
    const other = await startPageServer();
    servers.push(allowed.server, other.server);
    const databaseUrl = `sqlite:${join(dir, 'mixtape.db')}`;
    service = await startServer({
      databaseUrl,
      bootstrapUser: `${USER.name}:${USER.password}`,
      env: { MIXTAPE_CORS_ORIGINS: allowed.origin },
    });
    browser = await chromium.launchPersistentContext(join(dir, 'profile'), {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
    });
    const context = browser;
    return {
      api: service.url,
      pageOrigin: allowed.origin,
      otherOrigin: other.origin,
      credential: basic(USER.name, USER.password),
      databaseUrl,
      service,
      browser: context,
      newPage: () => watchedPage(context),
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

async function watchedPage(context: BrowserContext): Promise<WatchedPage> {
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error' || message.type() === 'warning') {
      problems.push(`console ${message.type()}: ${message.text()}`);
    }
  });
  page.on('pageerror', (error) => problems.push(`uncaught: ${error.message}`));
  await page.exposeFunction('reportCspViolation', (line: string) => problems.push(`CSP: ${line}`));
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (event) => {
      const report = (window as unknown as { reportCspViolation: (line: string) => void }).reportCspViolation;
      report(`${event.violatedDirective} blocked ${event.blockedURI || 'inline'} in ${event.sourceFile}`);
    });
  });
  return { page, problems };
}
