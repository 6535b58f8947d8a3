/** Text as the playlist formats carry it. */

// C0 and C1 controls, DEL, unpaired surrogates (a pair is one character under the `u` flag) and U+FFFE/U+FFFF,
// none of which XML 1.0 allows. Line breaks and tabs become spaces; the others go.
const BREAKS = /[\t\n\v\f\r\u0085\u2028\u2029]/gu;
// eslint-disable-next-line no-control-regex -- control characters are exactly what is removed
const CONTROL = /[\u0000-\u001F\u007F-\u009F\uD800-\uDFFF\uFFFE\uFFFF]/gu;

/** The text without control characters: line breaks and tabs become spaces, the rest are removed. */
export function cleanText(text: string): string {
  return text.replace(BREAKS, ' ').replace(CONTROL, '');
}

const XML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' };

/** Clean text escaped for XML character data and attribute values. */
export function xmlText(text: string): string {
  return cleanText(text).replace(/[&<>"']/g, (c) => XML_ESCAPES[c]!);
}

/**
 * A file name for a download: the name's letters and digits (accents dropped), spaces, `.`, `-`, and `_` for any
 * run of other characters; at most 100 characters, `playlist` when nothing is left; safe in a quoted
 * `Content-Disposition`.
 */
export function downloadFileName(name: string, extension: string): string {
  const base = name
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .replace(/\s+/gu, ' ')
    .replace(/[^A-Za-z0-9 ._-]+/g, '_')
    .replace(/[ _]*_[ _]*/g, '_')
    .replace(/^[ ._-]+|[ ._-]+$/g, '')
    .slice(0, 100)
    .replace(/[ ._-]+$/g, '');
  return `${base === '' ? 'playlist' : base}.${extension}`;
}

const graphemes = new Intl.Segmenter('und', { granularity: 'grapheme' });

/**
 * `Content-Disposition` of a download (RFC 6266): the ASCII `filename` of `downloadFileName` for every client, and
 * when the name has more than that, `filename*` (RFC 8187) with the real name in UTF-8: at most 100 characters,
 * without control characters and path separators.
 */
export function contentDisposition(name: string, extension: string): string {
  const fallback = downloadFileName(name, extension);
  const cleaned = cleanText(name)
    .replace(/[/\\]+/g, '_')
    .trim();
  const real = Array.from(graphemes.segment(cleaned), (part) => part.segment)
    .slice(0, 100)
    .join('')
    .trim();
  const full = `${real === '' ? 'playlist' : real}.${extension}`;
  const plain = `attachment; filename="${fallback}"`;
  if (full === fallback) return plain;
  // encodeURIComponent leaves only RFC 8187 attr-chars but ' ( ) *, which are encoded too.
  const encoded = encodeURIComponent(full).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `${plain}; filename*=UTF-8''${encoded}`;
}
