const opaque = (tag: string) => (tag.startsWith('W/') ? tag.slice(2) : tag);

/**
 * Whether an `If-None-Match` header matches an ETag (RFC 9110 §13.1.2): `*`, or any listed tag that is the same
 * once weak prefixes are set aside, since this precondition uses the weak comparison.
 */
export function ifNoneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  if (header.trim() === '*') return true;
  const wanted = opaque(etag);
  const tags = header.match(/(?:W\/)?"[^"]*"/g) ?? [];
  return tags.some((tag) => opaque(tag) === wanted);
}
