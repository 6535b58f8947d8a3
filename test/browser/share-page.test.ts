import { mkdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBrowserRig, type BrowserRig, type WatchedPage } from './rig.js';

const SCREENSHOTS = new URL('../../docs/images/', import.meta.url);

describe('the shared playlist page, in Chromium', () => {
  let rig: BrowserRig;
  // Nothing to stop if the rig did not start (no Chromium): the failure says why.
  let stop = () => Promise.resolve();
  let shared: string;
  beforeAll(async () => {
    rig = await startBrowserRig();
    stop = () => rig.close();
    const headers = { security: rig.credential, 'content-type': 'application/json' };
    const songIds = [3, 17, 22, 45, 58, 71, 89, 102, 120, 137, 166, 201];
    const created = await fetch(`${rig.api}/v3/playlist`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ name: 'Slow Sunday Morning, with the windows open', songIds }),
    });
    expect(created.status).toBe(200);
    const { id } = (await created.json()) as { id: number };
    const link = await fetch(`${rig.api}/v3/playlist/${id}/links`, { method: 'POST', headers, body: '{}' });
    expect(link.status).toBe(200);
    shared = ((await link.json()) as { url: string }).url;
    mkdirSync(SCREENSHOTS, { recursive: true });
  });
  afterAll(async () => {
    await stop();
  });

  /** The page at a viewport, with every request it made. */
  async function open(width: number, height: number): Promise<WatchedPage & { requests: string[] }> {
    const watched = await rig.newPage();
    const requests: string[] = [];
    watched.page.on('request', (request) => requests.push(request.url()));
    await watched.page.setViewportSize({ width, height });
    const response = await watched.page.goto(shared);
    expect(response?.status()).toBe(200);
    await watched.page.locator('img.cover').evaluate((image: HTMLImageElement) => image.decode());
    return { ...watched, requests };
  }

  for (const [name, width, height] of [
    ['phone', 390, 844],
    ['desktop', 1280, 800],
  ] as const) {
    it(`shows the songs and the cover on a ${name} (${width}×${height}), with nothing from elsewhere and no overflow`, async () => {
      const { page, problems, requests } = await open(width, height);
      try {
        expect(await page.locator('h1').innerText()).toBe('Slow Sunday Morning, with the windows open');
        expect(await page.locator('.meta').innerText()).toMatch(/^shared by alice · 12 songs · \d+ min$/);
        expect(await page.locator('ol.songs li:not(.heading)').count()).toBe(12);
        expect(await page.locator('ol.songs li:not(.heading) .title').first().innerText()).not.toBe('');
        const width_ = await page.locator('img.cover').evaluate((image: HTMLImageElement) => image.naturalWidth);
        expect(width_).toBeGreaterThan(0);
        expect(await page.locator('.files a').allInnerTexts()).toEqual(['XSPF', 'JSPF', 'M3U8']);
        const scrollWidth = await page.evaluate(() => document.documentElement.scrollWidth);
        expect(scrollWidth).toBeLessThanOrEqual(width);
        const origin = new URL(rig.api).origin;
        expect(requests.filter((url) => new URL(url).origin !== origin)).toEqual([]);
        expect(problems).toEqual([]);
        await page.screenshot({ path: new URL(`share-page-${name}.png`, SCREENSHOTS).pathname, fullPage: false });
      } finally {
        await page.close();
      }
    });
  }

  it('wraps a very long name without overflowing a phone, and the 404 page is a small page of the same look', async () => {
    const watched = await rig.newPage();
    const { page, problems } = watched;
    try {
      await page.setViewportSize({ width: 390, height: 844 });
      const missing = await page.goto(`${new URL(shared).origin}/s/no-such-token`);
      expect(missing?.status()).toBe(404);
      expect(await page.locator('h1').innerText()).toBe('This link opens nothing');
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
      // The page's favicon request, refused, is the browser's and no problem of the page's.
      expect(problems.filter((line) => !line.includes('404'))).toEqual([]);
    } finally {
      await page.close();
    }
  });
});
