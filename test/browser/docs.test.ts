import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { USER, startBrowserRig, type BrowserRig, type WatchedPage } from './rig.js';

describe('the /docs page, in Chromium', () => {
  let rig: BrowserRig;
  // Nothing to stop if the rig did not start (no Chromium): the failure says why.
  let stop = () => Promise.resolve();
  let docs: WatchedPage;
  let playlistId: number;
  beforeAll(async () => {
    rig = await startBrowserRig();
    stop = () => rig.close();
    const created = await fetch(`${rig.api}/v3/playlist`, {
      method: 'POST',
      headers: { security: rig.credential, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Docs mix', songIds: [22, 3, 11, 45] }),
    });
    expect(created.status).toBe(200);
    playlistId = ((await created.json()) as { id: number }).id;
    docs = await rig.newPage();
    await docs.page.goto(`${rig.api}/docs`);
    await docs.page.locator('#operations-Your_Library-getimage').waitFor();
  });
  afterAll(async () => {
    await stop();
  });

  it("is Mixtape's, with its logo, reading /v3/openapi.json", async () => {
    const { page } = docs;
    expect(await page.title()).toBe('Mixtape API reference');
    const logo = page.locator('.topbar img[alt="Mixtape"]');
    expect(await logo.evaluate(async (image: HTMLImageElement) => (await image.decode(), image.naturalWidth))).toBe(
      150,
    );
    expect(await page.locator('.topbar input.download-url-input').inputValue()).toBe(`${rig.api}/v3/openapi.json`);
    expect(await page.locator('.info .main a').first().getAttribute('href')).toBe(`${rig.api}/v3/openapi.json`);
  });

  it('lists every operation once, with its summary, and the aliases folded until opened', async () => {
    const { page } = docs;
    const summaries = page.locator('.opblock .opblock-summary-description');
    expect(await summaries.allInnerTexts()).toEqual([
      'List your playlists',
      'Create a playlist',
      'Get one of your playlists',
      'Delete one of your playlists',
      'Edit a playlist',
      'Replace a playlist',
      'Add songs to a playlist',
      "Get a playlist's entries",
      'Edit a playlist by its entries, merged',
      "Get a playlist's cover image",
      'Import a playlist file',
      "List a playlist's revisions",
      'Get a version of a playlist',
      "Get a version of a playlist's entries",
      'Restore a version of a playlist',
      'What changed between two versions',
      'What changed in your playlists',
      'Your change feed as it happens (server-sent events)',
      'A ticket to open your stream of changes from a browser',
      "List a playlist's members",
      'Share a playlist with a user, or change their role',
      'Stop sharing a playlist with a user',
      'Share a playlist by a link',
      "List a playlist's links",
      'Revoke a link',
      'Open a shared playlist',
      "Get a shared playlist's cover",
      'Your folders and playlists, in your order',
      'Make a folder',
      'Rename or move a folder',
      'Remove a folder, keeping what it holds',
      'File a playlist in one of your folders',
      'Make an app token',
      'List your app tokens',
      'Revoke an app token',
      'List or search the song catalog',
      'Get a song of the catalog',
      'Liveness probe',
      'Readiness probe',
      'Prometheus metrics',
    ]);
    const aliases = page.locator('[id^="operations-Aliases-"]');
    expect(await aliases.count()).toBe(0);
    await page.locator('#operations-tag-Aliases').click();
    await page.locator('#operations-Aliases-getimagePlural').waitFor();
    // Every plural path of the document is there once opened.
    const document = JSON.parse(readFileSync(new URL('../../docs/openapi.json', import.meta.url), 'utf8')) as {
      paths: Record<string, Record<string, { tags?: string[] }>>;
    };
    const documented = Object.values(document.paths).flatMap((item) =>
      Object.values(item).filter((operation) => operation.tags?.includes('Aliases') === true),
    );
    expect(documented.length).toBeGreaterThan(9);
    expect(await aliases.count()).toBe(documented.length);
    expect(await page.locator('#operations-Aliases-getimagePlural .opblock-summary-description').innerText()).toBe(
      'Alias of GET /v3/playlist/{playlist-id}/image',
    );
  });

  it('shows a cover from "Try it out" after Authorize', async () => {
    const { page } = docs;
    await page.locator('.auth-wrapper button.authorize').click();
    const basic = page.locator('.auth-container').filter({ has: page.locator('#auth-basic-username') });
    await basic.locator('#auth-basic-username').fill(USER.name);
    await basic.locator('#auth-basic-password').fill(USER.password);
    await basic.locator('button.authorize').click();
    await page.locator('.modal-ux button.close-modal').click();

    const cover = page.locator('#operations-Your_Library-getimage');
    await cover.locator('.opblock-summary-control').click();
    await cover.locator('button.try-out__btn').click();
    await cover.locator('input[placeholder="playlist-id"]').fill(String(playlistId));
    await cover.locator('button.execute').click();
    const answer = cover.locator('.live-responses-table .response');
    await answer.locator('img').waitFor();
    expect((await answer.locator('.response-col_status').innerText()).trim()).toBe('200');
    const width = await answer
      .locator('img')
      .evaluate(async (image: HTMLImageElement) => (await image.decode(), image.naturalWidth));
    expect(width).toBe(600);
  });

  it('adds a song from "Try it out", and answers the playlist with its new ETag', async () => {
    const { page } = docs;
    const add = page.locator('#operations-Your_Library-addplaylistsongs');
    await add.locator('.opblock-summary-control').click();
    await add.locator('button.try-out__btn').click();
    await add.locator('input[placeholder="playlist-id"]').fill(String(playlistId));
    await add.locator('textarea.body-param__text').fill(JSON.stringify({ songIds: [7], position: 0 }));
    await add.locator('button.execute').click();
    const answer = add.locator('.live-responses-table .response');
    await answer.locator('.response-col_status').waitFor();
    expect((await answer.locator('.response-col_status').innerText()).trim()).toBe('200');
    // The body (pretty-printed, the new song first) and the headers, among them the new ETag.
    const shown = await answer.locator('.response-col_description').innerText();
    expect(shown).toMatch(/"songs": \[\s*\{\s*"id": 7,/);
    expect(shown).toMatch(/etag: "[^"]+"/);
  });

  it('reported no console error, uncaught exception or blocked content', () => {
    expect(docs.problems).toEqual([]);
  });
});
