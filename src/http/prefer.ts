/** The longest `Prefer: wait` honoured, in seconds. */
export const LONGEST_WAIT_SECONDS = 60;

/**
 * The preferences of a `Prefer` header (RFC 7240 §2), by name (lowercased), each with its value unquoted (the empty
 * text when it has none) and without its parameters. The first of a name counts; a request may repeat the header.
 */
function preferences(header: string | readonly string[] | undefined): Map<string, string> {
  const found = new Map<string, string>();
  if (header === undefined) return found;
  const text = typeof header === 'string' ? header : header.join(',');
  for (const preference of text.split(',')) {
    const [token, ...rest] = preference.split(';')[0]!.split('=');
    const name = token?.trim().toLowerCase() ?? '';
    if (name === '' || found.has(name)) continue;
    const value = rest
      .join('=')
      .trim()
      .replace(/^"(.*)"$/, '$1');
    found.set(name, value);
  }
  return found;
}

/**
 * The `wait` preference of a `Prefer` header (RFC 7240 §4.3), in whole seconds, at most LONGEST_WAIT_SECONDS; undefined
 * when there is none or it is not a number of seconds (a preference the server does not understand is ignored, as
 * RFC 7240 says). The first `wait` in the header counts; a request may repeat the header.
 */
export function preferredWait(header: string | readonly string[] | undefined): number | undefined {
  const value = preferences(header).get('wait');
  if (value === undefined || !/^\d{1,9}$/.test(value)) return undefined;
  const seconds = Number(value);
  return seconds === 0 ? undefined : Math.min(seconds, LONGEST_WAIT_SECONDS);
}

/**
 * Whether a `Prefer` header asks for `return=minimal` (RFC 7240 §4.2): a write then answers what it did in brief, not
 * the whole playlist. The first `return` counts; `return=representation`, or a value the service does not know, is
 * the usual answer.
 */
export function prefersMinimal(header: string | readonly string[] | undefined): boolean {
  return preferences(header).get('return')?.toLowerCase() === 'minimal';
}
