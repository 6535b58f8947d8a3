import { describe, expect, it } from 'vitest';
import { loggedUrl } from './logged-url.js';

describe('loggedUrl', () => {
  it("cuts a share link's token out of its path, whatever follows it", () => {
    expect(loggedUrl('/s/abcDEF_-123')).toBe('/s/[token]');
    expect(loggedUrl('/s/abc/image?size=64')).toBe('/s/[token]/image?size=64');
    expect(loggedUrl('/s/abc?format=xspf')).toBe('/s/[token]?format=xspf');
    expect(loggedUrl('//S/abc/')).toBe('//S/[token]/');
  });

  it('leaves every other URL as it came', () => {
    for (const url of ['/v3/playlist/5?format=xspf', '/', '/s', '/song/s/abc', '/v3/s/abc']) {
      expect(loggedUrl(url)).toBe(url);
    }
  });
});
