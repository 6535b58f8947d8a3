import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../helpers/each-database.js';
import { decode, type Pixels } from '../helpers/images.js';
import { createPlaylist } from '../helpers/requests.js';

/**
 * Covers compared pixel by pixel with the PNGs in test/golden/covers, which a person can open to see what the
 * service draws. After a deliberate change to the drawing, `UPDATE_GOLDEN=1 npx vitest run test/covers/cover-golden.test.ts`
 * writes them again; a failing comparison leaves what was drawn in test/golden/covers/actual/ to look at.
 */

const GOLDEN = fileURLToPath(new URL('../golden/covers/', import.meta.url));
const update = process.env.UPDATE_GOLDEN === '1';

// A channel may differ this much (rounding in another build of the rasteriser), on this share of pixels at most.
const CHANNEL_TOLERANCE = 3;
const PIXEL_SHARE = 0.002;

// 200 characters, the default name limit (ASCII, so its length is its character count).
const TWO_HUNDRED = `${'A very long playlist name that keeps going '.repeat(5)}and ends here.`.slice(0, 200);

const CASES: { file: string; name: string; songIds: number[]; size?: number }[] = [
  { file: 'empty.png', name: 'Nothing here yet', songIds: [] },
  { file: 'one-artist.png', name: 'Hollow Pine Engine only', songIds: [1, 1, 1] },
  { file: 'four-artists.png', name: 'Chill Vibes', songIds: [22, 3, 11, 45, 54] },
  { file: 'long-name.png', name: TWO_HUNDRED, songIds: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12] },
  { file: 'rtl-emoji.png', name: 'موسيقى هادئة 🎧 Mix ✨ שלום', songIds: [5, 6] },
  // The one-line layout (65 to 239 pixels): Arabic joined, emoji within their advance.
  { file: 'arabic-200.png', name: 'أغاني الصيف الهادئة', songIds: [5, 6], size: 200 },
  { file: 'emoji-200.png', name: '🎸 Rock 🔥 Night 🌙', songIds: [5, 6], size: 200 },
  { file: 'arabic-96.png', name: 'أغاني الصيف الهادئة', songIds: [1], size: 96 },
];

function differingShare(actual: Pixels, expected: Pixels): number {
  let differing = 0;
  for (let i = 0; i < actual.data.length; i += actual.channels) {
    for (let c = 0; c < actual.channels; c++) {
      if (Math.abs(actual.data[i + c]! - expected.data[i + c]!) > CHANNEL_TOLERANCE) {
        differing++;
        break;
      }
    }
  }
  return differing / (actual.width * actual.height);
}

describe('cover golden images', () => {
  const t = useTestApp('sqlite');
  let security: string;

  beforeAll(async () => {
    security = await t.addUser();
  });

  for (const { file, name, songIds, size } of CASES) {
    it(`draws ${file} as committed`, async () => {
      const playlist = await createPlaylist(t.app, security, name, songIds);
      // The long name is the longest the service takes (200 characters), stored and drawn as sent.
      expect(playlist.name).toBe(name);
      const response = await t.app.inject({
        method: 'GET',
        url: `/v3/playlist/${playlist.id}/image${size === undefined ? '' : `?size=${size}`}`,
        headers: { security },
      });
      expect(response.statusCode).toBe(200);
      const path = `${GOLDEN}${file}`;
      if (update) writeFileSync(path, response.rawPayload);
      expect(existsSync(path), `${path} is missing: run with UPDATE_GOLDEN=1`).toBe(true);

      const [actual, expected] = await Promise.all([decode(response.rawPayload), decode(readFileSync(path))]);
      expect([actual.width, actual.height]).toEqual([expected.width, expected.height]);
      const share = differingShare(actual, expected);
      if (share > PIXEL_SHARE) {
        mkdirSync(`${GOLDEN}actual`, { recursive: true });
        writeFileSync(`${GOLDEN}actual/${file}`, response.rawPayload);
      }
      expect(share, `${file}: ${(share * 100).toFixed(2)}% of pixels differ`).toBeLessThanOrEqual(PIXEL_SHARE);
    });
  }
});
