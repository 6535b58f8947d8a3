import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBrowserRig, type BrowserRig, type WatchedPage } from './rig.js';

/** What the page's script saw of one answer. */
interface Seen {
  status: number;
  etag: string | null;
  location: string | null;
  totalCount: string | null;
  link: string | null;
  contentType: string | null;
  body: string;
}

/** What the page's script saw of the cover: its answers, and the size of the image it showed. */
interface CoverSeen {
  first: Seen;
  revalidated: Seen;
  width: number;
  height: number;
}

describe('a page on another origin, in Chromium', () => {
  let rig: BrowserRig;
  // Nothing to stop if the rig did not start (no Chromium): the failure says why.
  let stop = () => Promise.resolve();
  let client: WatchedPage;
  beforeAll(async () => {
    rig = await startBrowserRig();
    stop = () => rig.close();
    client = await rig.newPage();
    await client.page.goto(`${rig.pageOrigin}/`);
  });
  afterAll(async () => {
    await stop();
  });

  /** Runs `fetch` in the page and returns what its script can read of the answer. */
  const call = (path: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}) =>
    client.page.evaluate(
      async ({ url, init }) => {
        const response = await fetch(url, init);
        const header = (name: string) => response.headers.get(name);
        return {
          status: response.status,
          etag: header('etag'),
          location: header('location'),
          totalCount: header('x-total-count'),
          link: header('link'),
          contentType: header('content-type'),
          body: await response.text(),
        } satisfies Seen;
      },
      { url: `${rig.api}${path}`, init: { ...init, headers: { security: rig.credential, ...init.headers } } },
    );

  it('creates, lists, gets (revalidating with its ETag) and deletes a playlist', async () => {
    const created = await call('/v3/playlist', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Cross-origin mix', songIds: [22, 3, 11] }),
    });
    expect(created.status, created.body).toBe(200);
    const playlist = JSON.parse(created.body) as { id: number; name: string };
    expect(playlist.name).toBe('Cross-origin mix');
    expect(created.location).toBe(`/v3/playlist/${playlist.id}`);

    const list = await call('/v3/playlist?limit=1&offset=1');
    expect(list.status).toBe(200);
    expect(Number(list.totalCount)).toBeGreaterThanOrEqual(1);
    expect(list.etag).toMatch(/^W\/"/);
    expect(list.link).toContain('rel="prev"');

    const got = await call(created.location!);
    expect(got.status).toBe(200);
    expect(got.etag).toMatch(/^"/);
    expect((JSON.parse(got.body) as { id: number }).id).toBe(playlist.id);
    const again = await call(created.location!, { headers: { 'if-none-match': got.etag! } });
    expect(again.status).toBe(304);
    expect(again.etag).toBe(got.etag);

    const deleted = await call(created.location!, { method: 'DELETE' });
    expect(deleted.status, deleted.body).toBe(200);
    const gone = await call(created.location!);
    expect(gone.status).toBe(410);
    expect(JSON.parse(gone.body)).toMatchObject({ errormsg: expect.any(String) as string });
  });

  it('shows a cover, reads its ETag and revalidates it to 304', async () => {
    const created = await call('/v3/playlist', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Cover mix', songIds: [1, 2, 3, 4] }),
    });
    expect(created.status, created.body).toBe(200);
    const seen = await client.page.evaluate(
      async ({ url, credential }) => {
        const read = (response: Response) => ({
          status: response.status,
          etag: response.headers.get('etag'),
          location: null,
          totalCount: null,
          link: null,
          contentType: response.headers.get('content-type'),
          body: '',
        });
        const first = await fetch(url, { headers: { security: credential } });
        const image = document.createElement('img');
        image.src = URL.createObjectURL(await first.blob());
        await image.decode();
        document.body.append(image);
        const etag = first.headers.get('etag') ?? '';
        const revalidated = await fetch(url, { headers: { security: credential, 'if-none-match': etag } });
        return {
          first: read(first),
          revalidated: read(revalidated),
          width: image.naturalWidth,
          height: image.naturalHeight,
        } satisfies CoverSeen;
      },
      { url: `${rig.api}${created.location!}/image?size=128`, credential: rig.credential },
    );
    expect(seen.first.status).toBe(200);
    expect(seen.first.contentType).toBe('image/png');
    expect(seen.first.etag).toMatch(/^"/);
    expect([seen.width, seen.height]).toEqual([128, 128]);
    expect(seen.revalidated.status).toBe(304);
    expect(seen.revalidated.etag).toBe(seen.first.etag);
  });

  it('reported nothing wrong on the page but the 410 asked for', () => {
    // Chromium logs every answer of 400 or more; the deleted playlist's 410 above was the point.
    const expected = 'the server responded with a status of 410 (Gone)';
    expect(client.problems.filter((line) => !line.endsWith(expected))).toEqual([]);
    expect(client.problems).toHaveLength(1);
  });

  it('is refused to a page of an origin that is not listed', async () => {
    const stranger = await rig.newPage();
    await stranger.page.goto(`${rig.otherOrigin}/`);
    const outcome = await stranger.page.evaluate(
      async ({ url, credential }) => {
        try {
          const response = await fetch(url, { headers: { security: credential } });
          return `answered ${response.status}`;
        } catch (error) {
          return `refused: ${(error as Error).name}`;
        }
      },
      { url: `${rig.api}/v3/playlist`, credential: rig.credential },
    );
    expect(outcome).toBe('refused: TypeError');
    expect(stranger.problems.join('\n')).toMatch(/CORS policy/);
  });
});
