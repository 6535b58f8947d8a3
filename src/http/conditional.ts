/**
 * Whether an `If-None-Match` header matches a strong ETag (RFC 9110 §13.1.2): `*`, or any listed tag that is
 * the same once a weak prefix is set aside, since this precondition uses the weak comparison.
 */
export function ifNoneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  if (header.trim() === '*') return true;
  const tags = header.match(/(?:W\/)?"[^"]*"/g) ?? [];
  return tags.some((tag) => tag.replace(/^W\//, '') === etag);
}
